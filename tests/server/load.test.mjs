// Load: 64 concurrent streaming clients for a bounded time, every response
// complete and correct, /metrics consistent with what was sent; and 256
// concurrent streams that all make progress at once while 600 slowloris
// connections are held open, with /health answering throughout (median < 100 ms, worst < 2 s)
// (probed from a process of its own, as a load balancer would: this test's own
// event loop, busy with the streams and sockets, would delay the probes itself).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import net from 'node:net';
import path_ from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { startServer, storiesGoldens, scrapeMetrics, metric, sleep } from './helpers.mjs';

const MAX_TOKENS = 24;

async function streamOnce(client, golden) {
  const stream = await client.completions.create({
    model: 'stories260k', prompt: golden.prompt_ids, max_tokens: MAX_TOKENS, temperature: 0, ignore_eos: true,
    stream: true, stream_options: { include_usage: true }, return_token_ids: true,
  });
  const ids = [];
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      ids.push(...choice.token_ids);
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { ids, finish, usage };
}

test('64 concurrent streaming clients for 4 s: all complete and correct, metrics consistent', async () => {
  const server = await startServer(['--max-num-seqs', '64']);
  try {
    const goldens = storiesGoldens().filter((g) => g.name.startsWith('prompt'));
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const start = await scrapeMetrics(server.url);
    const deadline = Date.now() + 4000;
    let requests = 0;
    let promptTokens = 0;
    let completionTokens = 0;
    const failures = [];
    await Promise.all(Array.from({ length: 64 }, async (_, c) => {
      for (let i = 0; Date.now() < deadline && i < 1000; i++) {
        const golden = goldens[(c + i) % goldens.length];
        try {
          const { ids, finish, usage } = await streamOnce(client, golden);
          if (JSON.stringify(ids) !== JSON.stringify(golden.output_ids.slice(0, MAX_TOKENS))) failures.push(`wrong ids for ${golden.name}`);
          if (finish !== 'length') failures.push(`finish ${finish}`);
          if (!usage || usage.completion_tokens !== MAX_TOKENS) failures.push(`usage ${JSON.stringify(usage)}`);
          requests++;
          promptTokens += usage.prompt_tokens;
          completionTokens += usage.completion_tokens;
        } catch (error) {
          failures.push(String(error));
        }
      }
    }));
    assert.deepEqual(failures, []);
    assert.ok(requests >= 64, `only ${requests} requests`);
    const end = await scrapeMetrics(server.url);
    const delta = (name, label) => metric(end, name, label) - metric(start, name, label);
    assert.equal(delta('vllm:prompt_tokens_total'), promptTokens);
    assert.equal(delta('vllm:generation_tokens_total'), completionTokens);
    assert.equal(delta('vllm:request_success_total', 'finished_reason="length"'), requests);
    assert.equal(delta('vllm:e2e_request_latency_seconds_count'), requests);
    assert.equal(delta('vllm:time_to_first_token_seconds_count'), requests);
    assert.equal(delta('vllm:inter_token_latency_seconds_count'), requests * (MAX_TOKENS - 1));
    assert.equal(metric(end, 'vllm:num_requests_running'), 0);
    assert.equal(metric(end, 'vllm:num_requests_waiting'), 0);
    assert.equal(metric(end, 'vllm:kv_cache_usage_perc'), 0);
    assert.ok(metric(end, 'vllm:prefix_cache_queries_total') >= metric(end, 'vllm:prefix_cache_hits_total'));
    // The access counter is bumped after the last byte is written: give it a moment.
    for (let i = 0; i < 50 && metric(await scrapeMetrics(server.url), 'lmrun:http_responses_total', 'status="200"') < requests; i++) await sleep(20);
    assert.equal(metric(await scrapeMetrics(server.url), 'lmrun:http_responses_total', 'status="200"'), requests);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

const here = path_.dirname(fileURLToPath(import.meta.url));

// Slowloris: `count` connections, each sending a request header one byte per second and never
// finishing it. A connection the server drops is opened again, so `count` stay open.
function slowClients(port, count) {
  const header = 'POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
    `X-Padding: ${'a'.repeat(4096)}\r\n`;
  const sockets = new Set();
  let open = 0;
  let dropped = 0;
  let stopped = false;
  const connect = () => {
    const socket = net.connect(port, '127.0.0.1');
    let sent = 0;
    let timer = null;
    socket.on('connect', () => {
      open++;
      timer = setInterval(() => { socket.write(header[sent++ % header.length]); }, 1000);
      socket.write(header[sent++]);
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      sockets.delete(socket);
      if (timer !== null) open--;
      if (stopped) return;
      dropped++;
      connect();
    });
    sockets.add(socket);
  };
  for (let i = 0; i < count; i++) connect();
  return {
    get open() { return open; },
    get dropped() { return dropped; },
    stop() {
      stopped = true;
      for (const socket of sockets) socket.destroy();
    },
  };
}

// Probes `path` every `everyMs` from a process of its own (prober.mjs) until stopped.
function prober(port, path, everyMs, field = '') {
  const child = fork(path_.join(here, 'prober.mjs'), [String(port), path, String(everyMs), field]);
  const results = new Promise((resolve, reject) => {
    child.on('message', resolve);
    child.on('exit', (code) => reject(new Error(`prober exited with ${code}`)));
  });
  results.catch(() => {});  // killed after a failed test: nobody waits for it
  return {
    async stop() { child.send('stop'); return results; },
    kill() { if (child.exitCode === null) child.kill(); },
  };
}

test('256 concurrent streams while 600 slow connections are open: all progress together, /health answers throughout', async () => {
  const server = await startServer(['--max-num-seqs', '256', '--max-num-batched-tokens', '4096']);
  const slow = slowClients(server.port, 600);
  let health = null;
  let metrics = null;
  let load = null;
  try {
    for (let i = 0; i < 200 && slow.open < 600; i++) await sleep(50);
    assert.equal(slow.open, 600, 'the 600 slow connections did not all open');
    health = prober(server.port, '/health', 100);
    metrics = prober(server.port, '/metrics', 500);
    load = prober(server.port, '/load', 50, 'num_running');
    await sleep(1500);  // the slow clients have sent a byte or two each: they hold their connections
    const clients = 256;
    const maxTokens = 300;
    const results = await Promise.all(Array.from({ length: clients }, async (_, c) => {
      // Times are from this request's own send: with 256 streams on 2 cores the client itself
      // may send some requests late, which says nothing about the server.
      const sent = performance.now();
      const response = await fetch(`${server.url}/v1/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt: [1, 3 + c], max_tokens: maxTokens, ignore_eos: true, temperature: 0, stream: true, return_token_ids: true }),
      });
      assert.equal(response.status, 200);
      let firstToken = null;
      let tokens = 0;
      let buffer = '';
      const decoder = new TextDecoder();
      for await (const bytes of response.body) {
        buffer += decoder.decode(bytes, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (event === 'data: [DONE]') continue;
          const ids = JSON.parse(event.slice(6)).choices[0].token_ids;
          if (ids.length > 0 && firstToken === null) firstToken = performance.now() - sent;
          tokens += ids.length;
        }
      }
      return { firstToken, finished: performance.now() - sent, tokens };
    }));
    const stillOpen = slow.open;
    const healthResults = await health.stop();
    const metricsResults = await metrics.stop();
    const loadResults = await load.stop();
    // No request lost: every stream complete.
    for (const result of results) assert.equal(result.tokens, maxTokens);
    // The streams ran side by side: the server's own count of running sequences (GET /load,
    // probed every 50 ms) reached a quarter of them at once, so connections holding HTTP
    // threads did not serialize the requests. (Client-side times are no test of this: how
    // fast a lone stream ends, against when the client got round to sending the last
    // request, depends on the machine; a quicker server made such an assertion fail.)
    const peakRunning = Math.max(0, ...loadResults.map((r) => r.value ?? 0));
    assert.ok(peakRunning >= clients / 4, `at most ${peakRunning} of ${clients} streams ran at once`);
    // The slow clients were there all along.
    assert.equal(stillOpen, 600, `only ${stillOpen} slow connections were open at the end of the streams`);
    const latencies = healthResults.map((r) => r.ms).sort((a, b) => a - b);
    const worst = latencies.at(-1);
    const median = latencies[Math.floor(latencies.length / 2)];
    console.log(`streams running at once: at most ${peakRunning}; longest time to first token ` +
      `${Math.max(...results.map((r) => r.firstToken)).toFixed(0)} ms, shortest stream ` +
      `${Math.min(...results.map((r) => r.finished)).toFixed(0)} ms`);
    console.log(`/health under 600 slow connections + ${clients} streams: ${latencies.length} probes, ` +
      `median ${median.toFixed(1)} ms, max ${worst.toFixed(1)} ms; /metrics max ` +
      `${Math.max(...metricsResults.map((r) => r.ms)).toFixed(1)} ms; slow connections dropped and reopened: ${slow.dropped}`);
    assert.ok(healthResults.length >= 10, `only ${healthResults.length} /health probes ran`);
    const failed = healthResults.filter((r) => r.status !== 200);
    assert.deepEqual(failed, [], 'some /health probes did not answer 200');
    // Starved threads would leave /health unanswered for the whole run. The bound leaves room
    // for one connect whose SYN the kernel dropped and resent after 1 s, which is not the server.
    assert.ok(median < 100, `/health took ${median.toFixed(0)} ms at the median (must be < 100 ms)`);
    assert.ok(worst < 2000, `/health took ${worst.toFixed(0)} ms at worst (must be < 2000 ms); ` +
      `slowest probes: ${latencies.slice(-5).map((ms) => ms.toFixed(0)).join(', ')} ms`);
    assert.deepEqual(metricsResults.filter((r) => r.status !== 200), [], 'some /metrics scrapes failed');
  } finally {
    health?.kill();
    metrics?.kill();
    load?.kill();
    slow.stop();
    assert.equal(await server.stop(), 0);
  }
});

// `lmrun router` in front of real `lmrun serve` workers on loopback: completions and chat,
// streamed and not, pass through unchanged (the official OpenAI client); each policy's
// choices show in the X-Lmrun-Worker header and the router's /metrics; a worker killed
// mid-stream ends that stream with an error event while the next requests go to the
// other worker, and it is re-added when it comes back; requests a worker had not started
// when it died are all served by the other one; --data-parallel-size runs the same on one
// command; the worker file is re-read on SIGHUP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import {
  startWorker, startRouter, storiesGoldens, plainChatTemplate, postJson, scrapeMetrics, metric, sleep, testdataDir,
} from './helpers.mjs';
import path from 'node:path';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';

const qwen3Tiny = { model: path.join(testdataDir, 'qwen3-tiny'), tokenizer: path.join(testdataDir, 'qwen3-tokenizer') };

async function waitFor(predicate, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return true;
    await sleep(20);
  }
  return false;
}

// A metric without labels.
function unlabeled(values, name) {
  assert.ok(name in values, `metric ${name} not found`);
  return values[name];
}

// Two workers and a router over them; `body(router, workers)`, then everything stopped.
async function withRouter(policy, body, { workerArgs = [], workerOptions = {}, routerArgs = [] } = {}) {
  const workers = await Promise.all([startWorker(workerArgs, workerOptions), startWorker(workerArgs, workerOptions)]);
  let router;
  try {
    router = await startRouter(workers.map((w) => w.url), ['--policy', policy, '--health-interval', '0.1',
      ...routerArgs]);
    await body(router, workers);
    assert.equal(await router.stop(), 0);
  } finally {
    if (router) await router.stop();
    for (const worker of workers) await worker.stop();
  }
}

async function completion(url, body) {
  const response = await postJson(url, '/v1/completions', { max_tokens: 4, temperature: 0, ...body });
  assert.equal(response.status, 200, response.text);
  return { worker: response.headers.get('x-lmrun-worker'), json: response.json };
}

test('completions and chat, streamed or not, pass through the router unchanged', async () => {
  await withRouter('round_robin', async (router, workers) => {
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const goldens = storiesGoldens();
    // Round robin over 2 workers: the goldens land on both, and every answer is the golden.
    const responses = await Promise.all(goldens.map((golden) => client.completions.create({
      model: 'stories260k', prompt: golden.prompt_ids, max_tokens: golden.max_new_tokens, temperature: 0,
      ignore_eos: true, stop_token_ids: [1], return_token_ids: true,
    })));
    responses.forEach((response, i) => {
      const golden = goldens[i];
      const ids = golden.stopped_on_token === null ? golden.output_ids : [...golden.output_ids, golden.stopped_on_token];
      assert.deepEqual(response.choices[0].token_ids, ids, golden.name);
    });
    // A stream arrives as chunks whose text adds up to the non-streamed answer.
    const prompt = 'Once upon a time';
    const whole = await client.completions.create({ model: 'stories260k', prompt, max_tokens: 40, temperature: 0 });
    const stream = await client.completions.create({
      model: 'stories260k', prompt, max_tokens: 40, temperature: 0, stream: true,
    });
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      chunks += 1;
    }
    assert.ok(chunks > 5, `only ${chunks} chunks`);
    assert.equal(text, whole.choices[0].text);
    // Chat (the workers' --chat-template), streamed.
    const chat = await client.chat.completions.create({
      model: 'stories260k', messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 16, temperature: 0,
      stream: true,
    });
    let chatText = '';
    for await (const chunk of chat) chatText += chunk.choices[0]?.delta?.content ?? '';
    assert.ok(chatText.length > 0);
    // The worker's own errors come back as they are.
    const bad = await postJson(router.url, '/v1/completions', { prompt: 'x', max_tokens: -1 });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'max_tokens');
    // The router's metrics: both workers served, every request answered 200 or 400.
    const values = await scrapeMetrics(router.url);
    for (const worker of workers) {
      assert.ok(metric(values, 'lmrun:router_requests_total', worker.url) >= 4, worker.url);
      assert.equal(metric(values, 'lmrun:router_worker_healthy', worker.url), 1);
    }
    assert.equal(metric(values, 'lmrun:router_http_responses_total', 'status="200"'), goldens.length + 3);
    // The workers' own metrics, summed.
    assert.ok(metric(values, 'vllm:request_success_total', 'finished_reason="length"') >= 2);
  }, { workerArgs: ['--chat-template', plainChatTemplate] });
});

test('round_robin alternates; cache_aware keeps a conversation on the worker that holds its history', async () => {
  await withRouter('round_robin', async (router) => {
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push((await completion(router.url, { prompt: 'Once upon a time' })).worker);
    assert.notEqual(seen[0], seen[1]);
    assert.equal(seen[0], seen[2]);
    assert.equal(seen[1], seen[3]);
  });
  await withRouter('cache_aware', async (router, workers) => {
    // Two conversations, each turn resending the history: every turn of one stays where its first went.
    const histories = ['Lily had a red ball. ', 'Tom saw a big dog. '];
    const homes = [];
    for (let turn = 0; turn < 4; turn++) {
      for (let c = 0; c < 2; c++) {
        histories[c] += `Turn ${turn}: what happened next? `;
        const { worker } = await completion(router.url, { prompt: histories[c] });
        if (turn === 0) homes.push(worker);
        else assert.equal(worker, homes[c], `conversation ${c} turn ${turn}`);
      }
    }
    assert.notEqual(homes[0], homes[1], 'the two conversations were not spread');
    const values = await scrapeMetrics(router.url);
    assert.equal(metric(values, 'lmrun:router_decisions_total', 'reason="cache_match"'), 6);
    assert.ok(unlabeled(values, 'lmrun:router_cache_hit_rate_estimate') > 0.5);
    // The workers' prefix caches agree: they hit (block size 16, histories past 16 tokens).
    let hits = 0;
    for (const worker of workers) hits += metric(await scrapeMetrics(worker.url), 'vllm:prefix_cache_hits_total');
    assert.ok(hits > 0, 'no prefix-cache hit on the workers');
  }, { workerArgs: ['--block-size', '16'] });
});

test('session keeps a user on one worker', async () => {
  await withRouter('session', async (router) => {
    const alice = [];
    const bob = [];
    for (let i = 0; i < 3; i++) {
      alice.push((await completion(router.url, { prompt: `a${i}`, user: 'alice' })).worker);
      bob.push((await completion(router.url, { prompt: `b${i}`, user: 'bob' })).worker);
    }
    assert.equal(new Set(alice).size, 1);
    assert.equal(new Set(bob).size, 1);
    assert.notEqual(alice[0], bob[0]);
  });
});

// qwen3-tiny decodes ~600 tokens/s on one thread: a 2000-token stream lasts seconds, so a
// worker killed after its first chunk is killed mid-stream.
test('a worker killed mid-stream: that stream ends with an error event, the next requests go to the other, and it is re-added when back', async () => {
  await withRouter('round_robin', async (router, workers) => {
    const response = await fetch(`${router.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once', max_tokens: 2000, ignore_eos: true, temperature: 0, stream: true }),
    });
    assert.equal(response.status, 200);
    const victimUrl = response.headers.get('x-lmrun-worker');
    const victim = workers.find((w) => w.url === victimUrl);
    const survivor = workers.find((w) => w.url !== victimUrl);
    const reader = response.body.getReader();
    const first = await reader.read();
    assert.ok(!first.done);
    victim.proc.kill('SIGKILL');
    let text = new TextDecoder().decode(first.value);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
    assert.ok(events.length < 2000, 'the stream ran to its end');
    const last = events.at(-1);
    assert.notEqual(last, 'data: [DONE]');
    assert.equal(JSON.parse(last.slice(6)).error.code, 'worker_failed');
    // Every next request is served, by the survivor.
    for (let i = 0; i < 4; i++) assert.equal((await completion(router.url, { prompt: `Hi ${i}` })).worker, survivor.url);
    let values = await scrapeMetrics(router.url);
    assert.equal(metric(values, 'lmrun:router_worker_healthy', victimUrl), 0);
    assert.equal(unlabeled(values, 'lmrun:router_stream_errors_total'), 1);
    // The same worker back on its port: re-added, and round robin reaches it again.
    const port = Number(new URL(victimUrl).port);
    const back = await startWorker([], { ...qwen3Tiny, port });
    workers.push(back);
    assert.ok(await waitFor(async () => metric(await scrapeMetrics(router.url), 'lmrun:router_worker_healthy', victimUrl) === 1));
    const served = new Set();
    for (let i = 0; i < 4; i++) served.add((await completion(router.url, { prompt: `Hey ${i}` })).worker);
    assert.deepEqual([...served].sort(), [victimUrl, survivor.url].sort());
    values = await scrapeMetrics(router.url);
    assert.equal(metric(values, 'lmrun:router_worker_healthy', victimUrl), 1);
  }, { workerOptions: qwen3Tiny });
});

test('requests a worker had not started when it died are all served by the other, streamed or not', async () => {
  await withRouter('round_robin', async (router, workers) => {
    // Frozen, the worker accepts connections (the kernel does) but answers nothing.
    const [frozen, healthy] = workers;
    frozen.proc.kill('SIGSTOP');
    const requests = [];
    for (let i = 0; i < 8; i++) {
      const stream = i % 2 === 1;
      requests.push((async () => {
        const response = await fetch(`${router.url}/v1/completions`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ prompt: `Request ${i}`, max_tokens: 8, temperature: 0, stream }),
        });
        const text = await response.text();
        return { status: response.status, worker: response.headers.get('x-lmrun-worker'), text, stream };
      })());
    }
    await sleep(300);  // the requests are sent, some to the frozen worker
    frozen.proc.kill('SIGKILL');
    const results = await Promise.all(requests);
    for (const result of results) {
      assert.equal(result.status, 200, result.text);
      assert.equal(result.worker, healthy.url);
      if (result.stream) assert.ok(result.text.trimEnd().endsWith('data: [DONE]'), result.text);
      else assert.equal(JSON.parse(result.text).choices[0].finish_reason, 'length');
    }
    const values = await scrapeMetrics(router.url);
    assert.ok(unlabeled(values, 'lmrun:router_retries_total') >= 1, 'nothing was retried');
    assert.equal(unlabeled(values, 'lmrun:router_stream_errors_total'), 0);
  });
});

test('serve --data-parallel-size 2: one port, two pinned replicas, a dead replica restarted, SIGTERM exits 0', async () => {
  const server = await startWorker(['--data-parallel-size', '2', '--data-parallel-policy', 'round_robin',
    '--kv-cache-memory', '0.5']);
  try {
    assert.match(server.log(), /replica 0 \(pid \d+, 1 cpus\) is ready/);
    assert.match(server.log(), /replica 1 \(pid \d+, 1 cpus\) is ready/);
    const served = [];
    for (let i = 0; i < 4; i++) served.push((await completion(server.url, { prompt: 'Once upon a time' })).worker);
    assert.equal(new Set(served).size, 2, 'both replicas serve');
    assert.equal(served[0], served[2]);
    // A replica killed: the other serves at once, and the dead one comes back on its port.
    const pid = Number(server.log().match(/replica 1 \(pid (\d+)/)[1]);
    const replicaUrl = server.log().match(/replica 1 \(pid \d+, 1 cpus\) is ready on (\S+)/)[1];
    process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 3; i++) await completion(server.url, { prompt: `After ${i}` });
    assert.ok(await waitFor(async () => /replica 1 \(pid \d+, 1 cpus\) is ready[^]*replica 1 \(pid \d+, 1 cpus\) is ready/.test(server.log())));
    assert.ok(await waitFor(async () => metric(await scrapeMetrics(server.url), 'lmrun:router_worker_healthy', replicaUrl) === 1));
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('--worker-file is re-read on SIGHUP: a worker added to it gets requests, one removed gets none', async () => {
  const workers = await Promise.all([startWorker([]), startWorker([])]);
  const dir = mkdtempSync(path.join(tmpdir(), 'lmrun-router-'));
  const file = path.join(dir, 'workers.txt');
  writeFileSync(file, `# the first worker only\n${workers[0].url}\n`);
  let router;
  try {
    router = await startRouter([], ['--worker-file', file, '--policy', 'round_robin', '--health-interval', '0.1']);
    for (let i = 0; i < 2; i++) assert.equal((await completion(router.url, { prompt: `a${i}` })).worker, workers[0].url);
    writeFileSync(file, `${workers[1].url}\n`);
    router.proc.kill('SIGHUP');
    assert.ok(await waitFor(async () => {
      const values = await scrapeMetrics(router.url);
      return `lmrun:router_worker_healthy{worker="${workers[1].url}"}` in values &&
        metric(values, 'lmrun:router_worker_healthy', workers[1].url) === 1;
    }));
    for (let i = 0; i < 3; i++) assert.equal((await completion(router.url, { prompt: `b${i}` })).worker, workers[1].url);
    assert.equal(await router.stop(), 0);
  } finally {
    if (router) await router.stop();
    for (const worker of workers) await worker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

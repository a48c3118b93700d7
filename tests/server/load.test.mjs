// Load: 64 concurrent streaming clients for a bounded time, every response
// complete and correct, /metrics consistent with what was sent; and 256
// concurrent streams that all make progress at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
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

test('256 concurrent streams all progress together', async () => {
  const server = await startServer(['--max-num-seqs', '256', '--max-num-batched-tokens', '4096']);
  try {
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
    for (const result of results) assert.equal(result.tokens, maxTokens);
    const longestFirstToken = Math.max(...results.map((r) => r.firstToken));
    const shortestStream = Math.min(...results.map((r) => r.finished));
    // No request waited as long as a whole stream takes: none was queued behind another's end.
    assert.ok(longestFirstToken < shortestStream,
      `longest time to first token ${longestFirstToken} ms, shortest whole stream ${shortestStream} ms`);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

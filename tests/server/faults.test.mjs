// Faults: a client that disconnects mid-stream, or before a non-streamed answer,
// frees its KV blocks; a tiny --max-queued-requests answers 429 with Retry-After;
// SIGTERM lets the in-flight stream finish, refuses new work and exits 0, and
// with slow clients connected and work left at --shutdown-timeout it still
// exits by the deadline (code 4).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startServer, scrapeMetrics, metric, postJson, sleep } from './helpers.mjs';

async function waitFor(predicate, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return true;
    await sleep(20);
  }
  return false;
}

test('a client that disconnects mid-stream is aborted and its KV blocks are freed', async () => {
  const server = await startServer(['--block-size', '16']);
  try {
    const controller = new AbortController();
    const response = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: [1], max_tokens: 500, ignore_eos: true, stream: true }),
      signal: controller.signal,
    });
    assert.equal(response.status, 200);
    const reader = response.body.getReader();
    await reader.read();  // the first chunk: the request is running
    // The gauges are published right after the step that produced the chunk.
    const running = await waitFor(async () => {
      const during = await scrapeMetrics(server.url);
      return metric(during, 'vllm:num_requests_running') === 1 && metric(during, 'vllm:kv_cache_usage_perc') > 0;
    });
    assert.ok(running, 'the request is not seen running');
    controller.abort();
    const freed = await waitFor(async () => {
      const now = await scrapeMetrics(server.url);
      return metric(now, 'vllm:kv_cache_usage_perc') === 0 && metric(now, 'vllm:num_requests_running') === 0 &&
        metric(now, 'vllm:request_success_total', 'finished_reason="abort"') === 1;
    });
    assert.ok(freed, 'KV usage did not return to 0 after the disconnect');
    const after = await scrapeMetrics(server.url);
    assert.ok(metric(after, 'vllm:generation_tokens_total') < 500, 'the request ran to the end instead of being aborted');
    assert.equal(metric(after, 'vllm:request_success_total', 'finished_reason="length"'), 0);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('a client that disconnects before its non-streamed answer is aborted and its KV blocks are freed', async () => {
  const server = await startServer(['--block-size', '16']);
  try {
    const controller = new AbortController();
    const pending = fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: [1], max_tokens: 500, n: 8, ignore_eos: true }),
      signal: controller.signal,
    }).catch((error) => error);
    const running = await waitFor(async () => metric(await scrapeMetrics(server.url), 'vllm:kv_cache_usage_perc') > 0, 10000);
    assert.ok(running, 'the request never ran');
    controller.abort();
    assert.equal((await pending).name, 'AbortError');
    const freed = await waitFor(async () => {
      const now = await scrapeMetrics(server.url);
      return metric(now, 'vllm:kv_cache_usage_perc') === 0 && metric(now, 'vllm:num_requests_running') === 0 &&
        metric(now, 'vllm:request_success_total', 'finished_reason="abort"') === 8;
    });
    assert.ok(freed, 'KV usage did not return to 0 after the disconnect');
    const after = await scrapeMetrics(server.url);
    assert.ok(metric(after, 'vllm:generation_tokens_total') < 8 * 500, 'the request ran to the end instead of being aborted');
    assert.equal(metric(after, 'vllm:request_success_total', 'finished_reason="length"'), 0);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('beyond --max-queued-requests the server answers 429 with Retry-After', async () => {
  const server = await startServer(['--max-num-seqs', '1', '--max-queued-requests', '1']);
  try {
    const body = { prompt: [1], max_tokens: 400, ignore_eos: true };
    const responses = await Promise.all(Array.from({ length: 6 }, () => postJson(server.url, '/v1/completions', body)));
    const ok = responses.filter((r) => r.status === 200);
    const busy = responses.filter((r) => r.status === 429);
    assert.equal(ok.length + busy.length, 6, responses.map((r) => r.status).join(','));
    assert.ok(ok.length >= 1, 'none admitted');
    assert.ok(busy.length >= 1, 'no request was refused');
    for (const response of busy) {
      assert.equal(response.headers.get('retry-after'), '1');
      assert.equal(response.json.error.type, 'rate_limit_error');
    }
    for (const response of ok) assert.equal(response.json.usage.completion_tokens, 400);
    // The queue drains: a request after the burst is admitted again.
    const later = await postJson(server.url, '/v1/completions', { prompt: [1], max_tokens: 4 });
    assert.equal(later.status, 200);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('SIGTERM: the in-flight stream finishes, new requests are refused, exit code 0', async () => {
  const server = await startServer([]);
  const response = await fetch(`${server.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: [1], max_tokens: 480, ignore_eos: true, stream: true }),
  });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = decoder.decode((await reader.read()).value, { stream: true });
  server.proc.kill('SIGTERM');
  await sleep(50);
  let refused = false;
  try {
    const late = await postJson(server.url, '/v1/completions', { prompt: [1], max_tokens: 2 });
    refused = late.status === 503;
  } catch {
    refused = true;  // already closed
  }
  assert.ok(refused, 'a request after SIGTERM was served');
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value, { stream: true });
  assert.ok(text.endsWith('data: [DONE]\n\n'));
  assert.match(text, /"finish_reason":"length"/);
  const { code } = await server.exited;
  assert.equal(code, 0);
});

test('a prompt that can never fit the KV cache is a 400, and the server goes on', async () => {
  const server = await startServer(['--block-size', '16', '--kv-cache-memory', '0.0001']);  // 5 blocks = 80 tokens
  try {
    const prompt = [1, ...Array.from({ length: 200 }, (_, i) => 3 + i)];
    const refused = await postJson(server.url, '/v1/completions', { prompt, max_tokens: 4 });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.json.error.param, 'prompt');
    assert.match(refused.json.error.message, /KV/);
    const fine = await postJson(server.url, '/v1/completions', { prompt: [1], max_tokens: 4 });
    assert.equal(fine.status, 200);
    assert.equal(fine.json.usage.completion_tokens, 4);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('SIGTERM with slow clients connected and work left: exit by --shutdown-timeout, code 4', async () => {
  const server = await startServer(['--shutdown-timeout', '2', '--max-num-seqs', '1']);
  const slow = Array.from({ length: 50 }, () => {
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\n');  // and never more
    return socket;
  });
  // More work than 2 s allow: one sequence at a time, 200 requests of 500 tokens queued.
  const body = { prompt: [1], max_tokens: 500, ignore_eos: true };
  const responses = Array.from({ length: 200 }, () => postJson(server.url, '/v1/completions', body).catch((error) => error));
  await waitFor(async () => metric(await scrapeMetrics(server.url), 'vllm:num_requests_waiting') > 100);
  const start = performance.now();
  server.proc.kill('SIGTERM');
  const { code } = await server.exited;
  const seconds = (performance.now() - start) / 1000;
  assert.equal(code, 4, server.log());
  // The deadline, with room for a loaded machine (this is not a speed test: without the deadline the
  // queued work alone would take far longer, and slow clients would hold the exit forever).
  assert.ok(seconds < 2 + 5, `exited ${seconds.toFixed(1)} s after SIGTERM`);
  assert.match(server.log(), /aborting \d+ unfinished sequences/);
  const settled = await Promise.all(responses);
  assert.ok(settled.some((r) => r.status === 200), 'none finished before the deadline');
  assert.ok(settled.every((r) => r.status === 200 || r.status === 503 || r instanceof Error),
    settled.map((r) => r.status ?? String(r)).join(','));
  for (const socket of slow) socket.destroy();
});

// Faults: a client that disconnects mid-stream frees its KV blocks; a tiny
// --max-queued-requests answers 429 with Retry-After; SIGTERM lets the
// in-flight stream finish, refuses new work and exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
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
    const during = await scrapeMetrics(server.url);
    assert.equal(metric(during, 'vllm:num_requests_running'), 1);
    assert.ok(metric(during, 'vllm:kv_cache_usage_perc') > 0);
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

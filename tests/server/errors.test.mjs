// Bad input: one test each, OpenAI error JSON with the right status and field,
// and nothing reaches the engine (its counters do not move).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, postJson, scrapeMetrics, metric } from './helpers.mjs';

let server;
let before_metrics;

before(async () => {
  server = await startServer([]);  // no --chat-template: stories260k has none
  before_metrics = await scrapeMetrics(server.url);
});

after(async () => {
  // Nothing of the bad requests reached the engine.
  const now = await scrapeMetrics(server.url);
  assert.equal(metric(now, 'vllm:prompt_tokens_total'), metric(before_metrics, 'vllm:prompt_tokens_total'));
  assert.equal(metric(now, 'vllm:request_success_total', 'finished_reason="error"'), 0);
  assert.equal(metric(now, 'vllm:request_success_total', 'finished_reason="length"'), 0);
  assert.equal(await server.stop(), 0);
});

function assertError(response, status, param) {
  assert.equal(response.status, status, response.text);
  assert.equal(response.headers.get('content-type'), 'application/json');
  const { error } = response.json;
  assert.equal(typeof error.message, 'string');
  assert.ok(error.message.length > 0);
  assert.equal(typeof error.type, 'string');
  assert.ok('code' in error);
  assert.equal(error.param, param, error.message);
}

const completions = (body) => postJson(server.url, '/v1/completions', body);
const chat = (body) => postJson(server.url, '/v1/chat/completions', body);

test('malformed JSON', async () => {
  assertError(await completions('{"prompt": "a", '), 400, null);
  assertError(await chat('not json'), 400, null);
});

test('a body that is not an object', async () => {
  assertError(await completions('[1, 2]'), 400, null);
});

test('wrong types name the field', async () => {
  assertError(await completions({ prompt: 'a', temperature: 'hot' }), 400, 'temperature');
  assertError(await completions({ prompt: 'a', max_tokens: '10' }), 400, 'max_tokens');
  assertError(await completions({ prompt: 'a', stream: 'yes' }), 400, 'stream');
  assertError(await completions({ prompt: 'a', stop: 5 }), 400, 'stop');
  assertError(await completions({ prompt: { text: 'a' } }), 400, 'prompt');
  assertError(await chat({ messages: 'hi' }), 400, 'messages');
});

test('missing prompt or messages', async () => {
  assertError(await completions({ max_tokens: 5 }), 400, 'prompt');
  assertError(await chat({ max_tokens: 5 }), 400, 'messages');
});

test('unknown model name is 404 model_not_found', async () => {
  const response = await completions({ model: 'gpt-4o', prompt: 'a' });
  assertError(response, 404, 'model');
  assert.equal(response.json.error.code, 'model_not_found');
});

test('prompt longer than the context', async () => {
  const prompt = Array.from({ length: 600 }, (_, i) => 3 + (i % 300));
  assertError(await completions({ prompt, max_tokens: 1 }), 400, 'prompt');
  const long = await completions({ prompt: prompt.slice(0, 500), max_tokens: 100 });
  assertError(long, 400, 'max_tokens');
  assert.match(long.json.error.message, /maximum context length is 512/);
});

test('token ids outside the vocabulary', async () => {
  assertError(await completions({ prompt: [1, 512] }), 400, 'prompt');
  assertError(await completions({ prompt: [1, -3] }), 400, 'prompt');
});

test('invalid sampling values name the field', async () => {
  assertError(await completions({ prompt: 'a', temperature: -1 }), 400, 'temperature');
  assertError(await completions({ prompt: 'a', top_p: 2 }), 400, 'top_p');
  assertError(await completions({ prompt: 'a', top_k: -7 }), 400, 'top_k');
  assertError(await completions({ prompt: 'a', min_p: 1.5 }), 400, 'min_p');
  assertError(await completions({ prompt: 'a', n: 0 }), 400, 'n');
  assertError(await completions({ prompt: 'a', max_tokens: 0 }), 400, 'max_tokens');
  assertError(await completions({ prompt: 'a', logprobs: 50 }), 400, 'logprobs');
  assertError(await completions({ prompt: 'a', repetition_penalty: 0 }), 400, 'repetition_penalty');
  assertError(await completions({ prompt: 'a', max_tokens: 5, min_tokens: 9 }), 400, 'min_tokens');
  assertError(await chat({ messages: [{ role: 'user', content: 'a' }], top_logprobs: 3 }), 400, 'top_logprobs');
});

test('chat without a chat template', async () => {
  const response = await chat({ messages: [{ role: 'user', content: 'hi' }] });
  assertError(response, 400, 'messages');
  assert.match(response.json.error.message, /chat template/);
});

test('unknown route is a JSON 404', async () => {
  const response = await postJson(server.url, '/v1/embeddings', { input: 'a' });
  assert.equal(response.status, 404);
  assert.equal(typeof response.json.error.message, 'string');
});

// --api-key: bearer auth on /v1, /tokenize and /detokenize (unless
// --allow-unauthenticated-tokenize), OpenAI 401 error body; /health and /metrics stay open.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, postJson } from './helpers.mjs';

let server;

before(async () => {
  server = await startServer(['--api-key', 'sekret']);
});

after(async () => {
  assert.equal(await server.stop(), 0);
});

test('missing or wrong key is 401 with an OpenAI error body', async () => {
  for (const headers of [{}, { Authorization: 'Bearer wrong' }, { Authorization: 'sekret' }]) {
    const response = await postJson(server.url, '/v1/completions', { prompt: 'a', max_tokens: 2 }, headers);
    assert.equal(response.status, 401);
    assert.equal(response.json.error.code, 'invalid_api_key');
    assert.equal(typeof response.json.error.message, 'string');
  }
  const models = await fetch(`${server.url}/v1/models`);
  assert.equal(models.status, 401);
});

test('the OpenAI client with the right key gets through, with a wrong key it fails', async () => {
  const good = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sekret', maxRetries: 0 });
  const response = await good.completions.create({ model: 'stories260k', prompt: 'Once', max_tokens: 3 });
  assert.equal(response.choices.length, 1);
  assert.equal(response.usage.completion_tokens, 3);
  const bad = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'nope', maxRetries: 0 });
  await assert.rejects(bad.completions.create({ model: 'stories260k', prompt: 'Once', max_tokens: 3 }),
    (error) => error.status === 401);
});

test('health and metrics need no key', async () => {
  assert.equal((await fetch(`${server.url}/health`)).status, 200);
  assert.equal((await fetch(`${server.url}/metrics`)).status, 200);
});

test('tokenize and detokenize need the key', async () => {
  assert.equal((await postJson(server.url, '/tokenize', { prompt: 'a' })).status, 401);
  assert.equal((await postJson(server.url, '/detokenize', { tokens: [1] })).status, 401);
  const keyed = await postJson(server.url, '/tokenize', { prompt: 'a' }, { Authorization: 'Bearer sekret' });
  assert.equal(keyed.status, 200);
});

test('--allow-unauthenticated-tokenize opens only tokenize and detokenize', async () => {
  const open = await startServer(['--api-key', 'sekret', '--allow-unauthenticated-tokenize']);
  try {
    assert.equal((await postJson(open.url, '/tokenize', { prompt: 'a' })).status, 200);
    assert.equal((await postJson(open.url, '/detokenize', { tokens: [1] })).status, 200);
    assert.equal((await postJson(open.url, '/v1/completions', { prompt: 'a', max_tokens: 1 })).status, 401);
  } finally {
    assert.equal(await open.stop(), 0);
  }
});

// Bad input: one test each, OpenAI error JSON with the right status and field,
// and nothing reaches the engine (its counters do not move); the hostile inputs
// of issue 10 exactly as they were reported.
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
  assert.ok(!Object.keys(now).some((key) => key.includes('status="500"')), 'a bad request was answered 500');
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

test('JSON nested 200,000 deep is a 400 on every endpoint', async () => {
  const deep = '['.repeat(200000) + ']'.repeat(200000);
  for (const [path, body] of [['/tokenize', deep], ['/detokenize', `{"tokens": ${deep}}`],
    ['/v1/chat/completions', `{"messages": ${deep}}`], ['/v1/completions', `{"prompt": ${deep}}`]]) {
    const response = await postJson(server.url, path, body);
    assertError(response, 400, null);
    assert.equal(response.json.error.message, 'request body: JSON nested deeper than 256 levels');
  }
});

test('a chunked body over 64 MiB is a 413 naming the limit; a gzip body is a 415', async () => {
  const chunk = new Uint8Array(1 << 20).fill(0x20);
  let sent = 0;
  const body = new ReadableStream({
    pull(controller) {
      if (sent++ < 65) controller.enqueue(chunk);  // 65 MiB of spaces, chunked (no Content-Length)
      else controller.close();
    },
  });
  const response = await fetch(`${server.url}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body, duplex: 'half',
  });
  assert.equal(response.status, 413);
  const { error } = await response.json();
  assert.equal(error.message,
    "The request body is larger than this server's limit of 67108864 bytes (64 MiB; lmrun serve --max-request-body-mb).");
  const { gzipSync } = await import('node:zlib');
  const bomb = gzipSync(Buffer.alloc(300 << 20, 0x20));  // 300 MB of spaces in about 300 KB
  const gzip = await postJson(server.url, '/v1/completions', bomb, { 'Content-Encoding': 'gzip' });
  assertError(gzip, 415, null);
  assert.equal(gzip.json.error.code, 'unsupported_content_encoding');
  assert.equal(gzip.headers.get('accept-encoding'), 'identity');
});

test('an object with 80,000 keys is answered', async () => {
  const body = { prompt: 'a', max_tokens: 1 };
  for (let i = 0; i < 80000; i++) body[`k${i}`] = i;
  const response = await postJson(server.url, '/tokenize', body);
  assert.equal(response.status, 200, response.text);
  const plain = await postJson(server.url, '/tokenize', { prompt: 'a' });
  assert.deepEqual(response.json.tokens, plain.json.tokens);
});

test('huge integers and type confusion name the field', async () => {
  const cases = [
    ['/v1/completions', '{"prompt": "a", "max_tokens": 9223372036854775807}', 'max_tokens'],
    ['/v1/completions', '{"prompt": "a", "best_of": 18446744073709551615}', 'best_of'],
    ['/v1/completions', '{"prompt": "a", "n": -1}', 'n'],
    ['/v1/completions', '{"prompt": "a", "logprobs": 1099511627776}', 'logprobs'],
    ['/v1/completions', '{"prompt": "a", "seed": 18446744073709551615}', 'seed'],
    ['/tokenize', '{"prompt": "a", "return_token_strs": "yes"}', 'return_token_strs'],
    ['/v1/completions', '{"prompt": "a", "response_format": {"type": 5}}', 'response_format'],
    ['/v1/chat/completions', '{"messages": [{"role": "user", "content": [{"type": 5}]}]}', 'messages[0].content'],
  ];
  for (const [path, body, param] of cases) assertError(await postJson(server.url, path, body), 400, param);
});

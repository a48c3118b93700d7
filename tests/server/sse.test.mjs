// SSE framing as curl sees it on the wire.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startServer, plainChatTemplate } from './helpers.mjs';

const run = promisify(execFile);
let server;

before(async () => {
  server = await startServer(['--chat-template', plainChatTemplate]);
});

after(async () => {
  assert.equal(await server.stop(), 0);
});

async function curl(path, body) {
  const { stdout } = await run('curl', ['-sS', '-N', '-i', '-H', 'Content-Type: application/json', '-d',
    JSON.stringify(body), `${server.url}${path}`]);
  const split = stdout.indexOf('\r\n\r\n');
  return { headers: stdout.slice(0, split).toLowerCase(), body: stdout.slice(split + 4) };
}

function checkFraming(body) {
  assert.ok(body.endsWith('data: [DONE]\n\n'), JSON.stringify(body.slice(-40)));
  const events = body.slice(0, -2).split('\n\n');
  assert.equal(events.at(-1), 'data: [DONE]');
  const chunks = events.slice(0, -1).map((event) => {
    assert.match(event, /^data: \{.*\}$/s);
    assert.ok(!event.slice(6).includes('\n'), 'one line per event');
    return JSON.parse(event.slice(6));
  });
  assert.equal(new Set(chunks.map((c) => c.id)).size, 1);
  return chunks;
}

test('completion stream: headers, data lines, usage chunk, [DONE]', async () => {
  const { headers, body } = await curl('/v1/completions', {
    prompt: 'Once upon a time', max_tokens: 12, stream: true, stream_options: { include_usage: true },
  });
  assert.match(headers, /^http\/1\.1 200/);
  assert.match(headers, /content-type: text\/event-stream/);
  assert.match(headers, /transfer-encoding: chunked/);
  const chunks = checkFraming(body);
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.equal(usage.usage.completion_tokens, 12);
  for (const chunk of chunks.slice(0, -1)) {
    assert.equal(chunk.object, 'text_completion');
    assert.equal(chunk.usage, null);
  }
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'length');
});

test('chat stream: role first, content deltas, finish_reason', async () => {
  const { body } = await curl('/v1/chat/completions', {
    messages: [{ role: 'user', content: 'Hi' }], max_tokens: 6, stream: true,
  });
  const chunks = checkFraming(body);
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  for (const chunk of chunks) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    assert.ok(!('usage' in chunk));
  }
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
  assert.ok(chunks.slice(1).some((c) => (c.choices[0].delta.content ?? '').length > 0));
});

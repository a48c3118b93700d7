// Structured output, tool calling and reasoning through the official OpenAI
// client, against `lmrun serve` with qwen3-tiny (random weights, the real Qwen3
// tokenizer and chat template: nothing in the model wants valid JSON or tool
// calls). Outputs are checked by an independent validator
// (tests/structured/validate_json.py, python3-jsonschema).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { startServer, qwen3TinyDir, qwen3TokenizerDir } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const structuredDir = path.resolve(here, '..', 'structured');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'lmrun-structured-'));

// [{schema, text}] -> [{valid, error}] from python3-jsonschema. Asynchronous: a synchronous
// child process blocks the event loop, and keep-alive connections the client holds meanwhile
// can pass the server's idle timeout unnoticed (the next request on one then fails with
// "other side closed"); one run per batch, not per output, for the same reason and for time.
async function validate(records) {
  const file = path.join(scratch, `records-${Date.now()}-${Math.random()}.jsonl`);
  writeFileSync(file, records.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const { stdout } = await promisify(execFile)('python3', [path.join(structuredDir, 'validate_json.py'), file],
    { encoding: 'utf8' });
  return stdout.trim().split('\n').map((line) => JSON.parse(line));
}

// Each of [{schema, text, label}] validates.
async function assertAllValid(records) {
  const results = await validate(records.map(({ schema, text }) => ({ schema, text })));
  assert.equal(results.length, records.length);
  results.forEach((result, i) => assert.ok(result.valid, `${records[i].label}: ${records[i].text}\n  ${result.error}`));
}

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', description: 'City name', maxLength: 12 },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const timeTool = {
  type: 'function',
  function: {
    name: 'get_time',
    parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'] },
  },
};
const parametersOf = { get_weather: weatherTool.function.parameters, get_time: timeTool.function.parameters };

const noThinking = { chat_template_kwargs: { enable_thinking: false } };
const userTurn = [{ role: 'user', content: 'What is the weather in Paris?' }];

let server;
let client;

before(async () => {
  server = await startServer(['--tokenizer', qwen3TokenizerDir, '--reasoning-parser', 'qwen3',
    '--tool-call-parser', 'hermes', '--enable-auto-tool-choice', '--max-model-len', '2048'], { model: qwen3TinyDir });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  await server.stop();
});

// The streamed deltas of one choice, put back together.
async function collectStream(stream) {
  const result = { content: '', reasoning: '', toolCalls: [], finishReason: null };
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    const delta = choice.delta;
    if (delta.content) result.content += delta.content;
    if (delta.reasoning_content) result.reasoning += delta.reasoning_content;
    for (const call of delta.tool_calls ?? []) {
      if (!result.toolCalls[call.index]) {
        assert.ok(call.id && call.type === 'function' && call.function.name, 'a call opens with id, type and name');
        result.toolCalls[call.index] = { id: call.id, name: call.function.name, arguments: '' };
      }
      result.toolCalls[call.index].arguments += call.function?.arguments ?? '';
    }
    if (choice.finish_reason) result.finishReason = choice.finish_reason;
  }
  return result;
}

test('response_format json_schema: every output parses and validates, streamed or not', async () => {
  const schema = JSON.parse(readFileSync(path.join(structuredDir, 'schemas.json'), 'utf8'))
    .find((entry) => entry.name === 'nested_object').schema;
  const records = [];
  for (const seed of [1, 2, 3]) {
    const body = {
      model: 'qwen3-tiny', messages: userTurn, temperature: 1, seed, max_tokens: 400, ...noThinking,
      response_format: { type: 'json_schema', json_schema: { name: 'user', schema, strict: true } },
    };
    const whole = await client.chat.completions.create(body);
    assert.equal(whole.choices[0].finish_reason, 'stop');
    records.push({ schema, text: whole.choices[0].message.content });
    const streamed = await collectStream(await client.chat.completions.create({ ...body, stream: true }));
    assert.equal(streamed.finishReason, 'stop');
    assert.equal(streamed.content, whole.choices[0].message.content, 'same seed, same output');
    records.push({ schema, text: streamed.content });
  }
  for (const result of await validate(records)) assert.ok(result.valid, result.error);
});

test('structured_outputs, guided_* and json_object on both endpoints', async () => {
  const cases = [
    [{ structured_outputs: { regex: '[A-Z]{2}-[0-9]{3}' } }, (text) => /^[A-Z]{2}-[0-9]{3}$/.test(text)],
    [{ guided_regex: '(yes|no)!' }, (text) => /^(yes|no)!$/.test(text)],
    [{ structured_outputs: { choice: ['alpha', 'beta'] } }, (text) => ['alpha', 'beta'].includes(text)],
    [{ guided_choice: ['x', 'y'] }, (text) => ['x', 'y'].includes(text)],
    [{ structured_outputs: { grammar: 'root ::= "(" [0-9]{1,2} ("," [0-9]{1,2}){0,2} ")"' } },
      (text) => /^\(\d{1,2}(,\d{1,2}){0,2}\)$/.test(text)],
    [{ guided_json: { type: 'array', items: { type: 'boolean' }, maxItems: 3 } },
      (text) => Array.isArray(JSON.parse(text))],
  ];
  for (const [constraint, accepts] of cases) {
    const chat = await client.chat.completions.create({
      model: 'qwen3-tiny', messages: userTurn, temperature: 1, seed: 4, max_tokens: 200, ...noThinking, ...constraint,
    });
    assert.equal(chat.choices[0].finish_reason, 'stop', JSON.stringify(constraint));
    assert.ok(accepts(chat.choices[0].message.content), `${JSON.stringify(constraint)}: ${chat.choices[0].message.content}`);
    const completion = await client.completions.create({
      model: 'qwen3-tiny', prompt: 'Answer:', temperature: 1, seed: 5, max_tokens: 200, ...constraint,
    });
    assert.equal(completion.choices[0].finish_reason, 'stop');
    assert.ok(accepts(completion.choices[0].text), `${JSON.stringify(constraint)}: ${completion.choices[0].text}`);
  }
  const object = await client.chat.completions.create({
    model: 'qwen3-tiny', messages: userTurn, temperature: 1, seed: 6, max_tokens: 300, ...noThinking,
    response_format: { type: 'json_object' },
  });
  if (object.choices[0].finish_reason === 'stop') {
    assert.equal(typeof JSON.parse(object.choices[0].message.content), 'object');
  } else {
    assert.match(object.choices[0].message.content, /^\{/);
  }
});

test('tool_choice required and named: tool_calls parse, arguments validate, finish_reason tool_calls', async () => {
  const toValidate = [];
  const jobs = [];
  for (const stream of [false, true]) {
    for (const [tool_choice, parallel] of [['required', true], ['required', false],
      [{ type: 'function', function: { name: 'get_time' } }, true]]) {
      for (const seed of [1, 2]) jobs.push((async () => {
        const body = {
          model: 'qwen3-tiny', messages: userTurn, temperature: 1, seed, max_tokens: 600, ...noThinking,
          tools: [weatherTool, timeTool], tool_choice, parallel_tool_calls: parallel, stream,
        };
        let calls;
        let finishReason;
        if (stream) {
          const collected = await collectStream(await client.chat.completions.create(body));
          calls = collected.toolCalls.map((c) => ({ id: c.id, function: { name: c.name, arguments: c.arguments } }));
          finishReason = collected.finishReason;
          assert.equal(collected.content, '');
        } else {
          const response = await client.chat.completions.create(body);
          const message = response.choices[0].message;
          assert.equal(message.content, null);
          calls = message.tool_calls;
          finishReason = response.choices[0].finish_reason;
          for (const call of calls) assert.equal(call.type, 'function');
        }
        const label = `${JSON.stringify(tool_choice)} parallel=${parallel} stream=${stream} seed=${seed}`;
        assert.equal(finishReason, 'tool_calls', label);
        assert.ok(calls.length >= 1, label);
        if (!parallel || typeof tool_choice === 'object') assert.equal(calls.length, 1, label);
        if (typeof tool_choice === 'object') assert.equal(calls[0].function.name, 'get_time');
        assert.equal(new Set(calls.map((c) => c.id)).size, calls.length, 'ids are distinct');
        for (const call of calls) {
          assert.match(call.id, /^call_[0-9a-f]{24}$/);
          toValidate.push({ schema: parametersOf[call.function.name], text: call.function.arguments, label });
        }
      })());
    }
  }
  // All 12 at once, as concurrent clients send them: the engine decodes them in one batch, each
  // under its own constraint.
  await Promise.all(jobs);
  await assertAllValid(toValidate);
});

test('tool_choice auto with the hermes parser: a <tool_call> block becomes tool_calls, other text stays content', async () => {
  // The model is steered into Qwen's tool-call syntax by a regex: the parser must read it back.
  const syntax = '<tool_call>\\n\\{"name": "get_weather", "arguments": \\{"city": "[a-z]{1,6}", "unit": "celsius"\\}\\}\\n</tool_call>';
  const toValidate = [];
  for (const stream of [false, true]) {
    const body = {
      model: 'qwen3-tiny', messages: userTurn, temperature: 1, seed: 3, max_tokens: 200, ...noThinking,
      tools: [weatherTool], tool_choice: 'auto', structured_outputs: { regex: syntax }, stream,
    };
    const result = stream ? await collectStream(await client.chat.completions.create(body))
      : await client.chat.completions.create(body);
    const calls = stream ? result.toolCalls.map((c) => ({ function: { name: c.name, arguments: c.arguments } }))
      : result.choices[0].message.tool_calls;
    const finishReason = stream ? result.finishReason : result.choices[0].finish_reason;
    assert.equal(finishReason, 'tool_calls');
    assert.equal(calls.length, 1);
    assert.equal(calls[0].function.name, 'get_weather');
    toValidate.push({ schema: weatherTool.function.parameters, text: calls[0].function.arguments, label: `stream=${stream}` });
  }
  await assertAllValid(toValidate);
  // Without a call in the output, auto leaves everything as content.
  const plain = await client.chat.completions.create({
    model: 'qwen3-tiny', messages: userTurn, temperature: 1, seed: 3, max_tokens: 20, ...noThinking,
    tools: [weatherTool], tool_choice: 'auto', structured_outputs: { regex: 'Sunny, <tool [a-z]{3}' },
  });
  assert.equal(plain.choices[0].finish_reason, 'stop');
  assert.match(plain.choices[0].message.content, /^Sunny, <tool [a-z]{3}$/);
  assert.equal(plain.choices[0].message.tool_calls, undefined);
});

test('a tool result sent back renders through the Qwen3 template as jinja2 renders it', async () => {
  const messages = [
    ...userTurn,
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temperature": 21}' },
  ];
  const tools = [weatherTool, timeTool];
  const response = await client.chat.completions.create({
    model: 'qwen3-tiny', messages, tools, tool_choice: 'none', max_tokens: 4, temperature: 0, ...noThinking,
  });
  // Reference: jinja2 with the template of tokenizer_config.json (an assistant turn without
  // text is rendered with content "", as the server passes it).
  const config = JSON.parse(readFileSync(path.join(qwen3TokenizerDir, 'tokenizer_config.json'), 'utf8'));
  const request = path.join(scratch, 'render.json');
  const referenceMessages = messages.map((m) => (m.content === null ? { ...m, content: '' } : m));
  writeFileSync(request, JSON.stringify({
    template: config.chat_template, messages: referenceMessages,
    kwargs: { tools, add_generation_prompt: true, enable_thinking: false },
  }));
  const render = await promisify(execFile)('python3', [path.join(structuredDir, 'render_chat_template.py'), request],
    { encoding: 'utf8' });
  assert.match(render.stdout, /<tool_response>\n\{"temperature": 21\}\n<\/tool_response>/);
  const tokenized = await (await fetch(`${server.url}/tokenize`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'qwen3-tiny', prompt: render.stdout, add_special_tokens: false }),
  })).json();
  assert.equal(response.usage.prompt_tokens, tokenized.count);
});

test('reasoning parser: thinking goes to reasoning_content; the constraint waits for </think>', async () => {
  // Thinking on (the default): the random model never closes </think>, so all of it is reasoning,
  // and the JSON constraint never started.
  const body = {
    model: 'qwen3-tiny', messages: userTurn, temperature: 1, seed: 2, max_tokens: 12,
    response_format: { type: 'json_object' },
  };
  const thinking = await client.chat.completions.create(body);
  const message = thinking.choices[0].message;
  assert.equal(thinking.choices[0].finish_reason, 'length');
  assert.ok(message.reasoning_content.length > 0);
  assert.equal(message.content, '');
  const streamed = await collectStream(await client.chat.completions.create({ ...body, stream: true }));
  assert.equal(streamed.reasoning, message.reasoning_content);
  assert.equal(streamed.content, '');
  // Thinking off: no reasoning, and the constraint applies from the first token.
  const direct = await client.chat.completions.create({ ...body, max_tokens: 300, ...noThinking,
    response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'integer', minimum: 0, maximum: 99 } } } });
  assert.equal(direct.choices[0].message.reasoning_content, null);
  assert.equal(direct.choices[0].finish_reason, 'stop');
  assert.ok(Number.isInteger(JSON.parse(direct.choices[0].message.content)));
});

test('bad constraints and tool requests are 400s naming the problem', async () => {
  const cases = [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'strnig' } } } }, /unknown type "strnig"/, 'response_format'],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', uniqueItems: true } } } }, /unsupported JSON Schema keyword 'uniqueItems'/, 'response_format'],
    [{ guided_json: { type: 'object', patternProperties: {} } }, /'patternProperties'/, 'guided_json'],
    [{ structured_outputs: { regex: '[]' } }, /regex matches no string|matches no string/, 'structured_outputs.regex'],
    [{ guided_regex: 'a(b' }, /missing '\)'/, 'guided_regex'],
    [{ structured_outputs: { grammar: 'root ::= "a" | )' } }, /grammar syntax error at line 1, column 16: unexpected '\)'/, 'structured_outputs.grammar'],
    [{ structured_outputs: { grammar: 'root ::= item\nitem ::= "x' } }, /line 2/, 'structured_outputs.grammar'],
    [{ structured_outputs: { grammar: 'start ::= "x"' } }, /no rule named 'root'/, 'structured_outputs.grammar'],
    [{ response_format: { type: 'json_object' }, guided_regex: 'a' }, /only one output constraint/, 'guided_regex'],
    [{ tools: [weatherTool], tool_choice: 'required', guided_regex: 'a' }, /cannot be combined/, 'guided_regex'],
    [{ tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'nope' } } }, /not among the tools/, 'tool_choice'],
    [{ tool_choice: 'required' }, /needs tools/, 'tool_choice'],
    [{ tools: [{ type: 'function', function: {} }] }, /name/, 'tools[0].function.name'],
  ];
  for (const [extra, message, param] of cases) {
    await assert.rejects(
      client.chat.completions.create({ model: 'qwen3-tiny', messages: userTurn, max_tokens: 5, ...extra }),
      (error) => {
        assert.equal(error.status, 400, JSON.stringify(extra));
        assert.match(error.error.message, message, JSON.stringify(extra));
        assert.equal(error.error.param, param, JSON.stringify(extra));
        return true;
      });
  }
});

test('tool_choice auto needs --enable-auto-tool-choice and --tool-call-parser', async () => {
  const plain = await startServer(['--tokenizer', qwen3TokenizerDir, '--max-model-len', '1024'], { model: qwen3TinyDir });
  try {
    const other = new OpenAI({ baseURL: `${plain.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    await assert.rejects(
      other.chat.completions.create({ model: 'qwen3-tiny', messages: userTurn, tools: [weatherTool] }),
      (error) => error.status === 400 && /--enable-auto-tool-choice/.test(error.error.message));
    // tool_choice none still renders the tools and answers.
    const none = await other.chat.completions.create({
      model: 'qwen3-tiny', messages: userTurn, tools: [weatherTool], tool_choice: 'none', max_tokens: 3,
    });
    assert.equal(none.choices[0].message.tool_calls, undefined);
  } finally {
    await plain.stop();
  }
});

// /v1/completions, /v1/chat/completions, /v1/models, /tokenize, /detokenize
// through the official OpenAI client library, against the stories260k goldens.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, storiesGoldens, plainChatTemplate, postJson } from './helpers.mjs';

let server;
let client;
const model = 'stories';

before(async () => {
  server = await startServer(['--chat-template', plainChatTemplate, '--served-model-name', model]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
});

after(async () => {
  assert.equal(await server.stop(), 0);
});

// The continuation as it reads after the prompt (run.c's stdout minus the prompt).
function expectedText(golden) {
  return golden.decoded_text_prompt_plus_output.slice(golden.prompt_text.length);
}

function expectedIds(golden) {
  // llama2.c stops on BOS (1); the engine returns the stop token too, as vLLM does.
  return golden.stopped_on_token === null ? golden.output_ids : [...golden.output_ids, golden.stopped_on_token];
}

test('greedy completions from token ids equal the goldens (all cases at once)', async () => {
  const goldens = storiesGoldens();
  assert.equal(goldens.length, 7);
  const responses = await Promise.all(goldens.map((golden) => client.completions.create({
    model, prompt: golden.prompt_ids, max_tokens: golden.max_new_tokens, temperature: 0,
    stop_token_ids: [1], ignore_eos: true, return_token_ids: true,
  })));
  responses.forEach((response, i) => {
    const golden = goldens[i];
    const choice = response.choices[0];
    assert.deepEqual(choice.token_ids, expectedIds(golden), golden.name);
    assert.equal(choice.text, expectedText(golden), golden.name);
    assert.equal(choice.finish_reason, golden.stopped_on_token === null ? 'length' : 'stop', golden.name);
    if (golden.stopped_on_token !== null) assert.equal(choice.stop_reason, 1);
    assert.equal(response.usage.prompt_tokens, golden.prompt_ids.length);
    assert.equal(response.usage.completion_tokens, expectedIds(golden).length);
    assert.equal(response.object, 'text_completion');
    assert.equal(response.model, model);
    assert.match(response.id, /^cmpl-/);
  });
});

test('a text prompt is tokenized like the goldens', async () => {
  const golden = storiesGoldens().find((g) => g.name === 'prompt1');
  const response = await client.completions.create({
    model, prompt: golden.prompt_text, max_tokens: golden.max_new_tokens, temperature: 0, ignore_eos: true,
    return_token_ids: true,
  });
  assert.deepEqual(response.choices[0].prompt_token_ids, golden.prompt_ids);
  assert.deepEqual(response.choices[0].token_ids, golden.output_ids);
  assert.equal(response.choices[0].text, expectedText(golden));
});

test('greedy streaming completions equal the goldens', async () => {
  const golden = storiesGoldens().find((g) => g.name === 'prompt2');
  const stream = await client.completions.create({
    model, prompt: golden.prompt_ids, max_tokens: golden.max_new_tokens, temperature: 0, ignore_eos: true, stream: true,
    stream_options: { include_usage: true }, return_token_ids: true,
  });
  let text = '';
  const ids = [];
  let finishReason = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      text += choice.text;
      ids.push(...choice.token_ids);
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
  }
  assert.deepEqual(ids, golden.output_ids);
  assert.equal(text, expectedText(golden));
  assert.equal(finishReason, 'length');
  assert.equal(usage.completion_tokens, golden.output_ids.length);
  assert.equal(usage.prompt_tokens, golden.prompt_ids.length);
});

async function collectCompletionStream(params) {
  const stream = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  const texts = [];
  const finish = [];
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      texts[choice.index] = (texts[choice.index] ?? '') + choice.text;
      if (choice.finish_reason) finish[choice.index] = choice.finish_reason;
    }
  }
  return { texts, finish, usage };
}

test('sampled streaming text equals the non-streamed text for the same seed (n = 2)', async () => {
  const params = { model, prompt: 'Lily saw a big', max_tokens: 60, temperature: 0.9, top_p: 0.95, seed: 1234, n: 2 };
  const whole = await client.completions.create(params);
  const streamed = await collectCompletionStream(params);
  assert.equal(whole.choices.length, 2);
  const wholeTexts = [...whole.choices].sort((a, b) => a.index - b.index).map((c) => c.text);
  assert.deepEqual(streamed.texts, wholeTexts);
  assert.ok(wholeTexts[0].length > 0);
  assert.notEqual(wholeTexts[0], wholeTexts[1]);  // different samples for the two choices
  assert.deepEqual(streamed.usage, whole.usage);
  const again = await client.completions.create(params);
  assert.deepEqual(again.choices.map((c) => c.text), whole.choices.map((c) => c.text));
});

test('several prompts in one request get consecutive choice indices', async () => {
  const goldens = storiesGoldens().filter((g) => g.name === 'prompt3' || g.name === 'prompt4');
  const response = await client.completions.create({
    model, prompt: goldens.map((g) => g.prompt_ids), max_tokens: 20, temperature: 0, ignore_eos: true,
    return_token_ids: true,
  });
  assert.equal(response.choices.length, 2);
  goldens.forEach((golden, i) => {
    assert.equal(response.choices[i].index, i);
    assert.deepEqual(response.choices[i].token_ids, golden.output_ids.slice(0, 20));
  });
  assert.equal(response.usage.prompt_tokens, goldens[0].prompt_ids.length + goldens[1].prompt_ids.length);
});

test('stop strings end the text before the match', async () => {
  const golden = storiesGoldens().find((g) => g.name === 'prompt1');
  const text = expectedText(golden);
  const stop = text.slice(40, 48);
  const response = await client.completions.create({
    model, prompt: golden.prompt_ids, max_tokens: golden.max_new_tokens, temperature: 0, ignore_eos: true, stop,
  });
  assert.equal(response.choices[0].text, text.slice(0, text.indexOf(stop)));
  assert.equal(response.choices[0].finish_reason, 'stop');
  assert.equal(response.choices[0].stop_reason, stop);
});

test('completion logprobs in the OpenAI format', async () => {
  const response = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 8, temperature: 0, logprobs: 3 });
  const { logprobs } = response.choices[0];
  assert.equal(logprobs.tokens.length, 8);
  assert.equal(logprobs.token_logprobs.length, 8);
  assert.equal(logprobs.top_logprobs.length, 8);
  assert.equal(logprobs.tokens.join(''), response.choices[0].text);
  let offset = 0;
  for (let i = 0; i < 8; i++) {
    assert.equal(logprobs.text_offset[i], offset);
    offset += Buffer.byteLength(logprobs.tokens[i]);
    assert.ok(logprobs.token_logprobs[i] <= 0);
    const top = Object.values(logprobs.top_logprobs[i]);
    assert.ok(top.length >= 1 && top.length <= 3);
    // Greedy: the chosen token is the most likely one.
    assert.ok(Math.abs(Math.max(...top) - logprobs.token_logprobs[i]) < 1e-5);
  }
});

test('chat completions, streamed and not, with the same seed', async () => {
  const params = {
    model, messages: [{ role: 'system', content: 'A story.' }, { role: 'user', content: 'Tom had a dog.' }],
    max_completion_tokens: 40, temperature: 0.8, seed: 7,
  };
  const whole = await client.chat.completions.create(params);
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.ok(whole.choices[0].message.content.length > 0);
  assert.equal(whole.usage.completion_tokens, 40);
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let content = '';
  let role = null;
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      if (choice.delta.role) role = choice.delta.role;
      content += choice.delta.content ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(role, 'assistant');
  assert.equal(content, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.deepEqual(usage, whole.usage);
});

test('chat logprobs with top_logprobs', async () => {
  const response = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 5, temperature: 0,
    logprobs: true, top_logprobs: 2,
  });
  const { content } = response.choices[0].logprobs;
  assert.equal(content.length, 5);
  for (const item of content) {
    assert.deepEqual(item.bytes, [...Buffer.from(item.token, 'utf8')]);
    assert.equal(item.top_logprobs.length, 2);
    assert.ok(item.top_logprobs[0].logprob >= item.top_logprobs[1].logprob);
    assert.ok(Math.abs(item.top_logprobs[0].logprob - item.logprob) < 1e-5);
  }
});

test('chat_template_kwargs and add_generation_prompt reach the template', async () => {
  const messages = [{ role: 'user', content: 'Hi' }];
  const plain = await postJson(server.url, '/tokenize', { messages });
  const thinking = await postJson(server.url, '/tokenize', { messages, chat_template_kwargs: { enable_thinking: false } });
  const noPrompt = await postJson(server.url, '/tokenize', { messages, chat_template_kwargs: { enable_thinking: false }, add_generation_prompt: false });
  assert.equal(plain.status, 200);
  const text = async (tokens) => (await postJson(server.url, '/detokenize', { tokens })).json.prompt;
  assert.ok((await text(thinking.json.tokens)).endsWith('Once'));
  assert.ok(!(await text(plain.json.tokens)).endsWith('Once'));
  assert.ok((await text(plain.json.tokens)).endsWith('Hi\n'));
  assert.deepEqual(noPrompt.json.tokens, plain.json.tokens);
});

test('/v1/models lists the served model', async () => {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  assert.equal(models.data[0].id, model);
  assert.equal(models.data[0].object, 'model');
  assert.equal(models.data[0].max_model_len, 512);
});

test('/tokenize and /detokenize', async () => {
  const golden = storiesGoldens().find((g) => g.name === 'prompt2');
  const tokenized = await postJson(server.url, '/tokenize', { model, prompt: golden.prompt_text });
  assert.equal(tokenized.status, 200);
  assert.deepEqual(tokenized.json.tokens, golden.prompt_ids);
  assert.equal(tokenized.json.count, golden.prompt_ids.length);
  assert.equal(tokenized.json.max_model_len, 512);
  const bos = storiesGoldens().find((g) => g.name === 'bos_only_200');
  const detokenized = await postJson(server.url, '/detokenize', { tokens: bos.output_ids });
  assert.equal(detokenized.status, 200);
  assert.equal(detokenized.json.prompt, bos.decoded_text_output_only);
});

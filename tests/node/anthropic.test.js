// The official `@anthropic-ai/sdk` against understudy: record through a
// fake Anthropic API, then replay with the fake closed — messages, stream
// events in order, and bytes must be the same.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSse, requireBinary } from './lib/harness.js';
import { rawRequest, postBytes } from './lib/raw_http.js';
import { API_KEY, collect, plain, recordThenReplay } from './lib/record_replay.js';

requireBinary();

const MODEL = 'claude-haiku-4-5';
const WEATHER = {
  name: 'get_weather',
  description: 'Current weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const TIME = {
  name: 'get_time',
  description: 'Local time in a time zone',
  input_schema: { type: 'object', properties: { timezone: { type: 'string' } }, required: ['timezone'] },
};

function runTool(block) {
  if (block.name === 'get_weather') return JSON.stringify({ city: block.input.city, sky: 'sunny', celsius: 21 });
  if (block.name === 'get_time') return JSON.stringify({ timezone: block.input.timezone, time: '14:05' });
  throw new Error(`unknown tool ${block.name}`);
}

const HEADERS = { 'content-type': 'application/json', 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' };

test('anthropic: a plain message replays identically, parsed and as bytes', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, 'anthropic', async ({ client, http, phase, fake }) => {
    const parsed = await client.messages.create({
      model: MODEL,
      max_tokens: 256,
      system: 'You are terse.',
      messages: [{ role: 'user', content: 'What is the capital of France?' }],
    });
    const res = await fetch(`${http}/v1/messages`, {
      method: 'POST',
      headers: HEADERS,
      body: JSON.stringify({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'Name a prime number.' }] }),
    });
    const raw = await res.text();
    if (phase === 'record') {
      assert.equal(fake.requests.length, 2);
      assert.deepEqual(plain(parsed), JSON.parse(fake.sent[0].body), 'the SDK got what the fake sent');
      assert.equal(raw, fake.sent[1].body, 'recording relays the body byte for byte');
    }
    return { parsed: plain(parsed), raw, status: res.status, contentType: res.headers.get('content-type') };
  });
  assert.deepEqual(r.replayed, r.recorded);
  assert.equal(r.recorded.status, 200);
  assert.match(r.recorded.parsed.id, /^msg_01/);
  assert.equal(r.recorded.parsed.stop_reason, 'end_turn');
  assert.match(r.recorded.parsed.content[0].text, /capital of France/);
});

test('anthropic: a streamed message replays event for event and byte for byte', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, 'anthropic', async ({ client, http, phase, fake }) => {
    // 1. messages.create({stream: true}): the raw events, in order.
    const events = plain(await collect(await client.messages.create({
      model: MODEL, max_tokens: 256, stream: true,
      messages: [{ role: 'user', content: 'Tell me about streams.' }],
    })));
    // 2. messages.stream(): the helper's events and the final message.
    const helper = client.messages.stream({
      model: MODEL, max_tokens: 256, messages: [{ role: 'user', content: 'Stream with the helper.' }],
    });
    const helperEvents = plain(await collect(helper));
    const finalMessage = plain(await helper.finalMessage());
    // 3. The bytes and HTTP chunks on the wire.
    const wire = await rawRequest(http, postBytes(`${http}/v1/messages`,
      JSON.stringify({ model: MODEL, max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'Raw bytes please.' }] }),
      HEADERS));
    const wireChunks = wire.chunks.map((c) => c.toString('utf8'));
    if (phase === 'record') {
      assert.equal(fake.requests.length, 3);
      assert.equal(events.length, fake.sent[0].events.length - 1, 'every event but the ping reaches the SDK');
      assert.deepEqual(wireChunks, fake.sent[2].events, 'one HTTP chunk per upstream event');
    }
    return { events, helperEvents, finalMessage, wireChunks, wireBody: wire.body.toString('utf8'), contentType: wire.headers['content-type'] };
  });

  const { events, finalMessage, wireBody } = r.recorded;
  assert.deepEqual(events.map((e) => e.type).slice(0, 3), ['message_start', 'content_block_start', 'content_block_delta']);
  assert.deepEqual(events.map((e) => e.type).slice(-4), ['content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  const text = events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.text).join('');
  assert.match(text, /^You said: Tell me about streams\./);
  assert.match(finalMessage.content[0].text, /^You said: Stream with the helper\./);
  assert.equal(finalMessage.stop_reason, 'end_turn');
  assert.deepEqual(parseSse(wireBody).map((e) => e.event).slice(0, 3), ['message_start', 'content_block_start', 'ping']);
  assert.match(r.recorded.contentType, /^text\/event-stream/);

  assert.deepEqual(r.replayed.events, r.recorded.events, 'raw stream events, in order');
  assert.deepEqual(r.replayed.helperEvents, r.recorded.helperEvents, 'MessageStream events');
  assert.deepEqual(r.replayed.finalMessage, r.recorded.finalMessage);
  assert.equal(r.replayed.wireBody, r.recorded.wireBody, 'raw SSE bytes');
  assert.deepEqual(r.replayed.wireChunks, r.recorded.wireChunks, 'HTTP chunk boundaries');
});

test('anthropic: a tool-use loop (tool_use, tool_result, final answer) replays', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, 'anthropic', async ({ client, phase, fake }) => {
    const messages = [{ role: 'user', content: 'What is the weather? Use get_weather with city=Paris' }];
    const first = await client.messages.create({ model: MODEL, max_tokens: 512, system: 'You answer with tools.', messages, tools: [WEATHER] });
    const use = first.content.find((b) => b.type === 'tool_use');
    messages.push({ role: 'assistant', content: first.content });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: runTool(use) }] });
    const second = await client.messages.create({ model: MODEL, max_tokens: 512, system: 'You answer with tools.', messages, tools: [WEATHER] });
    if (phase === 'record') {
      assert.equal(fake.requests.length, 2, 'two model calls');
      assert.equal(fake.requests[1].body.messages[2].content[0].tool_use_id, use.id);
    }
    return { first: plain(first), second: plain(second) };
  });
  const { first, second } = r.recorded;
  assert.equal(first.stop_reason, 'tool_use');
  const use = first.content.find((b) => b.type === 'tool_use');
  assert.deepEqual(use.input, { city: 'Paris' });
  assert.equal(second.stop_reason, 'end_turn');
  assert.match(second.content[0].text, /"sky":"sunny"/);
  assert.deepEqual(r.replayed, r.recorded);
});

test('anthropic: parallel tool_use blocks streamed replay with the same deltas', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, 'anthropic', async ({ client }) => {
    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 512,
      messages: [{ role: 'user', content: 'Call get_weather and get_time at once for city=Paris timezone=Europe/Paris' }],
      tools: [WEATHER, TIME],
    });
    const inputJson = [];
    stream.on('inputJson', (partial, snapshot) => inputJson.push({ partial, snapshot }));
    const events = plain(await collect(stream));
    const final = plain(await stream.finalMessage());
    const perIndex = {};
    for (const e of events) {
      if (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta') (perIndex[e.index] ??= []).push(e.delta.partial_json);
    }
    return { events, final, perIndex, inputJson: plain(inputJson) };
  });
  const { final, perIndex } = r.recorded;
  assert.equal(final.stop_reason, 'tool_use');
  const uses = final.content.filter((b) => b.type === 'tool_use');
  assert.deepEqual(uses.map((b) => b.name), ['get_weather', 'get_time']);
  assert.deepEqual(uses.map((b) => b.input), [{ city: 'Paris' }, { timezone: 'Europe/Paris' }]);
  assert.deepEqual(Object.keys(perIndex), ['1', '2']);
  assert.ok(perIndex[1].length > 2 && perIndex[2].length > 2);

  assert.deepEqual(r.replayed.final.content, r.recorded.final.content, 'accumulated tool_use blocks');
  assert.deepEqual(r.replayed.perIndex, r.recorded.perIndex, 'per-index input_json deltas');
  assert.deepEqual(r.replayed.inputJson, r.recorded.inputJson);
  assert.deepEqual(r.replayed.events, r.recorded.events, 'events in order');
  assert.deepEqual(r.replayed.final, r.recorded.final);
});

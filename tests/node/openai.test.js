// The official `openai` SDK against understudy: record through a fake
// OpenAI, then replay with the fake closed — what the SDK yields, and the
// bytes on the wire, must be the same.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requireBinary } from './lib/harness.js';
import { rawRequest, postBytes } from './lib/raw_http.js';
import { API_KEY, collect, plain, recordThenReplay } from './lib/record_replay.js';

requireBinary();

const MODEL = 'gpt-4o-mini';
const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const TIME = {
  type: 'function',
  function: {
    name: 'get_time',
    description: 'Local time in a time zone',
    parameters: { type: 'object', properties: { timezone: { type: 'string' } }, required: ['timezone'] },
  },
};

// The local tools the agent runs between model calls.
function runTool(call) {
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === 'get_weather') return JSON.stringify({ city: args.city, sky: 'sunny', celsius: 21 });
  if (call.function.name === 'get_time') return JSON.stringify({ timezone: args.timezone, time: '14:05' });
  throw new Error(`unknown tool ${call.function.name}`);
}

test('openai: a plain answer replays identically, parsed and as bytes', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, 'openai', async ({ client, phase, fake }) => {
    const parsed = await client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'What is the capital of France?' },
      ],
      temperature: 0.2,
    });
    const response = await client.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'Name a prime number.' }] })
      .asResponse();
    const raw = await response.text();
    if (phase === 'record') {
      assert.equal(fake.requests.length, 2);
      assert.deepEqual(plain(parsed), JSON.parse(fake.sent[0].body), 'the SDK got what the fake sent');
      assert.equal(raw, fake.sent[1].body, 'recording relays the body byte for byte');
    }
    return { parsed: plain(parsed), raw, contentType: response.headers.get('content-type'), status: response.status };
  });
  assert.deepEqual(r.replayed, r.recorded);
  assert.equal(r.recorded.status, 200);
  assert.match(r.recorded.contentType, /^application\/json/);
  assert.match(r.recorded.parsed.choices[0].message.content, /capital of France/);
  assert.match(r.recorded.parsed.id, /^chatcmpl-/);
});

test('openai: a streamed answer replays chunk for chunk and byte for byte', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, 'openai', async ({ client, http, phase, fake }) => {
    // 1. What the SDK yields, usage chunk included.
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Tell me about streams.' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = plain(await collect(stream));

    // 2. The raw SSE body through node fetch.
    const res = await fetch(`${http}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Stream me some bytes.' }], stream: true }),
    });
    const fetched = { status: res.status, contentType: res.headers.get('content-type'), body: await res.text() };

    // 3. The HTTP chunks on the wire: one per SSE event.
    const wire = await rawRequest(http, postBytes(`${http}/v1/chat/completions`,
      JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'And the chunk boundaries?' }], stream: true }),
      { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` }));
    const wireChunks = wire.chunks.map((c) => c.toString('utf8'));

    if (phase === 'record') {
      assert.equal(fake.requests.length, 3);
      assert.equal(chunks.length, fake.sent[0].events.length - 1, 'every event but [DONE] reaches the SDK');
      assert.equal(fetched.body, fake.sent[1].body, 'recording relays the stream byte for byte');
      assert.deepEqual(wireChunks, fake.sent[2].events, 'one HTTP chunk per upstream event');
    }
    return { chunks, fetched, wireChunks, wireStatus: wire.status };
  });

  // Sanity: the stream has the shape the test claims to compare.
  const { chunks, fetched, wireChunks } = r.recorded;
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.match(text, /^You said: Tell me about streams\./);
  assert.ok(chunks.length > 10, `a stream of many chunks, got ${chunks.length}`);
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
  assert.deepEqual(chunks.at(-1).choices, []);
  assert.ok(chunks.at(-1).usage.completion_tokens > 0, 'the usage chunk');
  assert.match(fetched.contentType, /^text\/event-stream/);
  assert.ok(fetched.body.endsWith('data: [DONE]\n\n'));
  assert.ok(fetched.body.includes(': keep-alive\n\n'), 'comments are part of the bytes');
  assert.ok(wireChunks.length > 10);

  // The point: replay is identical.
  assert.deepEqual(r.replayed.chunks, r.recorded.chunks, 'SDK chunks, field for field');
  assert.equal(r.replayed.fetched.body, r.recorded.fetched.body, 'raw SSE bytes');
  assert.deepEqual(r.replayed.fetched, r.recorded.fetched);
  assert.deepEqual(r.replayed.wireChunks, r.recorded.wireChunks, 'HTTP chunk boundaries');
  assert.equal(r.replayed.wireStatus, 200);
});

test('openai: a tool-call loop (call, result, final answer) replays', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, 'openai', async ({ client, phase, fake }) => {
    const messages = [
      { role: 'system', content: 'You answer with tools.' },
      { role: 'user', content: 'What is the weather? Use get_weather with city=Paris' },
    ];
    const first = await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER] });
    const call = first.choices[0].message.tool_calls[0];
    const result = runTool(call);
    messages.push(first.choices[0].message);
    messages.push({ role: 'tool', tool_call_id: call.id, content: result });
    const second = await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER] });
    if (phase === 'record') {
      assert.equal(fake.requests.length, 2, 'two model calls');
      assert.equal(fake.requests[1].body.messages[3].tool_call_id, call.id);
    }
    return { first: plain(first), second: plain(second) };
  });
  const { first, second } = r.recorded;
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  assert.equal(first.choices[0].message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(first.choices[0].message.tool_calls[0].function.arguments), { city: 'Paris' });
  assert.equal(second.choices[0].finish_reason, 'stop');
  assert.match(second.choices[0].message.content, /"sky":"sunny"/);
  assert.deepEqual(r.replayed, r.recorded);
});

test('openai: parallel tool calls streamed interleaved replay with the same deltas', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, 'openai', async ({ client }) => {
    const stream = client.chat.completions.stream({
      model: MODEL,
      messages: [{ role: 'user', content: 'Call get_weather and get_time at once for city=Paris timezone=Europe/Paris' }],
      tools: [WEATHER, TIME],
      parallel_tool_calls: true,
    });
    const chunks = plain(await collect(stream));
    const final = plain(await stream.finalChatCompletion());
    // Per tool-call index, every delta in order.
    const perIndex = {};
    const order = [];
    for (const c of chunks) {
      for (const d of c.choices[0]?.delta?.tool_calls ?? []) {
        (perIndex[d.index] ??= []).push(d);
        order.push(d.index);
      }
    }
    return { chunks, toolCalls: final.choices[0].message.tool_calls, finish: final.choices[0].finish_reason, perIndex, order };
  });
  const { toolCalls, perIndex, order, finish } = r.recorded;
  assert.equal(finish, 'tool_calls');
  assert.equal(toolCalls.length, 2);
  assert.deepEqual(toolCalls.map((c) => c.function.name), ['get_weather', 'get_time']);
  assert.deepEqual(JSON.parse(toolCalls[0].function.arguments), { city: 'Paris' });
  assert.deepEqual(JSON.parse(toolCalls[1].function.arguments), { timezone: 'Europe/Paris' });
  assert.ok(order.some((idx, i) => i > 0 && idx < order[i - 1]), `deltas interleave by index: ${order}`);
  assert.ok(perIndex[0].length > 2 && perIndex[1].length > 2);

  assert.deepEqual(r.replayed.toolCalls, r.recorded.toolCalls, 'accumulated tool calls');
  assert.deepEqual(r.replayed.perIndex, r.recorded.perIndex, 'per-index deltas');
  assert.deepEqual(r.replayed.order, r.recorded.order);
  assert.deepEqual(r.replayed.chunks, r.recorded.chunks);
});

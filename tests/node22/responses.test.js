// The official `openai` SDK (7.x) on the Responses API (POST /v1/responses,
// GET /v1/responses/{id}): record through a fake OpenAI whose ids and
// timestamps are fresh on every call, then replay with the fake closed —
// what the SDK yields, and the bytes on the wire, must be the same.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Server, bytesField, exportSession, parseSse, requireBinary, tempDir } from '../node/lib/harness.js';
import { postBytes, rawRequest } from '../node/lib/raw_http.js';
import { collect, plain } from '../node/lib/record_replay.js';
import { startFakeOpenAI } from './fakes/openai.js';
import { attr, post, recordThenReplay, traceOf } from './lib/journey.js';
import { API_KEY, FIXTURES, openaiClient } from './lib/sdk.js';

requireBinary();

const MODEL = 'gpt-4.1-mini';
const HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` };
const WEATHER = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
};
const TIME = {
  type: 'function',
  name: 'get_time',
  description: 'Local time in a time zone',
  parameters: { type: 'object', properties: { timezone: { type: 'string' } }, required: ['timezone'], additionalProperties: false },
  strict: true,
};

const openai = (fakeOptions = {}) => ({ upstream: 'openai', startFake: () => startFakeOpenAI(fakeOptions) });

// The local tools the agent runs between model calls.
function runTool(call) {
  const args = JSON.parse(call.arguments);
  if (call.name === 'get_weather') return JSON.stringify({ city: args.city, sky: 'sunny', celsius: 21 });
  if (call.name === 'get_time') return JSON.stringify({ timezone: args.timezone, time: '14:05' });
  throw new Error(`unknown tool ${call.name}`);
}

// A response as the SDK returns it, less what the SDK adds (`output_text`;
// from its parse and stream helpers `output_parsed`, `parsed`,
// `parsed_arguments`): what was on the wire.
function wire(response) {
  const { output_text: _text, output_parsed: _parsed, ...rest } = plain(response);
  for (const item of rest.output ?? []) {
    delete item.parsed_arguments;
    for (const part of item.content ?? []) delete part.parsed;
  }
  return rest;
}

test('responses: a plain answer replays identically, parsed, as bytes and through GET /v1/responses/{id}', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, openai(), async ({ http, phase, fake, server }) => {
    const client = await openaiClient(http);
    const ask = { model: MODEL, instructions: 'You are terse.', input: 'What is the capital of France?', temperature: 0.2 };
    const parsed = await client.responses.create(ask);
    const again = await client.responses.create(ask);
    const response = await client.responses.create({ model: MODEL, input: 'Name a prime number.' }).asResponse();
    const raw = await response.text();
    const fetched = await client.responses.retrieve(parsed.id);
    // The same, under the run's prefix.
    const prefixed = await openaiClient(http, { prefix: `/run/${server.run}` });
    const fetchedPrefixed = await prefixed.responses.retrieve(again.id);
    if (phase === 'record') {
      const posts = fake.requests.filter((q) => q.method === 'POST');
      assert.equal(posts.length, 3);
      assert.deepEqual(wire(parsed), JSON.parse(fake.sent[0].body), 'the SDK got what the fake sent');
      assert.equal(raw, fake.sent[2].body, 'recording relays the body byte for byte');
    }
    return {
      parsed: plain(parsed), again: plain(again), raw, status: response.status,
      contentType: response.headers.get('content-type'), fetched: plain(fetched), fetchedPrefixed: plain(fetchedPrefixed),
    };
  });
  const { parsed, again, raw, fetched, fetchedPrefixed } = r.recorded;
  assert.equal(r.recorded.status, 200);
  assert.match(r.recorded.contentType, /^application\/json/);
  assert.match(parsed.id, /^resp_[0-9a-f]{50}$/);
  assert.equal(parsed.object, 'response');
  assert.equal(parsed.status, 'completed');
  assert.equal(parsed.instructions, 'You are terse.');
  assert.match(parsed.output_text, /capital of France/);
  assert.notEqual(again.id, parsed.id, 'the fake answers the same request afresh: new ids');
  assert.notEqual(again.output[0].id, parsed.output[0].id);
  assert.match(JSON.parse(raw).output[0].content[0].text, /Name a prime number/);
  assert.deepEqual(fetched, parsed, 'GET returns the stored response');
  assert.deepEqual(fetchedPrefixed, again, 'GET under /run/{run}');

  // The point: the replay is the recording, ids and created_at included,
  // the two identical requests answered in recorded order.
  assert.deepEqual(r.replayed, r.recorded);
});

test('responses: a streamed answer replays event for event and byte for byte', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, openai(), async ({ http, phase, fake }) => {
    const client = await openaiClient(http);
    // 1. What the SDK yields.
    const events = plain(await collect(await client.responses.create({ model: MODEL, input: 'Tell me about streams.', stream: true })));

    // 2. The raw SSE body through fetch.
    const res = await post(`${http}/v1/responses`, JSON.stringify({ model: MODEL, input: 'Stream me some bytes.', stream: true }), HEADERS);
    const fetched = { status: res.status, contentType: res.headers.get('content-type'), body: res.text };

    // 3. The HTTP chunks on the wire: one per SSE event.
    const raw = await rawRequest(http, postBytes(`${http}/v1/responses`,
      JSON.stringify({ model: MODEL, input: 'And the chunk boundaries?', stream: true }),
      { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` }));
    const wireChunks = raw.chunks.map((c) => c.toString('utf8'));

    // 4. The SDK's stream helper, and GET of the response it streamed.
    const helper = client.responses.stream({ model: MODEL, input: 'A final response, please.' });
    const helperTypes = (await collect(helper)).map((e) => e.type);
    const final = plain(await helper.finalResponse());
    const fetchedFinal = wire(await client.responses.retrieve(final.id));

    if (phase === 'record') {
      assert.equal(fake.requests.filter((q) => q.method === 'POST').length, 4);
      assert.equal(events.length, fake.sent[0].events.length, 'every event reaches the SDK');
      assert.equal(fetched.body, fake.sent[1].body, 'recording relays the stream byte for byte');
      assert.deepEqual(wireChunks, fake.sent[2].events, 'one HTTP chunk per upstream event');
    }
    return { events, fetched, wireChunks, wireStatus: raw.status, helperTypes, final, fetchedFinal };
  });

  // Sanity: the stream has the shape the test claims to compare.
  const { events, fetched, helperTypes, final, fetchedFinal } = r.recorded;
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i), 'sequence_number counts from 0');
  assert.deepEqual(events.slice(0, 4).map((e) => e.type),
    ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
  assert.deepEqual(events.slice(-4).map((e) => e.type),
    ['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
  const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  assert.match(text, /^You said: Tell me about streams\./);
  assert.equal(events.at(-1).response.output[0].content[0].text, text);
  assert.equal(events[0].response.status, 'in_progress');
  assert.equal(events.at(-1).response.status, 'completed');
  assert.match(fetched.contentType, /^text\/event-stream/);
  const sse = parseSse(fetched.body);
  assert.ok(sse.length > 10);
  for (const e of sse) assert.equal(JSON.parse(e.data).type, e.event, 'each event: line names its data');
  assert.equal(r.recorded.wireChunks.length, parseSse(r.recorded.wireChunks.join('')).length);
  assert.equal(helperTypes.at(-1), 'response.completed');
  assert.match(final.output_text, /A final response, please/);
  assert.deepEqual(fetchedFinal, wire(final), 'GET returns the streamed response as it completed');

  // The point: replay is identical.
  assert.deepEqual(r.replayed.events, r.recorded.events, 'SDK events, field for field');
  assert.equal(r.replayed.fetched.body, r.recorded.fetched.body, 'raw SSE bytes');
  assert.deepEqual(r.replayed.fetched, r.recorded.fetched);
  assert.deepEqual(r.replayed.wireChunks, r.recorded.wireChunks, 'HTTP chunk boundaries');
  assert.equal(r.replayed.wireStatus, 200);
  assert.deepEqual(r.replayed, r.recorded);
});

test('responses: a function-tool loop (call, function_call_output, final answer) replays', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, openai(), async ({ http, phase, fake }) => {
    const client = await openaiClient(http);
    const instructions = 'You answer with tools.';
    const input = [{ role: 'user', content: 'What is the weather? Use get_weather with city=Paris' }];
    const first = await client.responses.create({ model: MODEL, instructions, input, tools: [WEATHER] });
    const call = first.output.find((o) => o.type === 'function_call');
    const result = { type: 'function_call_output', call_id: call.call_id, output: runTool(call) };
    const second = await client.responses.create({ model: MODEL, instructions, input: [...input, ...first.output, result], tools: [WEATHER] });
    if (phase === 'record') {
      assert.equal(fake.requests.length, 2, 'two model calls');
      assert.deepEqual(fake.requests[1].body.input.map((i) => i.type ?? i.role), ['user', 'function_call', 'function_call_output']);
      assert.equal(fake.requests[1].body.input[2].call_id, call.call_id);
    }
    return { first: plain(first), second: plain(second) };
  });
  const { first, second } = r.recorded;
  assert.equal(first.output.length, 1);
  assert.equal(first.output[0].type, 'function_call');
  assert.equal(first.output[0].name, 'get_weather');
  assert.match(first.output[0].call_id, /^call_/);
  assert.match(first.output[0].id, /^fc_/);
  assert.deepEqual(JSON.parse(first.output[0].arguments), { city: 'Paris' });
  assert.equal(second.output[0].type, 'message');
  assert.match(second.output_text, /"sky":"sunny"/);
  assert.deepEqual(r.replayed, r.recorded);
});

test('responses: two parallel function calls, streamed, then both outputs by previous_response_id', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, openai(), async ({ http, phase, fake }) => {
    const client = await openaiClient(http);
    const stream = client.responses.stream({
      model: MODEL,
      input: 'Call get_weather and get_time at once for city=Paris timezone=Europe/Paris',
      tools: [WEATHER, TIME],
      parallel_tool_calls: true,
    });
    const events = plain(await collect(stream));
    const final = plain(await stream.finalResponse());
    const calls = final.output.filter((o) => o.type === 'function_call');
    // Per output_index, the argument deltas in order.
    const deltas = {};
    for (const e of events) if (e.type === 'response.function_call_arguments.delta') (deltas[e.output_index] ??= []).push(e.delta);
    const answer = await client.responses.create({
      model: MODEL,
      previous_response_id: final.id,
      input: calls.map((c) => ({ type: 'function_call_output', call_id: c.call_id, output: runTool(c) })),
      tools: [WEATHER, TIME],
    });
    if (phase === 'record') {
      assert.equal(fake.requests[1].body.previous_response_id, final.id);
      assert.equal(fake.requests[1].body.input.length, 2);
    }
    return { events, calls, deltas, answer: plain(answer) };
  });
  const { calls, deltas, answer } = r.recorded;
  assert.deepEqual(calls.map((c) => c.name), ['get_weather', 'get_time']);
  assert.deepEqual(JSON.parse(calls[0].arguments), { city: 'Paris' });
  assert.deepEqual(JSON.parse(calls[1].arguments), { timezone: 'Europe/Paris' });
  assert.notEqual(calls[0].call_id, calls[1].call_id);
  assert.equal(deltas[0].join(''), calls[0].arguments);
  assert.equal(deltas[1].join(''), calls[1].arguments);
  assert.ok(deltas[0].length > 1 && deltas[1].length > 1, 'arguments arrive in pieces');
  assert.match(answer.output_text, /"sky":"sunny".*"time":"14:05"/);
  assert.equal(answer.previous_response_id, r.recorded.events.at(-1).response.id);

  assert.deepEqual(r.replayed.calls, r.recorded.calls, 'the calls, ids included');
  assert.deepEqual(r.replayed.deltas, r.recorded.deltas);
  assert.deepEqual(r.replayed, r.recorded);
});

// The fake resolves previous_response_id itself: its answer counts the
// turns of the whole chain and quotes every user message in it.
const chainReply = ({ userTexts }) => ({ text: `Turn ${userTexts.length}. So far you said: ${userTexts.join(' | ')}`, toolCalls: [] });

test('responses: a previous_response_id chain of three turns replays, and GET returns each turn', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, openai({ reply: chainReply }), async ({ http, phase, fake }) => {
    const client = await openaiClient(http);
    const one = await client.responses.create({ model: MODEL, instructions: 'Remember everything.', input: 'My name is Ada.' });
    const two = await client.responses.create({ model: MODEL, instructions: 'Remember everything.', previous_response_id: one.id, input: 'I live in London.' });
    const threeEvents = plain(await collect(await client.responses.create({
      model: MODEL, instructions: 'Remember everything.', previous_response_id: two.id, input: [{ role: 'user', content: 'Where do I live, and what is my name?' }], stream: true,
    })));
    const three = threeEvents.at(-1).response;
    const fetched = [];
    for (const id of [one.id, two.id, three.id]) fetched.push(wire(await client.responses.retrieve(id)));
    if (phase === 'record') {
      assert.deepEqual(fake.requests.filter((q) => q.method === 'POST').map((q) => q.body.previous_response_id), [undefined, one.id, two.id]);
    }
    return { one: plain(one), two: plain(two), threeEvents, three, fetched };
  });
  const { one, two, three, fetched } = r.recorded;
  assert.equal(one.output_text, 'Turn 1. So far you said: My name is Ada.');
  assert.equal(two.output_text, 'Turn 2. So far you said: My name is Ada. | I live in London.');
  assert.equal(three.output[0].content[0].text,
    'Turn 3. So far you said: My name is Ada. | I live in London. | Where do I live, and what is my name?');
  assert.equal(two.previous_response_id, one.id);
  assert.equal(three.previous_response_id, two.id);
  assert.deepEqual(fetched, [wire(one), wire(two), three]);
  assert.deepEqual(r.replayed, r.recorded);
});

test('responses: structured output (text.format json_schema) replays, raw and parsed', { timeout: 30000 }, async (t) => {
  const format = {
    type: 'json_schema',
    name: 'weather_report',
    strict: true,
    schema: {
      type: 'object',
      properties: { city: { type: 'string' }, celsius: { type: 'number' }, sunny: { type: 'boolean' } },
      required: ['city', 'celsius', 'sunny'],
      additionalProperties: false,
    },
  };
  const r = await recordThenReplay(t, openai(), async ({ http, phase, fake }) => {
    const client = await openaiClient(http);
    const created = await client.responses.create({ model: MODEL, input: 'Weather in Paris, as JSON.', text: { format } });
    const parsed = await client.responses.parse({ model: MODEL, input: 'Weather in Rome, as JSON.', text: { format } });
    if (phase === 'record') assert.deepEqual(fake.requests[0].body.text, { format });
    return { created: plain(created), parsed: plain(parsed) };
  });
  const { created, parsed } = r.recorded;
  const report = JSON.parse(created.output_text);
  assert.deepEqual(Object.keys(report).sort(), ['celsius', 'city', 'sunny']);
  assert.equal(typeof report.celsius, 'number');
  assert.deepEqual(created.text.format, format, 'the format is echoed');
  assert.deepEqual(Object.keys(parsed.output_parsed).sort(), ['celsius', 'city', 'sunny']);
  assert.match(parsed.output_parsed.city, /Rome/);
  assert.deepEqual(r.replayed, r.recorded);
});

test('responses: bad input is a 400/413 in OpenAI\'s shape, forwarded nowhere and recorded nowhere', { timeout: 30000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-');
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const server = await Server.start(t, dir, {
    args: ['--mode', 'record', '--session', 'bad', '--upstream', `openai=${fake.url}`, '--max-body-bytes', '2048'],
  });
  const url = `${server.http}/v1/responses`;
  const expect400 = async (body, pattern, what) => {
    const res = await post(url, body, HEADERS);
    assert.equal(res.status, 400, `${what}: ${res.text}`);
    assert.equal(res.json?.error?.type, 'invalid_request_error', `${what}: ${res.text}`);
    assert.match(res.json.error.message, pattern, what);
    return res;
  };

  const malformed = await expect400('{"model": "gpt-4.1-mini", "input": [', /invalid JSON/i, 'malformed JSON');
  assert.match(malformed.json.error.message, /\bbyte \d+/, 'names where');
  await expect400(JSON.stringify({ model: MODEL, input: 42 }), /\binput\b/, 'input of the wrong type');
  await expect400(JSON.stringify({ model: 7, input: 'hi' }), /\bmodel\b/, 'model of the wrong type');
  await expect400(JSON.stringify({ model: MODEL, input: [{ type: 'bogus_item', text: 'hi' }] }), /input\[0\]\.type/, 'unknown item type');
  assert.equal(fake.requests.length, 0, 'nothing malformed was forwarded');

  const never = await expect400(JSON.stringify({ model: MODEL, previous_response_id: 'resp_never_issued_0000', input: 'Go on.' }),
    /resp_never_issued_0000/, 'a previous_response_id never issued');
  assert.match(never.json.error.message, /previous_response_id|[Pp]revious response/);
  assert.equal(fake.requests.length, 0, 'an unknown previous_response_id is refused here, not forwarded');

  for (const size of [4096, 256 * 1024]) {
    const big = JSON.stringify({ model: MODEL, input: 'x'.repeat(size) });
    const tooLarge = await rawRequest(server.http, postBytes(url, big, { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` }));
    assert.equal(tooLarge.status, 413, tooLarge.body.toString());
    const error = JSON.parse(tooLarge.body.toString()).error;
    assert.match(error.message, /2048 bytes/);
    assert.equal(error.code, 'body_too_large');
  }
  assert.equal(fake.requests.length, 0, 'nothing oversized was forwarded');

  // Still serving, and recording.
  const client = await openaiClient(server.http);
  const ok = await client.responses.create({ model: MODEL, input: 'Still there?' });
  assert.match(ok.output_text, /Still there\?/);
  assert.deepEqual(wire(await client.responses.retrieve(ok.id)), wire(ok));
  assert.equal(await server.stop(), 0, server.stderr());

  const exported = await exportSession(server.db, 'bad');
  const bodies = exported.exchanges.map((e) => bytesField(e.native?.request_body)).filter((b) => b.includes('"input"'));
  assert.equal(bodies.length, 1, `only the good request was recorded: ${exported.raw}`);
  assert.match(bodies[0], /Still there\?/);
  assert.ok(!exported.raw.includes('resp_never_issued_0000'));
});

// Scripted answers over a previous_response_id chain, no recording: the rule
// needs a message sent two responses earlier, so it matches only if the
// chain is resolved to the whole conversation; the agent comes from
// `instructions`. Two servers in turn answer with the same ids (derived,
// never random), and the trace holds the resolved conversation.
test('responses: rules, agents and traces see the whole previous_response_id chain; scripted ids are the same in every process', { timeout: 30000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-chain-');
  const conversation = async (http) => {
    const client = await openaiClient(http);
    const instructions = 'You are the concierge of a small hotel.';
    const one = await client.responses.create({ model: MODEL, instructions, input: 'My name is Ada.' });
    const two = await client.responses.create({ model: MODEL, instructions, previous_response_id: one.id, input: 'I live in London.' });
    const three = await client.responses.create({ model: MODEL, instructions, previous_response_id: two.id, input: 'So, what is my name?' });
    const fetched = await client.responses.retrieve(three.id);
    return { ids: [one.id, two.id, three.id], texts: [one.output_text, two.output_text, three.output_text], fetched: wire(fetched), three: wire(three) };
  };
  const runs = [];
  for (const name of ['first', 'second']) {
    const server = await Server.start(t, dir, {
      name, db: `${name}.db`, args: ['--mode', 'replay', '--scenario', `${FIXTURES}/chain_memory.yaml`],
    });
    const result = await conversation(server.http);
    assert.equal(await server.stop(), 0, server.stderr());
    const { events } = await traceOf(server);
    runs.push({ result, events });
  }
  const [first, second] = runs;
  assert.deepEqual(first.result.texts, ['Noted.', 'Noted.', 'Your name is Ada.']);
  assert.ok(first.result.ids.every((id) => /^resp_[0-9a-f]{32}$/.test(id)), first.result.ids.join(','));
  assert.equal(new Set(first.result.ids).size, 3, 'every turn has its own id');
  assert.deepEqual(second.result, first.result, 'same conversation, same ids and bytes, in another process');
  assert.deepEqual(first.result.fetched, first.result.three, 'GET returns the response as it was given');

  const exchanges = first.events.filter((e) => e.kind === 'exchange');
  assert.equal(exchanges.length, 3);
  assert.deepEqual(exchanges.map((e) => attr(e, 'gen_ai.agent.name')), ['concierge', 'concierge', 'concierge']);
  assert.equal(attr(exchanges[2], 'understudy.rule.name'), 'remembers-the-name');
  // The third request as traced: instructions, then the two earlier turns
  // (each with its answer), then its own input.
  assert.deepEqual(exchanges[2].request.messages.map((m) => `${m.role}:${m.content ?? ''}`), [
    'system:You are the concierge of a small hotel.',
    'user:My name is Ada.', 'assistant:Noted.',
    'user:I live in London.', 'assistant:Noted.',
    'user:So, what is my name?',
  ]);
});

// The official `@google/genai` SDK against understudy's Gemini routes
// (POST /v1beta|v1/models/{model}:generateContent and
// :streamGenerateContent, `?alt=sse` or a JSON array): record through a
// fake Gemini whose responseId is fresh on every call, replay with the fake
// closed, byte for byte. The API key travels as `x-goog-api-key` (what the
// SDK sends) or as `?key=` (what curl users send); either way it reaches
// the upstream and is stored nowhere — not in the DB files, the export,
// the trace or the log.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { Server, bytesField, exportSession, requireBinary, tempDir } from '../node/lib/harness.js';
import { postBytes, rawRequest } from '../node/lib/raw_http.js';
import { collect, plain } from '../node/lib/record_replay.js';
import { startFakeGemini } from './fakes/gemini.js';
import { assertNowhere, dbBytes, post, recordThenReplay, traceOf } from './lib/journey.js';
import { GEMINI_KEY, genaiSdk, geminiClient } from './lib/sdk.js';

requireBinary();

const MODEL = 'gemini-2.5-flash';
// Sent beside the key and stored on purpose: proves the scans below would
// find a stored value.
const VISIBLE = 'visible-canary-4242';
const WEATHER = {
  name: 'get_weather',
  description: 'Current weather in a city',
  parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const gemini = (options = {}) => ({ upstream: 'gemini', startFake: () => startFakeGemini({ apiKey: GEMINI_KEY }), ...options });

// An SDK result as plain data, less `sdkHttpResponse` (the HTTP headers,
// `date` included, which no replay can promise).
function bare(result) {
  const { sdkHttpResponse: _, ...rest } = plain(result);
  return rest;
}

// Gemini's SSE events end in CRLF CRLF.
function sseData(text) {
  return text.split(/\r\n\r\n|\n\n/).filter((b) => b.trim() !== '').map((b) => JSON.parse(b.replace(/^data: /, '')));
}

const body = (text, extra = {}) => JSON.stringify({ contents: [{ role: 'user', parts: [{ text }] }], ...extra });

test('gemini: generateContent, both streams and function calling replay byte for byte; the key is stored nowhere', { timeout: 60000 }, async (t) => {
  const r = await recordThenReplay(t, gemini({ logLevel: 'debug' }), async ({ http, phase, fake, server }) => {
    const ai = await geminiClient(http);

    // 1. Plain, twice the same request (fresh responseId each time when
    //    recorded; the recorded order when replayed).
    const ask = { model: MODEL, contents: `What is the capital of France? ${VISIBLE}`, config: { temperature: 0.2 } };
    const plainAnswer = bare(await ai.models.generateContent(ask));
    const again = bare(await ai.models.generateContent(ask));

    // 2. Streamed through the SDK (alt=sse).
    const chunks = (await collect(await ai.models.generateContentStream({ model: MODEL, contents: 'Tell me about streams.' }))).map(bare);

    // 3. Function calling: the call, then the functionResponse.
    const tools = [{ functionDeclarations: [WEATHER] }];
    const user = { role: 'user', parts: [{ text: 'What is the weather? Use get_weather with city=Rome' }] };
    const call = bare(await ai.models.generateContent({ model: MODEL, contents: [user], config: { tools } }));
    const fc = call.candidates[0].content.parts[0].functionCall;
    const final = bare(await ai.models.generateContent({
      model: MODEL,
      contents: [user, call.candidates[0].content, { role: 'user', parts: [{ functionResponse: { name: fc.name, response: { city: fc.args.city, sky: 'clear' } } }] }],
      config: { tools },
    }));

    // 4. The SDK's own default API version (v1), and the run's URL prefix.
    const v1 = bare(await (await geminiClient(http, { apiVersion: null })).models.generateContent({ model: MODEL, contents: 'Which API version?' }));
    const prefixed = bare(await (await geminiClient(http, { prefix: `/run/${server.run}` })).models.generateContent({ model: MODEL, contents: 'Under the run prefix.' }));

    // 5. Raw HTTP with the key as ?key=: the body, the SSE bytes, the SSE
    //    chunk boundaries, and the JSON-array stream.
    const base = `${http}/v1beta/models/${MODEL}`;
    const rawPlain = await post(`${base}:generateContent?key=${GEMINI_KEY}`, body(`Raw ${VISIBLE}`));
    const rawSse = await post(`${base}:streamGenerateContent?alt=sse&key=${GEMINI_KEY}`, body('Raw stream, please.'));
    const wire = await rawRequest(http, postBytes(`${base}:streamGenerateContent?alt=sse&key=${GEMINI_KEY}`, body('And the boundaries?'),
      { 'Content-Type': 'application/json' }));
    const rawArray = await post(`${base}:streamGenerateContent?key=${GEMINI_KEY}`, body('A JSON array, please.'));

    if (phase === 'record') {
      assert.equal(fake.requests.length, 11);
      assert.deepEqual(fake.keys.map((k) => k.key), Array(11).fill(GEMINI_KEY), 'the key reached the upstream every time');
      assert.deepEqual(fake.keys.slice(0, 7).map((k) => k.via), Array(7).fill('header'), 'the SDK sends x-goog-api-key');
      assert.deepEqual(fake.requests.map((q) => new URL(q.path, 'http://x').pathname), [
        ...Array(2).fill(`/v1beta/models/${MODEL}:generateContent`),
        `/v1beta/models/${MODEL}:streamGenerateContent`,
        ...Array(2).fill(`/v1beta/models/${MODEL}:generateContent`),
        `/v1/models/${MODEL}:generateContent`,
        `/v1beta/models/${MODEL}:generateContent`,
        `/v1beta/models/${MODEL}:generateContent`,
        ...Array(3).fill(`/v1beta/models/${MODEL}:streamGenerateContent`),
      ]);
      assert.equal(new URL(fake.requests[2].path, 'http://x').searchParams.get('alt'), 'sse');
      assert.equal(new URL(fake.requests[10].path, 'http://x').searchParams.get('alt'), null, 'the JSON-array stream is asked for as such');
      assert.equal(rawPlain.text, fake.sent[7].body, 'recording relays the body byte for byte');
      assert.equal(rawSse.text, fake.sent[8].body);
      assert.deepEqual(wire.chunks.map((c) => c.toString('utf8')), fake.sent[9].events, 'one HTTP chunk per upstream event');
      assert.equal(rawArray.text, fake.sent[10].body);
      // The WAL before any checkpoint: no key, but the stored text is there.
      const files = dbBytes(server.db);
      assert.ok(Object.values(files).some((b) => b.indexOf(VISIBLE) >= 0), 'the scan sees stored request text');
      assertNowhere('db while serving', files, GEMINI_KEY);
    }
    return {
      plainAnswer, again, chunks, call, final, v1, prefixed,
      rawPlain: { status: rawPlain.status, contentType: rawPlain.headers.get('content-type'), text: rawPlain.text },
      rawSse: { status: rawSse.status, contentType: rawSse.headers.get('content-type'), text: rawSse.text },
      wireChunks: wire.chunks.map((c) => c.toString('utf8')),
      rawArray: { status: rawArray.status, contentType: rawArray.headers.get('content-type'), text: rawArray.text },
    };
  });

  const { plainAnswer, again, chunks, call, final, v1, prefixed, rawPlain, rawSse, rawArray } = r.recorded;
  assert.match(plainAnswer.candidates[0].content.parts[0].text, /capital of France/);
  assert.equal(plainAnswer.candidates[0].finishReason, 'STOP');
  assert.notEqual(again.responseId, plainAnswer.responseId, 'the fake answers the same request afresh');
  assert.ok(chunks.length > 2, `a stream of several chunks, got ${chunks.length}`);
  assert.match(chunks.map((c) => c.candidates[0].content.parts[0].text).join(''), /^You said: Tell me about streams\./);
  assert.equal(chunks.at(-1).candidates[0].finishReason, 'STOP');
  assert.deepEqual(call.candidates[0].content.parts[0].functionCall, { name: 'get_weather', args: { city: 'Rome' } });
  assert.match(final.candidates[0].content.parts[0].text, /"sky":"clear"/);
  assert.match(v1.candidates[0].content.parts[0].text, /Which API version/);
  assert.match(prefixed.candidates[0].content.parts[0].text, /Under the run prefix/);
  assert.equal(rawPlain.status, 200);
  assert.match(rawPlain.contentType, /^application\/json/);
  assert.match(rawSse.contentType, /^text\/event-stream/);
  assert.ok(rawSse.text.includes('\r\n\r\n'), 'Gemini\'s CRLF event ends are part of the bytes');
  assert.ok(sseData(rawSse.text).length > 2);
  assert.ok(r.recorded.wireChunks.length > 2);
  for (const c of r.recorded.wireChunks) assert.equal(sseData(c).length, 1, `one event per HTTP chunk: ${JSON.stringify(c)}`);
  assert.match(rawArray.contentType, /^application\/json/);
  const array = JSON.parse(rawArray.text);
  assert.ok(Array.isArray(array) && array.length > 2, 'a JSON array of chunks');
  assert.equal(new Set(array.map((c) => c.responseId)).size, 1, 'one responseId per answer');

  // The point: replay is identical, bytes and SDK objects.
  assert.deepEqual(r.replayed, r.recorded);

  // The key, in every place understudy writes.
  const after = dbBytes(r.db);
  assert.ok(Object.values(after).some((b) => b.indexOf(VISIBLE) >= 0));
  assertNowhere('db after shutdown', after, GEMINI_KEY);
  assertNowhere('server log', {
    [r.recordServer.stderrPath]: fs.readFileSync(r.recordServer.stderrPath),
    [r.replayServer.stderrPath]: fs.readFileSync(r.replayServer.stderrPath),
  }, GEMINI_KEY);
  const exported = await exportSession(r.db, r.session);
  assert.equal(exported.exchanges.length, 11);
  const natives = exported.exchanges.flatMap((e) => [
    bytesField(e.native?.request_body),
    bytesField(e.native?.response_body),
    ...(e.native?.chunks ?? []).map((c) => bytesField(c.data)),
  ]).join('\n');
  assert.ok(natives.includes(VISIBLE), 'the decoded native bodies are what was sent');
  assertNowhere('export', { jsonl: exported.raw, natives }, GEMINI_KEY);
  for (const [phase, server] of [['record', r.recordServer], ['replay', r.replayServer]]) {
    const trace = await traceOf(server);
    assert.ok(trace.raw.includes(VISIBLE), `the ${phase} trace holds the requests`);
    assertNowhere(`${phase} trace`, { trace: trace.raw }, GEMINI_KEY);
  }
});

test('gemini: errors in Gemini\'s shape — upstream 400/404 recorded and replayed, bad input 400, a miss 404', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, gemini(), async ({ http, phase, fake }) => {
    const { ApiError } = await genaiSdk();
    const ai = await geminiClient(http);
    const failure = (p) => p.then((v) => assert.fail(`expected a failure, got ${JSON.stringify(v)}`), (e) => e);
    // The upstream's own errors: an unknown model, a wrong key.
    const notFound = await failure(ai.models.generateContent({ model: 'no-such-model', contents: 'hello' }));
    assert.ok(notFound instanceof ApiError, String(notFound));
    const badKey = await failure((await geminiClient(http, { apiKey: 'AIza-wrong' })).models.generateContent({ model: MODEL, contents: 'hello' }));
    // understudy's own: malformed JSON, never forwarded.
    const before = fake.requests.length;
    const malformed = await post(`${http}/v1beta/models/${MODEL}:generateContent`, '{"contents": [', { 'x-goog-api-key': GEMINI_KEY });
    const noContents = await post(`${http}/v1beta/models/${MODEL}:generateContent`, JSON.stringify({ contents: 'not a list' }), { 'x-goog-api-key': GEMINI_KEY });
    if (phase === 'record') assert.equal(fake.requests.length, before, 'bad input is not forwarded');
    return {
      notFound: { status: notFound.status, message: notFound.message },
      badKey: { status: badKey.status, message: badKey.message },
      malformed: { status: malformed.status, json: malformed.json },
      noContents: { status: noContents.status, json: noContents.json },
    };
  });
  const { notFound, badKey, malformed, noContents } = r.recorded;
  assert.equal(notFound.status, 404);
  assert.deepEqual(Object.keys(JSON.parse(notFound.message).error).sort(), ['code', 'message', 'status']);
  assert.equal(JSON.parse(notFound.message).error.status, 'NOT_FOUND');
  assert.match(JSON.parse(notFound.message).error.message, /no-such-model/);
  assert.equal(badKey.status, 400);
  assert.equal(JSON.parse(badKey.message).error.status, 'INVALID_ARGUMENT');
  for (const [what, e] of [['malformed', malformed], ['contents not a list', noContents]]) {
    assert.equal(e.status, 400, `${what}: ${JSON.stringify(e.json)}`);
    assert.equal(e.json.error.code, 400, what);
    assert.equal(e.json.error.status, 'INVALID_ARGUMENT', what);
    assert.equal(typeof e.json.error.message, 'string');
  }
  assert.match(malformed.json.error.message, /invalid JSON/i);
  assert.match(noContents.json.error.message, /contents/);
  assert.deepEqual(r.replayed, r.recorded, 'upstream errors replay as recorded');

  // A request the recording does not hold: 404 in Gemini's shape.
  const server = await Server.start(t, r.dir, { name: 'miss', args: ['--mode', 'none', '--session', r.session] });
  const miss = await post(`${server.http}/v1beta/models/${MODEL}:generateContent`, body('Never recorded.'), { 'x-goog-api-key': GEMINI_KEY });
  assert.equal(miss.status, 404, miss.text);
  assert.equal(miss.headers.get('x-understudy-error'), 'no_recording');
  assert.equal(miss.json.error.code, 404);
  assert.equal(miss.json.error.status, 'NOT_FOUND');
  assert.match(miss.json.error.message, /no recorded exchange/);
  assert.equal(await server.stop(), 0);
});

test('gemini: with no --upstream gemini, recording answers 412 in Gemini\'s shape', { timeout: 30000 }, async (t) => {
  // An OpenAI upstream only (never contacted: nothing here speaks OpenAI).
  const server = await Server.start(t, tempDir(t, 'understudy-node22-'), {
    args: ['--mode', 'record', '--session', 'nowhere', '--upstream', 'openai=http://127.0.0.1:9'],
  });
  const res = await post(`${server.http}/v1beta/models/${MODEL}:generateContent`, body('hello'), { 'x-goog-api-key': GEMINI_KEY });
  assert.equal(res.status, 412, res.text);
  assert.equal(res.json.error.code, 412);
  assert.equal(res.json.error.status, 'FAILED_PRECONDITION');
  assert.equal(await server.stop(), 0);
});

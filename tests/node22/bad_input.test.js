// Hostile and malformed input on the routes the Responses, Gemini and
// embeddings APIs added: every answer is an error in the caller's API shape
// naming what is wrong, nothing reaches the upstream or the store, and the
// server keeps serving. (Responses' own cases: responses.test.js.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Server, exportSession, requireBinary, tempDir } from '../node/lib/harness.js';
import { postBytes, rawRequest } from '../node/lib/raw_http.js';
import { startFakeGemini } from './fakes/gemini.js';
import { startFakeOpenAI } from './fakes/openai.js';
import { post } from './lib/journey.js';
import { API_KEY } from './lib/sdk.js';

requireBinary();

const OPENAI = { authorization: `Bearer ${API_KEY}` };
const GEMINI = { 'x-goog-api-key': 'AIza-bad-input-key-000000000000' };
const deep = (n) => '['.repeat(n) + ']'.repeat(n);

test('bad input on /v1/embeddings, Gemini and GET /v1/responses/{id}: clear errors in each shape, nothing forwarded or recorded, still serving', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-bad-');
  const openai = await startFakeOpenAI();
  const gemini = await startFakeGemini();
  t.after(() => openai.close());
  t.after(() => gemini.close());
  const server = await Server.start(t, dir, {
    args: ['--mode', 'record', '--session', 'bad', '--upstream', `openai=${openai.url}`,
      '--upstream', `gemini=${gemini.url}`, '--max-body-bytes', '262144'],
  });
  const embeddings = `${server.http}/v1/embeddings`;
  const generate = `${server.http}/v1beta/models/gemini-2.5-flash:generateContent`;

  // Embeddings: OpenAI's shape, the path of the bad field.
  const openaiError = async (body, pattern, what, status = 400) => {
    const res = await post(embeddings, body, OPENAI);
    assert.equal(res.status, status, `${what}: ${res.text}`);
    assert.equal(res.json?.error?.type, 'invalid_request_error', `${what}: ${res.text}`);
    assert.match(res.json.error.message, pattern, `${what}: ${res.text}`);
  };
  await openaiError('{"model":"text-embedding-3-small","input":', /invalid JSON at byte \d+/, 'malformed JSON');
  await openaiError(JSON.stringify({ model: 'text-embedding-3-small', input: 42 }), /^input: expected/, 'input of the wrong type');
  await openaiError(JSON.stringify({ model: 'text-embedding-3-small', input: ['a', 7] }), /^input\[1\]: expected a string, got number/, 'a mixed input array');
  await openaiError(JSON.stringify({ model: 'text-embedding-3-small', input: 'a', encoding_format: 'hex' }), /^encoding_format: .*float.*base64/, 'an unknown encoding');
  await openaiError(JSON.stringify({ model: 'text-embedding-3-small', input: 'a', dimensions: -3 }), /^dimensions: /, 'negative dimensions');
  await openaiError(`{"model":"m","input":${deep(100000)}}`, /nested deeper than 256 levels/, '100k-deep JSON');
  const badUtf8 = await rawRequest(server.http, postBytes(embeddings,
    Buffer.concat([Buffer.from('{"model":"m","input":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]),
    { 'Content-Type': 'application/json', ...OPENAI }));
  assert.equal(badUtf8.status, 400, badUtf8.body.toString());
  assert.match(JSON.parse(badUtf8.body.toString()).error.message, /invalid UTF-8 at byte 22/);

  // Gemini: Gemini's shape {error: {code, message, status}}.
  const geminiError = async (url, body, pattern, what, status = 400) => {
    const res = await post(url, body, GEMINI);
    assert.equal(res.status, status, `${what}: ${res.text}`);
    assert.deepEqual(Object.keys(res.json?.error ?? {}).sort(), ['code', 'message', 'status'], `${what}: ${res.text}`);
    assert.equal(res.json.error.code, status, what);
    assert.match(res.json.error.message, pattern, `${what}: ${res.text}`);
    return res;
  };
  await geminiError(generate, JSON.stringify({ contents: [{ role: 'user', parts: [{ bogus: 1 }] }] }),
    /^contents\[0\]\.parts\[0\]: unknown part; expected one of text/, 'an unknown part kind');
  await geminiError(generate, JSON.stringify({ contents: [{ role: 'user', parts: 'hi' }] }), /^contents\[0\]\.parts: expected/, 'parts of the wrong type');
  await geminiError(generate, JSON.stringify({ contents: [{ role: 'robot', parts: [{ text: 'hi' }] }] }), /contents\[0\]\.role/, 'an unknown role');
  await geminiError(generate, `{"contents":${deep(100000)}}`, /nested deeper than 256 levels/, '100k-deep JSON');
  const unknownMethod = await geminiError(`${server.http}/v1beta/models/gemini-2.5-flash:countTokens`, '{}', /generateContent and streamGenerateContent/, 'a method not served', 404);
  assert.equal(unknownMethod.json.error.status, 'NOT_FOUND');
  const wrongMethod = await fetch(generate, { method: 'GET', headers: GEMINI });
  assert.equal(wrongMethod.status, 405);
  assert.equal(wrongMethod.headers.get('allow'), 'POST');
  const wrongType = await fetch(generate, { method: 'POST', headers: { ...GEMINI, 'content-type': 'text/plain' }, body: '{}' });
  assert.equal(wrongType.status, 415);
  assert.match((await wrongType.json()).error.message, /content-type: expected application\/json/);

  // Over --max-body-bytes: 413, in the shape of the API the path names.
  const big = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'x'.repeat(300000) }] }] });
  const tooLarge = await rawRequest(server.http, postBytes(generate, big, { 'Content-Type': 'application/json', ...GEMINI }));
  assert.equal(tooLarge.status, 413, tooLarge.body.toString());
  const tooLargeError = JSON.parse(tooLarge.body.toString()).error;
  assert.match(tooLargeError.message, /262144 bytes/);
  assert.ok('status' in tooLargeError, `Gemini's shape: ${tooLarge.body}`);
  const tooLargeEmbeddings = await rawRequest(server.http, postBytes(embeddings,
    JSON.stringify({ model: 'm', input: 'x'.repeat(300000) }), { 'Content-Type': 'application/json', ...OPENAI }));
  assert.equal(tooLargeEmbeddings.status, 413);
  assert.equal(JSON.parse(tooLargeEmbeddings.body.toString()).error.code, 'body_too_large');

  // GET /v1/responses/{id}: unknown ids are 404, other methods 405.
  const unknown = await fetch(`${server.http}/v1/responses/resp_unknown`, { headers: OPENAI });
  assert.equal(unknown.status, 404);
  assert.match((await unknown.json()).error.message, /no response "resp_unknown" was recorded or served in this run/);
  const deleted = await fetch(`${server.http}/v1/responses/resp_unknown`, { method: 'DELETE', headers: OPENAI });
  assert.equal(deleted.status, 405);

  assert.equal(openai.requests.length, 0, 'nothing malformed reached the OpenAI upstream');
  assert.equal(gemini.requests.length, 0, 'nothing malformed reached the Gemini upstream');

  // Still serving and recording, on both upstreams.
  const ok = await post(embeddings, JSON.stringify({ model: 'text-embedding-3-small', input: 'still here', encoding_format: 'float' }), OPENAI);
  assert.equal(ok.status, 200, ok.text);
  const okGemini = await post(generate, JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'still here' }] }] }), GEMINI);
  assert.equal(okGemini.status, 200, okGemini.text);
  assert.equal(await server.stop(), 0, server.stderr());
  const exported = await exportSession(server.db, 'bad');
  assert.equal(exported.exchanges.length, 2, 'only the two good requests were recorded');
});

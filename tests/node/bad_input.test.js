// Bad input over raw HTTP gets a precise error and changes nothing; a
// client that hangs up mid-stream while recording leaves no partial
// exchange behind; the server keeps serving after all of it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Server, bytesField, exportSession, parseSse, requireBinary, run, tempDir, waitFor } from './lib/harness.js';
import { hangUpMidStream, postBytes, rawRequest } from './lib/raw_http.js';
import { API_KEY, openaiClient, startFake } from './lib/record_replay.js';

requireBinary();

const MODEL = 'gpt-4o-mini';
const OPENAI_HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` };

async function post(url, body, headers) {
  const res = await fetch(url, { method: 'POST', headers, body });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // asserted by the caller
  }
  return { status: res.status, text, json, headers: res.headers };
}

test('bad input: malformed JSON 400, wrong content type 415, oversized body 413; nothing recorded, still serving', { timeout: 30000 }, async (t) => {
  const dir = tempDir(t);
  const fake = await startFake('openai');
  const claude = await startFake('anthropic');
  t.after(() => fake.close());
  t.after(() => claude.close());
  const server = await Server.start(t, dir, {
    args: ['--mode', 'record', '--session', 'bad', '--upstream', `openai=${fake.url}`, '--upstream', `anthropic=${claude.url}`, '--max-body-bytes', '2048'],
  });
  const chat = `${server.http}/v1/chat/completions`;

  // Malformed JSON.
  const malformed = await post(chat, '{"model": "gpt-4o-mini", "messages": [', OPENAI_HEADERS);
  assert.equal(malformed.status, 400, malformed.text);
  assert.match(malformed.json.error.message, /invalid JSON/i);
  assert.match(malformed.json.error.message, /\bbyte \d+/, 'names where');
  assert.equal(malformed.json.error.type, 'invalid_request_error');

  // Well-formed JSON, wrong shape: the path of the bad field.
  const noRole = await post(chat, JSON.stringify({ model: MODEL, messages: [{ content: 'hi' }] }), OPENAI_HEADERS);
  assert.equal(noRole.status, 400, noRole.text);
  assert.match(noRole.json.error.message, /messages\[0\]\.role/);

  // The same on the Anthropic route, in Anthropic's error shape.
  const anthropicMalformed = await post(`${server.http}/v1/messages`, '{"model": ', {
    'content-type': 'application/json', 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01',
  });
  assert.equal(anthropicMalformed.status, 400, anthropicMalformed.text);
  assert.equal(anthropicMalformed.json.type, 'error');
  assert.equal(anthropicMalformed.json.error.type, 'invalid_request_error');
  assert.match(anthropicMalformed.json.error.message, /invalid JSON/i);

  // Wrong content type.
  const textPlain = await post(chat, JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }), {
    ...OPENAI_HEADERS, 'content-type': 'text/plain',
  });
  assert.equal(textPlain.status, 415, textPlain.text);
  assert.match(textPlain.json.error.message, /content-type: expected application\/json, got "text\/plain"/);

  // Over --max-body-bytes (2048), by a little and by a lot: 413 with the
  // limit named, readable by a client still sending its body.
  for (const size of [4096, 256 * 1024]) {
    const big = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x'.repeat(size) }] });
    const tooLarge = await rawRequest(server.http, postBytes(chat, big, { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` }));
    assert.equal(tooLarge.status, 413, tooLarge.body.toString());
    const error = JSON.parse(tooLarge.body.toString()).error;
    assert.match(error.message, /2048 bytes/);
    assert.equal(error.code, 'body_too_large');
  }

  assert.equal(fake.requests.length + claude.requests.length, 0, 'nothing bad was forwarded');

  // Still serving, and recording.
  const ok = await (await openaiClient(server.http)).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Still there?' }] });
  assert.match(ok.choices[0].message.content, /Still there\?/);
  assert.equal(await server.stop(), 0);
  const exported = await exportSession(server.db, 'bad');
  assert.equal(exported.exchanges.length, 1, 'only the good request was recorded');
  assert.equal(exported.exchanges[0].request.messages[0].content, 'Still there?');
});

test('record mode: a client that hangs up mid-stream cancels the upstream call and records nothing', { timeout: 30000 }, async (t) => {
  const dir = tempDir(t);
  // The fake sends three events of a "[slow]" stream, then waits.
  const fake = await startFake('openai', {
    holdWhen: (body) => JSON.stringify(body.messages).includes('[slow]'),
    holdAfterEvents: 3,
  });
  t.after(() => fake.close());
  const server = await Server.start(t, dir, {
    args: ['--mode', 'record', '--session', 'hangup', '--upstream', `openai=${fake.url}`],
  });
  const chat = `${server.http}/v1/chat/completions`;
  const request = postBytes(chat,
    JSON.stringify({ model: MODEL, stream: true, messages: [{ role: 'user', content: '[slow] tell me a long story' }] }),
    { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` });

  const seen = await hangUpMidStream(server.http, request, (text) => parseSse(text).length >= 2);
  assert.ok(parseSse(seen).length >= 2, 'the first events were relayed while the upstream was still streaming');
  assert.equal(fake.holding, 1, 'the upstream stream is still open, held by the fake');

  // understudy notices and cancels the upstream call.
  await waitFor(() => fake.streamsAborted === 1, { timeoutMs: 5000, what: 'the upstream stream to be closed by understudy after the client hung up' });
  assert.equal(fake.streamsCompleted, 0);

  // The server keeps serving and recording.
  const client = await openaiClient(server.http);
  const after = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'After the hang-up' }] });
  assert.match(after.choices[0].message.content, /After the hang-up/);
  const streamed = [];
  for await (const c of await client.chat.completions.create({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'Streamed after' }] })) streamed.push(c);
  assert.match(streamed.map((c) => c.choices[0]?.delta?.content ?? '').join(''), /Streamed after/);

  assert.equal(await server.stop(), 0);
  const exported = await exportSession(server.db, 'hangup');
  assert.equal(exported.exchanges.length, 2, `exchanges: ${exported.raw}`);
  for (const e of exported.exchanges) {
    assert.ok(!JSON.stringify(e.request).includes('[slow]'), 'no partial exchange of the abandoned stream');
    assert.ok(!bytesField(e.native?.request_body).includes('[slow]'));
  }
  assert.deepEqual(exported.exchanges.map((e) => e.request.messages[0].content), ['After the hang-up', 'Streamed after']);
  const ls = await run(['sessions', 'ls', '--db', server.db]);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, /^hangup\s+1\s+closed\s+2\s/m);
});

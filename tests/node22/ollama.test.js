// Ollama (POST /api/chat, /api/generate, /api/embed; NDJSON streams; GET
// /api/tags) with the npm `ollama` client, unmodified but for the host it
// reads from OLLAMA_HOST: `understudy record -- AGENT` through a fake whose
// timestamps, durations and texts change on every call, then `understudy
// replay -- AGENT` three times with the fake gone and its port held by a
// tripwire: the same bytes, no connection; a 429 rule the agent retries
// through; bad input answered in Ollama's error shape with nothing
// forwarded or recorded; a miss naming the field.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { Server, exportSession, requireBinary, tempDir } from '../node/lib/harness.js';
import { postBytes, rawRequest } from '../node/lib/raw_http.js';
import { startFakeOllama } from './fakes/ollama.js';
import { post, recordThenReplayThrice } from './lib/journey.js';
import { FIXTURES, NODE22_BIN } from './lib/sdk.js';

requireBinary();

const AGENT = [NODE22_BIN, path.join(FIXTURES, 'ollama_agent.mjs')];

test('ollama: chat, streams, tools, generate and embed record once and replay three times byte for byte with no upstream', { timeout: 120000 }, async (t) => {
  const ollama = await startFakeOllama();
  t.after(() => ollama.close());
  const r = await recordThenReplayThrice(t, {
    fakes: { ollama }, agent: AGENT, session: 'local', env: {}, replayEnv: {},
    args: ['--scenario', path.join(FIXTURES, 'ollama_rules.yaml')],
  });
  const out = r.recorded.stdout;
  assert.match(out, /^chat \S+ stop \d+: .+\nstream \S+ \d+: .+\ntools get_weather\(\{"city":"Oslo"\}\): .*snow.*\ngenerate: .+\nembed 2 x 8: .+\n$/);
  assert.match(r.recorded.stderr, /retrying after 429: server busy/);
  assert.match(r.recorded.stderr, /^env: http:\/\/127\.0\.0\.1:\d+\/run\/[^/\s]+$/m);
  assert.deepEqual(ollama.requests.map((q) => q.path), ['/api/chat', '/api/chat', '/api/chat', '/api/chat', '/api/generate', '/api/embed']);
  assert.equal(ollama.sent[1].body.split('\n').filter((l) => l !== '').length > 2, true, 'the fake streamed several lines');
  assert.match(r.recorded.stderr, /served 7, recorded 6, misses 0/);
  for (const [i, replay] of r.replays.entries()) {
    assert.equal(replay.stdout, out, `replay ${i + 1}: the same bytes`);
    assert.match(replay.stderr, /retrying after 429/, `replay ${i + 1}`);
    assert.match(replay.stderr, /served 7, recorded 0, misses 0/, `replay ${i + 1}`);
  }
  assert.equal(r.wires.ollama.connections, 0, 'nothing reached the upstream\'s port');

  // Recorded natively: the NDJSON lines as they came, one chunk each.
  const exported = await exportSession(r.db, 'local');
  assert.deepEqual(exported.exchanges.map((e) => e.native.provider), Array(6).fill('ollama'));
  const stream = exported.exchanges[1].native;
  assert.equal(stream.content_type, 'application/x-ndjson');
  assert.deepEqual(stream.chunks.map((c) => Buffer.from(c.data, 'base64').toString()), ollama.sent[1].events);
});

test('ollama: bad input answered in Ollama\'s shape, nothing forwarded or recorded; GET /api/tags; a miss names the field', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-ollama-');
  const ollama = await startFakeOllama();
  t.after(() => ollama.close());
  const rec = await Server.start(t, dir, {
    name: 'record', args: ['--mode', 'record', '--session', 'bad', '--upstream', `ollama=${ollama.url}`, '--max-body-bytes', '262144'],
  });
  const chat = `${rec.http}/api/chat`;
  const refused = async (body, pattern, what, status = 400) => {
    const res = await post(chat, body);
    assert.equal(res.status, status, `${what}: ${res.text}`);
    assert.deepEqual(Object.keys(res.json ?? {}), ['error'], `${what}: ${res.text}`);
    assert.equal(typeof res.json.error, 'string', what);
    assert.match(res.json.error, pattern, `${what}: ${res.text}`);
  };
  await refused('{"model":"llama3.2:3b","messages":', /invalid JSON at byte \d+/, 'malformed JSON');
  await refused(JSON.stringify({ model: 'llama3.2:3b', messages: 'hi' }), /^messages: expected/, 'messages of the wrong type');
  await refused(JSON.stringify({ model: 'llama3.2:3b', messages: [{ role: 'wizard', content: 'x' }] }), /messages\[0\]\.role/, 'an unknown role');
  await refused(JSON.stringify({ model: 'llama3.2:3b', messages: [{ role: 'user', content: 7 }] }), /messages\[0\]\.content/, 'content of the wrong type');
  await refused(`{"model":"m","messages":${'['.repeat(100000)}${']'.repeat(100000)}}`, /nested deeper than/, '100k-deep JSON');
  await refused(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(300000) }] }), /exceeds 262144 bytes/, 'over the body limit', 413);
  const badUtf8 = await rawRequest(rec.http, postBytes(chat,
    Buffer.concat([Buffer.from('{"model":"m","messages":[{"role":"user","content":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}]}')]),
    { 'Content-Type': 'application/json' }));
  assert.equal(badUtf8.status, 400, badUtf8.body.toString());
  assert.match(JSON.parse(badUtf8.body.toString()).error, /invalid UTF-8 at byte \d+/);
  assert.equal(ollama.requests.length, 0, 'nothing forwarded');

  // A good call is recorded; the upstream's own 404 is relayed in its shape.
  const good = await post(chat, JSON.stringify({ model: 'llama3.2:3b', stream: false, messages: [{ role: 'user', content: 'Hello there' }] }));
  assert.equal(good.status, 200, good.text);
  const unknown = await post(chat, JSON.stringify({ model: 'nope:1b', stream: false, messages: [{ role: 'user', content: 'x' }] }));
  assert.equal(unknown.status, 404, unknown.text);
  assert.match(unknown.json.error, /model "nope:1b" not found/);
  assert.equal(await rec.stop(), 0, rec.stderr());
  await ollama.close();

  const rep = await Server.start(t, dir, { name: 'replay', args: ['--mode', 'none', '--session', 'bad'] });
  const tags = await fetch(`${rep.http}/run/${rep.run}/api/tags`);
  assert.equal(tags.status, 200);
  assert.deepEqual((await tags.json()).models.map((m) => m.name), ['llama3.2:3b', 'nope:1b']);
  const miss = await post(`${rep.http}/run/${rep.run}/api/chat`, JSON.stringify({ model: 'llama3.2:3b', stream: false, messages: [{ role: 'user', content: 'Hello here' }] }));
  assert.equal(miss.status, 404, miss.text);
  assert.match(miss.json.error, /messages\[0\]\.content: recorded "Hello there" got "Hello here"/);
  assert.equal(await rep.stop(), 0, rep.stderr());
  const exported = await exportSession(rec.db, 'bad');
  assert.equal(exported.exchanges.length, 2, 'only the good call and the upstream 404 are recorded');
});

// Cohere v2 chat (POST /v2/chat, whole and SSE) with the `cohere-ai`
// client: `understudy record -- AGENT` through a fake whose ids and texts
// change on every call, then `understudy replay -- AGENT` three times with
// the fake gone and its port held by a tripwire: the same bytes, no
// connection, the key stored nowhere; a 429 rule the client retries
// through; bad input answered in Cohere's shape, nothing forwarded.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { Server, exportSession, requireBinary, tempDir } from '../node/lib/harness.js';
import { startFakeCohere } from './fakes/cohere.js';
import { assertNowhere, dbBytes, post, recordThenReplayThrice } from './lib/journey.js';
import { FIXTURES, NODE22_BIN } from './lib/sdk.js';

requireBinary();

const KEY = 'co-test-SECRET-9f8e7d6c';
const AGENT = [NODE22_BIN, path.join(FIXTURES, 'cohere_agent.mjs')];

test('cohere: chat, a stream and a tool loop record once and replay three times byte for byte with no upstream and no key', { timeout: 120000 }, async (t) => {
  const cohere = await startFakeCohere({ apiKey: KEY });
  t.after(() => cohere.close());
  const r = await recordThenReplayThrice(t, {
    fakes: { cohere }, agent: AGENT, session: 'co', env: { CO_API_KEY: KEY }, replayEnv: { CO_API_KEY: 'unused' },
    args: ['--scenario', path.join(FIXTURES, 'cohere_rules.yaml')],
  });
  const out = r.recorded.stdout;
  assert.match(out, /^chat \S+ COMPLETE: .+\nstream COMPLETE \d+: .+\ntools get_weather\(\{"city":"Lima"\}\) get_weather_\S+: .*fog.*\n$/);
  assert.deepEqual(cohere.requests.map((q) => q.path), ['/v2/chat', '/v2/chat', '/v2/chat', '/v2/chat']);
  assert.match(r.recorded.stderr, /served 5, recorded 4, misses 0/);
  for (const [i, replay] of r.replays.entries()) {
    assert.equal(replay.stdout, out, `replay ${i + 1}: the same bytes`);
    assert.match(replay.stderr, /served 5, recorded 0, misses 0/, `replay ${i + 1}`);
  }
  assert.equal(r.wires.cohere.connections, 0, 'nothing reached the upstream\'s port');
  const exported = await exportSession(r.db, 'co');
  assert.deepEqual(exported.exchanges.map((e) => e.native.provider), Array(4).fill('cohere'));
  assertNowhere('the key', { ...dbBytes(r.db), export: exported.raw }, KEY);
});

test('cohere: bad input answered in Cohere\'s shape, nothing forwarded or recorded; a miss names the field', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-cohere-');
  const cohere = await startFakeCohere({ apiKey: KEY });
  t.after(() => cohere.close());
  const rec = await Server.start(t, dir, {
    name: 'record', args: ['--mode', 'record', '--session', 'bad', '--upstream', `cohere=${cohere.url}`, '--max-body-bytes', '262144'],
  });
  const chat = `${rec.http}/v2/chat`;
  const auth = { authorization: `Bearer ${KEY}` };
  const refused = async (body, pattern, what, status = 400) => {
    const res = await post(chat, body, auth);
    assert.equal(res.status, status, `${what}: ${res.text}`);
    assert.equal(typeof res.json?.message, 'string', `${what}: ${res.text}`);
    assert.match(res.json.message, pattern, `${what}: ${res.text}`);
  };
  await refused('{"model":"command-a-03-2025","messages":', /invalid JSON at byte \d+/, 'malformed JSON');
  await refused(JSON.stringify({ model: 'command-a-03-2025', messages: {} }), /^messages: expected/, 'messages of the wrong type');
  await refused(JSON.stringify({ model: 'command-a-03-2025', messages: [{ role: 'user', content: [{ type: 'hologram' }] }] }), /messages\[0\]\.content\[0\]/, 'an unknown content part');
  await refused(`{"model":"m","messages":${'['.repeat(100000)}${']'.repeat(100000)}}`, /nested deeper than/, '100k-deep JSON');
  await refused(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(300000) }] }), /exceeds 262144 bytes/, 'over the body limit', 413);
  assert.equal(cohere.requests.length, 0, 'nothing forwarded');
  const good = await post(chat, JSON.stringify({ model: 'command-a-03-2025', messages: [{ role: 'user', content: 'Hello there' }] }), auth);
  assert.equal(good.status, 200, good.text);
  assert.equal(await rec.stop(), 0, rec.stderr());
  await cohere.close();

  const rep = await Server.start(t, dir, { name: 'replay', args: ['--mode', 'none', '--session', 'bad'] });
  const miss = await post(`${rep.http}/run/${rep.run}/v2/chat`, JSON.stringify({ model: 'command-a-03-2025', messages: [{ role: 'user', content: 'Hello here' }] }));
  assert.equal(miss.status, 404, miss.text);
  assert.match(miss.json.message, /messages\[0\]\.content: recorded "Hello there" got "Hello here"/);
  assert.equal(await rep.stop(), 0, rep.stderr());
  assert.equal((await exportSession(rec.db, 'bad')).exchanges.length, 1, 'only the good call is recorded');
});

// Credentials pass through to the upstream and are never written anywhere:
// not in the SQLite files (main, -wal, -shm), not in `understudy export`,
// not in a trace, not in the server's log — even at debug level.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { test } from 'node:test';
import { Server, bytesField, exportSession, requireBinary, run, tempDir } from './lib/harness.js';
import { anthropicClient, openaiClient, recordThenReplay, startFake } from './lib/record_replay.js';

requireBinary();

const KEY = 'sk-test-SECRET-1234';
const BODY_SECRET = 'body-SECRET-5678';
// Sent beside the secrets and stored on purpose: proves that the scans below
// would find a stored value.
const VISIBLE = 'visible-canary-4242';

// Every DB file's bytes that exist right now.
function dbBytes(db) {
  const files = {};
  for (const suffix of ['', '-wal', '-shm', '-journal']) {
    if (fs.existsSync(db + suffix)) files[db + suffix] = fs.readFileSync(db + suffix);
  }
  return files;
}

function assertNowhere(what, haystacks, needle) {
  for (const [name, bytes] of Object.entries(haystacks)) {
    assert.equal(Buffer.from(bytes).indexOf(needle), -1, `${what}: "${needle}" found in ${name}`);
  }
}

test('secrets: API keys and redacted body fields reach the upstream but are never stored or logged', { timeout: 40000 }, async (t) => {
  const dir = tempDir(t);
  const openai = await startFake('openai');
  const anthropic = await startFake('anthropic');
  t.after(() => openai.close());
  t.after(() => anthropic.close());
  const common = ['--redact-json-path', 'metadata.api_key', '--upstream', `openai=${openai.url}`, '--upstream', `anthropic=${anthropic.url}`];

  const ask = async (http) => {
    const oa = await openaiClient(http, { apiKey: KEY });
    const an = await anthropicClient(http, { apiKey: KEY });
    const a = await oa.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: `Hello ${VISIBLE}` }],
      metadata: { api_key: BODY_SECRET, note: VISIBLE },
    });
    const b = await oa.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: `Stream ${VISIBLE}` }],
      metadata: { api_key: BODY_SECRET },
      stream: true,
    });
    for await (const chunk of b) void chunk;
    const c = await an.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: `Hi ${VISIBLE}` }],
      metadata: { api_key: BODY_SECRET, user_id: VISIBLE },
    });
    // The classic Anthropic header, over raw HTTP (SDK 1.x sends a bearer).
    const d = await fetch(`${http}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: `Raw ${VISIBLE}` }] }),
    });
    assert.equal(d.status, 200);
    return [a.choices[0].message.content, c.content[0].text, await d.text()];
  };

  const rec = await Server.start(t, dir, { name: 'record', logLevel: 'debug', args: ['--mode', 'record', '--session', 'secret', ...common] });
  const recorded = await ask(rec.http);

  // The upstream got the key and the body as the SDK sent it.
  assert.equal(openai.requests.length, 2);
  for (const r of openai.requests) {
    assert.equal(r.headers.authorization, `Bearer ${KEY}`);
    assert.equal(r.body.metadata.api_key, BODY_SECRET);
  }
  assert.equal(anthropic.requests.length, 2);
  assert.equal(anthropic.requests[0].headers.authorization, `Bearer ${KEY}`);
  assert.equal(anthropic.requests[0].body.metadata.api_key, BODY_SECRET);
  assert.equal(anthropic.requests[1].headers['x-api-key'], KEY);

  // While the server runs (WAL not yet checkpointed) and after it stopped.
  const whileRunning = dbBytes(rec.db);
  assert.ok(Object.values(whileRunning).some((b) => b.indexOf(VISIBLE) >= 0), 'the scan sees stored request text');
  assertNowhere('db while serving', whileRunning, KEY);
  assertNowhere('db while serving', whileRunning, BODY_SECRET);
  assert.equal(await rec.stop(), 0);

  // Replay with the same flags: the key and body secret arrive again and
  // must not land in the trace either.
  await openai.close();
  await anthropic.close();
  const rep = await Server.start(t, dir, { name: 'replay', logLevel: 'debug', args: ['--mode', 'none', '--session', 'secret', ...common] });
  assert.deepEqual(await ask(rep.http), recorded);
  const replayRun = rep.run;
  assert.equal(await rep.stop(), 0);

  const after = dbBytes(rec.db);
  assert.ok(Object.values(after).some((b) => b.indexOf(VISIBLE) >= 0));
  for (const needle of [KEY, BODY_SECRET]) {
    assertNowhere('db after shutdown', after, needle);
    assertNowhere('server log', { [rec.stderrPath]: fs.readFileSync(rec.stderrPath), [rep.stderrPath]: fs.readFileSync(rep.stderrPath) }, needle);
  }

  // Export: the JSONL and the native bodies inside it (bytes fields are
  // base64 there, so decode them before looking).
  const exported = await exportSession(rec.db, 'secret');
  assert.equal(exported.exchanges.length, 4);
  const natives = exported.exchanges.flatMap((e) => [
    bytesField(e.native?.request_body),
    bytesField(e.native?.response_body),
    ...(e.native?.chunks ?? []).map((c) => bytesField(c.data)),
  ]).join('\n');
  assert.ok(natives.includes(VISIBLE), 'the decoded native bodies are what was sent');
  assert.ok(natives.includes('"api_key":"[REDACTED]"'), 'the redacted field is stored as [REDACTED]');
  for (const needle of [KEY, BODY_SECRET]) {
    assertNowhere('export', { jsonl: exported.raw, natives }, needle);
  }

  // The replay run's trace (requests as the agent sent them).
  const trace = await run(['trace', replayRun, '--json', '--db', rec.db]);
  assert.equal(trace.code, 0, trace.stderr);
  assert.ok(trace.stdout.includes(VISIBLE), 'the trace holds the requests');
  for (const needle of [KEY, BODY_SECRET]) assertNowhere('trace', { trace: trace.stdout }, needle);
});

// docs/http.md, Secrets: of a response's headers, understudy keeps the
// content type and those SDKs and agents read (request ids, retry waits,
// rate limits, openai-processing-ms, openai-version) and drops the rest
// (cookies, account names, server headers), recording and replaying alike.
test('secrets: only the response headers SDKs read are relayed, stored and replayed; cookies and account names are not', { timeout: 30000 }, async (t) => {
  const COOKIE = `session=cookie-SECRET-${randomUUID()}`;
  const ORG = `org-SECRET-${randomUUID()}`;
  const KEPT = ['x-request-id', 'retry-after-ms', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-tokens', 'openai-version'];
  const DROPPED = ['set-cookie', 'openai-organization', 'server', 'cf-ray'];
  const sent = [];
  const headers = () => {
    const h = {
      'x-request-id': `req_${randomUUID()}`,
      'retry-after-ms': String(sent.length + 10),
      'x-ratelimit-remaining-requests': String(4999 - sent.length),
      'x-ratelimit-reset-tokens': `${sent.length + 1}ms`,
      'openai-version': '2020-10-01',
      'set-cookie': COOKIE,
      'openai-organization': ORG,
      server: 'fake-edge',
      'cf-ray': randomUUID(),
    };
    sent.push(h);
    return h;
  };
  const r = await recordThenReplay(t, 'openai', async ({ http }) => {
    const seen = [];
    for (const stream of [false, true]) {
      const res = await fetch(`${http}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Headers, stream ${stream}` }], stream }),
      });
      const text = await res.text();
      assert.equal(res.status, 200, text);
      const got = { 'content-type': res.headers.get('content-type') };
      for (const name of [...KEPT, ...DROPPED]) got[name] = res.headers.get(name);
      seen.push(got);
    }
    return seen;
  }, { fakeOptions: { headers } });

  assert.equal(sent.length, 2, 'the fake answered the recording only');
  for (const [i, got] of r.recorded.entries()) {
    for (const name of KEPT) assert.equal(got[name], sent[i][name], `${name} is relayed while recording`);
    for (const name of DROPPED) assert.equal(got[name], null, `${name} is not relayed`);
  }
  assert.match(r.recorded[0]['content-type'], /^application\/json/);
  assert.match(r.recorded[1]['content-type'], /^text\/event-stream/);
  assert.deepEqual(r.replayed, r.recorded, 'the replay answers with the headers the recording got');

  const stored = dbBytes(r.db);
  assert.ok(Object.values(stored).some((b) => b.indexOf(sent[0]['x-request-id']) >= 0), 'the scan sees a stored header');
  for (const needle of [COOKIE, ORG]) assertNowhere('db', stored, needle);
});

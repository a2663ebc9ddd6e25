// The record-then-replay journey every SDK scenario goes through: record
// against a fake provider, close the fake, replay strictly from the
// recording, and hand both results to the test to compare.
import assert from 'node:assert/strict';
import { startFakeAnthropic } from '../fakes/anthropic.js';
import { startFakeOpenAI } from '../fakes/openai.js';
import { Server, anthropicSdk, openaiSdk, tempDir } from './harness.js';

export const API_KEY = 'sk-test-SECRET-1234';

// Official SDK clients pointed at a server. No retries: a retried request
// would hide a failure and open connections a test counts.
export async function openaiClient(http, { apiKey = API_KEY, prefix = '' } = {}) {
  const OpenAI = await openaiSdk();
  return new OpenAI({ apiKey, baseURL: `${http}${prefix}/v1`, maxRetries: 0, timeout: 15000 });
}

export async function anthropicClient(http, { apiKey = API_KEY, prefix = '' } = {}) {
  const Anthropic = await anthropicSdk();
  return new Anthropic({ apiKey, baseURL: `${http}${prefix}`, maxRetries: 0, timeout: 15000 });
}

export async function startFake(provider, options = {}) {
  return provider === 'openai' ? startFakeOpenAI(options) : startFakeAnthropic(options);
}

// Runs `scenario({ client, http, phase })` twice: against a server in
// record mode forwarding to a fresh fake `provider`, then — the fake closed —
// against a server replaying the session strictly (`--mode none`, the same
// --upstream flag pointing at the closed port). Resolves
// { recorded, replayed, fake, dir, db, session }; both servers exited 0.
export async function recordThenReplay(t, provider, scenario, { session = 'golden', fakeOptions = {}, args = [] } = {}) {
  const dir = tempDir(t);
  const fake = await startFake(provider, fakeOptions);
  t.after(() => fake.close());
  const makeClient = provider === 'openai' ? openaiClient : anthropicClient;
  const upstream = ['--upstream', `${provider}=${fake.url}`];

  const rec = await Server.start(t, dir, { name: 'record', args: ['--mode', 'record', '--session', session, ...upstream, ...args] });
  const recorded = await scenario({ client: await makeClient(rec.http), http: rec.http, phase: 'record', fake });
  assert.equal(await rec.stop(), 0, `record server exit code; log:\n${rec.stderr()}`);
  await fake.close();

  const rep = await Server.start(t, dir, { name: 'replay', args: ['--mode', 'none', '--session', session, ...upstream, ...args] });
  const replayed = await scenario({ client: await makeClient(rep.http), http: rep.http, phase: 'replay', fake });
  assert.equal(await rep.stop(), 0, `replay server exit code; log:\n${rep.stderr()}`);
  return { recorded, replayed, fake, dir, db: rec.db, session, recordServer: rec, replayServer: rep };
}

// Collects an async iterable.
export async function collect(iterable) {
  const out = [];
  for await (const item of iterable) out.push(item);
  return out;
}

// A plain-data copy (drops class identity, keeps every field), for
// comparing what two SDK calls yielded.
export function plain(value) {
  return JSON.parse(JSON.stringify(value));
}

// `understudy record -- CMD` then `understudy replay -- CMD` around an agent
// that uses the official openai and @google/genai SDKs with nothing but the
// environment the wrapper sets: the replay prints the same bytes (ids from
// fakes that issue fresh ones on every call included), with no upstream.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { requireBinary, run, tempDir } from '../node/lib/harness.js';
import { startFakeGemini } from './fakes/gemini.js';
import { startFakeOpenAI } from './fakes/openai.js';
import { API_KEY, FIXTURES, NODE22_BIN } from './lib/sdk.js';

requireBinary();

const GEMINI_KEY = 'AIza-wrapped-agent-key-0000000000';

test('wrap: a new user\'s agent on Responses, embeddings and Gemini records and replays with only the wrapper\'s base URLs', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-wrap-');
  const db = path.join(dir, 'wrap.db');
  const openai = await startFakeOpenAI();
  const gemini = await startFakeGemini();
  t.after(() => openai.close());
  t.after(() => gemini.close());
  const agent = [NODE22_BIN, path.join(FIXTURES, 'new_user_agent.mjs')];
  const env = { OPENAI_API_KEY: API_KEY, GEMINI_API_KEY: GEMINI_KEY };

  const rec = await run(['record', '--db', db, '--session', 'new-user', '--upstream', `openai=${openai.url}`,
    '--upstream', `gemini=${gemini.url}`, '--', ...agent], { env, timeoutMs: 30000 });
  assert.equal(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^responses resp_\S+ resp_\S+: .*\nembeddings 2 x \d+: .*\ngemini \S+: .+/);
  const urls = /^env: (\S+) (\S+)$/m.exec(rec.stderr);
  assert.ok(urls, rec.stderr);
  assert.match(urls[1], /^http:\/\/127\.0\.0\.1:\d+\/run\/[^/]+$/, 'GOOGLE_GEMINI_BASE_URL');
  assert.equal(urls[2], `${urls[1]}/v1`, 'OPENAI_BASE_URL is the same run');
  assert.equal(openai.requests.length, 3);
  assert.equal(gemini.requests.length, 1);
  await openai.close();
  await gemini.close();

  const rep = await run(['replay', '--db', db, '--session', 'new-user', '--', ...agent],
    { env: { OPENAI_API_KEY: 'unused', GEMINI_API_KEY: 'unused' }, timeoutMs: 30000 });
  assert.equal(rep.code, 0, rep.stderr);
  assert.equal(rep.stdout, rec.stdout, 'the same bytes from the replay');
  assert.match(rep.stderr, /served 4, recorded 0, misses 0/);
});

// A UUID in the system prompt that changes between record and replay
// matches with `--normalize uuid`; without it, the miss names the field and
// both values.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Server, requireBinary, tempDir } from './lib/harness.js';
import { openaiClient, plain, startFake } from './lib/record_replay.js';

requireBinary();

const RECORDED_UUID = '123e4567-e89b-42d3-a456-426614174000';
const REPLAYED_UUID = '9f0c2b7e-5d1a-4c3e-8b6f-0a1b2c3d4e5f';

function ask(client, uuid) {
  return client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: `Session ${uuid}. Be brief.` },
      { role: 'user', content: 'What is 2+2?' },
    ],
  });
}

test('normalize uuid: a changed UUID matches with --normalize uuid and misses precisely without it', { timeout: 30000 }, async (t) => {
  const dir = tempDir(t);
  const fake = await startFake('openai');
  t.after(() => fake.close());
  const rec = await Server.start(t, dir, { name: 'record', args: ['--mode', 'record', '--session', 'uuid', '--upstream', `openai=${fake.url}`] });
  const recorded = await ask(await openaiClient(rec.http), RECORDED_UUID);
  assert.equal(await rec.stop(), 0);
  await fake.close();

  const normalized = await Server.start(t, dir, { name: 'normalized', args: ['--mode', 'none', '--session', 'uuid', '--normalize', 'uuid'] });
  const replayed = await ask(await openaiClient(normalized.http), REPLAYED_UUID);
  assert.deepEqual(plain(replayed), plain(recorded));
  assert.equal(await normalized.stop(), 0);

  const exact = await Server.start(t, dir, { name: 'exact', args: ['--mode', 'none', '--session', 'uuid'] });
  const err = await ask(await openaiClient(exact.http), REPLAYED_UUID).then(() => null, (e) => e);
  assert.ok(err, 'without --normalize the changed UUID must miss');
  assert.equal(err.status, 404);
  assert.equal(err.code, 'understudy_no_recording');
  assert.ok(
    err.message.includes(`messages[0].content: recorded "Session ${RECORDED_UUID}. Be brief." got "Session ${REPLAYED_UUID}. Be brief."`),
    err.message,
  );
  assert.doesNotMatch(err.message, /messages\[1\]/, 'only the differing field is named');
  // The same UUID still matches exactly.
  assert.deepEqual(plain(await ask(await openaiClient(exact.http), RECORDED_UUID)), plain(recorded));
  assert.equal(await exact.stop(), 0);
});

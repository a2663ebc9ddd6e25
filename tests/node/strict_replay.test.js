// Strict replay (`--mode none`) never opens a connection upstream, not even
// for a request that has no recording: the miss is a 404 in the provider's
// error shape with the stable code `understudy_no_recording`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Server, requireBinary, tempDir } from './lib/harness.js';
import { API_KEY, anthropicClient, openaiClient, plain, startFake } from './lib/record_replay.js';

requireBinary();

const OPENAI_MODEL = 'gpt-4o-mini';
const CLAUDE = 'claude-haiku-4-5';

test('none mode: misses answer 404 understudy_no_recording and no upstream connection is opened', { timeout: 30000 }, async (t) => {
  const dir = tempDir(t);
  const recOpenai = await startFake('openai');
  const recAnthropic = await startFake('anthropic');
  t.after(() => recOpenai.close());
  t.after(() => recAnthropic.close());
  const rec = await Server.start(t, dir, {
    name: 'record',
    args: ['--mode', 'record', '--session', 'strict', '--upstream', `openai=${recOpenai.url}`, '--upstream', `anthropic=${recAnthropic.url}`],
  });
  const recorded = await (await openaiClient(rec.http)).chat.completions.create({
    model: OPENAI_MODEL, messages: [{ role: 'user', content: 'Recorded question' }],
  });
  const recordedClaude = await (await anthropicClient(rec.http)).messages.create({
    model: CLAUDE, max_tokens: 64, messages: [{ role: 'user', content: 'Recorded question' }],
  });
  assert.equal(await rec.stop(), 0);

  // Fresh fakes, alive and configured as upstreams: they must see nothing.
  const openai = await startFake('openai');
  const anthropic = await startFake('anthropic');
  t.after(() => openai.close());
  t.after(() => anthropic.close());
  const rep = await Server.start(t, dir, {
    name: 'replay',
    args: ['--mode', 'none', '--session', 'strict', '--upstream', `openai=${openai.url}`, '--upstream', `anthropic=${anthropic.url}`],
  });
  const oa = await openaiClient(rep.http);
  const an = await anthropicClient(rep.http);

  // A hit still answers.
  const hit = await oa.chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: 'user', content: 'Recorded question' }] });
  assert.deepEqual(plain(hit), plain(recorded));

  // OpenAI SDK miss, unary and streamed.
  for (const stream of [false, true]) {
    const err = await oa.chat.completions
      .create({ model: OPENAI_MODEL, messages: [{ role: 'user', content: `Never recorded (stream=${stream})` }], stream })
      .then(() => null, (e) => e);
    assert.ok(err, `stream=${stream}: a miss must fail`);
    assert.equal(err.status, 404, String(err));
    assert.equal(err.code, 'understudy_no_recording');
    assert.equal(err.headers.get('x-understudy-error'), 'no_recording');
    assert.match(err.message, /no recorded exchange matches this request/);
    assert.match(err.message, /messages\[0\]\.content: recorded "Recorded question" got "Never recorded/);
  }

  // The same over raw HTTP: OpenAI's error shape.
  const res = await fetch(`${rep.http}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify({ model: OPENAI_MODEL, messages: [{ role: 'user', content: 'Raw miss' }] }),
  });
  assert.equal(res.status, 404);
  assert.equal(res.headers.get('x-understudy-error'), 'no_recording');
  assert.match(res.headers.get('content-type'), /^application\/json/);
  const body = await res.json();
  assert.equal(body.error.code, 'understudy_no_recording');
  assert.equal(typeof body.error.message, 'string');
  assert.equal(typeof body.error.type, 'string');

  // Anthropic SDK miss: Anthropic's error shape.
  const hitClaude = await an.messages.create({ model: CLAUDE, max_tokens: 64, messages: [{ role: 'user', content: 'Recorded question' }] });
  assert.deepEqual(plain(hitClaude), plain(recordedClaude));
  const aerr = await an.messages
    .create({ model: CLAUDE, max_tokens: 64, messages: [{ role: 'user', content: 'Never recorded' }] })
    .then(() => null, (e) => e);
  assert.ok(aerr, 'an Anthropic miss must fail');
  assert.equal(aerr.status, 404, String(aerr));
  assert.equal(aerr.headers.get('x-understudy-error'), 'no_recording');
  assert.equal(aerr.error.type, 'error');
  assert.equal(aerr.error.error.type, 'not_found_error');
  assert.match(aerr.error.error.message, /no recorded exchange matches this request/);
  const streamErr = await an.messages
    .create({ model: CLAUDE, max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'Never recorded, streamed' }] })
    .then(() => null, (e) => e);
  assert.equal(streamErr?.status, 404);

  // Drained and stopped: any connection it had opened would be counted.
  assert.equal(await rep.stop(), 0);
  assert.equal(openai.connections, 0, 'no TCP connection to the OpenAI upstream');
  assert.equal(anthropic.connections, 0, 'no TCP connection to the Anthropic upstream');
  assert.equal(openai.requests.length + anthropic.requests.length, 0);
  // The fakes were reachable all along: a connection would have been counted.
  const probe = await fetch(`${openai.url}/v1/models`);
  await probe.text();
  assert.equal(openai.connections, 1);
});

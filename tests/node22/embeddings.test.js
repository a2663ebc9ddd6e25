// OpenAI embeddings (POST /v1/embeddings) through the official `openai`
// SDK (7.x): its default asks for base64 (and decodes it to numbers), or
// `encoding_format: "float"`; `dimensions` shortens the vector. Recorded
// through a fake OpenAI and replayed byte for byte with the fake closed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requireBinary } from '../node/lib/harness.js';
import { plain } from '../node/lib/record_replay.js';
import { startFakeOpenAI } from './fakes/openai.js';
import { recordThenReplay } from './lib/journey.js';
import { openaiClient } from './lib/sdk.js';

requireBinary();

const MODEL = 'text-embedding-3-small';
const TEXTS = ['The quick brown fox.', 'Jumps over the lazy dog.', 'Ünïcödé and emoji 🦊 survive too.'];

const openai = { upstream: 'openai', startFake: () => startFakeOpenAI() };

test('embeddings: base64 (the SDK default) and float replay byte for byte, vectors equal', { timeout: 30000 }, async (t) => {
  const r = await recordThenReplay(t, openai, async ({ http, phase, fake }) => {
    const client = await openaiClient(http);
    // The SDK's default: it sends encoding_format base64 and decodes.
    const base64 = await client.embeddings.create({ model: MODEL, input: TEXTS });
    const base64Raw = await (await client.embeddings.create({ model: MODEL, input: TEXTS }).asResponse()).text();
    // Asked for floats: JSON numbers, passed through as they are.
    const float = await client.embeddings.create({ model: MODEL, input: TEXTS, encoding_format: 'float' });
    const floatRaw = await (await client.embeddings.create({ model: MODEL, input: TEXTS, encoding_format: 'float' }).asResponse()).text();
    // Shortened, one input.
    const short = await client.embeddings.create({ model: MODEL, input: 'short', dimensions: 8, encoding_format: 'float' });
    if (phase === 'record') {
      assert.deepEqual(fake.requests.map((q) => q.body.encoding_format), ['base64', 'base64', 'float', 'float', 'float'],
        'the SDK asks for base64 unless told otherwise');
      assert.equal(fake.requests[4].body.dimensions, 8);
      assert.equal(base64Raw, fake.sent[1].body, 'recording relays the body byte for byte');
      assert.equal(floatRaw, fake.sent[3].body);
    }
    return { base64: plain(base64), base64Raw, float: plain(float), floatRaw, short: plain(short) };
  });

  const { base64, base64Raw, float, floatRaw, short } = r.recorded;
  assert.equal(base64.data.length, TEXTS.length);
  assert.deepEqual(base64.data.map((d) => d.index), [0, 1, 2]);
  assert.ok(base64.data.every((d) => Array.isArray(d.embedding) && d.embedding.length === 1536), 'decoded to 1536 numbers');
  assert.equal(typeof JSON.parse(base64Raw).data[0].embedding, 'string', 'base64 on the wire');
  assert.ok(Array.isArray(JSON.parse(floatRaw).data[0].embedding), 'numbers on the wire');
  assert.equal(short.data[0].embedding.length, 8);
  assert.ok(base64.usage.prompt_tokens > 0);
  // The same vectors either way: a float32 decoded from base64 is the
  // float32 nearest the JSON number.
  for (let i = 0; i < TEXTS.length; ++i) {
    assert.deepEqual(float.data[i].embedding.map(Math.fround), base64.data[i].embedding, `vector ${i}`);
  }

  // The point: the bytes and the vectors of the replay are the recording's.
  assert.equal(r.replayed.base64Raw, base64Raw, 'base64 body, byte for byte');
  assert.equal(r.replayed.floatRaw, floatRaw, 'float body, byte for byte');
  assert.deepEqual(r.replayed.base64, base64, 'decoded vectors');
  assert.deepEqual(r.replayed.float, float);
  assert.deepEqual(r.replayed.short, short);
});

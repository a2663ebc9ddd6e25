// AWS Bedrock Runtime (Converse, ConverseStream with the binary event
// stream, InvokeModel with Anthropic bodies, whole and streamed) with
// @aws-sdk/client-bedrock-runtime: `understudy record -- AGENT` through a
// fake that checks every request's SigV4 signature against its own host, as
// AWS does — understudy signs each forwarded request again with the
// credentials of the environment — then `understudy replay -- AGENT` three
// times with the fake gone and its port held by a tripwire: the same bytes,
// no connection; no credential or signature stored; a throttling rule the
// SDK retries through; bad input refused in Bedrock's shape.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { Server, exportSession, requireBinary, run, tempDir } from '../node/lib/harness.js';
import { startFakeBedrock } from './fakes/bedrock.js';
import { assertNowhere, dbBytes, post, recordThenReplayThrice } from './lib/journey.js';
import { FIXTURES, NODE22_BIN, NODE22_DIR } from './lib/sdk.js';

requireBinary();

const CREDENTIALS = { accessKeyId: 'AKIAUNDERSTUDYTEST01', secretAccessKey: 'bedrock-SECRET-key-4b3c2d1e0f', sessionToken: 'session-SECRET-token-77' };
const AGENT = [NODE22_BIN, path.join(FIXTURES, 'bedrock_agent.mjs')];
const awsEnv = (c) => ({ AWS_ACCESS_KEY_ID: c.accessKeyId, AWS_SECRET_ACCESS_KEY: c.secretAccessKey, AWS_SESSION_TOKEN: c.sessionToken, AWS_REGION: 'us-east-1' });

test('bedrock: Converse, its event stream and InvokeModel record once, signed again for the upstream, and replay three times byte for byte', { timeout: 120000 }, async (t) => {
  const bedrock = await startFakeBedrock({ credentials: CREDENTIALS });
  t.after(() => bedrock.close());
  const r = await recordThenReplayThrice(t, {
    fakes: { bedrock }, agent: AGENT, session: 'br', env: awsEnv(CREDENTIALS),
    replayEnv: awsEnv({ accessKeyId: 'x', secretAccessKey: 'x', sessionToken: 'x' }),
    args: ['--scenario', path.join(FIXTURES, 'bedrock_rules.yaml')],
  });
  const out = r.recorded.stdout;
  assert.match(out, /^converse \S+ end_turn \d+: .+\nconverse-stream \d+: .+\ntools get_weather\(\{"city":"Cairo"\}\) tooluse_\S+: .*dust.*\ninvoke msg_bdrk_\S+: .+\ninvoke-stream: .+\n$/);
  // Every forwarded request carried a signature valid for the fake's own
  // host: understudy's, not the SDK's (made for understudy's address).
  assert.deepEqual(bedrock.signatures, Array(6).fill('valid'));
  assert.deepEqual(bedrock.requests.map((q) => q.path), [
    '/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse',
    '/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream',
    '/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse',
    '/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse',
    '/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke',
    '/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke-with-response-stream',
  ]);
  assert.match(r.recorded.stderr, /served 7, recorded 6, misses 0/);
  for (const [i, replay] of r.replays.entries()) {
    assert.equal(replay.stdout, out, `replay ${i + 1}: the same bytes`);
    assert.match(replay.stderr, /served 7, recorded 0, misses 0/, `replay ${i + 1}`);
  }
  assert.equal(r.wires.bedrock.connections, 0, 'nothing reached the upstream\'s port');

  const exported = await exportSession(r.db, 'br');
  assert.deepEqual(exported.exchanges.map((e) => e.native.provider), ['bedrock', 'bedrock', 'bedrock', 'bedrock', 'bedrock-invoke', 'bedrock-invoke']);
  const stream = exported.exchanges[1].native;
  assert.equal(stream.content_type, 'application/vnd.amazon.eventstream');
  assert.deepEqual(stream.chunks.map((c) => c.data), bedrock.sent[1].events, 'the frames stored byte for byte, one per chunk');
  for (const secret of [CREDENTIALS.secretAccessKey, CREDENTIALS.sessionToken, 'Signature=']) {
    assertNowhere('a credential', { ...dbBytes(r.db), export: exported.raw }, secret);
  }
});

test('bedrock: bad input refused in Bedrock\'s shape, nothing forwarded; no credentials: forwarding fails saying so', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-bedrock-');
  const bedrock = await startFakeBedrock({ credentials: CREDENTIALS });
  t.after(() => bedrock.close());
  const rec = await Server.start(t, dir, {
    name: 'record', args: ['--mode', 'record', '--session', 'bad', '--upstream', `bedrock=${bedrock.url}`, '--max-body-bytes', '262144'],
  });
  const converse = `${rec.http}/model/m/converse`;
  const refused = async (body, pattern, what, status = 400) => {
    const res = await post(converse, body);
    assert.equal(res.status, status, `${what}: ${res.text}`);
    assert.equal(typeof res.json?.message, 'string', `${what}: ${res.text}`);
    assert.match(res.json.message, pattern, `${what}: ${res.text}`);
    return res;
  };
  await refused('{"messages":', /invalid JSON at byte \d+/, 'malformed JSON');
  await refused(JSON.stringify({ messages: 'hi' }), /^messages: expected/, 'messages of the wrong type');
  await refused(JSON.stringify({ messages: [{ role: 'user', content: [{ text: 5 }] }] }), /messages\[0\]\.content\[0\]\.text/, 'text of the wrong type');
  await refused(`{"messages":${'['.repeat(100000)}${']'.repeat(100000)}}`, /nested deeper than/, '100k-deep JSON');
  await refused(JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'x'.repeat(300000) }] }] }), /exceeds 262144 bytes/, 'over the body limit', 413);
  assert.equal(bedrock.requests.length, 0, 'nothing forwarded');
  // A good request, with no AWS credentials in understudy's environment
  // (the harness passes none).
  const unsigned = await post(converse, JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hi' }] }] }));
  assert.equal(unsigned.status, 401, unsigned.text);
  assert.match(unsigned.json.message, /AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/);
  assert.equal(bedrock.requests.length, 0, 'nothing sent unsigned');
  assert.equal(await rec.stop(), 0, rec.stderr());
  const exported = await run(['export', 'bad', '--db', rec.db]);
  assert.match(exported.stderr, /session "bad" not found/, 'nothing recorded: the session was never created');
});

test('bedrock: a replay miss names the field, in Bedrock\'s error shape', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-bedrock-miss-');
  const bedrock = await startFakeBedrock({ credentials: CREDENTIALS });
  t.after(() => bedrock.close());
  const r = await run(['record', '--db', `${dir}/m.db`, '--session', 'm', '--upstream', `bedrock=${bedrock.url}`, '--',
    NODE22_BIN, '-e', `
      const { BedrockRuntimeClient, ConverseCommand } = await import('@aws-sdk/client-bedrock-runtime');
      const { NodeHttpHandler } = await import('@smithy/node-http-handler');
      const c = new BedrockRuntimeClient({ requestHandler: new NodeHttpHandler() });
      const out = await c.send(new ConverseCommand({ modelId: 'm', messages: [{ role: 'user', content: [{ text: 'Hello there' }] }] }));
      console.log(out.output.message.content[0].text);`], { env: awsEnv(CREDENTIALS), timeoutMs: 30000, cwd: NODE22_DIR });
  assert.equal(r.code, 0, r.stderr);
  await bedrock.close();
  const rep = await Server.start(t, dir, { db: 'm.db', name: 'replay', args: ['--mode', 'none', '--session', 'm'] });
  const miss = await post(`${rep.http}/run/${rep.run}/model/m/converse`, JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Hello here' }] }] }));
  assert.equal(miss.status, 404, miss.text);
  assert.equal(typeof miss.json.message, 'string', miss.text);
  assert.match(miss.json.message, /messages\[0\]\.content: recorded "Hello there" got "Hello here"/);
  assert.equal(await rep.stop(), 0, rep.stderr());
});

test('bedrock: the SDK\'s default HTTP/2 is refused in HTTP/2 (HTTP_1_1_REQUIRED), and the log says what to pass', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-bedrock-h2-');
  const server = await Server.start(t, dir, { args: ['--mode', 'replay', '--scenario', path.join(FIXTURES, 'scripted_rules.yaml')] });
  const { BedrockRuntimeClient, ConverseCommand } = await import('@aws-sdk/client-bedrock-runtime');
  const client = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: server.http, maxAttempts: 1,
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  await assert.rejects(client.send(new ConverseCommand({ modelId: 'm', messages: [{ role: 'user', content: [{ text: 'hi' }] }] })),
    /error code 13/, 'HTTP_1_1_REQUIRED is 13');
  client.destroy();
  assert.equal(await server.stop(), 0, server.stderr());
  assert.match(server.stderr(), /http2_refused .*understudy speaks HTTP\/1\.1.*NodeHttpHandler/);
});

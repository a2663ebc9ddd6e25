// The cloud platforms' model APIs with their official clients, unmodified:
// the `openai` package's AzureOpenAI (chat, a stream, Responses,
// embeddings; `api-version` and the `api-key` header) and @google/genai on
// Vertex AI (express mode with an API key, and a project's route with an
// OAuth bearer token). `understudy record -- AGENT` through fakes whose ids
// and texts change on every call, then `understudy replay -- AGENT` three
// times with the fakes gone and their ports held by tripwires: the same
// bytes each time, no connection, the keys stored nowhere; a 429 rule each
// client retries through; a miss naming the field.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { Server, exportSession, requireBinary, run, tempDir } from '../node/lib/harness.js';
import { postBytes, rawRequest } from '../node/lib/raw_http.js';
import { startFakeGemini } from './fakes/gemini.js';
import { startFakeOpenAI } from './fakes/openai.js';
import { assertNowhere, dbBytes, post, recordThenReplayThrice } from './lib/journey.js';
import { FIXTURES, NODE22_BIN } from './lib/sdk.js';

requireBinary();

const AZURE_KEY = 'azure-key-SECRET-0c1d2e3f';
const VERTEX_KEY = 'AIza-vertex-express-SECRET-77';
const OAUTH_TOKEN = 'ya29.agent-oauth-SECRET';
const AGENT = [NODE22_BIN, path.join(FIXTURES, 'cloud_agent.mjs')];
const env = (azureKey, vertexKey) => ({
  OPENAI_API_VERSION: '2024-10-21', AZURE_OPENAI_API_KEY: azureKey, GOOGLE_GENAI_USE_VERTEXAI: 'true', GOOGLE_API_KEY: vertexKey,
});

test('cloud: AzureOpenAI and Vertex AI record once and replay three times, byte for byte, with no upstream and no key', { timeout: 120000 }, async (t) => {
  const azure = await startFakeOpenAI({ azure: { apiKey: AZURE_KEY } });
  const vertex = await startFakeGemini();
  t.after(() => azure.close());
  t.after(() => vertex.close());
  const r = await recordThenReplayThrice(t, {
    fakes: { azure, vertex }, agent: AGENT, session: 'cloud',
    env: env(AZURE_KEY, VERTEX_KEY), replayEnv: env('unused', 'unused'),
    args: ['--scenario', path.join(FIXTURES, 'cloud_rules.yaml')],
  });
  const out = r.recorded.stdout;
  assert.match(out, /^azure chat chatcmpl-\S+: .+\nazure stream: .+\nazure responses resp_\S+: .+\nazure embeddings 2 x \d+: .+\nvertex express \S+: .+\nvertex project stream: .+\n$/);
  const urls = /^env: (\S+) (\S+)$/m.exec(r.recorded.stderr);
  assert.ok(urls, r.recorded.stderr);
  assert.equal(urls[1], `${urls[2]}/v1`, 'OPENAI_BASE_URL and GOOGLE_VERTEX_BASE_URL name the same run');

  // What the fakes saw: Azure's routes with the api-version and the key;
  // Vertex's two route forms. The throttled calls never reached them.
  assert.deepEqual(azure.requests.map((q) => q.path), [
    '/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21',
    '/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21',
    '/openai/responses?api-version=2024-10-21',
    '/openai/deployments/text-embedding-3-small/embeddings?api-version=2024-10-21',
  ]);
  assert.ok(azure.requests.every((q) => q.headers['api-key'] === AZURE_KEY));
  assert.deepEqual(vertex.requests.map((q) => q.path), [
    '/v1beta1/publishers/google/models/gemini-2.5-flash:generateContent',
    '/v1beta1/projects/acme-agents/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
  ]);
  assert.equal(vertex.requests[0].headers['x-goog-api-key'], VERTEX_KEY);
  assert.equal(vertex.requests[1].headers.authorization, `Bearer ${OAUTH_TOKEN}`);
  // Six calls recorded, two more answered by the 429 rules.
  assert.match(r.recorded.stderr, /served 8, recorded 6, misses 0/);

  for (const [i, replay] of r.replays.entries()) {
    assert.equal(replay.stdout, out, `replay ${i + 1}: the same bytes`);
    assert.match(replay.stderr, /served 8, recorded 0, misses 0/, `replay ${i + 1}`);
  }
  assert.equal(r.wires.azure.connections, 0, 'nothing reached the Azure upstream\'s port');
  assert.equal(r.wires.vertex.connections, 0, 'nothing reached the Vertex upstream\'s port');

  // The keys: in no DB file, export or trace.
  const exported = await exportSession(r.db, 'cloud');
  const runs = await run(['runs', '--db', r.db, '--json']);
  const files = { ...dbBytes(r.db), export: exported.raw, runs: runs.stdout };
  for (const secret of [AZURE_KEY, VERTEX_KEY, OAUTH_TOKEN]) assertNowhere('secret', files, secret);
  // Recorded under each API's own name and path.
  assert.deepEqual(exported.exchanges.map((e) => [e.native.provider, e.native.path]), [
    ['azure-openai', '/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21'],
    ['azure-openai', '/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21'],
    ['azure-openai-responses', '/openai/responses?api-version=2024-10-21'],
    ['azure-openai-embeddings', '/openai/deployments/text-embedding-3-small/embeddings?api-version=2024-10-21'],
    ['vertex', '/v1beta1/publishers/google/models/gemini-2.5-flash:generateContent'],
    ['vertex', '/v1beta1/projects/acme-agents/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse'],
  ]);
});

test('cloud: bad input on Azure\'s and Vertex\'s routes answered in each API\'s shape, nothing forwarded or recorded, still serving', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-cloud-bad-');
  const azure = await startFakeOpenAI({ azure: { apiKey: AZURE_KEY } });
  const vertex = await startFakeGemini();
  t.after(() => azure.close());
  t.after(() => vertex.close());
  const server = await Server.start(t, dir, {
    args: ['--mode', 'record', '--session', 'bad', '--upstream', `azure=${azure.url}`, '--upstream', `vertex=${vertex.url}`,
      '--max-body-bytes', '262144'],
  });
  const chat = `${server.http}/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21`;
  const generate = `${server.http}/v1beta1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:generateContent`;
  const AZ = { 'api-key': AZURE_KEY };
  const VX = { authorization: `Bearer ${OAUTH_TOKEN}` };
  const azureError = async (body, pattern, what, status = 400) => {
    const res = await post(chat, body, AZ);
    assert.equal(res.status, status, `${what}: ${res.text}`);
    assert.equal(res.json?.error?.type, 'invalid_request_error', `${what}: OpenAI's shape: ${res.text}`);
    assert.match(res.json.error.message, pattern, `${what}: ${res.text}`);
  };
  const vertexError = async (body, pattern, what, status = 400) => {
    const res = await post(generate, body, VX);
    assert.equal(res.status, status, `${what}: ${res.text}`);
    assert.deepEqual(Object.keys(res.json?.error ?? {}).sort(), ['code', 'message', 'status'], `${what}: Gemini's shape: ${res.text}`);
    assert.match(res.json.error.message, pattern, `${what}: ${res.text}`);
  };
  const deep = (n) => '['.repeat(n) + ']'.repeat(n);
  await azureError('{"model":"gpt-4o","messages":', /invalid JSON at byte \d+/, 'malformed JSON');
  await azureError(JSON.stringify({ model: 'gpt-4o', messages: 'hi' }), /^messages: expected/, 'messages of the wrong type');
  await azureError(`{"model":"m","messages":${deep(100000)}}`, /nested deeper than 256 levels/, '100k-deep JSON');
  await azureError(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(300000) }] }), /262144 bytes/, 'over the body limit', 413);
  await vertexError(JSON.stringify({ contents: [{ role: 'user', parts: [{ bogus: 1 }] }] }), /^contents\[0\]\.parts\[0\]: unknown part/, 'an unknown part kind');
  await vertexError(`{"contents":${deep(100000)}}`, /nested deeper than 256 levels/, '100k-deep JSON');
  for (const [url, headers] of [[chat, AZ], [generate, VX]]) {
    const badUtf8 = await rawRequest(server.http, postBytes(url,
      Buffer.concat([Buffer.from('{"model":"m","contents":[{"parts":[{"text":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}]}],"messages":[]}')]),
      { 'Content-Type': 'application/json', ...headers }));
    assert.equal(badUtf8.status, 400, badUtf8.body.toString());
    assert.match(JSON.parse(badUtf8.body.toString()).error.message, /invalid UTF-8 at byte \d+/);
  }
  // A deployment path that is not a route: Azure's 404, listing the routes.
  const noRoute = await post(`${server.http}/openai/deployments/d/completions?api-version=1`, '{}', AZ);
  assert.equal(noRoute.status, 404, noRoute.text);
  assert.match(noRoute.json.error.message, /POST \/openai\/deployments\/\{deployment\}\/chat\/completions/);
  assert.equal(azure.requests.length + vertex.requests.length, 0, 'nothing malformed was forwarded');

  const ok = await post(chat, JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'still here' }] }), AZ);
  assert.equal(ok.status, 200, ok.text);
  const okVertex = await post(generate, JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'still here' }] }] }), VX);
  assert.equal(okVertex.status, 200, okVertex.text);
  assert.equal(await server.stop(), 0, server.stderr());
  assert.equal((await exportSession(server.db, 'bad')).exchanges.length, 2, 'only the two good requests were recorded');

  // Replayed strictly, a request that drifted is a miss naming the field,
  // in each API's shape.
  await azure.close();
  await vertex.close();
  const rep = await Server.start(t, dir, { name: 'replay', args: ['--mode', 'none', '--session', 'bad'] });
  const azureMiss = await post(`${rep.http}/run/${rep.run}/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21`,
    JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'still there' }] }), AZ);
  assert.equal(azureMiss.status, 404, azureMiss.text);
  assert.equal(azureMiss.json.error.code, 'understudy_no_recording');
  assert.match(azureMiss.json.error.message, /messages\[0\]\.content: recorded "still here" got "still there"/);
  const vertexMiss = await post(`${rep.http}/run/${rep.run}/v1beta1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:generateContent`,
    JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'still there' }] }] }), VX);
  assert.equal(vertexMiss.status, 404, vertexMiss.text);
  assert.equal(vertexMiss.json.error.status, 'NOT_FOUND');
  assert.match(vertexMiss.json.error.message, /messages\[0\]\.content: recorded "still here" got "still there"/);
  assert.equal(await rep.stop(), 0, rep.stderr());
});

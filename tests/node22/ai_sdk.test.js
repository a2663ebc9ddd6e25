// The Vercel AI SDK (`ai` with @ai-sdk/openai, @ai-sdk/anthropic and
// @ai-sdk/google) unmodified, with its defaults, under `understudy
// record|replay -- CMD`: fixtures/ai_sdk_agent.mjs runs a tool loop over
// each provider, recorded from this suite's fakes (fresh ids and texts on
// every call) and replayed with them gone.
//
// What the defaults do that other SDKs do not: @ai-sdk/openai sends the
// previous step's assistant text back as an `item_reference` (it stores
// responses by default); @ai-sdk/anthropic expects /v1 inside
// ANTHROPIC_BASE_URL; @ai-sdk/google reads no base URL variable at all, and
// makes up tool call ids that Gemini did not send.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { randomHex } from './fakes/brain.js';
import { defaultBrain } from '../node/fakes/fake_server.js';
import { startFakeAnthropic } from '../node/fakes/anthropic.js';
import { Server, requireBinary, run, tempDir } from '../node/lib/harness.js';
import { startFakeGemini } from './fakes/gemini.js';
import { startFakeOpenAI } from './fakes/openai.js';
import { attr, post, traceOf } from './lib/journey.js';
import { API_KEY, FIXTURES, GEMINI_KEY, NODE22_BIN } from './lib/sdk.js';

requireBinary();

const AGENT = [NODE22_BIN, path.join(FIXTURES, 'ai_sdk_agent.mjs')];
const LOOPS = ['openai', 'openai-chat', 'anthropic', 'anthropic-sdk', 'google'];
const KEYS = {
  OPENAI_API_KEY: API_KEY,
  ANTHROPIC_API_KEY: 'sk-ant-ai-sdk-test-key',
  GOOGLE_GENERATIVE_AI_API_KEY: GEMINI_KEY,
};
const UNUSED_KEYS = { OPENAI_API_KEY: 'unused', ANTHROPIC_API_KEY: 'unused', GOOGLE_GENERATIVE_AI_API_KEY: 'unused' };

// The default model, with a fresh word in every text: an answer that comes
// back identical was replayed.
// The Responses fake says that text before the calls (`preamble`), in an
// item of its own, which is what the AI SDK sends back as a reference.
const freshReply = (conversation, body) => {
  const r = defaultBrain(conversation, body);
  return { ...r, text: r.text && `${r.text} (${randomHex(8)})`, preamble: true };
};

// The run id `understudy record|replay` printed in its summary.
function runOf(stderr) {
  const m = /understudy: run (\S+) /.exec(stderr);
  assert.ok(m, stderr);
  return m[1];
}

async function traceOfRun(db, runId) {
  const r = await run(['trace', runId, '--json', '--db', db]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

// Records every loop once into session `ai-sdk` of a fresh DB.
async function recordLoops(t) {
  const dir = tempDir(t, 'understudy-node22-ai-sdk-');
  const db = path.join(dir, 'ai-sdk.db');
  const openai = await startFakeOpenAI({ reply: freshReply });
  const anthropic = await startFakeAnthropic({ reply: freshReply });
  const gemini = await startFakeGemini({ apiKey: GEMINI_KEY, reply: freshReply });
  t.after(() => Promise.all([openai.close(), anthropic.close(), gemini.close()]));
  const rec = await run(['record', '--db', db, '--session', 'ai-sdk', '--upstream', `openai=${openai.url}`,
    '--upstream', `anthropic=${anthropic.url}`, '--upstream', `gemini=${gemini.url}`, '--', ...AGENT, ...LOOPS],
  { env: KEYS, timeoutMs: 60000 });
  assert.equal(rec.code, 0, rec.stderr);
  await Promise.all([openai.close(), anthropic.close(), gemini.close()]);
  return { dir, db, rec, openai, anthropic, gemini };
}

test('ai sdk: a tool loop over Responses, Chat Completions, Anthropic (both SDKs) and Gemini records and replays unmodified', { timeout: 120000 }, async (t) => {
  const { dir, db, rec, openai, anthropic, gemini } = await recordLoops(t);
  const lines = rec.stdout.trim().split('\n');
  assert.deepEqual(lines.map((l) => l.split(':')[0]), LOOPS);
  for (const line of lines) {
    assert.match(line, /\{"city":"Paris"\}.* \| .*Here is what the tools said: .*sunny in Paris/, line);
  }
  // What the SDKs sent, as the fakes got it: the Responses loop referred
  // to its first answer by id; @ai-sdk/anthropic's /messages reached the
  // upstream as /v1/messages; Gemini's calls came back with ids the SDK made up.
  const responses = openai.requests.filter((r) => r.path === '/v1/responses');
  assert.equal(responses.length, 2);
  const second = responses[1].body.input;
  assert.ok(second.some((i) => i.type === 'item_reference' && /^msg_/.test(i.id)), JSON.stringify(second));
  assert.equal(anthropic.requests.length, 4, 'two steps of each Anthropic SDK');
  assert.ok(anthropic.requests.every((r) => r.path === '/v1/messages'));
  assert.equal(gemini.requests.length, 2);
  const sentCall = gemini.requests[1].body.contents.flatMap((c) => c.parts).find((p) => p.functionCall);
  assert.ok(sentCall.functionCall.id, 'the SDK sent back an id Gemini never gave');

  // A replay never writes the recording: its run is kept in --trace-db.
  const traceDb = path.join(dir, 'replay.db');
  const rep = await run(['replay', '--db', db, '--trace-db', traceDb, '--session', 'ai-sdk', '--', ...AGENT, ...LOOPS],
    { env: UNUSED_KEYS, timeoutMs: 60000 });
  assert.equal(rep.code, 0, rep.stderr);
  assert.equal(rep.stdout, rec.stdout, 'the same steps, texts and ids from the replay');
  assert.match(rep.stderr, /served 10, recorded 0, misses 0, unused recordings 0/);

  // The trace reads the reference as the message it names.
  const events = await traceOfRun(traceDb, runOf(rep.stderr));
  const exchanges = events.filter((e) => e.kind === 'exchange');
  // OpenTelemetry's names: `chat` for every model call, and the OpenAI API
  // it came over in openai.api.type.
  assert.ok(exchanges.every((e) => attr(e, 'gen_ai.operation.name') === 'chat'));
  assert.deepEqual(exchanges.map((e) => attr(e, 'openai.api.type') ?? '-'), [
    'responses', 'responses', 'chat_completions', 'chat_completions', '-', '-', '-', '-', '-', '-',
  ]);
  const secondResponses = exchanges[1];
  assert.equal(attr(secondResponses, 'gen_ai.request.model'), 'gpt-4.1-mini');
  assert.deepEqual(secondResponses.request.messages.map((m) => `${m.role}:${(m.content ?? '').replace(/ \(\w+\)$/, '')}`), [
    'user:What is the weather like? Use get_weather with city=Paris',
    'assistant:Let me check that.',
    'assistant:',
    'tool:sunny in Paris',
  ]);
});

test('ai sdk: a rule on the last user message holds on the later steps of the loop, over every API', { timeout: 120000 }, async (t) => {
  const { dir, db } = await recordLoops(t);
  const traceDb = path.join(dir, 'replay.db');
  const rep = await run(['replay', '--db', db, '--trace-db', traceDb, '--session', 'ai-sdk', '--scenario', path.join(FIXTURES, 'ai_sdk_rules.yaml'),
    '--', ...AGENT, ...LOOPS], { env: UNUSED_KEYS, timeoutMs: 60000 });
  assert.equal(rep.code, 0, rep.stderr);
  for (const line of rep.stdout.trim().split('\n')) {
    assert.match(line, / \| \[[^\]]*\]  Scripted: the weather in Paris is scripted\.$/, line);
  }
  const events = await traceOfRun(traceDb, runOf(rep.stderr));
  const ruled = events.filter((e) => e.kind === 'exchange' && attr(e, 'understudy.rule.name') === 'after-the-tool');
  assert.equal(ruled.length, LOOPS.length, 'the second step of every loop');
});

test('ai sdk: @ai-sdk/google without a base URL cannot reach Google from a replay, and says so', { timeout: 60000 }, async (t) => {
  const { db } = await recordLoops(t);
  const rep = await run(['replay', '--db', db, '--session', 'ai-sdk', '--', ...AGENT, 'google-default'],
    { env: UNUSED_KEYS, timeoutMs: 30000 });
  assert.notEqual(rep.code, 0, rep.stdout);
  assert.match(rep.stderr, /refused .*generativelanguage\.googleapis\.com:443/);
});

test('ai sdk: a reference to an item the run never issued is matched as sent and named in the debug log', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-ai-sdk-');
  const server = await Server.start(t, dir, {
    logLevel: 'debug', args: ['--mode', 'replay', '--scenario', path.join(FIXTURES, 'ai_sdk_rules.yaml')],
  });
  const body = {
    model: 'gpt-4.1-mini',
    input: [
      { role: 'user', content: 'Use get_weather with city=Paris' },
      { type: 'item_reference', id: 'msg_from_another_run' },
    ],
  };
  const r = await post(`${server.http}/v1/responses`, JSON.stringify(body), { authorization: `Bearer ${API_KEY}` });
  // Nothing answers it (no rule holds without a tool result): a miss, not a 400.
  assert.equal(r.status, 404, r.text);
  assert.equal(await server.stop(), 0, server.stderr());
  assert.match(server.stderr(), /item_reference_unresolved .*item=msg_from_another_run/);
  const { events } = await traceOf(server);
  const miss = events.find((e) => e.kind === 'miss');
  assert.ok(miss, JSON.stringify(events));
  assert.deepEqual(miss.request.messages.map((m) => [m.role, m.extra ?? '']), [
    ['user', ''],
    ['user', '{"item":{"type":"item_reference","id":"msg_from_another_run"}}'],
  ]);
});

// A2A (the Agent2Agent protocol, JSON-RPC binding) with @a2a-js/sdk 1.3.0:
// an orchestrator agent (fixtures/a2a_orchestrator.mjs) that delegates to
// two A2A agents (fakes/a2a_agent.js, express + the SDK's server), each of
// which calls a model through understudy — one session, one timeline, one
// `understudy assert` over all of it; a replay of the orchestrator runs
// with neither agent nor the model running, their ports held by tripwires.
// Scenario rules answer A2A calls with no recording, in v1.0's and v0.3's
// shapes; bad input on /a2a/{name} is refused naming what is wrong, and
// nothing of it is forwarded or recorded.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { Server, exportSession, requireBinary, run, tempDir } from '../node/lib/harness.js';
import { startA2aAgent } from './fakes/a2a_agent.js';
import { startFakeOpenAI } from './fakes/openai.js';
import { randomHex } from './fakes/brain.js';
import { assertNowhere, attr, dbBytes, post, traceOf } from './lib/journey.js';
import { tcpTripwire } from './lib/mcp.js';
import { FIXTURES, NODE22_BIN } from './lib/sdk.js';

requireBinary();

const TOKEN = 'a2a-test-SECRET-TOKEN-7c1d';
const OPENAI_KEY = 'sk-test-SECRET-a2a-3e5f';
const ORCHESTRATOR = path.join(FIXTURES, 'a2a_orchestrator.mjs');

// The model: every answer's text carries a fresh nonce (and the fake's ids
// are fresh), so identical output proves a replay.
const reply = (conv) => ({ text: `(${randomHex(8)}) ${conv.system.replace(/^You are the |\.$/g, '')} on: ${conv.lastUserText.slice(0, 48)}` });

// The orchestrator through `server`'s default run: its model at
// /run/RUN/agent/orchestrator/v1, the agents' cards under
// /run/RUN/agent/orchestrator/a2a/NAME/.
async function runOrchestrator(server) {
  const base = `${server.http}/run/${server.run}/agent/orchestrator`;
  return run([ORCHESTRATOR], {
    program: NODE22_BIN,
    timeoutMs: 60000,
    env: {
      OPENAI_BASE_URL: `${base}/v1`,
      OPENAI_API_KEY: OPENAI_KEY,
      A2A_RESEARCHER: `${base}/a2a/researcher/`,
      A2A_WRITER: `${base}/a2a/writer/`,
      A2A_TOKEN: TOKEN,
    },
  });
}

// Writes an assertion spec and runs `understudy assert` on `runId`.
async function assertSpec(dir, db, runId, name, yaml) {
  const spec = path.join(dir, `${name}.yaml`);
  fs.writeFileSync(spec, yaml);
  return run(['assert', '--run', runId, spec, '--db', db]);
}

const SEQUENCE_SPEC = `schema: understudy.spec/v1
assertions:
  - agent_sequence: {agents: [orchestrator, researcher, orchestrator, writer, orchestrator]}
  - count: {select: {kind: agent_call, attributes: {understudy.a2a.agent: writer}}, eq: 1}
  - count: {select: {kind: agent_call, attributes: {understudy.a2a.agent: researcher}}, eq: 1}
  - no_misses: true
`;

test('a2a journey: an orchestrator and two A2A agents calling a model, recorded as one session and replayed three times with none of them running', { timeout: 180000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-a2a-');
  const model = await startFakeOpenAI({ reply });
  t.after(() => model.close());
  const researcher = await startA2aAgent({ name: 'researcher', kind: 'message', token: TOKEN, apiKey: OPENAI_KEY });
  t.after(() => researcher.close());
  const writer = await startA2aAgent({ name: 'writer', kind: 'task', token: TOKEN, apiKey: OPENAI_KEY });
  t.after(() => writer.close());

  const rec = await Server.start(t, dir, {
    name: 'record',
    args: ['--mode', 'record', '--session', 'team', '--upstream', `openai=${model.url}`,
      '--a2a-upstream', `researcher=${researcher.url}`, '--a2a-upstream', `writer=${writer.url}`],
  });
  for (const agent of [researcher, writer]) agent.modelBaseUrl = `${rec.http}/run/${rec.run}/agent/${agent.name}/v1`;
  const recorded = await runOrchestrator(rec);
  assert.equal(recorded.code, 0, `orchestrator: ${recorded.stderr}\n${rec.stderr()}`);
  const out = recorded.stdout;
  // Texts and the ids each answer carried.
  const uuid = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
  const lines = out.split('\n');
  assert.match(lines[0], /^plan chatcmpl-\w+: \(\w{8}\) orchestrator on: Plan a short article/);
  assert.match(lines[1], /^card researcher JSONRPC\/1\.0,JSONRPC\/0\.3 protocol 1\.0$/);
  assert.match(lines[2], new RegExp(`^research message ${uuid} context ${uuid} role 2: \\(\\w{8}\\) researcher on: .+`));
  assert.match(lines[3], /^request chatcmpl-\w+: \(\w{8}\) orchestrator on: /);
  assert.match(lines[4], /^card writer JSONRPC\/1\.0,JSONRPC\/0\.3 protocol 0\.3$/);
  assert.match(lines[5], new RegExp(`^writer task (${uuid}) context ${uuid} state 1$`));
  const taskId = new RegExp(`^writer task (${uuid})`).exec(lines[5])[1];
  assert.match(lines[6], new RegExp(`^writer artifact ${uuid} draft task ${taskId} last true: \\(\\w{8}\\) writer on: .+`));
  assert.match(lines[7], new RegExp(`^writer status task ${taskId} context ${uuid} state 3 message ${uuid}: writer done$`));
  assert.match(lines[8], new RegExp(`^task ${taskId} state 3 artifacts ${uuid}=\\(\\w{8}\\) writer on: .+ history \\d+$`));
  assert.match(lines[9], /^summary chatcmpl-\w+: \(\w{8}\) orchestrator on: Summarize this draft: /);
  assert.equal(lines.length, 11, out);

  // Each agent got the bearer token and answered once through its model.
  assert.deepEqual(researcher.requests.map((r) => [r.method, r.path, r.body?.method]),
    [['GET', '/.well-known/agent-card.json', undefined], ['POST', '/a2a', 'SendMessage']]);
  assert.deepEqual(writer.requests.map((r) => [r.method, r.path, r.body?.method]),
    [['GET', '/.well-known/agent-card.json', undefined], ['POST', '/a2a', 'message/stream'], ['POST', '/a2a', 'tasks/get']]);
  for (const r of [...researcher.requests, ...writer.requests]) assert.equal(r.headers.authorization, `Bearer ${TOKEN}`);
  assert.deepEqual([researcher.modelCalls, writer.modelCalls], [1, 1]);
  assert.equal(model.requests.length, 5, 'three orchestrator calls and one per agent reached the model');
  // The DB files while serving (-wal included), and once stopped.
  const liveDb = Object.fromEntries(Object.entries(dbBytes(rec.db)).map(([file, bytes]) => [`${file} (serving)`, bytes]));
  assert.equal(await rec.stop(), 0, rec.stderr());

  // One timeline: the researcher's own model call between the call to it and its answer.
  const recTrace = await traceOf(rec);
  const ev = recTrace.events;
  const at = (pred, what) => {
    const i = ev.findIndex(pred);
    assert.ok(i >= 0, `${what} in the trace:\n${recTrace.raw}`);
    return i;
  };
  const call = at((e) => e.kind === 'agent_call' && attr(e, 'understudy.a2a.agent') === 'researcher', 'the call to researcher');
  const result = at((e) => e.kind === 'agent_result' && attr(e, 'understudy.a2a.agent') === 'researcher', 'researcher\'s answer');
  const own = at((e) => e.kind === 'exchange' && e.agent === 'researcher', 'researcher\'s model exchange');
  assert.ok(call < own && own < result, `researcher's exchange #${ev[own].seq} between #${ev[call].seq} and #${ev[result].seq}`);
  assert.equal(attr(ev[call], 'gen_ai.agent.name'), 'orchestrator');
  assert.equal(ev[call].agent, 'orchestrator');
  assert.match(attr(ev[call], 'understudy.a2a.message'), /^Find sources for this plan: \(\w{8}\) orchestrator on: /);
  assert.equal(attr(ev[call], 'understudy.a2a.method'), 'SendMessage');
  assert.equal(attr(ev[result], 'understudy.a2a.result'), / role 2: (.*)$/.exec(lines[2])[1]);
  const wcall = at((e) => e.kind === 'agent_call' && attr(e, 'understudy.a2a.agent') === 'writer', 'the call to writer');
  const wresult = at((e) => e.kind === 'agent_result' && attr(e, 'understudy.a2a.agent') === 'writer', 'writer\'s answer');
  const wown = at((e) => e.kind === 'exchange' && e.agent === 'writer', 'writer\'s model exchange');
  assert.ok(wcall < wown && wown < wresult, 'writer\'s exchange within its call');
  assert.equal(attr(ev[wcall], 'understudy.a2a.method'), 'message/stream');
  assert.equal(attr(ev[wresult], 'understudy.a2a.task_state'), 'completed');
  assert.match(attr(ev[wresult], 'understudy.a2a.result'), /\(\w{8}\) writer on: [^]*writer done/);
  assert.equal(attr(ev[wresult], 'understudy.answer.source'), 'upstream');
  // The cards and the task read back: a2a_exchange events of the caller's.
  assert.deepEqual(ev.filter((e) => e.kind === 'a2a_exchange').map((e) => [e.agent, attr(e, 'understudy.a2a.agent'), attr(e, 'understudy.a2a.method')]),
    [['orchestrator', 'researcher', 'agent-card'], ['orchestrator', 'writer', 'agent-card'], ['orchestrator', 'writer', 'tasks/get']]);

  // Replays: nothing running, each port held by a tripwire.
  const wires = {};
  for (const [name, fake] of Object.entries({ model, researcher, writer })) {
    const port = Number(new URL(fake.url).port);
    await fake.close();
    wires[name] = await tcpTripwire(t, port);
  }
  const replayRuns = [];
  for (let i = 1; i <= 3; i += 1) {
    const rep = await Server.start(t, dir, { name: `replay${i}`, args: ['--mode', 'none', '--session', 'team'] });
    const replayed = await runOrchestrator(rep);
    assert.equal(replayed.code, 0, `replay ${i}: ${replayed.stderr}\n${rep.stderr()}`);
    assert.equal(replayed.stdout, out, `replay ${i}: the same bytes`);
    assert.equal(await rep.stop(), 0, rep.stderr());
    replayRuns.push(rep);
  }
  for (const [name, wire] of Object.entries(wires)) assert.equal(wire.connections, 0, `nothing reached ${name}'s port`);

  // Neither the token nor the key is stored.
  const exported = await exportSession(rec.db, 'team');
  for (const secret of [TOKEN, OPENAI_KEY]) {
    assertNowhere('a secret', { ...liveDb, ...dbBytes(rec.db), export: exported.raw }, secret);
  }

  // One `understudy assert` over the whole timeline: the agents' turns, the
  // same for the record run and a replay run (where the agents never ran).
  for (const [what, runId] of [['record run', rec.run], ['replay run', replayRuns[0].run]]) {
    const checked = await assertSpec(dir, rec.db, runId, 'sequence', SEQUENCE_SPEC);
    assert.equal(checked.code, 0, `${what}: ${checked.stdout}${checked.stderr}`);
  }
});

// @a2a-js/sdk's clients pointed at understudy: `base` is a route up to
// /a2a/NAME (no slash); the card is fetched from under it.
const CARD_PATH = '.well-known/agent-card.json';
const ROLE_USER = 1;
const ROLE_AGENT = 2;
const FAILED = 4;
const textOf = (parts) => (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const userMessage = (text, messageId = `m-${randomHex(12)}`) => ({ message: { messageId, role: ROLE_USER, parts: [{ content: { $case: 'text', value: text } }] } });

async function v1Client(base) {
  const { ClientFactory } = await import('@a2a-js/sdk/client');
  return new ClientFactory().createFromUrl(`${base}/`, CARD_PATH);
}

// The v0.3 dialect: the compat transport on the card's v0.3 interface.
async function v03Client(base) {
  const { Client, DefaultAgentCardResolver } = await import('@a2a-js/sdk/client');
  const { LegacyJsonRpcTransport } = await import('@a2a-js/sdk/compat/v0_3/client');
  const card = await new DefaultAgentCardResolver().resolve(`${base}/`, CARD_PATH);
  const legacy = card.supportedInterfaces.find((i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '0.3');
  assert.ok(legacy, `a v0.3 JSON-RPC interface in ${JSON.stringify(card)}`);
  assert.equal(legacy.url, base, 'the card points back at understudy\'s route');
  return new Client(new LegacyJsonRpcTransport({ endpoint: legacy.url }), card);
}

// The JSON-RPC error a client call rejects with.
async function rejection(promise, what) {
  return promise.then((r) => assert.fail(`${what}: expected a JSON-RPC error, got ${JSON.stringify(r)}`), (e) => e);
}

test('a2a rules with no recording: a JSON-RPC error once, then scripted messages and a failed task, read by the v1.0 and v0.3 clients; the same bytes from two servers', { timeout: 90000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-a2arules-');
  const scenario = ['--mode', 'replay', '--scenario', path.join(FIXTURES, 'a2a_rules.yaml')];
  const DRAFT = 'Draft: the Golden Gate Bridge opened in 1937.';
  const SOURCES = 'Three sources agree: the bridge opened in 1937.';

  for (const [dialect, connect] of [['v1.0', v1Client], ['v0.3', v03Client]]) {
    const server = await Server.start(t, dir, { db: `rules-${dialect}.db`, name: `rules-${dialect}`, args: scenario });
    const base = `${server.http}/run/${server.run}/agent/orchestrator/a2a`;
    const writer = await connect(`${base}/writer`);
    assert.equal(writer.protocolVersion, dialect === 'v1.0' ? '1.0' : '0.3');
    const card = await writer.getAgentCard();
    assert.equal(card.name, 'writer', 'a card made up for an agent only rules answer');

    const down = await rejection(writer.sendMessage(userMessage('Write a draft about the bridge.')), `${dialect}: first draft`);
    assert.equal(down.envelopeCode, -32603, `${dialect}: ${down.stack}`);
    assert.match(down.message, /writer unavailable/, dialect);
    const drafted = await writer.sendMessage(userMessage('Write a draft about the bridge.'));
    assert.equal(textOf(drafted.parts), DRAFT, `${dialect}: ${JSON.stringify(drafted)}`);
    assert.equal(drafted.role, ROLE_AGENT);
    assert.match(drafted.messageId, /\S/);
    const events = [];
    for await (const e of writer.sendMessageStream(userMessage('Another draft, streamed.'))) events.push(e.payload);
    assert.deepEqual(events.map((e) => [e.$case, textOf(e.value.parts)]), [['message', DRAFT]], `${dialect} stream`);

    const researcher = await connect(`${base}/researcher`);
    const sources = await researcher.sendMessage(userMessage('List your sources on the bridge.'));
    assert.equal(textOf(sources.parts), SOURCES, dialect);
    const failed = await researcher.sendMessage(userMessage('Prove the impossible.'));
    assert.equal(failed.status.state, FAILED, `${dialect}: a task in state failed: ${JSON.stringify(failed)}`);
    assert.equal(textOf(failed.status.message.parts), 'no source covers that', dialect);
    assert.equal(await server.stop(), 0, server.stderr());

    // In the trace: each call and what answered it.
    const { events: ev } = await traceOf(server);
    const results = ev.filter((e) => e.kind === 'agent_result').map((e) => [
      attr(e, 'understudy.a2a.agent'), attr(e, 'understudy.rule.name'), attr(e, 'understudy.answer.source'),
      attr(e, 'understudy.a2a.result') ?? null, attr(e, 'understudy.a2a.task_state') ?? null,
    ]);
    assert.deepEqual(results, [
      ['writer', 'writer-is-down', 'rule', null, null],
      ['writer', 'writer-drafts', 'rule', DRAFT, null],
      ['writer', 'writer-drafts', 'rule', DRAFT, null],
      ['researcher', 'researcher-answers', 'rule', SOURCES, null],
      ['researcher', 'researcher-gives-up', 'rule', 'no source covers that', 'failed'],
    ], `${dialect}: ${JSON.stringify(ev.filter((e) => e.kind === 'agent_result'))}`);
    assert.equal(ev.filter((e) => e.kind === 'agent_call' && e.agent === 'orchestrator').length, 5);
  }

  // Raw HTTP: the same calls to two servers answer the same bytes, in both
  // dialects, whole and as SSE.
  const v1 = (id, text, method = 'SendMessage') => JSON.stringify({ jsonrpc: '2.0', id, method, params: { message: { messageId: `mid-${id}`, role: 'ROLE_USER', parts: [{ text }] } } });
  const v03 = (id, text, method = 'message/send') => JSON.stringify({ jsonrpc: '2.0', id, method, params: { message: { kind: 'message', messageId: `mid-${id}`, role: 'user', parts: [{ kind: 'text', text }] } } });
  const calls = [
    ['writer', v1(1, 'a draft')], ['writer', v03('two', 'a draft')], ['writer', v1(3, 'a draft', 'SendStreamingMessage')],
    ['writer', v03(4, 'a draft', 'message/stream')], ['researcher', v03(5, 'sources?')], ['researcher', v1(6, 'impossible')],
  ];
  const answers = [];
  for (const n of [1, 2]) {
    const server = await Server.start(t, dir, { db: `bytes-${n}.db`, name: `bytes-${n}`, args: scenario });
    const got = [];
    for (const [agent, body] of calls) {
      const stream = /stream/i.test(JSON.parse(body).method);
      const res = await post(`${server.http}/run/${server.run}/agent/orchestrator/a2a/${agent}`, body, stream ? { accept: 'text/event-stream' } : {});
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get('content-type').split(';')[0], stream ? 'text/event-stream' : 'application/json');
      got.push(res.text);
    }
    assert.equal(await server.stop(), 0, server.stderr());
    answers.push(got);
  }
  assert.deepEqual(answers[1], answers[0], 'two servers, the same bytes');
  const [first, second, streamed, streamed03, sources, impossible] = answers[0];
  assert.deepEqual(JSON.parse(first), { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'writer unavailable' } });
  const m03 = JSON.parse(second);
  assert.equal(m03.id, 'two');
  assert.equal(m03.result.kind, 'message');
  assert.equal(m03.result.role, 'agent');
  assert.deepEqual(m03.result.parts, [{ kind: 'text', text: DRAFT }]);
  assert.match(streamed, /^data: \{"jsonrpc":"2\.0","id":3,"result":\{"message":\{.*"role":"ROLE_AGENT","parts":\[\{"text":"Draft: [^"]+"\}\]\}\}\}\n\n$/);
  assert.match(streamed03, /^data: \{"jsonrpc":"2\.0","id":4,"result":\{"kind":"message",.*"role":"agent"/);
  assert.equal(JSON.parse(sources).result.parts[0].text, SOURCES);
  const task = JSON.parse(impossible).result.task;
  assert.equal(task.status.state, 'TASK_STATE_FAILED', impossible);
  assert.deepEqual(task.status.message.parts, [{ text: 'no source covers that' }]);
});

test('a2a bad input on /a2a/{name}: refused naming what is wrong, nothing forwarded, only good calls recorded; a replay miss names what differs', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-a2abad-');
  const model = await startFakeOpenAI({ reply });
  t.after(() => model.close());
  const writer = await startA2aAgent({ name: 'writer', kind: 'task', token: TOKEN, apiKey: OPENAI_KEY });
  t.after(() => writer.close());
  const rec = await Server.start(t, dir, {
    name: 'record',
    args: ['--mode', 'record', '--session', 'bad', '--upstream', `openai=${model.url}`, '--a2a-upstream', `writer=${writer.url}`, '--max-body-bytes', '262144'],
  });
  writer.modelBaseUrl = `${rec.http}/run/${rec.run}/agent/writer/v1`;
  const route = `${rec.http}/a2a/writer`;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const send = (text, extra = {}) => ({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text }] } }, ...extra });
  const refused = async (what, { url = route, method = 'POST', body, headers = {}, status = 400, code = -32600, id = null, pattern }) => {
    const res = await fetch(url, { method, body, headers: { 'content-type': 'application/json', ...auth, ...headers }, signal: AbortSignal.timeout(15000) });
    const text = await res.text();
    assert.equal(res.status, status, `${what}: ${text}`);
    let json;
    assert.doesNotThrow(() => (json = JSON.parse(text)), `${what}: a JSON-RPC body: ${text}`);
    assert.equal(json.jsonrpc, '2.0', `${what}: ${text}`);
    assert.equal(json.id, id, `${what}: ${text}`);
    assert.equal(json.error?.code, code, `${what}: ${text}`);
    assert.match(json.error.message, pattern, `${what}: ${text}`);
    return { res, json };
  };

  await refused('malformed JSON', { body: '{"jsonrpc":"2.0","id":1,', code: -32700, pattern: /^body: invalid JSON at byte 24/ });
  await refused('a batch', { body: JSON.stringify([send('hi')]), pattern: /batch \(array\) is not accepted/ });
  const parts = send('hi');
  parts.params.message.parts = { text: 'hi' };
  await refused('parts not an array', { body: JSON.stringify(parts), code: -32602, id: 1, pattern: /^params\.message\.parts: expected an array, got object$/ });
  await refused('a text that is a number', { body: JSON.stringify(send(42)), code: -32602, id: 1, pattern: /^params\.message\.parts\[0\]\.text: expected a string, got number$/ });
  const notification = send('hi');
  delete notification.id;
  await refused('a notification', { body: JSON.stringify(notification), pattern: /JSON-RPC requests \(with a method and an id\) only/ });
  await refused('100k-deep JSON', { body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":${'['.repeat(100000)}${']'.repeat(100000)}}`, pattern: /nested deeper than \d+ levels/ });
  await refused('invalid UTF-8', {
    body: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('b"}]}}}')]),
    code: -32700, pattern: /invalid UTF-8 at byte \d+/,
  });
  await refused('over --max-body-bytes', { body: JSON.stringify(send('x'.repeat(300000))), status: 413, pattern: /exceeds 262144 bytes/ });
  const get = await refused('GET on the JSON-RPC route', { method: 'GET', body: undefined, status: 405, pattern: /POST JSON-RPC requests here; the agent card is at \/a2a\/writer\/\.well-known\/agent-card\.json/ });
  assert.equal(get.res.headers.get('allow'), 'POST');
  const cardPost = await refused('POST to the card', { url: `${route}/.well-known/agent-card.json`, body: '{}', status: 405, pattern: /GET the agent card/ });
  assert.equal(cardPost.res.headers.get('allow'), 'GET');
  await refused('no agent name', { url: `${rec.http}/a2a/`, body: JSON.stringify(send('hi')), status: 404, pattern: /^path: expected \/a2a\/\{name\}/ });
  await refused('a path under the name', { url: `${route}/extra`, body: JSON.stringify(send('hi')), status: 404, pattern: /^path: expected \/a2a\/\{name\}/ });
  await refused('not JSON', { body: JSON.stringify(send('hi')), headers: { 'content-type': 'text/plain' }, status: 415, pattern: /content-type: expected application\/json/ });
  // An option-like name is a name: no upstream has it.
  await refused('an agent named --help', { url: `${rec.http}/a2a/--help`, body: JSON.stringify(send('hi')), status: 200, code: -32603, id: 1, pattern: /no upstream for A2A agent "--help"/ });
  assert.equal(writer.requests.length, 0, `nothing forwarded: ${JSON.stringify(writer.requests)}`);
  assert.equal(model.requests.length, 0);

  // The good calls: forwarded with the token, recorded.
  const good = await post(route, JSON.stringify(send('Write a draft about fog.')), { ...auth, 'a2a-version': '1.0' });
  assert.equal(good.status, 200, good.text);
  assert.equal(good.json.result.task.status.state, 'TASK_STATE_COMPLETED', good.text);
  const taskId = good.json.result.task.id;
  const getTask = (id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'GetTask', params: { id: taskId } });
  const gotTask = await post(route, getTask(2), { ...auth, 'a2a-version': '1.0' });
  assert.equal(gotTask.status, 200, gotTask.text);
  assert.equal(gotTask.json.result.history[0].messageId, 'm-1', gotTask.text);
  // A completed task cannot be cancelled: the agent's JSON-RPC error is
  // recorded like any answer.
  const cancelTask = (id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'CancelTask', params: { id: taskId } });
  const cancelled = await post(route, cancelTask(3), { ...auth, 'a2a-version': '1.0' });
  assert.equal(cancelled.status, 200, cancelled.text);
  assert.equal(typeof cancelled.json.error?.code, 'number', cancelled.text);
  const card = await fetch(`${route}/.well-known/agent-card.json`, { headers: auth, signal: AbortSignal.timeout(15000) });
  assert.equal(card.status, 200);
  assert.equal((await card.json()).supportedInterfaces[0].url, route);
  assert.deepEqual(writer.requests.map((r) => [r.method, r.path, r.headers.authorization]),
    [['POST', '/a2a', `Bearer ${TOKEN}`], ['POST', '/a2a', `Bearer ${TOKEN}`], ['POST', '/a2a', `Bearer ${TOKEN}`],
      ['GET', '/.well-known/agent-card.json', `Bearer ${TOKEN}`]]);
  assert.equal(await rec.stop(), 0, rec.stderr());
  const exported = await exportSession(rec.db, 'bad');
  assert.deepEqual(exported.exchanges.map((e) => [e.native?.provider, e.native?.path]),
    [['openai', '/v1/chat/completions'], ['a2a', '/a2a/writer'], ['a2a', '/a2a/writer'], ['a2a', '/a2a/writer'],
      ['a2a', '/a2a/writer/.well-known/agent-card.json']],
    'the writer\'s model call (done first), its answer, the task looked up, the refused cancel, its card; nothing else');
  await writer.close();
  await model.close();

  const rep = await Server.start(t, dir, { name: 'replay', args: ['--mode', 'replay', '--session', 'bad'] });
  // The replay's client sends its own messageId; the task's history echoes
  // it, in the answer and in a later GetTask of the same task.
  const resent = send('Write a draft about fog.', { id: 7 });
  resent.params.message.messageId = 'm-replay';
  const replayed = await post(`${rep.http}/run/${rep.run}/a2a/writer`, JSON.stringify(resent));
  assert.equal(replayed.json.id, 7, replayed.text);
  assert.equal(replayed.json.result.task.id, taskId, replayed.text);
  assert.equal(replayed.json.result.task.history[0].messageId, 'm-replay', replayed.text);
  const lookedUp = await post(`${rep.http}/run/${rep.run}/a2a/writer`, getTask(8));
  assert.equal(lookedUp.json.id, 8, lookedUp.text);
  assert.equal(lookedUp.json.result.history[0].messageId, 'm-replay', lookedUp.text);
  assert.doesNotMatch(lookedUp.text, /"m-1"/, lookedUp.text);
  const recancelled = await post(`${rep.http}/run/${rep.run}/a2a/writer`, cancelTask(9));
  assert.equal(recancelled.json.id, 9, recancelled.text);
  assert.deepEqual(recancelled.json.error, cancelled.json.error, recancelled.text);

  // A replay miss: a JSON-RPC error -32001 naming what differs, through the SDK too.
  const miss = await post(`${rep.http}/run/${rep.run}/a2a/writer`, JSON.stringify(send('Write a draft about rain.')));
  assert.equal(miss.status, 200, miss.text);
  assert.equal(miss.json.error?.code, -32001, miss.text);
  assert.match(miss.json.error.message, /closest is exchange #2/, miss.text);
  assert.match(miss.json.error.message, /extra\.message\.parts\[0\]\.text: recorded "Write a draft about fog\." got "Write a draft about rain\."/, miss.text);
  assert.equal(miss.json.error.data?.understudy, 'no_recording', miss.text);
  const sdkMiss = await rejection((await v1Client(`${rep.http}/run/${rep.run}/a2a/writer`)).sendMessage(userMessage('Write a draft about snow.')), 'a miss');
  assert.equal(sdkMiss.envelopeCode, -32001, sdkMiss.stack);
  assert.match(sdkMiss.message, /recorded "Write a draft about fog\." got "Write a draft about snow\."/);
  const nobody = await post(`${rep.http}/run/${rep.run}/a2a/editor`, JSON.stringify(send('hi')));
  assert.equal(nobody.json.error?.code, -32001, nobody.text);
  assert.match(nobody.json.error.message, /model: recorded "writer" got "editor"/, nobody.text);
  assert.equal(await rep.stop(), 0, rep.stderr());
});

test('a2a: a bad --a2a-upstream is refused at start naming the flag and the spec, the database untouched; an option-like name is a name', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-a2aflag-');
  const db = path.join(dir, 'never.db');
  const serve = (...specs) => run(['serve', '--db', db, '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0',
    '--mode', 'record', '--session', 's', ...specs.flatMap((s) => [`--a2a-upstream=${s}`])]);
  const refused = async (specs, pattern, what) => {
    const r = await serve(...specs);
    assert.notEqual(r.code, 0, `${what}: ${r.stderr}`);
    assert.match(r.stderr, pattern, `${what}: ${r.stderr}`);
    assert.equal(fs.existsSync(db), false, `${what}: no database made`);
  };
  await refused(['writer'], /--a2a-upstream "writer": expected NAME=URL, NAME the A2A agent's name \(no '\/'\)/, 'no URL');
  await refused(['a/b=http://127.0.0.1:1/'], /--a2a-upstream "a\/b=http:\/\/127\.0\.0\.1:1\/": expected NAME=URL/, 'a / in the name');
  await refused(['=http://127.0.0.1:1/'], /expected NAME=URL/, 'no name');
  await refused(['w=http://127.0.0.1:1/', 'w=http://127.0.0.1:2/'], /--a2a-upstream: more than one w=/, 'a name twice');
  await refused(['w=ftp://127.0.0.1:1/'], /--a2a-upstream w "ftp:\/\/127\.0\.0\.1:1\/": expected http:\/\/HOST\[:PORT\]\[\/PATH\]/, 'not http');
  await refused(['w=http://'], /--a2a-upstream w "http:\/\/": expected http:\/\/HOST/, 'no host');
  await refused(['w=http://127.0.0.1:1/caf\u00e9'], /--a2a-upstream w "http:\/\/127\.0\.0\.1:1\/caf\\xc3\\xa9": byte 23 is not allowed in a URL/, 'non-ASCII in the URL');
  await refused(['w=http://127.0.0.1:1/a b'], /byte 21 is not allowed in a URL/, 'a space in the URL');

  // "--help=…" after `=` is the flag's value, an agent named --help: the
  // server starts and says so.
  const server = await Server.start(t, dir, { name: 'optionlike', args: ['--a2a-upstream=--help=http://127.0.0.1:1/a2a'] });
  assert.match(server.stderr(), /a2a_upstreams="--help=http:\/\/127\.0\.0\.1:1\/a2a"/);
  assert.equal(await server.stop(), 0, server.stderr());
});

test('a2a: clients that never read a long replayed stream hold a window each, not the stream; a reading client is served meanwhile', { timeout: 120000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-a2aslow-');
  // An agent streaming 2,000 artifact updates of ~4 KB: 8 MB an answer.
  const piece = 'x'.repeat(4000);
  const events = 2000;
  const agent = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < events; i++) {
        const result = { artifactUpdate: { taskId: 't', contextId: 'c', artifact: { artifactId: 'a', parts: [{ text: `${i} ${piece}` }] } } };
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result })}\n\n`);
      }
      res.end();
    });
  });
  await new Promise((r) => agent.listen(0, '127.0.0.1', r));
  t.after(() => agent.close());
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'the long one' }] } } });
  const read = async (base) => {
    const res = await fetch(`${base}/a2a/slow`, { method: 'POST', body, headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, signal: AbortSignal.timeout(60000) });
    assert.equal(res.status, 200);
    return (await res.text()).split('\n\n').filter((e) => e.startsWith('data: ')).length;
  };
  const rec = await Server.start(t, dir, { name: 'record', args: ['--mode', 'record', '--session', 'slow', '--a2a-upstream', `slow=http://127.0.0.1:${agent.address().port}/`] });
  assert.equal(await read(rec.http), events);
  assert.equal(await rec.stop(), 0, rec.stderr());
  agent.close();

  // Under AddressSanitizer (ctest's build) freed memory waits in a 256 MiB
  // quarantine, and RSS would measure it, not what is held: a small one, as
  // tests/e2e/hardening_test.cc does.
  const asan = [process.env.ASAN_OPTIONS, 'quarantine_size_mb=4:allocator_release_to_os_interval_ms=0']
    .filter(Boolean).join(':');
  const rep = await Server.start(t, dir, {
    name: 'replay', args: ['--mode', 'replay', '--session', 'slow', '--repeat', 'true'], env: { ASAN_OPTIONS: asan },
  });
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${rep.child.pid}/status`, 'utf8'))[1]) * 1024;
  assert.equal(await read(rep.http), events, 'a warm-up read whole');
  const before = rss();
  const port = Number(new URL(rep.http).port);
  const sockets = [];
  for (let i = 0; i < 20; i++) {
    const socket = net.connect(port, '127.0.0.1');
    socket.pause();  // never reads
    socket.on('error', () => {});
    socket.write(`POST /a2a/slow HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: text/event-stream\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    sockets.push(socket);
  }
  // Meanwhile a client that reads gets its whole stream.
  assert.equal(await read(rep.http), events, 'a reading client is served while 20 do not read');
  const grown = rss() - before;
  // 20 unread answers would be 160 MB held; a window each is a few MB.
  assert.ok(grown < 48 * 1024 * 1024, `20 clients that never read grew the server by ${(grown / 1048576).toFixed(1)} MiB`);
  for (const s of sockets) s.destroy();
  assert.equal(await read(rep.http), events, 'still serving once they went');
  assert.equal(await rep.stop(), 0, rep.stderr());
});

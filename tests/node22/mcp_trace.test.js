// What a run of model and MCP tool calls reports: one timeline with the
// model's exchanges and the tool calls interleaved in order; assertions on
// tool calls (gRPC Traces.Assert through clients/node, and `understudy
// assert`) that pass, and fail naming the first difference; a replay miss
// on tools/call that names the closest recorded call and the differing
// argument, counted in the run's summary.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertions, connect } from '../../clients/node/index.js';
import { Server, exportSession, requireBinary, run, tempDir } from '../node/lib/harness.js';
import { startFakeOpenAI } from './fakes/openai.js';
import { attr, traceOf } from './lib/journey.js';
import { askWithTools, connectClient, httpTransport, mcpSdk, startFakeMcpHttp } from './lib/mcp.js';
import { openaiClient } from './lib/sdk.js';

requireBinary();

// An event as [kind, what]: the operation of an exchange (`model` for the
// model's), the tool of a tool call or result (with `@server` when an MCP
// server answered it).
function step(e) {
  if (e.kind === 'exchange') {
    const op = attr(e, 'gen_ai.operation.name') ?? '';
    return [e.kind, op.startsWith('mcp:') ? op : 'model'];
  }
  const server = attr(e, 'understudy.mcp.server');
  return [e.kind, `${attr(e, 'gen_ai.tool.name')}${server ? `@${server}` : ''}`];
}

const TIMELINE_KINDS = new Set(['exchange', 'tool_call', 'tool_result', 'miss']);

test('mcp trace: model exchanges and MCP tool calls in one timeline, in order; tool-call assertions pass, and fail naming the first difference', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-mcptrace-');
  const openai = await startFakeOpenAI();
  t.after(() => openai.close());
  const mcpFake = await startFakeMcpHttp(t);
  const server = await Server.start(t, dir, {
    args: ['--mode', 'record', '--session', 'trace', '--upstream', `openai=${openai.url}`, '--mcp-upstream', `counter=${mcpFake.url}`],
  });
  const mcp = await connectClient(t, await httpTransport(`${server.http}/mcp/counter`));
  const { tools } = await mcp.listTools();
  const turn = await askWithTools({ openai: await openaiClient(server.http), mcp, tools, names: ['counter', 'echo'], prompt: 'Ask the counter.' });
  assert.deepEqual(turn.steps.map((s) => [s.name, s.arguments]), [['counter', '{}']]);
  const echoed = await mcp.callTool({ name: 'echo', arguments: { text: 'hello' } });
  assert.deepEqual(echoed.structuredContent, { text: 'hello', call: 1 });
  const counted = await mcp.callTool({ name: 'counter', arguments: {} });
  assert.deepEqual(counted.structuredContent, { n: 2 });

  // Over gRPC while the run is live (clients/node).
  const us = connect(server.grpc);
  t.after(() => us.close());
  await us.assertToolCalls(server.run, ['counter', { name: 'echo', arguments: { text: 'hello' } }, 'counter']);
  await us.assertCount(server.run, '==', 3, { kind: 'tool_result', attributes: { 'understudy.mcp.server': 'counter' } });
  await us.assertNoMisses(server.run);
  const wrong = [assertions.toolCalls(['counter', { name: 'echo', arguments: { text: 'bye' } }, 'counter'])];
  const failed = await us.check(server.run, wrong);
  assert.equal(failed.passed, false);
  assert.equal(failed.results[0].divergenceIndex, 1);
  assert.match(failed.results[0].explanation, /they first differ at position 2: expected echo\(\{"text":"bye"\}\), got echo\(\{"text":"hello"\}\)/);
  assert.match(failed.results[0].explanation, /arguments differ at text: expected "bye", got "hello"/);
  const thrown = await us.assertToolCalls(server.run, ['counter', 'counter']).then(() => null, (e) => e);
  assert.ok(thrown instanceof assert.AssertionError, 'a failed assertion throws');
  assert.match(thrown.message, /^FAIL tool_calls: .*first differ at position 2: expected counter, got echo/);

  await mcp.close();
  assert.equal(await server.stop(), 0, server.stderr());

  // The timeline. The model's answer is traced as upstream answers are
  // (its tool_call first, then its exchange); the MCP call it asked for is
  // not traced as a second tool_call, and its tool_result carries the
  // model's call id; the next model exchange comes after it.
  const { events } = await traceOf(server);
  assert.deepEqual(events.filter((e) => TIMELINE_KINDS.has(e.kind)).map(step), [
    ['exchange', 'mcp:initialize'],
    ['exchange', 'mcp:tools/list'],
    ['tool_call', 'counter'],
    ['exchange', 'model'],
    ['tool_result', 'counter@counter'],
    ['exchange', 'model'],
    ['tool_call', 'echo@counter'],
    ['tool_result', 'echo@counter'],
    ['tool_call', 'counter@counter'],
    ['tool_result', 'counter@counter'],
  ]);
  const seqs = events.map((e) => Number(e.seq));
  assert.deepEqual(seqs, seqs.map((_, i) => i + 1), 'seq from 1 with no gaps');
  const modelCall = events.find((e) => e.kind === 'tool_call');
  const firstResult = events.find((e) => e.kind === 'tool_result');
  assert.equal(attr(modelCall, 'gen_ai.tool.call.id'), turn.steps[0].callId);
  assert.equal(attr(firstResult, 'gen_ai.tool.call.id'), turn.steps[0].callId, 'the MCP result answers the model\'s call');
  assert.deepEqual(JSON.parse(attr(firstResult, 'gen_ai.tool.call.result')), turn.steps[0].result);
  const echoResult = events.find((e) => e.kind === 'tool_result' && attr(e, 'gen_ai.tool.name') === 'echo');
  assert.deepEqual(JSON.parse(attr(echoResult, 'gen_ai.tool.call.arguments')), { text: 'hello' });
  assert.deepEqual(JSON.parse(attr(echoResult, 'gen_ai.tool.call.result')), echoed);
  assert.equal(attr(echoResult, 'understudy.answer.source'), 'upstream');
  assert.equal(attr(events.at(-1), 'understudy.run.served'), '7');

  // The same checks from the shell, on the stored trace.
  const pass = path.join(dir, 'pass.yaml');
  fs.writeFileSync(pass, 'assertions:\n  - tool_calls: {calls: [counter, {name: echo, arguments: {text: hello}}, counter]}\n  - no_misses: true\n');
  const ok = await run(['assert', '--run', server.run, pass, '--db', server.db]);
  assert.equal(ok.code, 0, `${ok.stdout}${ok.stderr}`);
  const fail = path.join(dir, 'fail.yaml');
  fs.writeFileSync(fail, 'assertions:\n  - tool_calls: {calls: [counter, {name: echo, arguments: {text: bye}}]}\n');
  const bad = await run(['assert', '--run', server.run, fail, '--db', server.db]);
  assert.equal(bad.code, 1, `${bad.stdout}${bad.stderr}`);
  assert.match(bad.stdout + bad.stderr, /arguments differ at text: expected "bye", got "hello"/);

  // Each MCP tool_result has its latency (docs: understudy.latency_ms).
  for (const e of events.filter((x) => x.kind === 'tool_result')) {
    assert.match(attr(e, 'understudy.latency_ms') ?? '', /^\d+(\.\d+)?$/, `understudy.latency_ms on #${e.seq}: ${JSON.stringify(e.attributes)}`);
  }
});

test('mcp replay miss: tools/call with other arguments is a JSON-RPC error naming the closest recorded call and the differing argument; the run counts the miss', { timeout: 60000 }, async (t) => {
  const { McpError } = await mcpSdk();
  const dir = tempDir(t, 'understudy-node22-mcpmiss-');
  const mcpFake = await startFakeMcpHttp(t);
  const upstream = ['--mcp-upstream', `counter=${mcpFake.url}`];
  const rec = await Server.start(t, dir, { name: 'record', args: ['--mode', 'record', '--session', 'miss', ...upstream] });
  let mcp = await connectClient(t, await httpTransport(`${rec.http}/mcp/counter`));
  const hello = await mcp.callTool({ name: 'echo', arguments: { text: 'hello', times: 2 } });
  const counter = await mcp.callTool({ name: 'counter', arguments: {} });
  await mcp.close();
  assert.equal(await rec.stop(), 0, rec.stderr());
  await mcpFake.close();
  const recordedEcho = (await exportSession(rec.db, 'miss')).exchanges.find((x) => x.request.operation === 'mcp:tools/call' && JSON.parse(x.request.extra).name === 'echo');
  assert.ok(recordedEcho, 'the echo call was recorded');

  const rep = await Server.start(t, dir, { name: 'replay', args: ['--mode', 'none', '--session', 'miss', ...upstream] });
  mcp = await connectClient(t, await httpTransport(`${rep.http}/mcp/counter`));
  const miss = await mcp.callTool({ name: 'echo', arguments: { text: 'bye', times: 2 } }).then(
    (r) => assert.fail(`expected a miss, got ${JSON.stringify(r)}`), (e) => e);
  assert.ok(miss instanceof McpError, String(miss));
  assert.equal(miss.code, -32001);
  assert.equal(miss.data?.understudy, 'no_recording');
  assert.match(miss.message, new RegExp(`closest is exchange #${recordedEcho.seq}\\b`));
  assert.match(miss.message, /extra\.arguments\.text: recorded "hello" got "bye"/);
  assert.doesNotMatch(miss.message, /arguments\.times/, 'only the differing argument is named');
  // The recorded calls still answer, in recorded order.
  assert.deepEqual(await mcp.callTool({ name: 'echo', arguments: { text: 'hello', times: 2 } }), hello);
  assert.deepEqual(await mcp.callTool({ name: 'counter', arguments: {} }), counter);

  const us = connect(rep.grpc);
  t.after(() => us.close());
  const noMisses = await us.assertNoMisses(rep.run).then(() => null, (e) => e);
  assert.ok(noMisses instanceof assert.AssertionError, 'no_misses fails');
  assert.match(noMisses.message, /^FAIL no_misses: .*the run had 1 miss: event #\d+: .*closest is exchange #\d+/);
  assert.match(noMisses.message, /extra\.arguments\.text: recorded "hello" got "bye"/);
  await mcp.close();
  assert.equal(await rep.stop(), 0, rep.stderr());

  const { events } = await traceOf(rep);
  const misses = events.filter((e) => e.kind === 'miss');
  assert.equal(misses.length, 1);
  assert.match(attr(misses[0], 'understudy.miss.report'), /extra\.arguments\.text: recorded "hello" got "bye"/);
  assert.equal(attr(misses[0], 'understudy.miss.closest_seq'), String(recordedEcho.seq));
  const ended = events.find((e) => e.kind === 'run_ended');
  assert.equal(attr(ended, 'understudy.run.misses'), '1');
});

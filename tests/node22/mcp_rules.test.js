// Scenario rules on MCP tools (`when.tool`, `when.tool_arguments`) and
// `mock_tools` served over MCP, with no recording and no tool server:
// fixtures/mcp_rules.yaml answers a Streamable HTTP client and a stdio one
// (through `understudy mcp-proxy`, whose server command is a tripwire).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Server, requireBinary, tempDir } from '../node/lib/harness.js';
import { attr, traceOf } from './lib/journey.js';
import { NODE22_BIN, FIXTURES } from './lib/sdk.js';
import { TRIPWIRE, connectClient, httpTransport, mcpSdk, stdioProxyTransport } from './lib/mcp.js';

requireBinary();

const RULES = path.join(FIXTURES, 'mcp_rules.yaml');

// Calls `fn` until it resolves, at most `attempts` times, retrying on a
// JSON-RPC error whose code is in `retryOn` (as an agent's retry policy
// would). Resolves { result, errors }.
async function withRetry(fn, { attempts = 3, retryOn = [-32603] } = {}) {
  const errors = [];
  for (let i = 1; ; i += 1) {
    try {
      return { result: await fn(), errors };
    } catch (e) {
      if (!retryOn.includes(e.code) || i >= attempts) throw e;
      errors.push(`${e.code} ${e.message}`);
    }
  }
}

// The rejection of `promise` (fails when it resolves).
async function rejection(promise, what) {
  try {
    const value = await promise;
    assert.fail(`${what}: expected an error, got ${JSON.stringify(value)}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    return e;
  }
}

test('mcp rules: an error result, a JSON-RPC error, a hang released at the client\'s timeout, fail_then_succeed through a retry, structured content and mock_tools, over Streamable HTTP', { timeout: 60000 }, async (t) => {
  const { McpError, ErrorCode } = await mcpSdk();
  const dir = tempDir(t, 'understudy-node22-mcprules-');
  const server = await Server.start(t, dir, { args: ['--mode', 'replay', '--scenario', RULES] });
  const mcp = await connectClient(t, await httpTransport(`${server.http}/mcp/tools`));

  // A server never recorded: initialize is synthesized, tools/list lists the mocks.
  assert.ok(mcp.getServerCapabilities()?.tools, `tools capability: ${JSON.stringify(mcp.getServerCapabilities())}`);
  const { tools } = await mcp.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), ['clock', 'counter', 'weather']);

  // 1. A tool error result: no exception, the agent reads isError and goes on.
  const saved = await mcp.callTool({ name: 'echo', arguments: { text: 'save' } });
  assert.deepEqual(saved, { content: [{ type: 'text', text: 'disk full: cannot save' }], isError: true });
  const handled = saved.isError ? `could not save: ${saved.content[0].text}` : 'saved';
  assert.equal(handled, 'could not save: disk full: cannot save');

  // 2. A JSON-RPC error: the SDK throws McpError with the code and message.
  const forbidden = await rejection(mcp.callTool({ name: 'echo', arguments: { text: 'forbidden' } }), 'echo forbidden');
  assert.ok(forbidden instanceof McpError, String(forbidden));
  assert.equal(forbidden.code, -32602);
  assert.equal(forbidden.message, 'MCP error -32602: text may not be forbidden');

  // 3. hang: nothing comes back; the SDK's timeout releases the caller.
  const t0 = Date.now();
  const hung = await rejection(mcp.callTool({ name: 'clock', arguments: {} }, undefined, { timeout: 1000 }), 'clock (hang)');
  const waited = Date.now() - t0;
  assert.ok(hung instanceof McpError, String(hung));
  assert.equal(hung.code, ErrorCode.RequestTimeout);
  assert.ok(waited >= 950 && waited < 5000, `released at the 1000 ms timeout, after ${waited} ms`);
  // The rule was for one use: the next call gets the mock.
  assert.deepEqual((await mcp.callTool({ name: 'clock', arguments: {} })).content, [{ type: 'text', text: '12:00' }]);

  // 4. fail_then_succeed: two JSON-RPC errors, then the answer, through the retry.
  const flaky = await withRetry(() => mcp.callTool({ name: 'counter', arguments: {} }));
  assert.deepEqual(flaky.errors, ['-32603 MCP error -32603: counter overloaded', '-32603 MCP error -32603: counter overloaded']);
  assert.deepEqual(flaky.result.content, [{ type: 'text', text: '7' }]);
  assert.equal(flaky.result.isError, undefined);
  // times: 3 used up: the mock answers.
  assert.deepEqual((await mcp.callTool({ name: 'counter', arguments: {} })).content, [{ type: 'text', text: '42' }]);

  // 5. respond with structured content (a regex tool name, a nested argument subset).
  const shaped = await mcp.callTool({ name: 'echo', arguments: { text: 'shape', options: { deep: true, extra: 1 } } });
  const structured = { ok: true, items: [1, 2], owner: { name: 'Ada' } };
  assert.deepEqual(shaped.structuredContent, structured);
  assert.equal(shaped.content.length, 1);
  assert.equal(shaped.content[0].type, 'text');
  assert.deepEqual(JSON.parse(shaped.content[0].text), structured);

  // 6. mock_tools template over the call's arguments.
  const weather = await mcp.callTool({ name: 'weather', arguments: { city: 'Paris', days: 3 } });
  assert.deepEqual(weather.content, [{ type: 'text', text: 'sunny in Paris, 3 days' }]);

  await mcp.close();
  assert.equal(await server.stop(), 0, server.stderr());

  // The trace: each call's tool_result names what answered it, in order.
  const { events } = await traceOf(server);
  const results = events.filter((e) => e.kind === 'tool_result');
  assert.ok(results.every((e) => attr(e, 'understudy.mcp.server') === 'tools'), 'each result names its server');
  const what = (e) => [attr(e, 'gen_ai.tool.name'), attr(e, 'understudy.answer.source'), attr(e, 'understudy.rule.name') ?? '', attr(e, 'understudy.action') ?? ''];
  assert.deepEqual(results.map(what), [
    ['echo', 'rule', 'disk-full', 'error'],
    ['echo', 'rule', 'not-allowed', 'error'],
    ['clock', 'rule', 'stall', 'hang'],
    ['clock', 'mock_tools', '', ''],
    ['counter', 'rule', 'flaky', 'error'],
    ['counter', 'rule', 'flaky', 'error'],
    ['counter', 'rule', 'flaky', 'respond'],
    ['counter', 'mock_tools', '', ''],
    ['echo', 'rule', 'shaped', 'respond'],
    ['weather', 'mock_tools', '', ''],
  ]);
  assert.deepEqual(JSON.parse(attr(results[0], 'gen_ai.tool.call.result')), saved);
  assert.match(attr(results[1], 'understudy.error'), /-32602: text may not be forbidden/);
  assert.deepEqual(results.slice(4, 7).map((e) => attr(e, 'understudy.action.path')),
    ['fail_then_succeed.error', 'fail_then_succeed.error', 'fail_then_succeed.then']);
  assert.equal(events.filter((e) => e.kind === 'tool_call').length, results.length, 'a tool_call before each result');
});

test('mcp rules over stdio: mcp-proxy in replay starts nothing, and a call hung by a rule does not hold up the calls after it', { timeout: 60000 }, async (t) => {
  const { McpError, ErrorCode } = await mcpSdk();
  const dir = tempDir(t, 'understudy-node22-mcprules-stdio-');
  const marker = path.join(dir, 'tripwire.started');
  const server = await Server.start(t, dir, { args: ['--mode', 'replay', '--scenario', RULES] });
  const transport = await stdioProxyTransport({ name: 'tools', http: server.http }, [NODE22_BIN, TRIPWIRE, marker]);
  const mcp = await connectClient(t, transport);

  const hung = await rejection(mcp.callTool({ name: 'clock', arguments: {} }, undefined, { timeout: 1000 }), 'clock (hang)');
  assert.ok(hung instanceof McpError, String(hung));
  assert.equal(hung.code, ErrorCode.RequestTimeout);
  // The hang is still held by the server; the proxy must go on relaying.
  const weather = await mcp.callTool({ name: 'weather', arguments: { city: 'Oslo', days: 1 } }, undefined, { timeout: 5000 });
  assert.deepEqual(weather.content, [{ type: 'text', text: 'sunny in Oslo, 1 days' }]);
  const saved = await mcp.callTool({ name: 'echo', arguments: { text: 'save' } }, undefined, { timeout: 5000 });
  assert.equal(saved.isError, true);
  assert.equal(fs.existsSync(marker), false, `mcp-proxy started the server command in replay; proxy stderr:\n${transport.stderrText()}`);

  // The client leaves with the hung call still held by the server: the
  // proxy exits when its stdin ends ("Exit: 0 when stdin ends"). The SDK's
  // close() ends stdin, waits 2 s for the exit, then sends SIGTERM.
  const pid = transport.pid;
  const closing = Date.now();
  await mcp.close();
  const took = Date.now() - closing;
  assert.ok(took < 1500, `mcp-proxy (pid ${pid}) exited ${took} ms after its stdin ended, with a call in flight`);
});

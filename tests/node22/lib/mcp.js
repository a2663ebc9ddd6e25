// The MCP side of the suite: the official MCP TypeScript SDK's client, the
// fake tool server (fakes/mcp_server.mjs) as a child process, tripwires that
// prove nothing was started or reached on replay, and the agent loop the
// MCP tests run (model call, tool calls, model call, …), shared by the
// in-process tests and fixtures/mcp_agent.mjs.
//
// Every wait has a deadline; children still running when a test ends are
// killed by its t.after.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { BIN, cleanEnv, withTimeout } from '../../node/lib/harness.js';
import { NODE22_BIN, NODE22_DIR } from './sdk.js';

export const MCP_FAKE = path.join(NODE22_DIR, 'fakes', 'mcp_server.mjs');
export const TRIPWIRE = path.join(NODE22_DIR, 'fakes', 'tripwire.mjs');
export const MCP_AGENT = path.join(NODE22_DIR, 'fixtures', 'mcp_agent.mjs');
// The published server, run unmodified from its package's bin entry.
export const FILESYSTEM_SERVER = path.join(NODE22_DIR, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
// What fakes/mcp_server.mjs says it is in its initialize answer.
export const FAKE_INFO = { name: 'understudy-fake-mcp', version: '1.4.2' };
export const AGENT_MODEL = 'gpt-4.1-mini';
export const CLIENT_INFO = { name: 'understudy-e2e-agent', version: '0.1.0' };

const SDK_DIR = path.join(NODE22_DIR, 'node_modules', '@modelcontextprotocol', 'sdk');

// The SDK's client side: { Client, StdioClientTransport,
// StreamableHTTPClientTransport, McpError, ErrorCode, LATEST_PROTOCOL_VERSION }.
export async function mcpSdk() {
  if (!fs.existsSync(SDK_DIR)) {
    throw new Error(
      `tests/node22: npm dependency "@modelcontextprotocol/sdk" is not installed in ${path.dirname(path.dirname(SDK_DIR))}; ` +
        'run scripts/setup (it runs `npm ci` in tests/node22 from the committed lockfile)',
    );
  }
  const [{ Client }, { StdioClientTransport }, { StreamableHTTPClientTransport }, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    Client, StdioClientTransport, StreamableHTTPClientTransport,
    McpError: types.McpError, ErrorCode: types.ErrorCode, LATEST_PROTOCOL_VERSION: types.LATEST_PROTOCOL_VERSION,
  };
}

// A connected SDK Client over `transport` (initialize done), closed by
// t.after. Rejects after `timeoutMs`.
export async function connectClient(t, transport, { timeoutMs = 15000, capabilities = {} } = {}) {
  const { Client } = await mcpSdk();
  const client = new Client(CLIENT_INFO, { capabilities });
  t.after(() => client.close().catch(() => {}));
  await withTimeout(client.connect(transport, { timeout: timeoutMs }), timeoutMs + 1000, 'MCP initialize');
  return client;
}

// The argv of `understudy mcp-proxy` in front of `command`.
export function proxyArgs({ name, http, run, agent }, command) {
  const args = ['mcp-proxy', '--name', name];
  if (http) args.push('--http', http);
  if (run) args.push('--run', run);
  if (agent) args.push('--agent', agent);
  return [...args, '--', ...command];
}

// A StdioClientTransport that starts `understudy mcp-proxy … -- command`,
// as an agent's MCP config would after the one-line change. The proxy's
// stderr is kept: `transport.stderrText()`.
export async function stdioProxyTransport(options, command, { env = {} } = {}) {
  const { StdioClientTransport } = await mcpSdk();
  const transport = new StdioClientTransport({
    command: BIN, args: proxyArgs(options, command), env: cleanEnv(env), stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.setEncoding('utf8').on('data', (d) => (stderr += d));
  transport.stderrText = () => stderr;
  return transport;
}

export async function httpTransport(url, { fetch: fetchImpl, headers } = {}) {
  const { StreamableHTTPClientTransport } = await mcpSdk();
  const opts = {};
  if (fetchImpl) opts.fetch = fetchImpl;
  if (headers) opts.requestInit = { headers };
  return new StreamableHTTPClientTransport(new URL(url), opts);
}

// Reads the first line of a child's stdout within `timeoutMs`.
function firstLine(child, timeoutMs, what) {
  let buffered = '';
  const line = new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      buffered += d;
      const nl = buffered.indexOf('\n');
      if (nl >= 0) resolve(buffered.slice(0, nl));
    });
    child.once('exit', (code, signal) => reject(new Error(`${what} exited (${signal ?? code}) before its first line`)));
    child.once('error', reject);
  });
  return withTimeout(line, timeoutMs, what);
}

// fakes/mcp_server.mjs --http on 127.0.0.1:0 as a child process. Resolves
// { url, port, log() (its stderr so far), received(method) (the params of
// each message of that method it got), close() }. `json`: answer
// application/json instead of SSE.
export async function startFakeMcpHttp(t, { json = false } = {}) {
  const args = [MCP_FAKE, '--http', ...(json ? ['--json'] : [])];
  const child = spawn(NODE22_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv() });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const fake = {
    child,
    exited,
    log: () => stderr,
    received: (method) => stderr.split('\n').filter((l) => l.startsWith(`mcp-fake: ${method} `))
      .map((l) => JSON.parse(l.slice(`mcp-fake: ${method} `.length))),
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return withTimeout(exited, 5000, 'the fake MCP server to exit');
    },
  };
  t.after(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'));
  fake.url = await firstLine(child, 10000, 'fakes/mcp_server.mjs --http');
  assert.match(fake.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  fake.port = Number(new URL(fake.url).port);
  return fake;
}

// Listens on 127.0.0.1:`port` (a port a real server held until now) and
// counts every connection that arrives, closing it at once. Resolves
// { connections, close() }.
export async function tcpTripwire(t, port) {
  const wire = { connections: 0, peers: [] };
  const server = net.createServer((socket) => {
    wire.connections += 1;
    wire.peers.push(`${socket.remoteAddress}:${socket.remotePort}`);
    socket.destroy();
  });
  await withTimeout(new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  }), 5000, `the TCP tripwire to listen on 127.0.0.1:${port}`);
  wire.close = () => new Promise((resolve) => server.close(() => resolve()));
  t.after(() => wire.close());
  return wire;
}

// The text of a tool result's content blocks, as an agent hands it to the model.
export function resultText(result) {
  return (result.content ?? []).map((c) => (c.type === 'text' ? c.text : JSON.stringify(c))).join('\n');
}

// The MCP tools as Responses function tools (same names: the trace pairs a
// model's call with the MCP call by name and arguments).
export function functionTools(mcpTools, names) {
  return mcpTools.filter((tool) => names.includes(tool.name)).map((tool) => ({
    type: 'function', name: tool.name, description: tool.description ?? '', parameters: tool.inputSchema, strict: false,
  }));
}

// One user turn: the model is offered `names`, each function call it makes
// is run on the MCP server, and the outputs go back for the final answer.
// Returns what the agent saw: response ids, calls, tool results, answer.
export async function askWithTools({ openai, mcp, tools, names, prompt }) {
  const offered = functionTools(tools, names);
  const input = [{ role: 'user', content: prompt }];
  const first = await openai.responses.create({ model: AGENT_MODEL, input, tools: offered });
  const calls = first.output.filter((item) => item.type === 'function_call');
  const steps = [];
  const outputs = [];
  for (const call of calls) {
    const result = await mcp.callTool({ name: call.name, arguments: JSON.parse(call.arguments) });
    steps.push({ name: call.name, arguments: call.arguments, callId: call.call_id, result });
    outputs.push({ type: 'function_call_output', call_id: call.call_id, output: resultText(result) });
  }
  const final = await openai.responses.create({ model: AGENT_MODEL, input: [...input, ...first.output, ...outputs], tools: offered });
  return { prompt, firstId: first.id, steps, finalId: final.id, answer: final.output_text };
}

// The agent of the MCP record/replay tests, against one MCP server (the
// fake, whatever the transport) and the model: model and tool calls in
// turn, then resources, prompts and a slow tool. Returns the transcript —
// everything the SDKs handed back, as plain data.
//
// `progress`: ask `slow` for progress notifications. The SDK client runs a
// notification's handler a microtask after the read that brought it but a
// response's at once, so a response read together with the notifications
// before it drops them; over stdio, `understudy mcp-proxy` writes a
// response only once the agent has read them.
export async function runMcpAgent({ openai, mcp, progress = true }) {
  const out = { server: mcp.getServerVersion(), capabilities: mcp.getServerCapabilities(), instructions: mcp.getInstructions() };
  const { tools } = await mcp.listTools();
  out.tools = tools;
  const names = ['counter', 'clock', 'echo'];
  out.turns = [];
  out.turns.push(await askWithTools({ openai, mcp, tools, names, prompt: 'How many calls so far? Ask the counter.' }));
  out.resources = await mcp.listResources();
  out.read1 = await mcp.readResource({ uri: 'fake://notes/today' });
  out.prompts = await mcp.listPrompts();
  out.prompt = await mcp.getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
  out.turns.push(await askWithTools({ openai, mcp, tools, names, prompt: 'Use counter and clock, both at once.' }));
  out.turns.push(await askWithTools({ openai, mcp, tools, names, prompt: 'Please echo text=hello' }));
  out.counter3 = await mcp.callTool({ name: 'counter', arguments: {} });
  out.clock2 = await mcp.callTool({ name: 'clock', arguments: {} });
  out.read2 = await mcp.readResource({ uri: 'fake://notes/today' });
  out.progress = [];
  out.slow = await mcp.callTool({ name: 'slow', arguments: { steps: 3, delay_ms: 30 } }, undefined,
    progress ? { onprogress: (p) => out.progress.push(p), timeout: 15000 } : { timeout: 15000 });
  return JSON.parse(JSON.stringify(out));
}

// An agent whose only upstream is its tool server: the counter, then the
// slow tool with progress notifications. Returns what the SDK handed back.
export async function runToolsOnlyAgent({ mcp }) {
  const out = { counter: await mcp.callTool({ name: 'counter', arguments: {} }), progress: [] };
  out.slow = await mcp.callTool({ name: 'slow', arguments: { steps: 3, delay_ms: 30 } }, undefined,
    { onprogress: (p) => out.progress.push(p), timeout: 15000 });
  return JSON.parse(JSON.stringify(out));
}

// Asserts a recorded transcript of runMcpAgent is what the fake and the
// model fake produce (so a replay equal to it is a replay of real answers).
// `from`/`to`: the wall-clock bounds of the recording. `progress`: whether
// the transport carried `slow`'s progress notifications (a server answering
// application/json drops them: only an SSE answer can carry them).
export function assertAgentTranscript(tr, { from, to, progress = true }) {
  assert.deepEqual(tr.server, FAKE_INFO);
  assert.equal(tr.instructions, 'A fake tool server whose answers change on every call.');
  assert.deepEqual(tr.tools.map((x) => x.name), ['counter', 'clock', 'echo', 'slow', 'crash']);
  const [t1, t2, t3] = tr.turns;
  assert.deepEqual(t1.steps.map((s) => [s.name, s.arguments]), [['counter', '{}']]);
  assert.deepEqual(t1.steps[0].result, { content: [{ type: 'text', text: '1' }], structuredContent: { n: 1 } });
  assert.equal(t1.answer, 'Here is what the tools said: 1.');
  assert.match(t1.firstId, /^resp_/);
  assert.notEqual(t1.finalId, t1.firstId);
  assert.deepEqual(t2.steps.map((s) => s.name), ['counter', 'clock']);
  assert.deepEqual(t2.steps[0].result.structuredContent, { n: 2 });
  const clock1 = t2.steps[1].result.structuredContent;
  assert.ok(clock1.now >= from && clock1.now <= to, `clock ${clock1.now} within the recording [${from}, ${to}]`);
  assert.match(clock1.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(t2.answer, `Here is what the tools said: 2; ${clock1.now} ${clock1.uuid}.`);
  assert.deepEqual(t3.steps.map((s) => [s.name, JSON.parse(s.arguments)]), [['echo', { text: 'hello', times: 1 }]]);
  assert.deepEqual(t3.steps[0].result.structuredContent, { text: 'hello', times: 1, call: 1 });
  assert.deepEqual(tr.counter3.structuredContent, { n: 3 });
  assert.notEqual(tr.clock2.structuredContent.uuid, clock1.uuid, 'the clock answers afresh');
  assert.deepEqual(tr.resources.resources.map((r) => r.uri), ['fake://notes/today']);
  assert.match(tr.read1.contents[0].text, /^note read 1 [0-9a-f-]{36}$/);
  assert.match(tr.read2.contents[0].text, /^note read 2 [0-9a-f-]{36}$/);
  assert.deepEqual(tr.prompts.prompts.map((p) => p.name), ['greet']);
  assert.match(tr.prompt.messages[0].content.text, /^Say hello to Ada \(greeting 1, [0-9a-f-]{36}\)\.$/);
  if (progress) {
    assert.deepEqual(tr.progress.map((p) => [p.progress, p.total]), [[1, 3], [2, 3], [3, 3]]);
    assert.match(tr.progress[0].message, /^step 1 of 3 \([0-9a-f]{8}\)$/);
  } else {
    assert.deepEqual(tr.progress, []);
  }
  assert.match(tr.slow.content[0].text, /^done in 3 steps, run 1, [0-9a-f-]{36}$/);
}

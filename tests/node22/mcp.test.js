// MCP tool servers recorded and replayed in the same session as the model,
// driven by the official MCP TypeScript SDK's client and the openai SDK:
//
// - stdio: a new user's agent (fixtures/mcp_agent.mjs) whose MCP config
//   puts `understudy mcp-proxy --name counter --` in front of the server
//   command, under `understudy record|replay -- CMD`; on replay the command
//   is a tripwire that must never start;
// - Streamable HTTP: `--mcp-upstream counter=URL`; on replay the fake's
//   port is held by a TCP tripwire that must see no connection;
// - the published @modelcontextprotocol/server-filesystem, unmodified,
//   replayed with its directory deleted.
// Every tool answer changes on every call (counters, clocks, UUIDs), so an
// identical transcript proves a replay.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { BIN, Server, bytesField, exportSession, requireBinary, run, tempDir } from '../node/lib/harness.js';
import { startFakeOpenAI } from './fakes/openai.js';
import { recordThenReplay } from './lib/journey.js';
import {
  FILESYSTEM_SERVER, MCP_AGENT, MCP_FAKE, TRIPWIRE, assertAgentTranscript, connectClient, httpTransport,
  runMcpAgent, startFakeMcpHttp, stdioProxyTransport, tcpTripwire,
} from './lib/mcp.js';
import { API_KEY, NODE22_BIN, openaiClient } from './lib/sdk.js';

requireBinary();

// What the agent's run records, in order: the MCP exchanges (operation and,
// for tools/call, the tool) and the model's (`model`). runMcpAgent's order.
const AGENT_EXCHANGES = [
  'mcp:initialize', 'mcp:tools/list',
  'model', 'mcp:tools/call counter', 'model',
  'mcp:resources/list', 'mcp:resources/read', 'mcp:prompts/list', 'mcp:prompts/get',
  'model', 'mcp:tools/call counter', 'mcp:tools/call clock', 'model',
  'model', 'mcp:tools/call echo', 'model',
  'mcp:tools/call counter', 'mcp:tools/call clock', 'mcp:resources/read', 'mcp:tools/call slow',
];

// An exported exchange as AGENT_EXCHANGES names it.
function exchangeName(x) {
  const op = x.request?.operation ?? '';
  if (!op.startsWith('mcp:')) return 'model';
  if (op === 'mcp:tools/call') return `${op} ${JSON.parse(x.request.extra).name}`;
  return op;
}

// The MCP config of fixtures/mcp_agent.mjs: the server command behind
// `understudy mcp-proxy`, which finds the wrapper's server and run in the
// environment the config hands it (`passEnv`), or else, as a user's plain
// config leaves it, in the agent's own environment: the SDK starts stdio
// servers with only HOME, LOGNAME, PATH, SHELL, TERM and USER.
function proxyConfig(file, command, { passEnv = true } = {}) {
  const server = { command: BIN, args: ['mcp-proxy', '--name', 'counter', '--', ...command] };
  if (passEnv) server.env = { UNDERSTUDY_HTTP: '${UNDERSTUDY_HTTP}', UNDERSTUDY_RUN: '${UNDERSTUDY_RUN}' };
  fs.writeFileSync(file, JSON.stringify({ mcpServers: { counter: server } }, null, 2));
  return file;
}

test('mcp stdio: an agent\'s model and tool calls through `understudy mcp-proxy` record under `record --`, and replay with the server command a tripwire that never starts', { timeout: 90000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-mcp-');
  const db = path.join(dir, 'mcp.db');
  const marker = path.join(dir, 'tripwire.started');
  const openai = await startFakeOpenAI();
  t.after(() => openai.close());
  const recordConfig = proxyConfig(path.join(dir, 'record.mcp.json'), [NODE22_BIN, MCP_FAKE, '--stdio']);
  const replayConfig = proxyConfig(path.join(dir, 'replay.mcp.json'), [NODE22_BIN, TRIPWIRE, marker],
    { passEnv: false });

  const from = Date.now();
  const rec = await run(['record', '--db', db, '--session', 'mcp-stdio', '--upstream', `openai=${openai.url}`,
    '--', NODE22_BIN, MCP_AGENT, recordConfig], { env: { OPENAI_API_KEY: API_KEY }, timeoutMs: 60000 });
  const to = Date.now();
  assert.equal(rec.code, 0, `record: ${rec.stderr}`);
  const recorded = JSON.parse(rec.stdout);
  assertAgentTranscript(recorded, { from, to });
  assert.match(recorded.slow.content[0].text, /^done in 3 steps, run 1, /);
  assert.equal(openai.requests.length, 6, 'three turns of two model calls');
  assert.match(rec.stderr, /mcp-fake: stdio ready/, 'the proxy started the real server (its stderr is inherited)');
  await openai.close();

  // The session: MCP exchanges beside the model's, in the order they happened.
  const session = await exportSession(db, 'mcp-stdio');
  assert.deepEqual(session.exchanges.map(exchangeName), AGENT_EXCHANGES);
  const mcpExchanges = session.exchanges.filter((x) => x.request.operation?.startsWith('mcp:'));
  assert.ok(mcpExchanges.every((x) => x.request.model === 'counter'), 'each MCP exchange names its server');
  const firstCounter = mcpExchanges.find((x) => x.request.operation === 'mcp:tools/call');
  assert.deepEqual(JSON.parse(firstCounter.request.extra), { name: 'counter', arguments: {} });
  assert.equal(firstCounter.response.message.role, 'tool');
  assert.deepEqual(JSON.parse(firstCounter.response.message.content), { content: [{ type: 'text', text: '1' }], structuredContent: { n: 1 } });

  const rep = await run(['replay', '--db', db, '--session', 'mcp-stdio', '--mode', 'none',
    '--', NODE22_BIN, MCP_AGENT, replayConfig], { env: { OPENAI_API_KEY: 'unused' }, timeoutMs: 60000 });
  assert.equal(rep.code, 0, `replay: ${rep.stderr}`);
  assert.equal(fs.existsSync(marker), false, `the tripwire was started: ${fs.existsSync(marker) && fs.readFileSync(marker, 'utf8')}`);
  assert.doesNotMatch(rep.stderr, /tripwire: started/);
  assert.deepEqual(JSON.parse(rep.stdout), recorded, 'the replayed transcript is the recorded one');
  assert.equal(rep.stdout, rec.stdout, 'byte for byte');
  assert.match(rep.stderr, new RegExp(`served ${AGENT_EXCHANGES.length}, recorded 0, misses 0`));
});

test('mcp stdio: an agent whose only upstream is a stdio tool server records with no --upstream, the summary names each MCP exchange, and 20 replays in a row each deliver every progress notification', { timeout: 240000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-mcponly-');
  const db = path.join(dir, 'tools.db');
  const marker = path.join(dir, 'tripwire.started');
  const recordConfig = proxyConfig(path.join(dir, 'record.mcp.json'), [NODE22_BIN, MCP_FAKE, '--stdio']);
  const replayConfig = proxyConfig(path.join(dir, 'replay.mcp.json'), [NODE22_BIN, TRIPWIRE, marker],
    { passEnv: false });

  const rec = await run(['record', '--db', db, '--session', 'tools', '--', NODE22_BIN, MCP_AGENT, recordConfig, 'tools'],
    { timeoutMs: 60000 });
  assert.equal(rec.code, 0, `record with no --upstream: ${rec.stderr}`);
  const recorded = JSON.parse(rec.stdout);
  assert.deepEqual(recorded.counter.structuredContent, { n: 1 });
  assert.deepEqual(recorded.progress.map((p) => [p.progress, p.total]), [[1, 3], [2, 3], [3, 3]]);
  assert.match(recorded.slow.content[0].text, /^done in 3 steps, run 1, /);
  assert.match(rec.stderr, /served 3, recorded 3, misses 0/);
  for (const line of ['recorded #1 mcp counter initialize', 'recorded #2 mcp counter tools/call counter',
    'recorded #3 mcp counter tools/call slow']) {
    assert.ok(rec.stderr.split('\n').some((l) => l.trim() === line), `the summary says "${line}":\n${rec.stderr}`);
  }

  // At full speed a replay has the notifications and the response at once;
  // each replay must still hand the client every notification, before the
  // result.
  for (let i = 1; i <= 20; i += 1) {
    const rep = await run(['replay', '--db', db, '--session', 'tools', '--mode', 'none',
      '--', NODE22_BIN, MCP_AGENT, replayConfig, 'tools'], { timeoutMs: 60000 });
    assert.equal(rep.code, 0, `replay ${i}: ${rep.stderr}`);
    assert.deepEqual(JSON.parse(rep.stdout), recorded, `replay ${i}: the recorded transcript, progress included`);
    assert.match(rep.stderr, /served 3, recorded 0, misses 0/, `replay ${i}`);
  }
  assert.equal(fs.existsSync(marker), false, 'the tool server never started on replay');
});

test('mcp Streamable HTTP: --mcp-upstream records model and tool calls (SSE progress included) and replays them with the server\'s port held by a tripwire', { timeout: 90000 }, async (t) => {
  const mcpFake = await startFakeMcpHttp(t);
  let wire = null;
  const r = await recordThenReplay(t, {
    upstream: 'openai', startFake: () => startFakeOpenAI(), session: 'mcp-http', args: ['--mcp-upstream', `counter=${mcpFake.url}`],
  }, async ({ http, phase, server, fake }) => {
    const base = `${http}/run/${server.run}`;
    const seen = [];
    const spy = async (url, init) => {
      const res = await fetch(url, init);
      seen.push({ method: init?.method ?? 'GET', status: res.status, type: res.headers.get('content-type'), session: res.headers.get('mcp-session-id') });
      return res;
    };
    const transport = await httpTransport(`${base}/mcp/counter`, { fetch: spy });
    const mcp = await connectClient(t, transport);
    const openai = await openaiClient(http, { prefix: `/run/${server.run}` });
    const from = Date.now();
    const transcript = await runMcpAgent({ openai, mcp, progress: true });
    const to = Date.now();
    const sessionId = transport.sessionId;
    await transport.terminateSession();
    await mcp.close();

    // understudy's own session id, not the fake's, on every answer after initialize.
    assert.match(sessionId ?? '', /\S/, 'initialize answered with an Mcp-Session-Id');
    assert.equal(seen[0].method, 'POST');
    assert.equal(seen[0].status, 200);
    assert.equal(seen[0].session, sessionId);
    assert.deepEqual(seen.filter((s) => s.method === 'GET').map((s) => s.status), [405], 'the standalone GET stream is refused');
    assert.deepEqual(seen.filter((s) => s.method === 'DELETE').map((s) => s.status), [200]);
    const callTypes = seen.filter((s) => s.method === 'POST' && s.status === 200).map((s) => s.type.split(';')[0]);
    assert.ok(callTypes.every((ty) => ty === 'text/event-stream'), `SSE answers, as the real server sent: ${callTypes}`);
    if (phase === 'record') {
      assertAgentTranscript(transcript, { from, to });
      assert.equal(fake.requests.length, 6);
      const fakeSessions = [...mcpFake.log().matchAll(/^mcp-fake: session (\S+)$/gm)].map((m) => m[1]);
      assert.equal(fakeSessions.length, 1, mcpFake.log());
      assert.notEqual(sessionId, fakeSessions[0], 'understudy mints its own session id');
      assert.equal(mcpFake.received('tools/call').length, 7);
      const slow = mcpFake.received('tools/call').at(-1);
      assert.deepEqual({ name: slow.name, arguments: slow.arguments }, { name: 'slow', arguments: { steps: 3, delay_ms: 30 } });
      assert.equal(typeof slow._meta?.progressToken, 'number', 'the progress token reaches the server');
      assert.equal(await mcpFake.close(), 0);
      // From here on, anything that reaches the server's port is a failure.
      wire = await tcpTripwire(t, mcpFake.port);
    }
    return transcript;
  });
  assert.deepEqual(r.replayed, r.recorded, 'the replayed transcript (progress notifications included) is the recorded one');
  assert.equal(wire.connections, 0, `the MCP server's port was connected to on replay from ${wire.peers}`);
  const session = await exportSession(r.db, 'mcp-http');
  assert.deepEqual(session.exchanges.map(exchangeName), AGENT_EXCHANGES);
  // The SSE answer of `slow` is stored event by event, with its timing.
  const slow = session.exchanges.at(-1).native;
  assert.equal(slow.provider, 'mcp');
  assert.equal(slow.path, '/mcp/counter');
  assert.equal(slow.content_type, 'text/event-stream');
  const events = slow.chunks.map((c) => JSON.parse(bytesField(c.data)));
  assert.deepEqual(events.map((e) => e.method ?? 'response'), ['notifications/progress', 'notifications/progress', 'notifications/progress', 'response']);
  assert.deepEqual(events.slice(0, 3).map((e) => e.params.message), r.recorded.progress.map((p) => p.message));
  assert.deepEqual(events[3].result, r.recorded.slow);
  const offsets = slow.chunks.map((c) => Number(c.offset_micros));
  assert.ok(offsets.every((o, i) => i === 0 || o > offsets[i - 1]), `increasing offsets: ${offsets}`);
  assert.ok(offsets[2] - offsets[0] >= 2 * 25000, `the ~30 ms between progress steps is kept: ${offsets}`);
});

test('mcp: the published @modelcontextprotocol/server-filesystem, unmodified, behind mcp-proxy, replays with its directory deleted', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-mcpfs-');
  const root = path.join(dir, 'project');
  fs.mkdirSync(path.join(root, 'src'), { recursive: true });
  fs.writeFileSync(path.join(root, 'README.md'), '# demo\nA project the agent reads.\n');
  fs.writeFileSync(path.join(root, 'src', 'main.js'), 'console.log("hi");\n');
  const command = [NODE22_BIN, FILESYSTEM_SERVER, root];

  const session = async (server) => {
    const transport = await stdioProxyTransport({ name: 'fs', http: server.http }, command);
    const mcp = await connectClient(t, transport);
    const out = { server: mcp.getServerVersion(), tools: (await mcp.listTools()).tools };
    const call = (name, args) => mcp.callTool({ name, arguments: args });
    out.list = await call('list_directory', { path: root });
    out.readme = await call('read_text_file', { path: path.join(root, 'README.md') });
    out.head = await call('read_text_file', { path: path.join(root, 'src', 'main.js'), head: 1 });
    out.info = await call('get_file_info', { path: path.join(root, 'README.md') });
    out.write = await call('write_file', { path: path.join(root, 'notes.txt'), content: 'written by the agent\n' });
    out.tree = await call('directory_tree', { path: root });
    out.search = await call('search_files', { path: root, pattern: '**/*.js' });
    out.denied = await call('read_text_file', { path: '/etc/hostname' });
    await mcp.close();
    return { out: JSON.parse(JSON.stringify(out)), proxyStderr: transport.stderrText() };
  };

  // A record run needs a model upstream even when only tools are called.
  const openai = await startFakeOpenAI();
  t.after(() => openai.close());
  const rec = await Server.start(t, dir, { name: 'record', args: ['--mode', 'record', '--session', 'fs', '--upstream', `openai=${openai.url}`] });
  const first = await session(rec);
  const recorded = first.out;
  assert.equal(await rec.stop(), 0, rec.stderr());
  assert.match(first.proxyStderr, /Secure MCP Filesystem Server running on stdio/, 'record started the real server');
  const names = recorded.tools.map((x) => x.name);
  for (const name of ['list_directory', 'read_text_file', 'get_file_info', 'write_file', 'directory_tree', 'search_files']) {
    assert.ok(names.includes(name), `server-filesystem 2026.8.31 lists ${name}: ${names}`);
  }
  assert.deepEqual(recorded.server, { name: 'secure-filesystem-server', version: '0.2.0' });
  assert.deepEqual(recorded.list.content, [{ type: 'text', text: '[FILE] README.md\n[DIR] src' }]);
  assert.equal(recorded.readme.content[0].text, '# demo\nA project the agent reads.\n');
  assert.equal(recorded.head.content[0].text, 'console.log("hi");');
  assert.match(recorded.info.content[0].text, /^size: 34\ncreated: /);
  assert.equal(fs.readFileSync(path.join(root, 'notes.txt'), 'utf8'), 'written by the agent\n', 'record ran the real write');
  assert.equal(recorded.write.content[0].text, `Successfully wrote to ${path.join(root, 'notes.txt')}`);
  assert.match(recorded.tree.content[0].text, /"name": "notes\.txt"/, 'the tree after the write');
  assert.equal(recorded.search.content[0].text, path.join(root, 'src', 'main.js'));
  assert.equal(recorded.denied.isError, true);
  assert.match(recorded.denied.content[0].text, /^Access denied - path outside allowed directories/);

  fs.rmSync(root, { recursive: true, force: true });
  const rep = await Server.start(t, dir, { name: 'replay', args: ['--mode', 'none', '--session', 'fs'] });
  const replayed = await session(rep);
  assert.equal(await rep.stop(), 0, rep.stderr());
  assert.deepEqual(replayed.out, recorded, 'the same answers with the directory gone');
  assert.equal(fs.existsSync(root), false, 'replaying write_file wrote nothing');
  assert.doesNotMatch(replayed.proxyStderr, /Secure MCP Filesystem Server/, 'the server was not started on replay');
});

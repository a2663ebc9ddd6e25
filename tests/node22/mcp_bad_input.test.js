// Hostile and broken input on the MCP routes: raw HTTP that breaks the
// protocol (malformed JSON, a batch, an unknown method, an unknown session,
// GET, an oversized body, a client that hangs up mid-SSE), a garbage line
// on `understudy mcp-proxy`'s stdin, and a tool server that crashes
// mid-call while recording. Each gets a clear answer, nothing partial is
// stored, and the server (or the proxy) keeps serving.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { BIN, Server, cleanEnv, exportSession, requireBinary, run, tempDir, withTimeout } from '../node/lib/harness.js';
import { hangUpMidStream, postBytes, rawRequest } from '../node/lib/raw_http.js';
import { startFakeOpenAI } from './fakes/openai.js';
import { post, traceOf } from './lib/journey.js';
import {
  CLIENT_INFO, MCP_FAKE, TRIPWIRE, connectClient, httpTransport, mcpSdk, proxyArgs, startFakeMcpHttp, stdioProxyTransport,
} from './lib/mcp.js';
import { FIXTURES, NODE22_BIN } from './lib/sdk.js';

requireBinary();

const ACCEPT = { accept: 'application/json, text/event-stream' };

// The headers of a request inside an SDK client's session.
function sessionHeaders(transport) {
  return { ...ACCEPT, 'mcp-session-id': transport.sessionId, 'mcp-protocol-version': transport.protocolVersion };
}

test('mcp bad input over HTTP: malformed JSON, a batch, an unknown method (a miss in replay), an unknown session, GET, notifications, an oversized body; the session goes on', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-mcpbad-');
  const mcpFake = await startFakeMcpHttp(t);
  const upstream = ['--mcp-upstream', `counter=${mcpFake.url}`];
  const rec = await Server.start(t, dir, { name: 'record', args: ['--mode', 'record', '--session', 'bad', ...upstream] });
  let mcp = await connectClient(t, await httpTransport(`${rec.http}/mcp/counter`));
  const counted = await mcp.callTool({ name: 'counter', arguments: {} });
  await mcp.close();
  assert.equal(await rec.stop(), 0, rec.stderr());
  await mcpFake.close();
  const recorded = (await exportSession(rec.db, 'bad')).exchanges.length;

  const rep = await Server.start(t, dir, { name: 'replay', args: ['--mode', 'none', '--session', 'bad', ...upstream] });
  const url = `${rep.http}/mcp/counter`;
  const transport = await httpTransport(url);
  mcp = await connectClient(t, transport);
  const headers = sessionHeaders(transport);

  // Malformed JSON: 400, JSON-RPC parse error naming where.
  const malformed = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{';
  const parse = await post(url, malformed, headers);
  assert.equal(parse.status, 400, parse.text);
  assert.equal(parse.json?.jsonrpc, '2.0', parse.text);
  assert.equal(parse.json.id, null);
  assert.equal(parse.json.error.code, -32700);
  const at = Number(/at byte (\d+)/.exec(parse.json.error.message)?.[1]);
  assert.ok(Math.abs(at - malformed.length) <= 1, `names the offset where the text ends (${malformed.length}): ${parse.json.error.message}`);

  // A batch: 400, -32600.
  const batch = await post(url, JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 2, method: 'ping' }]), headers);
  assert.equal(batch.status, 400, batch.text);
  assert.equal(batch.json?.error?.code, -32600, batch.text);
  assert.match(batch.json.error.message, /batch/i);

  // Not JSON-RPC at all: a JSON value that is no message.
  const notRpc = await post(url, '{"hello":"world"}', headers);
  assert.equal(notRpc.status, 400, notRpc.text);
  assert.equal(notRpc.json?.error?.code, -32600, notRpc.text);

  // An unknown method, in strict replay: a miss, as a JSON-RPC error for that id.
  const unknown = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 'u-7', method: 'tools/frobnicate', params: { x: 1 } }), headers);
  assert.equal(unknown.status, 200, unknown.text);
  assert.match(unknown.headers.get('content-type'), /^application\/json/);
  assert.equal(unknown.json.id, 'u-7');
  assert.equal(unknown.json.error.code, -32001);
  assert.equal(unknown.json.error.data?.understudy, 'no_recording');
  assert.match(unknown.json.error.message, /no recorded exchange matches/);

  // ping is answered here; a notification is accepted with 202 and no body.
  const ping = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 41, method: 'ping' }), headers);
  assert.equal(ping.status, 200, ping.text);
  assert.deepEqual(ping.json, { jsonrpc: '2.0', id: 41, result: {} });
  const note = await post(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }), headers);
  assert.equal(note.status, 202, note.text);
  assert.equal(note.text, '');

  // A session id understudy never issued: 404.
  const stranger = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), { ...headers, 'mcp-session-id': 'not-a-session-of-ours' });
  assert.equal(stranger.status, 404, stranger.text);

  // GET (the server-initiated stream): 405 naming what is allowed.
  const get = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': transport.sessionId }, signal: AbortSignal.timeout(5000) });
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST, DELETE');
  await get.body?.cancel();

  // Over the 16 MiB default --max-body-bytes: 413, before anything is decided.
  const huge = JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x'.repeat(16 * 1024 * 1024) } } });
  const tooLarge = await rawRequest(rep.http, postBytes(url, huge, { 'Content-Type': 'application/json', Accept: ACCEPT.accept, 'Mcp-Session-Id': transport.sessionId }), { timeoutMs: 30000 });
  assert.equal(tooLarge.status, 413, tooLarge.body.toString().slice(0, 300));

  // The session goes on: the recorded call still answers.
  assert.deepEqual(await mcp.callTool({ name: 'counter', arguments: {} }), counted);
  await mcp.close();
  assert.equal(await rep.stop(), 0, rep.stderr());
  const { events } = await traceOf(rep);
  assert.equal(events.filter((e) => e.kind === 'miss').length, 1, 'the unknown method is the one miss');
  assert.equal((await exportSession(rec.db, 'bad')).exchanges.length, recorded, 'replay stored nothing');
});

test('mcp: an unknown run is a 404 with a JSON-RPC error meaning the client\'s mistake, over HTTP and through mcp-proxy', { timeout: 60000 }, async (t) => {
  const { McpError } = await mcpSdk();
  const dir = tempDir(t, 'understudy-node22-mcprun-');
  const marker = path.join(dir, 'tripwire.started');
  const server = await Server.start(t, dir, { args: ['--mode', 'replay', '--scenario', path.join(FIXTURES, 'mcp_rules.yaml')] });
  const initialize = JSON.stringify({ jsonrpc: '2.0', id: 'i-1', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: CLIENT_INFO } });

  // The model routes answer 404 for an unknown run; so do the MCP routes.
  const model = await post(`${server.http}/run/no-such-run/v1/chat/completions`, JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }));
  assert.equal(model.status, 404, model.text);
  const unknown = await post(`${server.http}/run/no-such-run/mcp/tools`, initialize, ACCEPT);
  assert.equal(unknown.status, 404, unknown.text);
  assert.match(unknown.headers.get('content-type'), /^application\/json/);
  assert.equal(unknown.json?.jsonrpc, '2.0', unknown.text);
  assert.equal(unknown.json.id, 'i-1');
  assert.equal(unknown.json.error.code, -32600, 'Invalid Request: the client named what does not exist');
  assert.match(unknown.json.error.message, /unknown run "no-such-run"/);
  assert.equal(unknown.json.error.data?.understudy, 'NOT_FOUND');

  // Through the proxy the SDK client gets that error, not an internal one.
  const transport = await stdioProxyTransport({ name: 'tools', http: server.http, run: 'no-such-run' }, [NODE22_BIN, TRIPWIRE, marker]);
  const { Client } = await mcpSdk();
  const client = new Client(CLIENT_INFO);
  t.after(() => client.close().catch(() => {}));
  const refused = await client.connect(transport, { timeout: 15000 }).then(
    () => assert.fail('initialize succeeded on an unknown run'), (e) => e);
  assert.ok(refused instanceof McpError, String(refused));
  assert.equal(refused.code, -32600, refused.message);
  assert.match(refused.message, /unknown run "no-such-run"/);
  assert.equal(fs.existsSync(marker), false, 'nothing started');
  assert.equal(await server.stop(), 0, server.stderr());
});

test('mcp: a client that hangs up mid-SSE while recording leaves the server serving the same session', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-mcphangup-');
  const mcpFake = await startFakeMcpHttp(t);
  const server = await Server.start(t, dir, { args: ['--mode', 'record', '--session', 'hangup', '--mcp-upstream', `counter=${mcpFake.url}`] });
  const url = `${server.http}/mcp/counter`;
  const transport = await httpTransport(url);
  const mcp = await connectClient(t, transport);

  const call = JSON.stringify({
    jsonrpc: '2.0', id: 900, method: 'tools/call',
    params: { _meta: { progressToken: 'hangup-1' }, name: 'slow', arguments: { steps: 6, delay_ms: 250 } },
  });
  const got = await hangUpMidStream(server.http, postBytes(url, call, {
    'Content-Type': 'application/json', Accept: ACCEPT.accept,
    'Mcp-Session-Id': transport.sessionId, 'Mcp-Protocol-Version': transport.protocolVersion,
  }), (text) => text.includes('notifications/progress'));
  assert.match(got, /^event: message\ndata: \{.*"progressToken":"hangup-1"/m, 'the first progress event arrived before the hang-up');

  // Still serving, on the same session, while the abandoned call finishes upstream.
  const progress = [];
  const slow = await mcp.callTool({ name: 'slow', arguments: { steps: 2, delay_ms: 10 } }, undefined, { onprogress: (p) => progress.push(p.progress), timeout: 15000 });
  assert.match(slow.content[0].text, /^done in 2 steps, run 2, /);
  assert.deepEqual(progress, [1, 2]);
  assert.deepEqual((await mcp.callTool({ name: 'counter', arguments: {} })).structuredContent, { n: 1 });
  await mcp.close();
  assert.equal(await server.stop(), 0, server.stderr());
});

// Reads `child`'s stdout line by line: next(timeoutMs) resolves the next line.
function lineReader(child) {
  const lines = [];
  const waiters = [];
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (d) => {
    buffered += d;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (waiters.length > 0) waiters.shift()(line);
      else lines.push(line);
    }
  });
  return {
    next: (timeoutMs = 10000) => withTimeout(
      lines.length > 0 ? Promise.resolve(lines.shift()) : new Promise((resolve) => waiters.push(resolve)),
      timeoutMs, 'a line from mcp-proxy'),
  };
}

test('mcp-proxy: a garbage line on stdin gets a JSON-RPC parse error line and the session goes on', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-mcpgarbage-');
  const marker = path.join(dir, 'tripwire.started');
  const server = await Server.start(t, dir, { args: ['--mode', 'replay', '--scenario', path.join(FIXTURES, 'mcp_rules.yaml')] });
  const proxy = spawn(BIN, proxyArgs({ name: 'tools', http: server.http }, [NODE22_BIN, TRIPWIRE, marker]),
    { stdio: ['pipe', 'pipe', 'pipe'], env: cleanEnv() });
  let stderr = '';
  proxy.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  t.after(() => proxy.exitCode === null && proxy.kill('SIGKILL'));
  const out = lineReader(proxy);
  const send = (message) => proxy.stdin.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);

  const { LATEST_PROTOCOL_VERSION } = await mcpSdk();
  send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: CLIENT_INFO } });
  const init = JSON.parse(await out.next());
  assert.equal(init.id, 0, JSON.stringify(init));
  assert.ok(init.result?.capabilities?.tools, JSON.stringify(init));
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });

  send('this is not JSON {');
  const garbage = JSON.parse(await out.next());
  assert.equal(garbage.jsonrpc, '2.0');
  assert.equal(garbage.id, null);
  assert.equal(garbage.error?.code, -32700, JSON.stringify(garbage));

  send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'weather', arguments: { city: 'Lima', days: 2 } } });
  const answer = JSON.parse(await out.next());
  assert.deepEqual(answer, { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'sunny in Lima, 2 days' }] } });
  send({ jsonrpc: '2.0', id: 2, method: 'ping' });
  assert.deepEqual(JSON.parse(await out.next()), { jsonrpc: '2.0', id: 2, result: {} });

  proxy.stdin.end();
  const code = await withTimeout(new Promise((resolve) => proxy.once('exit', (c, s) => resolve(s ?? c))), 10000, 'mcp-proxy to exit when stdin closes');
  assert.equal(code, 0, stderr);
  assert.equal(fs.existsSync(marker), false, 'the proxy started nothing in replay');
});

test('mcp: a tool server that crashes mid-call while recording gives the agent a clear error and stores nothing of that call (stdio and HTTP)', { timeout: 60000 }, async (t) => {
  const { McpError } = await mcpSdk();
  const dir = tempDir(t, 'understudy-node22-mcpcrash-');

  // stdio, through mcp-proxy. (A record run needs a model upstream even
  // when only stdio tools are called.)
  const openai = await startFakeOpenAI();
  t.after(() => openai.close());
  const stdioServer = await Server.start(t, dir, { name: 'stdio', db: 'stdio.db', args: ['--mode', 'record', '--session', 'midcall', '--upstream', `openai=${openai.url}`] });
  const transport = await stdioProxyTransport({ name: 'counter', http: stdioServer.http }, [NODE22_BIN, MCP_FAKE, '--stdio']);
  let mcp = await connectClient(t, transport);
  assert.deepEqual((await mcp.callTool({ name: 'counter', arguments: {} })).structuredContent, { n: 1 });
  let crashed = await mcp.callTool({ name: 'crash', arguments: {} }, undefined, { timeout: 15000 }).then(
    (r) => assert.fail(`expected an error, got ${JSON.stringify(r)}`), (e) => e);
  assert.ok(crashed instanceof McpError, String(crashed));
  assert.notEqual(crashed.code, -32001, `a crash is no request timeout: ${crashed.message}`);
  assert.match(crashed.message, /counter/, `the error names the server: ${crashed.message}`);
  assert.match(crashed.message, /exit|crash|closed|died|terminated/i, `the error says what happened: ${crashed.message}`);
  t.diagnostic(`stdio crash: ${crashed.code} ${crashed.message}`);
  await mcp.close();
  assert.equal(await stdioServer.stop(), 0, stdioServer.stderr());
  const stdioSession = await exportSession(stdioServer.db, 'midcall');
  assert.deepEqual(stdioSession.exchanges.map((x) => [x.request.operation, x.request.extra ? JSON.parse(x.request.extra).name ?? '' : '']),
    [['mcp:initialize', ''], ['mcp:tools/call', 'counter']]);
  const shown = await run(['sessions', 'show', 'midcall', '--db', stdioServer.db]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.doesNotMatch(shown.stdout, /crash/, shown.stdout);

  // Streamable HTTP, through --mcp-upstream.
  const mcpFake = await startFakeMcpHttp(t);
  const httpServer = await Server.start(t, dir, { name: 'http', db: 'http.db', args: ['--mode', 'record', '--session', 'midcall', '--mcp-upstream', `counter=${mcpFake.url}`] });
  mcp = await connectClient(t, await httpTransport(`${httpServer.http}/mcp/counter`));
  assert.deepEqual((await mcp.callTool({ name: 'counter', arguments: {} })).structuredContent, { n: 1 });
  crashed = await mcp.callTool({ name: 'crash', arguments: {} }, undefined, { timeout: 15000 }).then(
    (r) => assert.fail(`expected an error, got ${JSON.stringify(r)}`), (e) => e);
  assert.ok(crashed instanceof McpError, String(crashed));
  assert.notEqual(crashed.code, -32001, `a crash is no request timeout: ${crashed.message}`);
  assert.ok(crashed.message.includes('counter') || crashed.message.includes(mcpFake.url), `the error names the server or its URL: ${crashed.message}`);
  assert.equal(await withTimeout(mcpFake.exited, 5000, 'the fake to crash'), 3);
  t.diagnostic(`HTTP crash: ${crashed.code} ${crashed.message}`);
  await mcp.close();
  assert.equal(await httpServer.stop(), 0, httpServer.stderr());
  const httpSession = await exportSession(httpServer.db, 'midcall');
  assert.deepEqual(httpSession.exchanges.map((x) => [x.request.operation, x.request.extra ? JSON.parse(x.request.extra).name ?? '' : '']),
    [['mcp:initialize', ''], ['mcp:tools/call', 'counter']]);
});

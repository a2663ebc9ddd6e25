// A fake MCP tool server built with the official SDK (McpServer), for the
// MCP record/replay tests. Every answer changes from call to call, so an
// identical answer proves a replay:
//
//   node mcp_server.mjs --stdio          newline-delimited JSON-RPC on stdin/stdout
//   node mcp_server.mjs --http [--json]  Streamable HTTP at http://127.0.0.1:PORT/mcp,
//                                        the URL printed as the first stdout line;
//                                        a session id per initialize; answers are
//                                        SSE unless --json (application/json)
//
// Tools:
//   counter        the n-th call of this process answers n (text "n", structured {n})
//   clock          Date.now() and a fresh random UUID
//   echo {text, times?}  its arguments back, as text (JSON) and structuredContent,
//                  with the call's number
//   slow {steps?, delay_ms?}  when the caller asked for progress (a progressToken),
//                  one notifications/progress per step, `delay_ms` apart; then a
//                  result naming the step count and a fresh UUID
//   crash          exits the process (code 3) while the call is in flight
// Resource: fake://notes/today (text with the read's number and a UUID).
// Prompt:   greet {name}       (a user message with the call's number and a UUID).
//
// Every JSON-RPC message received is logged on stderr as
// `mcp-fake: <method or "response"> <params JSON>` (stdout is the protocol
// in --stdio mode), so a test can count what reached the real server.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const FAKE_NAME = 'understudy-fake-mcp';
const FAKE_VERSION = '1.4.2';

// Process-wide, shared by every session: the n-th call anywhere answers n.
const calls = { counter: 0, echo: 0, slow: 0, resource: 0, prompt: 0 };

function log(line) {
  process.stderr.write(`mcp-fake: ${line}\n`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One McpServer per session (the SDK binds a server to one transport).
function buildServer() {
  const server = new McpServer(
    { name: FAKE_NAME, version: FAKE_VERSION },
    { capabilities: { tools: {}, resources: {}, prompts: {} }, instructions: 'A fake tool server whose answers change on every call.' },
  );

  server.registerTool('counter', { description: 'Counts its calls: the n-th call answers n.' }, async () => {
    calls.counter += 1;
    return { content: [{ type: 'text', text: String(calls.counter) }], structuredContent: { n: calls.counter } };
  });

  server.registerTool('clock', { description: 'The time now (ms since the epoch) and a fresh UUID.' }, async () => {
    const now = Date.now();
    const uuid = randomUUID();
    return { content: [{ type: 'text', text: `${now} ${uuid}` }], structuredContent: { now, uuid } };
  });

  server.registerTool(
    'echo',
    {
      description: 'Returns its arguments, as text and as structured content.',
      inputSchema: { text: z.string(), times: z.number().optional() },
    },
    async (args) => {
      calls.echo += 1;
      const structured = { ...args, call: calls.echo };
      return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
    },
  );

  server.registerTool(
    'slow',
    {
      description: 'Works in steps, reporting progress when asked to.',
      inputSchema: { steps: z.number().int().min(1).max(20).optional(), delay_ms: z.number().int().min(0).max(2000).optional() },
    },
    async ({ steps = 3, delay_ms: delayMs = 20 }, extra) => {
      calls.slow += 1;
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i += 1) {
        await sleep(delayMs);
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: i, total: steps, message: `step ${i} of ${steps} (${randomUUID().slice(0, 8)})` },
          });
        }
      }
      return { content: [{ type: 'text', text: `done in ${steps} steps, run ${calls.slow}, ${randomUUID()}` }] };
    },
  );

  server.registerTool('crash', { description: 'Exits the server while the call is in flight.' }, async () => {
    log('crash: exiting');
    // Exit after the request was read and before any answer: mid-call.
    setTimeout(() => process.exit(3), 10);
    await sleep(60000);
    return { content: [{ type: 'text', text: 'unreachable' }] };
  });

  server.registerResource(
    'today',
    'fake://notes/today',
    { description: "Today's note; changes on every read.", mimeType: 'text/plain' },
    async (uri) => {
      calls.resource += 1;
      return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: `note read ${calls.resource} ${randomUUID()}` }] };
    },
  );

  server.registerPrompt(
    'greet',
    { description: 'Greets someone; the greeting changes on every call.', argsSchema: { name: z.string() } },
    async ({ name }) => {
      calls.prompt += 1;
      return {
        description: `greeting ${calls.prompt}`,
        messages: [{ role: 'user', content: { type: 'text', text: `Say hello to ${name} (greeting ${calls.prompt}, ${randomUUID()}).` } }],
      };
    },
  );

  return server;
}

// Logs each incoming message of `transport` before the server sees it.
function logMessages(transport) {
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    log(`${message.method ?? 'response'} ${JSON.stringify(message.params ?? {})}`);
    deliver?.(message, extra);
  };
}

async function serveStdio() {
  const transport = new StdioServerTransport();
  await buildServer().connect(transport);
  logMessages(transport);
  log('stdio ready');
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      if (text === '') return resolve(undefined);
      try {
        resolve(JSON.parse(text));
      } catch (e) {
        reject(e);
      }
    });
    req.on('error', reject);
  });
}

async function serveHttp({ json }) {
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    try {
      const { pathname } = new URL(req.url, 'http://fake');
      if (pathname !== '/mcp') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end(`no route ${req.method} ${pathname}\n`);
        return;
      }
      const id = req.headers['mcp-session-id'];
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      let transport = id === undefined ? undefined : sessions.get(id);
      if (transport === undefined) {
        if (id !== undefined) {
          log(`unknown session ${id}`);
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
          return;
        }
        if (req.method !== 'POST' || !isInitializeRequest(body)) {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: no session id' }, id: null }));
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: json,
          onsessioninitialized: (sid) => {
            sessions.set(sid, transport);
            log(`session ${sid}`);
          },
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await buildServer().connect(transport);
        logMessages(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (e) {
      log(`error ${e.stack ?? e}`);
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`bad request: ${e.message}\n`);
    }
  });
  await new Promise((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address();
  process.stdout.write(`http://127.0.0.1:${port}/mcp\n`);
  const stop = () => httpServer.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const argv = process.argv.slice(2);
if (argv.includes('--stdio')) {
  await serveStdio();
} else if (argv.includes('--http')) {
  await serveHttp({ json: argv.includes('--json') });
} else {
  process.stderr.write('usage: mcp_server.mjs --stdio | --http [--json]\n');
  process.exit(2);
}

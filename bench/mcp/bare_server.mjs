// The baseline of bench/run's mcp case: a bare MCP tool server built with the
// official TypeScript SDK (@modelcontextprotocol/sdk's McpServer), with one
// tool, `lookup`, that answers every call with the same fixed result.
//
//   node bare_server.mjs          Streamable HTTP, the SDK's stateless JSON mode
//                                 (sessionIdGenerator undefined, enableJsonResponse
//                                 true) at http://127.0.0.1:PORT/mcp on a free port;
//                                 prints `bare mcp serving URL` as its first line
//   node bare_server.mjs --stdio  the same server over stdio (newline-delimited
//                                 JSON-RPC), for `understudy mcp-proxy -- ...`
//
// Stateless mode is the SDK's fastest HTTP form and what a load test of a
// real server would use: no initialize is needed, and, as the SDK's own
// simpleStatelessStreamableHttp example does (its transport refuses to be
// reused in this mode), each POST gets a fresh McpServer and transport.
// Anything but POST /mcp is 404 or 405. SIGINT/SIGTERM end it.
//
// Run it with the Node 22 binary that tests/node22's lockfile installs
// (tests/node22/node_modules/node/bin/node; scripts/setup runs `npm ci`
// there). The SDK and zod are imported from tests/node22/node_modules by
// relative path: ES modules do not look at NODE_PATH, and the SDK's own
// imports (zod, @hono/node-server) resolve from where it is installed.
import http from 'node:http';
import { McpServer } from '../../tests/node22/node_modules/@modelcontextprotocol/sdk/dist/esm/server/mcp.js';
import { StdioServerTransport } from '../../tests/node22/node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js';
import { StreamableHTTPServerTransport } from '../../tests/node22/node_modules/@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js';
import { AjvJsonSchemaValidator } from '../../tests/node22/node_modules/@modelcontextprotocol/sdk/dist/esm/validation/ajv-provider.js';
import { z } from '../../tests/node22/node_modules/zod/index.js';

// bench/run checks every answer for this text (conn_load --expect).
const ANSWER = 'fixed answer of the understudy MCP benchmark tool';

// One JSON Schema validator for every server: each McpServer would
// otherwise build its own Ajv instance (12% of this server's CPU when
// measured), for elicitation, which this server never uses.
const validator = new AjvJsonSchemaValidator();

function buildServer() {
  const server = new McpServer(
    { name: 'understudy-bench-mcp', version: '1.0.0' },
    { capabilities: { tools: {} }, jsonSchemaValidator: validator },
  );
  server.registerTool(
    'lookup',
    { description: 'Answers every call with the same fixed text.', inputSchema: { key: z.string() } },
    async () => ({ content: [{ type: 'text', text: ANSWER }] }),
  );
  return server;
}

async function serveStdio() {
  await buildServer().connect(new StdioServerTransport());
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

async function handle(req, res) {
  if (new URL(req.url, 'http://bench').pathname !== '/mcp') {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    return;
  }
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST', 'content-type': 'text/plain' }).end('POST only\n');
    return;
  }
  let body;
  try {
    body = JSON.parse(await readBody(req));
  } catch (e) {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: `Parse error: ${e.message}` }, id: null }));
    return;
  }
  const server = buildServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

async function serveHttp() {
  const httpServer = http.createServer((req, res) => {
    handle(req, res).catch((e) => {
      process.stderr.write(`bare mcp: ${e.stack ?? e}\n`);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error\n');
    });
  });
  // Node's default of 5 s would close idle keep-alive connections between
  // the benchmark's measurements.
  httpServer.keepAliveTimeout = 600_000;
  await new Promise((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`bare mcp serving http://127.0.0.1:${httpServer.address().port}/mcp\n`);
  const stop = () => process.exit(0);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (process.argv.includes('--stdio')) {
  await serveStdio();
} else {
  await serveHttp();
}

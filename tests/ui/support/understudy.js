// The real system for the browser tests: `understudy serve` (the binary
// under test, $UNDERSTUDY_BIN) in front of a fake OpenAI upstream on
// loopback, and the review loop of clients/node's test support (an
// orchestrator, an executor and a reviewer) calling it over the HTTP API,
// each agent named in its base URL. Runs are opened, ended and marked with
// custom events over gRPC through clients/node.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { UI_TEST_DIR, within } from './browser.js';

const CLIENT_DIR = path.resolve(UI_TEST_DIR, '..', '..', 'clients', 'node');

export const BIN = process.env.UNDERSTUDY_BIN || path.resolve(UI_TEST_DIR, '..', '..', 'build', 'cli', 'understudy');

// The agent whose recorded answer carries markup and script.
export const QUOTER = 'You are the quoter. Quote the page you are given.';
export const XSS_SCRIPT = '<script>window.__pwned=1</script>';
export const XSS_IMG = '<img src=x onerror="window.__pwned=1">';
export const XSS_ANSWER = `The page says: ${XSS_SCRIPT} and ${XSS_IMG} <b>bold</b>`;

async function clientModules() {
  if (!fs.existsSync(path.join(CLIENT_DIR, 'node_modules', '@grpc', 'grpc-js'))) {
    throw new Error(`tests/ui uses clients/node, whose npm dependencies are not installed in ${CLIENT_DIR}/node_modules: ` +
      'run scripts/setup (npm ci there)');
  }
  const [client, env, fake, loop] = await Promise.all([
    import(path.join(CLIENT_DIR, 'index.js')),
    import(path.join(CLIENT_DIR, 'test_support', 'env.js')),
    import(path.join(CLIENT_DIR, 'test_support', 'fake_openai.js')),
    import(path.join(CLIENT_DIR, 'test_support', 'review_loop.js')),
  ]);
  return { client, env, fake, loop };
}

// The fake upstream: the quoter's requests get XSS_ANSWER, the rest go to
// clients/node's fake (the three review-loop agents).
async function startUpstream(startFakeOpenAI) {
  const inner = await startFakeOpenAI();
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (raw += d));
    req.on('end', async () => {
      let body = {};
      try {
        body = JSON.parse(raw);
      } catch {
        // the inner fake answers 400
      }
      if (body.messages?.[0]?.content === QUOTER) {
        const answer = JSON.stringify({
          id: 'chatcmpl-quote', object: 'chat.completion', created: 1700000000, model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: XSS_ANSWER, refusal: null }, logprobs: null, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
        res.end(answer);
        return;
      }
      try {
        const r = await fetch(`${inner.url}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: raw });
        const text = await r.text();
        res.writeHead(r.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      } catch (e) {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `fake upstream: ${e.message}` } }));
      }
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(() => resolve()));
      await inner.close();
    },
  };
}

// Starts the fake upstream and `understudy serve` on 127.0.0.1:0 with a
// fresh database. Resolves { http, grpc, client, server, loop(...), ... };
// stop() ends both (bounded) and is safe to call twice.
export async function startUnderstudy() {
  if (!fs.existsSync(BIN)) {
    throw new Error(`understudy binary not found at ${BIN}: build it (cmake --build build --target understudy) or set UNDERSTUDY_BIN`);
  }
  const { client, env, fake, loop } = await clientModules();
  const upstream = await startUpstream(fake.startFakeOpenAI);
  let server;
  try {
    server = await client.startServer({ binary: BIN, args: ['--upstream', `openai=${upstream.url}`], env: env.cleanEnv() });
  } catch (e) {
    await upstream.close();
    throw e;
  }
  // Killed with the test process, whatever happened to the test.
  const onExit = () => server.kill();
  process.once('exit', onExit);
  const agentByPrompt = new Map(Object.entries(fake.PROMPTS).map(([agent, prompt]) => [prompt, agent]));
  agentByPrompt.set(QUOTER, 'quoter');
  const us = {
    http: server.http,
    grpc: server.grpc,
    server,
    client: server.client(),
    PROMPTS: fake.PROMPTS,
    TASK: loop.TASK,
    FEEDBACK: fake.FEEDBACK,

    // One chat completion of `agent` in run `runId`, over the HTTP API.
    async chat(runId, agent, body) {
      const url = `${server.http}/run/${encodeURIComponent(runId)}/agent/${encodeURIComponent(agent)}/v1/chat/completions`;
      const r = await within(15000, `POST ${url}`, fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
        body: JSON.stringify(body),
      }));
      const json = await r.json();
      if (!r.ok) throw new Error(`POST ${url}: HTTP ${r.status}: ${JSON.stringify(json)}`);
      return json;
    },

    // An `openai`-shaped client for review_loop.js: each request goes out
    // under the agent its system prompt names, after `change(agent, body)`
    // (which may alter it) and `before(agent)` (which may wait).
    openai(runId, { change, before } = {}) {
      return {
        chat: {
          completions: {
            create: async (body) => {
              const agent = agentByPrompt.get(body.messages[0].content) || 'unknown';
              if (change) change(agent, body);
              if (before) await before(agent);
              return us.chat(runId, agent, body);
            },
          },
        },
      };
    },

    // The review loop (orchestrator → executor → reviewer, two rounds, 9 calls).
    reviewLoop(runId, options) {
      return within(60000, `the review loop in run ${runId}`, loop.reviewLoop(us.openai(runId, options)));
    },

    // Resolves the server's exit code (0 on a clean SIGTERM shutdown), or
    // the error that made it need a SIGKILL.
    async stop() {
      let code;
      try {
        code = await server.stop({ timeoutMs: 15000 });
      } catch (e) {
        server.kill();
        code = e.message;
      }
      process.removeListener('exit', onExit);
      await upstream.close();
      return code;
    },
  };
  return us;
}

// A fake A2A agent on 127.0.0.1:0, built as its users build one: express
// with @a2a-js/sdk's DefaultRequestHandler, jsonRpcHandler (v1.0, and v0.3
// through legacyCompat) and agentCardHandler. Its executor asks a model
// with the openai SDK (Chat Completions) at `agent.modelBaseUrl`, which the
// test sets once understudy is listening (understudy needs the agent's URL
// first): `${http}/run/${run}/agent/${name}/v1`, so the agent's own model
// calls are in the caller's run under its own agent name.
//
//   const agent = await startA2aAgent({ name: 'writer', kind: 'task', token, apiKey });
//   agent.url;           // its JSON-RPC endpoint, for --a2a-upstream NAME=URL
//   agent.modelBaseUrl = `${rec.http}/run/${rec.run}/agent/writer/v1`;
//   agent.requests;      // [{ method, path, headers, body }] every request it got
//   agent.connections;   // TCP connections accepted
//   await agent.close();
//
// kind 'message' answers with a message whose text is the model's; kind
// 'task' with a task: submitted, then (after the model call) an
// artifact-update holding the model's text and a status-update completed —
// a stream of them to SendStreamingMessage / message/stream, the final task
// to SendMessage. Every id in an answer (message, task, context, artifact)
// is fresh and random, as the SDK makes them (with a model whose texts
// change too, an identical answer proves a replay).
//
// A request without `Authorization: Bearer ${token}` is refused with 401
// before the SDK sees it (the card too).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';
import { openaiSdk } from '../lib/sdk.js';

export const AGENT_MODEL = 'gpt-4.1-mini';
const ROLE_AGENT = 2;
const SUBMITTED = 1;
const COMPLETED = 3;

const textPart = (value) => ({ content: { $case: 'text', value } });
const textOf = (message) => (message?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

export async function startA2aAgent({ name, kind = 'message', token, apiKey }) {
  const OpenAI = await openaiSdk();
  const agent = { name, requests: [], connections: 0, modelBaseUrl: null, modelCalls: 0 };

  const ask = async (text) => {
    if (!agent.modelBaseUrl) throw new Error(`fake A2A agent ${name}: modelBaseUrl is not set`);
    const openai = new OpenAI({ apiKey, baseURL: agent.modelBaseUrl, maxRetries: 0, timeout: 15000 });
    agent.modelCalls += 1;
    const c = await openai.chat.completions.create({
      model: AGENT_MODEL,
      messages: [{ role: 'system', content: `You are the ${name}.` }, { role: 'user', content: text }],
    });
    return c.choices[0].message.content;
  };

  const executor = {
    async execute(ctx, bus) {
      const asked = textOf(ctx.userMessage);
      if (kind === 'message') {
        const said = await ask(asked);
        bus.publish(AgentEvent.message({
          messageId: randomUUID(), role: ROLE_AGENT, parts: [textPart(said)], contextId: ctx.contextId,
        }));
        bus.finished();
        return;
      }
      const { taskId, contextId } = ctx;
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: SUBMITTED }, history: [ctx.userMessage], artifacts: [] }));
      const said = await ask(asked);
      bus.publish(AgentEvent.artifactUpdate({
        taskId, contextId, append: false, lastChunk: true,
        artifact: { artifactId: randomUUID(), name: 'draft', description: '', parts: [textPart(said)], extensions: [] },
      }));
      bus.publish(AgentEvent.statusUpdate({
        taskId, contextId,
        status: { state: COMPLETED, message: { messageId: randomUUID(), role: ROLE_AGENT, parts: [textPart(`${name} done`)], contextId, taskId } },
      }));
      bus.finished();
    },
    async cancelTask() {},
  };

  const app = express();
  const server = http.createServer(app);
  server.on('connection', () => {
    agent.connections += 1;
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  agent.port = server.address().port;
  const origin = `http://127.0.0.1:${agent.port}`;
  agent.url = `${origin}/a2a`;
  const card = {
    name,
    description: `The fake ${name} agent of tests/node22.`,
    version: '1.0.0',
    supportedInterfaces: [
      { url: agent.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: agent.url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ],
    capabilities: { streaming: true },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);

  app.use((req, res, next) => {
    const entry = { method: req.method, path: req.url, headers: { ...req.headers }, body: undefined };
    agent.requests.push(entry);
    res.locals.entry = entry;
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.status(401).json({ error: `fake A2A agent ${name}: expected the bearer token, got ${JSON.stringify(req.headers.authorization ?? null)}` });
      return;
    }
    next();
  });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a', express.json({ limit: '8mb' }), (req, res, next) => {
    res.locals.entry.body = req.body;
    next();
  }, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));

  let closed = null;
  agent.close = () => {
    closed ??= new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return closed;
  };
  return agent;
}

// A fake OpenAI platform on 127.0.0.1:0 for `--upstream openai=URL`, which
// understudy uses for every OpenAI route — so one fake serves them all:
//
//   POST /v1/responses        fakes/responses.js (plain and streamed)
//   GET  /v1/responses/{id}   the responses it issued
//   POST /v1/chat/completions Chat Completions, for @openai/agents' chat mode
//   POST /v1/embeddings       fakes/embeddings.js
//
//   const fake = await startFakeOpenAI();
//   fake.url; fake.connections; fake.requests; fake.sent; fake.responses;
//   await fake.close();
//
// Every request needs `Authorization: Bearer …` (else 401). Chat answers
// are rendered by tests/node/fakes/openai.js's completionJson /
// completionEvents (imported), with fresh ids like the Responses ones.
//
// Options: reply(conversation, body) → { text, toolCalls } instead of
// defaultBrain, for responses and chat alike (conversation: fakes/brain.js);
// holdWhen(body) / holdAfterEvents as tests/node's fakes.
import { FakeServer, errorOpenAI } from '../../node/fakes/fake_server.js';
import { completionEvents, completionJson } from '../../node/fakes/openai.js';
import { conversation, defaultBrain, randomAlnum, words } from './brain.js';
import { createEmbeddings } from './embeddings.js';
import { createResponse, getResponse } from './responses.js';

function messageText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => p.text ?? '').join('');
  return '';
}

// A Chat Completions request as the brain sees it.
export function chatConversation(body) {
  const messages = body.messages ?? [];
  const calls = new Map();
  for (const m of messages) for (const c of m.tool_calls ?? []) calls.set(c.id, c.function?.name ?? '');
  return conversation({
    system: messageText(messages.find((m) => m.role === 'system' || m.role === 'developer')?.content),
    userTexts: messages.filter((m) => m.role === 'user').map((m) => messageText(m.content)),
    toolResults: messages.filter((m) => m.role === 'tool').map((m) => ({
      id: m.tool_call_id, name: calls.get(m.tool_call_id) ?? '', content: messageText(m.content),
    })),
    tools: (body.tools ?? []).filter((t) => t.type === 'function').map((t) => ({ name: t.function.name, schema: t.function.parameters })),
    inputTokens: messages.reduce((n, m) => n + words(messageText(m.content)), 0),
  });
}

function chatAnswer(body, reply) {
  const conv = chatConversation(body);
  const r = (reply ?? defaultBrain)(conv, body);
  const toolCalls = (r.toolCalls ?? []).map((c) => ({
    id: `call_${randomAlnum(24)}`,
    name: c.name,
    arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
  }));
  return {
    id: `chatcmpl-${randomAlnum(29)}`,
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    text: toolCalls.length > 0 ? null : r.text,
    toolCalls,
    finish: toolCalls.length > 0 ? 'tool_calls' : 'stop',
    usage: { prompt_tokens: conv.inputTokens, completion_tokens: words(r.text ?? '') + toolCalls.length * 5 },
  };
}

// Azure OpenAI's paths as the OpenAI ones they serve: `pathname` of a
// deployment route, Azure's /openai/responses or its /openai/v1 API
// (null for any other path).
function azurePath(pathname) {
  const deployment = /^\/openai\/deployments\/[^/]+(\/chat\/completions|\/embeddings)$/.exec(pathname);
  if (deployment) return `/v1${deployment[1]}`;
  const plain = /^\/openai(?:\/v1)?(\/responses(?:\/[^/]+)?|\/chat\/completions|\/embeddings)$/.exec(pathname);
  return plain ? `/v1${plain[1]}` : null;
}

// Options besides those above: `azure: { apiKey }` makes it Azure OpenAI
// for `--upstream azure=URL`: Azure's routes (azurePath), each needing an
// `api-version` query and the `api-key` header equal to apiKey (or an
// Entra `Authorization: Bearer` token), and `apim-request-id` on answers.
export async function startFakeOpenAI({ reply, holdWhen, holdAfterEvents, azure } = {}) {
  const responses = new Map();
  const fake = new FakeServer(azure ? 'azure' : 'openai', async (req, body, bodyText, res, self) => {
    const url = new URL(req.url, 'http://fake');
    let { pathname } = url;
    if (azure) {
      if (req.headers['api-key'] !== azure.apiKey && !/^Bearer \S+/.test(req.headers.authorization ?? '')) {
        return self.sendJson(req, res, 401, { error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint.' } });
      }
      pathname = azurePath(pathname);
      if (pathname === null || (!url.pathname.startsWith('/openai/v1/') && !url.searchParams.get('api-version'))) {
        return self.sendJson(req, res, 404, { error: { code: '404', message: 'Resource not found' } });
      }
      res.setHeader('apim-request-id', randomAlnum(16));
    } else if (!/^Bearer \S+/.test(req.headers.authorization ?? '')) {
      return errorOpenAI(self, req, res, 401, 'You didn\'t provide an API key.', 'invalid_request_error', 'invalid_api_key');
    }
    if (req.method === 'POST' && pathname === '/v1/responses') {
      return createResponse(self, req, body, res, { store: responses, reply, holdWhen });
    }
    const get = /^\/v1\/responses\/([^/]+)$/.exec(pathname);
    if (req.method === 'GET' && get) return getResponse(self, req, res, decodeURIComponent(get[1]), { store: responses });
    if (req.method === 'POST' && pathname === '/v1/embeddings') return createEmbeddings(self, req, body, res);
    if (req.method === 'POST' && pathname === '/v1/chat/completions') {
      if (body === null || typeof body.model !== 'string' || !Array.isArray(body.messages)) {
        return errorOpenAI(self, req, res, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error');
      }
      const a = chatAnswer(body, reply);
      if (body.stream) {
        return self.sendStream(req, res, completionEvents(a, Boolean(body.stream_options?.include_usage)), {
          hold: holdWhen?.(body) ?? false, headers: { 'openai-processing-ms': '1' },
        });
      }
      return self.sendJson(req, res, 200, completionJson(a), { 'openai-processing-ms': '1' });
    }
    return errorOpenAI(self, req, res, 404, `Unknown request URL: ${req.method} ${req.url}`, 'invalid_request_error', 'unknown_url');
  }, { holdWhen, holdAfterEvents });
  fake.responses = responses;
  return fake.listen();
}

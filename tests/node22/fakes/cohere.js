// A fake Cohere API (v2 chat) on 127.0.0.1:0, for `--upstream cohere=URL`:
//
//   POST /v2/chat   whole, or `stream: true` as server-sent events
//                   (`event: TYPE` + `data: {"type": TYPE, ...}`): message-
//                   start, content-start/-delta/-end or tool-plan-delta and
//                   tool-call-start/-delta/-end, message-end
//
//   const fake = await startFakeCohere({ apiKey });
//   fake.url; fake.requests; fake.sent; await fake.close();
//
// Every request needs `Authorization: Bearer KEY` (401 otherwise). Ids and
// texts are fresh on every call. Tool calls carry `arguments` as a JSON
// string, as Cohere sends them. Errors are {"id", "message"}: bad JSON or
// no messages 400, a model not named command-… 404.
import { FakeServer } from '../../node/fakes/fake_server.js';
import { conversation, defaultBrain, randomAlnum, randomHex, textPieces, words } from './brain.js';

function cohereError(self, req, res, status, message) {
  self.sendJson(req, res, status, { id: randomHex(16), message });
}

function text(content) {
  if (typeof content === 'string') return content;
  return (content ?? []).map((p) => p.text ?? (p.document ? JSON.stringify(p.document.data) : '')).join('');
}

function chatConversation(body) {
  const messages = body.messages ?? [];
  const names = new Map();
  for (const m of messages) for (const c of m.tool_calls ?? []) names.set(c.id, c.function?.name ?? '');
  return conversation({
    system: text(messages.find((m) => m.role === 'system')?.content),
    userTexts: messages.filter((m) => m.role === 'user').map((m) => text(m.content)),
    toolResults: messages.filter((m) => m.role === 'tool').map((m) => ({ id: m.tool_call_id, name: names.get(m.tool_call_id) ?? '', content: text(m.content) })),
    tools: (body.tools ?? []).map((t) => ({ name: t.function?.name, schema: t.function?.parameters })),
    inputTokens: messages.reduce((n, m) => n + words(text(m.content)), 0),
  });
}

function usage(input, output) {
  return { billed_units: { input_tokens: input, output_tokens: output }, tokens: { input_tokens: input + 200, output_tokens: output } };
}

function answer(body, reply) {
  const conv = chatConversation(body);
  const r = (reply ?? defaultBrain)(conv, body);
  const calls = (r.toolCalls ?? []).map((c) => ({
    id: `${c.name}_${randomAlnum(12).toLowerCase()}`, type: 'function',
    function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
  }));
  return {
    id: crypto.randomUUID(),
    text: calls.length > 0 ? '' : `${r.text} [${randomAlnum(5)}]`,
    plan: calls.length > 0 ? `I will call ${calls.map((c) => c.function.name).join(', ')}.` : '',
    calls,
    input: conv.inputTokens,
  };
}

function whole(a) {
  const message = { role: 'assistant' };
  if (a.calls.length > 0) {
    message.tool_plan = a.plan;
    message.tool_calls = a.calls;
  } else {
    message.content = [{ type: 'text', text: a.text }];
  }
  const output = a.calls.length > 0 ? a.calls.length * 5 : words(a.text);
  return { id: a.id, message, finish_reason: a.calls.length > 0 ? 'TOOL_CALL' : 'COMPLETE', usage: usage(a.input, output) };
}

function events(a) {
  const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const out = [ev('message-start', { id: a.id, delta: { message: { role: 'assistant', content: [], tool_plan: '', tool_calls: [], citations: [] } } })];
  if (a.calls.length > 0) {
    for (const p of textPieces(a.plan)) out.push(ev('tool-plan-delta', { delta: { message: { tool_plan: p } } }));
    a.calls.forEach((c, index) => {
      out.push(ev('tool-call-start', { index, delta: { message: { tool_calls: { id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } } } } }));
      for (const p of textPieces(c.function.arguments)) {
        out.push(ev('tool-call-delta', { index, delta: { message: { tool_calls: { function: { arguments: p } } } } }));
      }
      out.push(ev('tool-call-end', { index }));
    });
  } else {
    out.push(ev('content-start', { index: 0, delta: { message: { content: { type: 'text', text: '' } } } }));
    for (const p of textPieces(a.text)) out.push(ev('content-delta', { index: 0, delta: { message: { content: { text: p } } } }));
    out.push(ev('content-end', { index: 0 }));
  }
  const w = whole(a);
  out.push(ev('message-end', { delta: { finish_reason: w.finish_reason, usage: w.usage } }));
  return out;
}

// Options: apiKey (required of every request), reply(conversation, body).
export async function startFakeCohere({ apiKey, reply } = {}) {
  const fake = new FakeServer('cohere', async (req, body, bodyText, res, self) => {
    const { pathname } = new URL(req.url, 'http://fake');
    if (req.headers.authorization !== `Bearer ${apiKey}`) return cohereError(self, req, res, 401, 'invalid api token');
    if (req.method !== 'POST' || pathname !== '/v2/chat') return cohereError(self, req, res, 404, `route ${pathname} not found`);
    if (body === null || typeof body !== 'object' || !Array.isArray(body.messages)) {
      return cohereError(self, req, res, 400, 'invalid request: messages must be a list');
    }
    if (!/^command-/.test(body.model ?? '')) {
      return cohereError(self, req, res, 404, `model '${body.model}' not found, make sure the correct model ID was used and that you have access to the model.`);
    }
    const a = answer(body, reply);
    if (body.stream) return self.sendStream(req, res, events(a));
    return self.sendJson(req, res, 200, whole(a));
  });
  return fake.listen();
}

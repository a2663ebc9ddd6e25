// A fake Ollama server on 127.0.0.1:0, for `--upstream ollama=URL`:
//
//   POST /api/chat       {model, messages, tools, stream (default true)}
//   POST /api/generate   {model, prompt, system, stream (default true)}
//   POST /api/embed      {model, input: string | [string]}
//   GET  /api/tags       the models it has
//
//   const fake = await startFakeOllama();
//   fake.url; fake.requests; fake.sent; await fake.close();
//
// Streams are NDJSON (`application/x-ndjson`): one JSON object per line,
// text a few words at a time, the last line `done: true` with the counts.
// Every answer carries a fresh `created_at` and fresh durations, and its
// text a random word, so an identical answer was replayed. Tool calls come
// back with `arguments` as an object, as Ollama sends them. Errors are
// {"error": "..."}: bad JSON 400, a model it has not pulled 404.
import { FakeServer } from '../../node/fakes/fake_server.js';
import { conversation, defaultBrain, randomAlnum, textPieces, words } from './brain.js';
import { embeddingVector } from './embeddings.js';

export const OLLAMA_MODELS = ['llama3.2:3b', 'qwen3:8b', 'nomic-embed-text:latest'];

function ollamaError(self, req, res, status, error) {
  self.sendJson(req, res, status, { error });
}

function chatConversation(body) {
  const messages = body.messages ?? [];
  return conversation({
    system: messages.find((m) => m.role === 'system')?.content ?? '',
    userTexts: messages.filter((m) => m.role === 'user').map((m) => m.content ?? ''),
    toolResults: messages.filter((m) => m.role === 'tool').map((m) => ({ id: '', name: m.tool_name ?? '', content: m.content ?? '' })),
    tools: (body.tools ?? []).map((t) => ({ name: t.function?.name, schema: t.function?.parameters })),
    inputTokens: messages.reduce((n, m) => n + words(m.content ?? ''), 0),
  });
}

function counts(promptTokens, outputTokens) {
  const ns = () => 1000000 + Math.floor(Math.random() * 9000000);
  return {
    total_duration: ns() * 10, load_duration: ns(), prompt_eval_count: promptTokens,
    prompt_eval_duration: ns(), eval_count: outputTokens, eval_duration: ns() * 5,
  };
}

// The lines (objects) of an answer: `field` is "message" (chat) or
// "response" (generate).
function answerLines(body, conv, field, reply) {
  const r = (reply ?? defaultBrain)(conv, body);
  const calls = field === 'message' ? (r.toolCalls ?? []) : [];
  const text = calls.length > 0 ? '' : `${r.text} (${randomAlnum(6)})`;
  const created = () => new Date().toISOString();
  const piece = (content, extra = {}) => (field === 'message'
    ? { message: { role: 'assistant', content, ...extra } }
    : { response: content });
  const last = {
    model: body.model, created_at: created(), ...piece('', calls.length > 0 ? {
      tool_calls: calls.map((c) => ({ function: { name: c.name, arguments: typeof c.arguments === 'string' ? JSON.parse(c.arguments) : c.arguments } })),
    } : {}), done: true, done_reason: 'stop', ...counts(conv.inputTokens, calls.length > 0 ? 5 : words(text)),
  };
  if (field === 'response') last.context = [1, 2, 3];
  const pieces = textPieces(text);
  const lines = [];
  for (let i = 0; i < pieces.length; i += 2) {
    lines.push({ model: body.model, created_at: created(), ...piece(pieces.slice(i, i + 2).join('')), done: false });
  }
  return { lines, last, text };
}

// Options: reply(conversation, body) instead of defaultBrain.
export async function startFakeOllama({ reply } = {}) {
  const fake = new FakeServer('ollama', async (req, body, bodyText, res, self) => {
    const { pathname } = new URL(req.url, 'http://fake');
    if (req.method === 'GET' && pathname === '/api/tags') {
      return self.sendJson(req, res, 200, {
        models: OLLAMA_MODELS.map((name) => ({
          name, model: name, modified_at: new Date().toISOString(), size: 1000 + Math.floor(Math.random() * 1000),
          digest: randomAlnum(64).toLowerCase(), details: { format: 'gguf', family: name.split(/[.:]/)[0] },
        })),
      });
    }
    const route = /^\/api\/(chat|generate|embed)$/.exec(pathname);
    if (req.method !== 'POST' || !route) return ollamaError(self, req, res, 404, '404 page not found');
    if (body === null || typeof body !== 'object') return ollamaError(self, req, res, 400, 'invalid character \'x\' looking for beginning of value');
    if (!OLLAMA_MODELS.includes(body.model)) {
      return ollamaError(self, req, res, 404, `model "${body.model}" not found, try pulling it first`);
    }
    if (route[1] === 'embed') {
      const inputs = Array.isArray(body.input) ? body.input : [body.input];
      return self.sendJson(req, res, 200, {
        model: body.model, embeddings: inputs.map((s) => Array.from(embeddingVector(body.model, String(s), 8))),
        ...counts(inputs.length, 0),
      });
    }
    const conv = route[1] === 'chat' ? chatChecked(body) : conversation({
      system: body.system ?? '', userTexts: [body.prompt ?? ''], inputTokens: words(body.prompt ?? ''),
    });
    if (conv === null) return ollamaError(self, req, res, 400, 'invalid message format');
    const { lines, last } = answerLines(body, conv, route[1] === 'chat' ? 'message' : 'response', reply);
    if (body.stream === false) {
      const whole = { ...last };
      if (route[1] === 'chat') whole.message = { ...last.message, content: lines.map((l) => l.message.content).join('') };
      else whole.response = lines.map((l) => l.response).join('');
      return self.sendJson(req, res, 200, whole);
    }
    return self.sendStream(req, res, [...lines, last].map((l) => `${JSON.stringify(l)}\n`), {
      headers: { 'content-type': 'application/x-ndjson' },
    });
  });
  return fake.listen();
}

function chatChecked(body) {
  if (!Array.isArray(body.messages)) return null;
  return chatConversation(body);
}

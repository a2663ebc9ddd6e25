// A fake OpenAI Chat Completions API on 127.0.0.1:0, shaped like the real
// one: POST /v1/chat/completions answers a `chat.completion` object, or with
// `stream: true` a text/event-stream of `chat.completion.chunk`s — the role
// first, content word by word, tool calls with index/id/name and then their
// arguments in fragments (several calls interleaved by index), the
// finish_reason, a usage chunk when stream_options.include_usage is set, and
// `data: [DONE]`. A keep-alive comment sits mid-stream, as some gateways
// send, so byte-identity includes it.
//
//   const fake = await startFakeOpenAI();
//   fake.url; fake.connections; fake.requests; fake.sent; await fake.close();
//
// Ids and `created` derive from the request bytes: the same request always
// gets the same answer, and `created` is far from the clock, so an answer
// re-rendered instead of replayed would show.
import {
  FakeServer, defaultBrain, digest, errorOpenAI, fragments, textPieces, words,
} from './fake_server.js';

function contentText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => p.text ?? '').join('');
  return '';
}

// The conversation as the brain sees it.
export function openaiConversation(body) {
  const messages = body.messages ?? [];
  const users = messages.filter((m) => m.role === 'user');
  return {
    lastUserText: contentText(users.at(-1)?.content),
    toolResults: messages
      .filter((m) => m.role === 'tool')
      .map((m) => ({ id: m.tool_call_id, content: contentText(m.content) })),
    tools: (body.tools ?? []).map((t) => ({ name: t.function.name, schema: t.function.parameters })),
    inputTokens: messages.reduce((n, m) => n + words(contentText(m.content)), 0),
  };
}

function answer(body, bodyText, path, reply) {
  const h = digest(path, bodyText);
  const conversation = openaiConversation(body);
  const r = (reply ?? defaultBrain)(conversation, body);
  const toolCalls = (r.toolCalls ?? []).map((c, i) => ({
    id: `call_${h.slice(8 + i * 4, 20 + i * 4)}${i}`,
    name: c.name,
    arguments: JSON.stringify(c.arguments),
  }));
  return {
    id: `chatcmpl-${h.slice(0, 29)}`,
    created: 1600000000 + (parseInt(h.slice(0, 7), 16) % 50000000),
    model: body.model,
    text: toolCalls.length > 0 ? null : r.text,
    toolCalls,
    finish: toolCalls.length > 0 ? 'tool_calls' : 'stop',
    usage: {
      prompt_tokens: conversation.inputTokens,
      completion_tokens: words(r.text ?? '') + toolCalls.length * 5,
    },
  };
}

function usageObject(u) {
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.prompt_tokens + u.completion_tokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

export function completionJson(a) {
  const message = { role: 'assistant', content: a.text, refusal: null, annotations: [] };
  if (a.toolCalls.length > 0) {
    message.tool_calls = a.toolCalls.map((c) => ({
      id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments },
    }));
  }
  return {
    id: a.id,
    object: 'chat.completion',
    created: a.created,
    model: a.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: a.finish }],
    usage: usageObject(a.usage),
    service_tier: 'default',
    system_fingerprint: 'fp_fake0001',
  };
}

// The SSE events (raw text) of a streamed answer.
export function completionEvents(a, includeUsage) {
  const chunk = (choices, extra = {}) => {
    const c = {
      id: a.id, object: 'chat.completion.chunk', created: a.created, model: a.model,
      service_tier: 'default', system_fingerprint: 'fp_fake0001', choices,
    };
    if (includeUsage) c.usage = null;
    return `data: ${JSON.stringify({ ...c, ...extra })}\n\n`;
  };
  const delta = (d, finish = null) => chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
  const events = [delta({ role: 'assistant', content: a.text === null ? null : '', refusal: null })];
  for (const piece of textPieces(a.text ?? '')) events.push(delta({ content: piece }));
  // Every call's head (index, id, name), then argument fragments round-robin
  // across the calls: parallel calls arrive interleaved by index.
  for (let i = 0; i < a.toolCalls.length; ++i) {
    const c = a.toolCalls[i];
    events.push(delta({ tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }));
  }
  const frags = a.toolCalls.map((c) => fragments(c.arguments, 6));
  const rounds = Math.max(0, ...frags.map((f) => f.length));
  for (let k = 0; k < rounds; ++k) {
    for (let i = 0; i < frags.length; ++i) {
      if (k < frags[i].length) events.push(delta({ tool_calls: [{ index: i, function: { arguments: frags[i][k] } }] }));
    }
  }
  events.push(`: keep-alive\n\n${delta({}, a.finish)}`);
  if (includeUsage) events.push(chunk([], { usage: usageObject(a.usage) }));
  events.push('data: [DONE]\n\n');
  return events;
}

// Options: reply(conversation, body) → { text, toolCalls } instead of the
// default brain; holdWhen(body) → hold that stream after holdAfterEvents
// events until fake.release() or the client hangs up; headers() → more
// response headers for each answer.
export async function startFakeOpenAI({ reply, holdWhen, holdAfterEvents, headers = () => ({}) } = {}) {
  const fake = new FakeServer('openai', async (req, body, bodyText, res, self) => {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      return errorOpenAI(self, req, res, 404, `Unknown request URL: ${req.method} ${req.url}`, 'invalid_request_error', 'unknown_url');
    }
    if (!/^Bearer \S+/.test(req.headers.authorization ?? '')) {
      return errorOpenAI(self, req, res, 401, 'You didn\'t provide an API key.', 'invalid_request_error', 'invalid_api_key');
    }
    if (body === null || typeof body.model !== 'string' || !Array.isArray(body.messages)) {
      return errorOpenAI(self, req, res, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error');
    }
    const a = answer(body, bodyText, req.url, reply);
    if (body.stream) {
      const events = completionEvents(a, Boolean(body.stream_options?.include_usage));
      return self.sendStream(req, res, events, { hold: holdWhen?.(body) ?? false, headers: { 'openai-processing-ms': '1', ...headers() } });
    }
    return self.sendJson(req, res, 200, completionJson(a), { 'openai-processing-ms': '1', ...headers() });
  }, { holdWhen, holdAfterEvents });
  return fake.listen();
}

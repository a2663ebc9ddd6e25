// A fake Anthropic Messages API on 127.0.0.1:0, shaped like the real one:
// POST /v1/messages answers a `message` object, or with `stream: true` the
// event stream: message_start, then per content block content_block_start /
// content_block_delta (text_delta, or input_json_delta for tool_use) /
// content_block_stop, a ping after the first block starts, message_delta
// with the stop_reason and usage, message_stop. Several tool_use blocks in
// one message are parallel tool calls.
//
//   const fake = await startFakeAnthropic();
//   fake.url; fake.connections; fake.requests; fake.sent; await fake.close();
//
// Ids derive from the request bytes, so the same request always gets the
// same answer.
import {
  FakeServer, defaultBrain, digest, errorAnthropic, fragments, textPieces, words,
} from './fake_server.js';

function blocksText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  return '';
}

export function anthropicConversation(body) {
  const messages = body.messages ?? [];
  const users = messages.filter((m) => m.role === 'user' && blocksText(m.content) !== '');
  const toolResults = [];
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type === 'tool_result') {
        toolResults.push({ id: b.tool_use_id, content: typeof b.content === 'string' ? b.content : blocksText(b.content) });
      }
    }
  }
  const system = typeof body.system === 'string' ? body.system : blocksText(body.system);
  return {
    lastUserText: blocksText(users.at(-1)?.content),
    toolResults,
    tools: (body.tools ?? []).map((t) => ({ name: t.name, schema: t.input_schema })),
    inputTokens: words(system) + messages.reduce((n, m) => n + words(blocksText(m.content)), 0),
  };
}

function answer(body, bodyText, path, reply) {
  const h = digest(path, bodyText);
  const conversation = anthropicConversation(body);
  const r = (reply ?? defaultBrain)(conversation, body);
  const content = [];
  if (r.text) content.push({ type: 'text', text: r.text });
  (r.toolCalls ?? []).forEach((c, i) => {
    content.push({ type: 'tool_use', id: `toolu_01${h.slice(10 + i * 3, 32 + i * 3)}`, name: c.name, input: c.arguments });
  });
  const toolUse = content.some((b) => b.type === 'tool_use');
  return {
    id: `msg_01${h.slice(0, 22)}`,
    model: body.model,
    content,
    stop_reason: toolUse ? 'tool_use' : 'end_turn',
    usage: { input_tokens: conversation.inputTokens, output_tokens: words(r.text ?? '') + (r.toolCalls?.length ?? 0) * 6 },
  };
}

export function messageJson(a) {
  return {
    id: a.id,
    type: 'message',
    role: 'assistant',
    model: a.model,
    content: a.content,
    stop_reason: a.stop_reason,
    stop_sequence: null,
    usage: { input_tokens: a.usage.input_tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: a.usage.output_tokens, service_tier: 'standard' },
  };
}

export function messageEvents(a) {
  const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const events = [
    ev('message_start', {
      message: {
        id: a.id, type: 'message', role: 'assistant', model: a.model, content: [],
        stop_reason: null, stop_sequence: null,
        usage: { input_tokens: a.usage.input_tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1, service_tier: 'standard' },
      },
    }),
  ];
  a.content.forEach((block, index) => {
    if (block.type === 'text') {
      events.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      if (index === 0) events.push(ev('ping', {}));
      for (const piece of textPieces(block.text)) {
        events.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }));
      }
    } else {
      events.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }));
      if (index === 0) events.push(ev('ping', {}));
      for (const partial of ['', ...fragments(JSON.stringify(block.input), 5)]) {
        events.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: partial } }));
      }
    }
    events.push(ev('content_block_stop', { index }));
  });
  events.push(ev('message_delta', {
    delta: { stop_reason: a.stop_reason, stop_sequence: null },
    usage: { output_tokens: a.usage.output_tokens },
  }));
  events.push(ev('message_stop', {}));
  return events;
}

// Options as startFakeOpenAI's.
export async function startFakeAnthropic({ reply, holdWhen, holdAfterEvents } = {}) {
  const fake = new FakeServer('anthropic', async (req, body, bodyText, res, self) => {
    if (req.method !== 'POST' || req.url !== '/v1/messages') {
      return errorAnthropic(self, req, res, 404, `Not found: ${req.method} ${req.url}`, 'not_found_error');
    }
    // The classic `x-api-key`, or `Authorization: Bearer` as SDK 1.x sends.
    if (!req.headers['x-api-key'] && !/^Bearer \S+/.test(req.headers.authorization ?? '')) {
      return errorAnthropic(self, req, res, 401, 'x-api-key header is required', 'authentication_error');
    }
    if (!req.headers['anthropic-version']) {
      return errorAnthropic(self, req, res, 400, 'anthropic-version: header is required', 'invalid_request_error');
    }
    if (body === null || typeof body.model !== 'string' || !Array.isArray(body.messages) || typeof body.max_tokens !== 'number') {
      return errorAnthropic(self, req, res, 400, 'invalid request body', 'invalid_request_error');
    }
    const a = answer(body, bodyText, req.url, reply);
    const headers = { 'request-id': `req_${a.id.slice(6)}` };
    if (body.stream) {
      return self.sendStream(req, res, messageEvents(a), { hold: holdWhen?.(body) ?? false, headers });
    }
    return self.sendJson(req, res, 200, messageJson(a), headers);
  }, { holdWhen, holdAfterEvents });
  return fake.listen();
}

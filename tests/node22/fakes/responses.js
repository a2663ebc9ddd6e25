// The OpenAI Responses API as a fake upstream serves it (routes in
// fakes/openai.js): POST /v1/responses, plain or `stream: true`, and
// GET /v1/responses/{id}.
//
// - Shaped like the real thing: a `response` object with the request's
//   settings echoed; output items `message` (output_text) and
//   `function_call`; a stream of named SSE events (`event:` line, then
//   `data:`) numbered by `sequence_number`: response.created,
//   response.in_progress, per item output_item.added, content_part.added /
//   output_text.delta… / output_text.done / content_part.done (messages) or
//   function_call_arguments.delta… / .done (calls), output_item.done, and
//   response.completed with the whole response.
// - Fresh on every call: ids (resp_, msg_, fc_, call_), created_at, and the
//   `obfuscation` pad of each delta. Two identical requests get different
//   bytes, so an identical answer was replayed.
// - Stateful like OpenAI: every response issued (unless `store: false`) is
//   kept with the conversation that led to it, so `previous_response_id`
//   resumes it and GET returns it; an id never issued is a 400 (POST) or
//   404 (GET) in OpenAI's error shape.
// - The model is the `reply` function (default: defaultBrain) over the
//   conversation of fakes/brain.js; with `text.format` json_schema the
//   answer is JSON holding the schema's required keys. A reply's text goes
//   with its calls only when it says `preamble: true` (then in a message
//   item before them).
import {
  conversation, defaultBrain, randomAlnum, randomHex, textPieces, valueForSchema, words,
} from './brain.js';

const ITEM_TYPES = ['message', 'function_call', 'function_call_output', 'reasoning', 'item_reference'];

function partsText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
}

// An OpenAI 400: { status, error: { message, type, param, code } }.
function invalid(message, param = null, code = null) {
  return { status: 400, error: { message, type: 'invalid_request_error', param, code } };
}

// `input` as a list of items, or an error for what OpenAI rejects.
export function inputItems(body) {
  if (typeof body.input === 'string') return { items: [{ type: 'message', role: 'user', content: body.input }] };
  if (!Array.isArray(body.input)) {
    return invalid(`Invalid type for 'input': expected one of a string or an array of input items, but got ${body.input === undefined ? 'nothing' : typeof body.input} instead.`, 'input', 'invalid_type');
  }
  const items = [];
  for (const [i, raw] of body.input.entries()) {
    if (raw === null || typeof raw !== 'object') return invalid(`Invalid type for 'input[${i}]': expected an object.`, `input[${i}]`, 'invalid_type');
    const type = raw.type ?? (raw.role ? 'message' : undefined);
    if (!ITEM_TYPES.includes(type)) {
      return invalid(`Invalid value: '${type}'. Supported values are: ${ITEM_TYPES.map((t) => `'${t}'`).join(', ')}.`, `input[${i}].type`, 'invalid_value');
    }
    items.push({ ...raw, type });
  }
  return { items };
}

// The brain's view of a whole conversation: the resolved history of a
// previous_response_id chain, then this request's items.
export function responsesConversation(body, items) {
  const calls = new Map(items.filter((it) => it.type === 'function_call').map((it) => [it.call_id, it.name]));
  const messages = items.filter((it) => it.type === 'message');
  const system = typeof body.instructions === 'string' && body.instructions !== ''
    ? body.instructions
    : partsText(messages.find((m) => m.role === 'system' || m.role === 'developer')?.content);
  return conversation({
    system,
    userTexts: messages.filter((m) => m.role === 'user').map((m) => partsText(m.content)),
    toolResults: items.filter((it) => it.type === 'function_call_output').map((it) => ({
      id: it.call_id, name: calls.get(it.call_id) ?? '', content: partsText(it.output),
    })),
    tools: (body.tools ?? []).filter((t) => t.type === 'function').map((t) => ({ name: t.name, schema: t.parameters })),
    inputTokens: words(system) + items.reduce((n, it) => n + words(partsText(it.content ?? it.output ?? it.arguments ?? '')), 0),
  });
}

function usage(inputTokens, outputTokens) {
  return {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
}

// The response object, settings echoed as OpenAI does.
function responseObject(body, { id, createdAt, status, output, usage: u }) {
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status,
    background: false,
    completed_at: status === 'completed' ? createdAt + 1 : null,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: body.max_tool_calls ?? null,
    model: body.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    safety_identifier: body.safety_identifier ?? null,
    service_tier: 'default',
    store: body.store ?? true,
    temperature: body.temperature ?? 1.0,
    text: { format: body.text?.format ?? { type: 'text' }, verbosity: body.text?.verbosity ?? 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: (body.tools ?? []).map((t) => (t.type === 'function'
      ? { type: 'function', description: t.description ?? null, name: t.name, parameters: t.parameters ?? null, strict: t.strict ?? true }
      : t)),
    top_logprobs: body.top_logprobs ?? 0,
    top_p: body.top_p ?? 1.0,
    truncation: body.truncation ?? 'disabled',
    usage: u,
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
}

// One answer: the final response object and its output items.
function answer(body, conv, reply) {
  const r = (reply ?? defaultBrain)(conv, body);
  const calls = r.toolCalls ?? [];
  const output = [];
  let outputTokens = 0;
  const message = (text) => {
    output.push({
      id: `msg_${randomHex(50)}`,
      type: 'message',
      status: 'completed',
      content: [{ type: 'output_text', annotations: [], logprobs: [], text }],
      role: 'assistant',
    });
    outputTokens += words(text);
  };
  if (calls.length > 0) {
    // A reply may say something before its calls, in an item of its own,
    // as models do ({ text, toolCalls, preamble: true }).
    if (r.preamble && r.text) message(r.text);
    for (const c of calls) {
      const args = typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments);
      output.push({
        id: `fc_${randomHex(50)}`, type: 'function_call', status: 'completed', arguments: args, call_id: `call_${randomAlnum(24)}`, name: c.name,
      });
      outputTokens += 5 + words(args);
    }
  } else {
    const format = body.text?.format;
    message(format?.type === 'json_schema' ? JSON.stringify(valueForSchema(format.schema, conv.lastUserText)) : r.text);
  }
  const id = `resp_${randomHex(50)}`;
  // A fresh timestamp: now, as OpenAI stamps it.
  const createdAt = Math.floor(Date.now() / 1000);
  return {
    id,
    output,
    response: responseObject(body, { id, createdAt, status: 'completed', output, usage: usage(conv.inputTokens, outputTokens) }),
    pending: responseObject(body, { id, createdAt, status: 'in_progress', output: [], usage: null }),
  };
}

// The SSE events (raw text) of a streamed answer.
export function responseEvents(a) {
  const events = [];
  let seq = 0;
  const emit = (type, fields) => {
    events.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...fields })}\n\n`);
  };
  emit('response.created', { response: a.pending });
  emit('response.in_progress', { response: a.pending });
  a.output.forEach((item, outputIndex) => {
    if (item.type === 'message') {
      const text = item.content[0].text;
      emit('response.output_item.added', { output_index: outputIndex, item: { id: item.id, type: 'message', status: 'in_progress', content: [], role: 'assistant' } });
      emit('response.content_part.added', {
        item_id: item.id, output_index: outputIndex, content_index: 0, part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
      });
      for (const piece of textPieces(text)) {
        emit('response.output_text.delta', {
          item_id: item.id, output_index: outputIndex, content_index: 0, delta: piece, logprobs: [], obfuscation: randomAlnum(16 - Math.min(piece.length, 12)),
        });
      }
      emit('response.output_text.done', { item_id: item.id, output_index: outputIndex, content_index: 0, text, logprobs: [] });
      emit('response.content_part.done', { item_id: item.id, output_index: outputIndex, content_index: 0, part: item.content[0] });
    } else {
      emit('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } });
      for (let i = 0; i < item.arguments.length; i += 6) {
        emit('response.function_call_arguments.delta', {
          item_id: item.id, output_index: outputIndex, delta: item.arguments.slice(i, i + 6), obfuscation: randomAlnum(10),
        });
      }
      emit('response.function_call_arguments.done', { item_id: item.id, output_index: outputIndex, arguments: item.arguments });
    }
    emit('response.output_item.done', { output_index: outputIndex, item });
  });
  emit('response.completed', { response: a.response });
  return events;
}

// POST /v1/responses. `store` maps response id → { response, items }.
export async function createResponse(fake, req, body, res, { store, reply, holdWhen }) {
  if (body === null || typeof body !== 'object') {
    return fake.sendJson(req, res, 400, invalid('We could not parse the JSON body of your request. (HINT: This likely means you aren\'t using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)').error);
  }
  if (typeof body.model !== 'string') {
    const e = invalid('Missing required parameter: \'model\'.', 'model', 'missing_required_parameter');
    return fake.sendJson(req, res, e.status, { error: e.error });
  }
  const parsed = inputItems(body);
  if (parsed.error) return fake.sendJson(req, res, parsed.status, { error: parsed.error });
  let history = [];
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    const previous = store.get(body.previous_response_id);
    if (!previous) {
      const e = invalid(`Previous response with id '${body.previous_response_id}' not found.`, 'previous_response_id', 'previous_response_not_found');
      return fake.sendJson(req, res, e.status, { error: e.error });
    }
    history = previous.items;
  }
  const items = [...history, ...parsed.items];
  const a = answer(body, responsesConversation(body, items), reply);
  if (body.store !== false) store.set(a.id, { response: a.response, items: [...items, ...a.output] });
  const headers = { 'openai-processing-ms': '1', 'x-request-id': `req_${randomHex(32)}` };
  if (body.stream) {
    return fake.sendStream(req, res, responseEvents(a), { hold: holdWhen?.(body) ?? false, headers });
  }
  return fake.sendJson(req, res, 200, a.response, headers);
}

// GET /v1/responses/{id}.
export function getResponse(fake, req, res, id, { store }) {
  const found = store.get(id);
  if (!found) {
    return fake.sendJson(req, res, 404, {
      error: { message: `Response with id '${id}' not found.`, type: 'invalid_request_error', param: null, code: null },
    });
  }
  return fake.sendJson(req, res, 200, found.response, { 'x-request-id': `req_${randomHex(32)}` });
}

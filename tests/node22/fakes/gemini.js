// A fake Gemini API (generativelanguage) on 127.0.0.1:0, for
// `--upstream gemini=URL`, and Vertex AI's Gemini for `--upstream
// vertex=URL` (the same methods under /{v1|v1beta1}/[projects/{p}/
// locations/{l}/]publishers/google/models/{model}:…, with an OAuth
// `Authorization: Bearer` token or, in express mode, an API key):
//
//   POST /{v1beta|v1}/models/{model}:generateContent
//   POST /{v1beta|v1}/models/{model}:streamGenerateContent?alt=sse
//        SSE: `data: {chunk}` events separated by CRLF CRLF, as Google sends
//   POST /{v1beta|v1}/models/{model}:streamGenerateContent
//        without alt=sse: one JSON array, written a chunk at a time
//
//   const fake = await startFakeGemini({ apiKey: 'AIza…' });
//   fake.url; fake.requests; fake.sent; fake.keys; await fake.close();
//
// - The key must come as `x-goog-api-key` or `?key=`; `fake.keys` logs
//   { via: 'header' | 'query', key } per request. None: 403
//   PERMISSION_DENIED; not `apiKey` (when given): 400 INVALID_ARGUMENT.
// - Errors in Gemini's shape {"error": {"code", "message", "status"}}: bad
//   JSON or no `contents` 400 INVALID_ARGUMENT, a model not named gemini-…
//   404 NOT_FOUND, an unknown route 404.
// - Function calling: `tools[].functionDeclarations` (with `parameters` or
//   `parametersJsonSchema`) are offered to the model; its calls come back
//   as `functionCall` parts, `functionResponse` parts are tool results.
// - JSON mode: `generationConfig.responseMimeType: application/json` with a
//   `responseJsonSchema` / `responseSchema` answers JSON of that schema.
// - `responseId` is fresh on every call, so an identical answer was replayed.
import { FakeServer } from '../../node/fakes/fake_server.js';
import { conversation, defaultBrain, randomAlnum, textPieces, valueForSchema, words } from './brain.js';

const STATUS = { 400: 'INVALID_ARGUMENT', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL' };

export function geminiError(fake, req, res, code, message) {
  fake.sendJson(req, res, code, { error: { code, message, status: STATUS[code] ?? 'UNKNOWN' } });
}

// Gemini's OpenAPI types are upper case (Type.STRING); the brain reads
// JSON Schema's lower case.
function lowerTypes(schema) {
  if (schema === null || typeof schema !== 'object') return schema;
  if (Array.isArray(schema)) return schema.map(lowerTypes);
  const out = {};
  for (const [k, v] of Object.entries(schema)) out[k] = k === 'type' && typeof v === 'string' ? v.toLowerCase() : lowerTypes(v);
  return out;
}

const partsText = (parts) => (parts ?? []).map((p) => (typeof p.text === 'string' ? p.text : '')).join('');

export function geminiConversation(body) {
  const contents = body.contents ?? [];
  const system = partsText(body.systemInstruction?.parts ?? (typeof body.systemInstruction === 'string' ? [{ text: body.systemInstruction }] : []));
  const results = [];
  for (const c of contents) {
    for (const p of c.parts ?? []) {
      if (p.functionResponse) {
        results.push({ id: p.functionResponse.id ?? '', name: p.functionResponse.name, content: JSON.stringify(p.functionResponse.response ?? {}) });
      }
    }
  }
  return conversation({
    system,
    userTexts: contents.filter((c) => (c.role ?? 'user') === 'user' && (c.parts ?? []).some((p) => typeof p.text === 'string')).map((c) => partsText(c.parts)),
    toolResults: results,
    tools: (body.tools ?? []).flatMap((t) => t.functionDeclarations ?? []).map((f) => ({
      name: f.name, schema: lowerTypes(f.parametersJsonSchema ?? f.parameters ?? {}),
    })),
    inputTokens: words(system) + contents.reduce((n, c) => n + words(partsText(c.parts)), 0),
  });
}

function usage(promptTokens, outputTokens) {
  return {
    promptTokenCount: promptTokens,
    candidatesTokenCount: outputTokens,
    totalTokenCount: promptTokens + outputTokens,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: promptTokens }],
  };
}

function answer(body, model, reply) {
  const conv = geminiConversation(body);
  const r = (reply ?? defaultBrain)(conv, body);
  const calls = r.toolCalls ?? [];
  let text = r.text;
  const config = body.generationConfig ?? {};
  const schema = config.responseJsonSchema ?? config.responseSchema;
  if (calls.length === 0 && config.responseMimeType === 'application/json' && schema) {
    text = JSON.stringify(valueForSchema(lowerTypes(schema), conv.lastUserText));
  }
  return {
    model,
    responseId: randomAlnum(23),
    calls: calls.map((c) => ({ name: c.name, args: typeof c.arguments === 'string' ? JSON.parse(c.arguments) : c.arguments })),
    text: calls.length > 0 ? null : text,
    promptTokens: conv.inputTokens,
    outputTokens: calls.length > 0 ? calls.length * 5 : words(text),
  };
}

function chunkObject(a, parts, { last }) {
  const candidate = { content: { parts, role: 'model' } };
  if (last) candidate.finishReason = 'STOP';
  candidate.index = 0;
  return {
    candidates: [candidate],
    usageMetadata: last ? usage(a.promptTokens, a.outputTokens) : { promptTokenCount: a.promptTokens, totalTokenCount: a.promptTokens },
    modelVersion: a.model,
    responseId: a.responseId,
  };
}

function wholeObject(a) {
  const parts = a.calls.length > 0 ? a.calls.map((c) => ({ functionCall: { name: c.name, args: c.args } })) : [{ text: a.text }];
  return chunkObject(a, parts, { last: true });
}

// The chunks of a streamed answer: text three words at a time, the last
// chunk with finishReason and usage; function calls in one chunk.
function streamChunks(a) {
  if (a.calls.length > 0) return [wholeObject(a)];
  const pieces = textPieces(a.text);
  const groups = [];
  for (let i = 0; i < pieces.length; i += 3) groups.push(pieces.slice(i, i + 3).join(''));
  if (groups.length === 0) groups.push('');
  return groups.map((g, i) => chunkObject(a, [{ text: g }], { last: i === groups.length - 1 }));
}

// Options: apiKey (the key to insist on), reply(conversation, body).
export async function startFakeGemini({ apiKey, reply } = {}) {
  const keys = [];
  const fake = new FakeServer('gemini', async (req, body, bodyText, res, self) => {
    const url = new URL(req.url, 'http://fake');
    const m = /^\/(v1beta|v1|v1beta1)\/(?:(?:projects\/[^/]+\/locations\/[^/]+\/)?publishers\/google\/)?models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(decodeURIComponent(url.pathname));
    if (!m || req.method !== 'POST') {
      return geminiError(self, req, res, 404, `Method not found: ${req.method} ${url.pathname}`);
    }
    const [, version, model, method] = m;
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const headerKey = req.headers['x-goog-api-key'] ?? bearer;
    const queryKey = url.searchParams.get('key');
    const key = headerKey ?? queryKey;
    keys.push({ via: headerKey !== undefined ? 'header' : queryKey !== null ? 'query' : 'none', key });
    if (!key) {
      return geminiError(self, req, res, 403, 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.');
    }
    if (apiKey !== undefined && key !== apiKey) {
      return geminiError(self, req, res, 400, 'API key not valid. Please pass a valid API key.');
    }
    if (!/^gemini-/.test(model)) {
      return geminiError(self, req, res, 404, `models/${model} is not found for API version ${version}, or is not supported for ${method}. Call ListModels to see the list of available models and their supported methods.`);
    }
    if (body === null || typeof body !== 'object') {
      return geminiError(self, req, res, 400, `Invalid JSON payload received. Unexpected token.\n${bodyText.slice(0, 40)}\n^`);
    }
    if (!Array.isArray(body.contents) || body.contents.length === 0) {
      return geminiError(self, req, res, 400, '* GenerateContentRequest.contents: contents is not specified\n');
    }
    const a = answer(body, model, reply);
    if (method === 'generateContent') {
      const text = `${JSON.stringify(wholeObject(a), null, 2)}\n`;
      self.sent.push({ path: req.url, status: 200, body: text });
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8', 'x-gemini-service-tier': 'standard' });
      return res.end(text);
    }
    const chunks = streamChunks(a);
    if (url.searchParams.get('alt') === 'sse') {
      return self.sendStream(req, res, chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`), {
        headers: { 'content-type': 'text/event-stream' },
      });
    }
    // A JSON array, one element per write, as Google streams it.
    const pieces = chunks.map((c, i) => `${i === 0 ? '[' : ',\r\n'}${JSON.stringify(c, null, 2)}`);
    pieces.push(']');
    return self.sendStream(req, res, pieces, { headers: { 'content-type': 'application/json; charset=UTF-8' } });
  });
  fake.keys = keys;
  return fake.listen();
}

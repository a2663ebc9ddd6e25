// A fake AWS Bedrock Runtime on 127.0.0.1:0, for `--upstream bedrock=URL`:
//
//   POST /model/{modelId}/converse                      Converse
//   POST /model/{modelId}/converse-stream               ConverseStream: an
//        application/vnd.amazon.eventstream of binary frames (prelude, CRCs)
//   POST /model/{modelId}/invoke                        InvokeModel with an
//        Anthropic Messages body (anthropic_version bedrock-2023-05-31)
//   POST /model/{modelId}/invoke-with-response-stream   the same as `chunk`
//        frames whose payload is {"bytes": base64(Anthropic stream event)}
//
//   const fake = await startFakeBedrock({ credentials, region });
//   fake.url; fake.requests; fake.sent; fake.signatures; await fake.close();
//
// Every request must carry a SigV4 signature made with `credentials` for
// this server's own host and the path it received — what AWS checks — or
// it is refused 403 (fake.signatures logs 'valid' | 'invalid' per request).
// A signature made for another host (understudy's) is invalid here, as it
// would be at AWS. Ids, latencies and texts are fresh on every call.
import zlib from 'node:zlib';
import crypto from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { FakeServer } from '../../node/fakes/fake_server.js';
import { conversation, defaultBrain, randomAlnum, textPieces, words } from './brain.js';

class Sha256 {
  constructor(secret) { this.h = secret ? crypto.createHmac('sha256', secret) : crypto.createHash('sha256'); }
  update(d) { this.h.update(d); }
  async digest() { return new Uint8Array(this.h.digest()); }
}

// One event-stream frame: string headers, a JSON payload.
export function frame(headers, payload) {
  const head = Buffer.concat(Object.entries(headers).map(([name, value]) => {
    const n = Buffer.from(name);
    const v = Buffer.from(value);
    const h = Buffer.alloc(1 + n.length + 1 + 2);
    h.writeUInt8(n.length, 0);
    n.copy(h, 1);
    h.writeUInt8(7, 1 + n.length);
    h.writeUInt16BE(v.length, 2 + n.length);
    return Buffer.concat([h, v]);
  }));
  const body = Buffer.from(JSON.stringify(payload));
  const total = 12 + head.length + body.length + 4;
  const prelude = Buffer.alloc(12);
  prelude.writeUInt32BE(total, 0);
  prelude.writeUInt32BE(head.length, 4);
  prelude.writeUInt32BE(zlib.crc32(prelude.subarray(0, 8)), 8);
  const msg = Buffer.concat([prelude, head, body]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(msg), 0);
  return Buffer.concat([msg, crc]);
}

const event = (type, payload) => frame({ ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' },
  { ...payload, p: randomAlnum(1 + Math.floor(Math.random() * 20)) });

async function signatureValid(req, bodyText, credentials, region) {
  const auth = req.headers.authorization ?? '';
  const m = /SignedHeaders=([^,]+), Signature=([0-9a-f]+)/.exec(auth);
  const date = req.headers['x-amz-date'];
  if (!m || !date) return false;
  const headers = {};
  for (const name of m[1].split(';')) headers[name] = req.headers[name] ?? '';
  const url = new URL(req.url, `http://${req.headers.host}`);
  const signer = new SignatureV4({ service: 'bedrock', region, sha256: Sha256, credentials, applyChecksum: true, uriEscapePath: true });
  const signed = await signer.sign({
    method: req.method, protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: req.url.split('?')[0],
    query: Object.fromEntries(url.searchParams), headers, body: bodyText,
  }, { signingDate: new Date(date.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z')) });
  return /Signature=([0-9a-f]+)/.exec(signed.headers.authorization)[1] === m[2];
}

function converseConversation(body) {
  const msgs = body.messages ?? [];
  const texts = (m) => (m.content ?? []).map((b) => b.text ?? '').join('');
  const results = msgs.flatMap((m) => (m.content ?? []).filter((b) => b.toolResult).map((b) => ({
    id: b.toolResult.toolUseId, name: '', content: (b.toolResult.content ?? []).map((c) => c.text ?? JSON.stringify(c.json)).join(''),
  })));
  return conversation({
    system: (body.system ?? []).map((s) => s.text ?? '').join(''),
    userTexts: msgs.filter((m) => m.role === 'user' && texts(m) !== '').map(texts),
    toolResults: results,
    tools: (body.toolConfig?.tools ?? []).map((t) => ({ name: t.toolSpec.name, schema: t.toolSpec.inputSchema?.json })),
    inputTokens: msgs.reduce((n, m) => n + words(texts(m)), 0),
  });
}

function anthropicConversation(body) {
  const text = (c) => (typeof c === 'string' ? c : (c ?? []).map((b) => b.text ?? '').join(''));
  return conversation({
    system: typeof body.system === 'string' ? body.system : '',
    userTexts: (body.messages ?? []).filter((m) => m.role === 'user').map((m) => text(m.content)),
    inputTokens: (body.messages ?? []).reduce((n, m) => n + words(text(m.content)), 0),
  });
}

function converseAnswer(body, reply) {
  const r = (reply ?? defaultBrain)(converseConversation(body), body);
  const calls = (r.toolCalls ?? []).map((c) => ({ toolUseId: `tooluse_${randomAlnum(22)}`, name: c.name, input: c.arguments }));
  const text = calls.length > 0 ? '' : `${r.text} <${randomAlnum(5)}>`;
  return { calls, text, usage: { inputTokens: 10, outputTokens: words(text) + calls.length * 5, totalTokens: 10 + words(text) + calls.length * 5 } };
}

function converseWhole(a) {
  const content = a.calls.length > 0 ? a.calls.map((c) => ({ toolUse: c })) : [{ text: a.text }];
  return { output: { message: { role: 'assistant', content } }, stopReason: a.calls.length > 0 ? 'tool_use' : 'end_turn',
    usage: a.usage, metrics: { latencyMs: 100 + Math.floor(Math.random() * 900) } };
}

function converseFrames(a) {
  const out = [event('messageStart', { role: 'assistant' })];
  if (a.calls.length > 0) {
    a.calls.forEach((c, i) => {
      out.push(event('contentBlockStart', { contentBlockIndex: i, start: { toolUse: { toolUseId: c.toolUseId, name: c.name } } }));
      out.push(event('contentBlockDelta', { contentBlockIndex: i, delta: { toolUse: { input: JSON.stringify(c.input) } } }));
      out.push(event('contentBlockStop', { contentBlockIndex: i }));
    });
  } else {
    for (const p of textPieces(a.text)) out.push(event('contentBlockDelta', { contentBlockIndex: 0, delta: { text: p } }));
    out.push(event('contentBlockStop', { contentBlockIndex: 0 }));
  }
  out.push(event('messageStop', { stopReason: a.calls.length > 0 ? 'tool_use' : 'end_turn' }));
  out.push(event('metadata', { usage: a.usage, metrics: { latencyMs: 100 + Math.floor(Math.random() * 900) } }));
  return out;
}

function anthropicEvents(model, text) {
  const id = `msg_bdrk_${randomAlnum(24)}`;
  const evs = [{ type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }];
  for (const p of textPieces(text)) evs.push({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: p } });
  evs.push({ type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: words(text) } },
    { type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 10, outputTokenCount: words(text), invocationLatency: Math.floor(Math.random() * 900), firstByteLatency: 50 } });
  return { id, evs };
}

// Options: credentials ({accessKeyId, secretAccessKey, sessionToken}),
// region, reply(conversation, body).
export async function startFakeBedrock({ credentials, region = 'us-east-1', reply } = {}) {
  const signatures = [];
  const fake = new FakeServer('bedrock', async (req, body, bodyText, res, self) => {
    const valid = await signatureValid(req, bodyText, credentials, region);
    signatures.push(valid ? 'valid' : 'invalid');
    const requestId = crypto.randomUUID();
    const error = (status, type, message) => self.sendJson(req, res, status, { message }, { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': requestId });
    if (!valid) return error(403, 'InvalidSignatureException', 'The request signature we calculated does not match the signature you provided.');
    const m = /^\/model\/([^/]+)\/(converse|converse-stream|invoke|invoke-with-response-stream)$/.exec(req.url);
    if (req.method !== 'POST' || !m) return error(404, 'UnknownOperationException', 'Unknown operation');
    const model = decodeURIComponent(m[1]);
    if (body === null) return error(400, 'ValidationException', 'Malformed input request, please reformat your input and try again.');
    const stream = (frames) => {
      self.sent.push({ path: req.url, status: 200, events: frames.map((f) => f.toString('base64')), completed: true });
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': requestId });
      for (const f of frames) res.write(f);
      res.end();
    };
    if (m[2] === 'converse' || m[2] === 'converse-stream') {
      if (!Array.isArray(body.messages)) return error(400, 'ValidationException', 'messages: required');
      const a = converseAnswer(body, reply);
      if (m[2] === 'converse') return self.sendJson(req, res, 200, converseWhole(a), { 'x-amzn-requestid': requestId });
      return stream(converseFrames(a));
    }
    const text = `${(reply ?? defaultBrain)(anthropicConversation(body), body).text} <${randomAlnum(5)}>`;
    const { id, evs } = anthropicEvents(model, text);
    if (m[2] === 'invoke') {
      return self.sendJson(req, res, 200, { id, type: 'message', role: 'assistant', model, content: [{ type: 'text', text }],
        stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 10, output_tokens: words(text) } },
      { 'x-amzn-requestid': requestId, 'x-amzn-bedrock-invocation-latency': String(Math.floor(Math.random() * 900)) });
    }
    return stream(evs.map((e) => frame({ ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' },
      { bytes: Buffer.from(JSON.stringify(e)).toString('base64'), p: randomAlnum(7) })));
  });
  fake.signatures = signatures;
  return fake.listen();
}

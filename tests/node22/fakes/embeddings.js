// OpenAI embeddings as a fake upstream serves them (route in
// fakes/openai.js): POST /v1/embeddings.
//
// A vector is a pure function of (model, input, dimensions): float32
// values from a PRNG seeded by a hash of them, normalized to length 1.
// `encoding_format: "base64"` sends the little-endian float32 bytes in
// base64 (what the openai SDK asks for by default); "float" (the API's
// default) sends the same values as JSON numbers, each written with the
// fewest digits that read back as the same float32, as OpenAI does.
// `dimensions` shortens the vector (text-embedding-3-* only).
import { createHash } from 'node:crypto';
import { words } from './brain.js';

const NATIVE_DIMENSIONS = {
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
};

// The float32 vector (a Float32Array) for one input.
export function embeddingVector(model, input, dimensions) {
  const seed = createHash('sha256').update(`${model}\n${dimensions}\n${JSON.stringify(input)}`).digest();
  let state = seed.readUInt32LE(0) || 1;
  const out = new Float32Array(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; ++i) {
    // xorshift32
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    const v = state / 0x100000000 - 0.5;
    out[i] = v;
    norm += v * v;
  }
  norm = Math.sqrt(norm);
  for (let i = 0; i < dimensions; ++i) out[i] = out[i] / norm;
  return out;
}

// The shortest decimal text that reads back as the float32 `v`.
export function float32Text(v) {
  for (let p = 1; p <= 9; ++p) {
    const s = v.toPrecision(p);
    if (Math.fround(Number(s)) === v) return String(Number(s));
  }
  return String(v);
}

function error(fake, req, res, status, message, param = null, code = null) {
  fake.sendJson(req, res, status, { error: { message, type: 'invalid_request_error', param, code } });
}

export function createEmbeddings(fake, req, body, res) {
  if (body === null || typeof body !== 'object') {
    return error(fake, req, res, 400, 'We could not parse the JSON body of your request.');
  }
  if (typeof body.model !== 'string') return error(fake, req, res, 400, 'you must provide a model parameter', 'model');
  const native = NATIVE_DIMENSIONS[body.model];
  if (!native) return error(fake, req, res, 404, `The model \`${body.model}\` does not exist or you do not have access to it.`, null, 'model_not_found');
  let inputs = body.input;
  // A string, a list of strings, a token list, or a list of token lists.
  if (typeof inputs === 'string' || (Array.isArray(inputs) && inputs.length > 0 && typeof inputs[0] === 'number')) inputs = [inputs];
  if (!Array.isArray(inputs) || inputs.length === 0 || inputs.some((x) => !(typeof x === 'string' || Array.isArray(x)))) {
    return error(fake, req, res, 400, '\'$.input\' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.', 'input');
  }
  if (inputs.some((x) => x.length === 0)) {
    return error(fake, req, res, 400, '\'$.input\' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.', 'input');
  }
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') {
    return error(fake, req, res, 400, `Invalid value for 'encoding_format': '${format}'. Supported values are: 'float' and 'base64'.`, 'encoding_format', 'invalid_value');
  }
  let dimensions = native;
  if (body.dimensions !== undefined) {
    if (body.model === 'text-embedding-ada-002') {
      return error(fake, req, res, 400, 'This model does not support specifying dimensions.', 'dimensions');
    }
    if (!Number.isInteger(body.dimensions) || body.dimensions < 1 || body.dimensions > native) {
      return error(fake, req, res, 400, `Invalid value for 'dimensions' = ${body.dimensions}. Must be between 1 and ${native}.`, 'dimensions', 'invalid_value');
    }
    dimensions = body.dimensions;
  }
  // Written by hand: float32 numbers in their short form, and the field
  // order OpenAI uses.
  const data = inputs.map((input, index) => {
    const vector = embeddingVector(body.model, input, dimensions);
    const embedding = format === 'base64'
      ? JSON.stringify(Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64'))
      : `[\n        ${[...vector].map(float32Text).join(',\n        ')}\n      ]`;
    return `    {\n      "object": "embedding",\n      "index": ${index},\n      "embedding": ${embedding}\n    }`;
  });
  const promptTokens = inputs.reduce((n, x) => n + (typeof x === 'string' ? words(x) : x.length), 0);
  const text = `{\n  "object": "list",\n  "data": [\n${data.join(',\n')}\n  ],\n  "model": ${JSON.stringify(body.model)},\n  "usage": {\n    "prompt_tokens": ${promptTokens},\n    "total_tokens": ${promptTokens}\n  }\n}\n`;
  fake.sent.push({ path: req.url, status: 200, body: text });
  res.writeHead(200, { 'content-type': 'application/json', 'openai-model': body.model, 'openai-processing-ms': '1' });
  res.end(text);
}

// What the node22 fakes share beyond tests/node/fakes/fake_server.js: fresh
// random ids, the conversation every fake hands its "model" (the same
// shape for Responses, Chat Completions and Gemini, so one reply function
// scripts an agent over any of them), and answers that satisfy a JSON
// schema (structured output).
//
// The model itself is tests/node/fakes/fake_server.js's `defaultBrain`,
// imported, not copied: it reads { lastUserText, toolResults, tools }.
import { randomBytes } from 'node:crypto';

export { defaultBrain, textPieces, words } from '../../node/fakes/fake_server.js';

// `n` random lower-case hex digits: ids differ on every call, so an answer
// that comes back identical was replayed, not generated again.
export function randomHex(n) {
  return randomBytes(Math.ceil(n / 2)).toString('hex').slice(0, n);
}

// `n` random characters of [A-Za-z0-9] (OpenAI call ids, obfuscation pads).
export function randomAlnum(n) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(n)].map((b) => alphabet[b % alphabet.length]).join('');
}

// The conversation as a fake's model sees it:
//   system        the first system/developer text ('' when none)
//   userTexts     every user message's text, oldest first
//   lastUserText  the last of them ('' when none)
//   toolResults   [{ id, name, content }]: tool outputs, name from the call they answer
//   tools         [{ name, schema }]: the functions offered
//   inputTokens   a word count of everything sent
export function conversation({ system = '', userTexts = [], toolResults = [], tools = [], inputTokens = 0 }) {
  return { system, userTexts, lastUserText: userTexts.at(-1) ?? '', toolResults, tools, inputTokens };
}

// A value of `schema` (the JSON Schema subset structured outputs use):
// every property listed in `required` (else every property), strings
// derived from the property name and `seed`, so the answer visibly belongs
// to its request.
export function valueForSchema(schema, seed = '', key = 'value') {
  const type = Array.isArray(schema?.type) ? schema.type.find((t) => t !== 'null') : schema?.type;
  if (schema?.enum?.length) return schema.enum[0];
  switch (String(type ?? (schema?.properties ? 'object' : 'string')).toLowerCase()) {
    case 'object': {
      const out = {};
      const props = schema.properties ?? {};
      const keys = schema.required ?? Object.keys(props);
      for (const k of keys) out[k] = valueForSchema(props[k] ?? {}, seed, k);
      return out;
    }
    case 'array':
      return [valueForSchema(schema.items ?? {}, seed, key)];
    case 'integer':
    case 'number':
      return seed.length % 97;
    case 'boolean':
      return true;
    default:
      return `${key}: ${seed}`.slice(0, 80);
  }
}

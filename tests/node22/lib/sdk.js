// The SDKs of this suite (openai 7, @openai/agents, @google/genai), from
// tests/node22/node_modules, and clients pointed at an understudy server.
//
// These SDKs need Node >= 22: the suite runs with the Node 22 binary its
// lockfile installs (node_modules/node/bin/node). Loading this file under an
// older Node, or before `npm ci`, fails at once with the fix.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_KEY } from '../../node/lib/record_replay.js';

export const NODE22_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const NODE22_BIN = path.join(NODE22_DIR, 'node_modules', 'node', 'bin', 'node');
export const FIXTURES = path.join(NODE22_DIR, 'fixtures');

export { API_KEY } from '../../node/lib/record_replay.js';
export const GEMINI_KEY = 'AIzaSy-test-SECRET-5678';

if (Number(process.versions.node.split('.')[0]) < 22) {
  throw new Error(
    `tests/node22 needs Node >= 22 (openai 7 and @google/genai do); this is ${process.version}. ` +
      `Run it with ${path.relative(process.cwd(), NODE22_BIN)} --test --test-concurrency=1 '${path.relative(process.cwd(), NODE22_DIR)}/*.test.js' ` +
      '(scripts/setup installs that binary), or npm test there, or ctest -R node22_',
  );
}

async function importDependency(name) {
  if (!fs.existsSync(path.join(NODE22_DIR, 'node_modules', ...name.split('/')))) {
    throw new Error(
      `tests/node22: npm dependency "${name}" is not installed in ${path.join(NODE22_DIR, 'node_modules')}; ` +
        'run scripts/setup (it runs `npm ci` in tests/node22 from the committed lockfile)',
    );
  }
  return import(name);
}

export async function openaiSdk() {
  return (await importDependency('openai')).default;
}

export async function agentsSdk() {
  return importDependency('@openai/agents');
}

export async function genaiSdk() {
  return importDependency('@google/genai');
}

// The openai SDK pointed at `http` (+ `prefix`, e.g. /run/ID). No retries
// unless asked: a retried request would hide a failure.
export async function openaiClient(http, { apiKey = API_KEY, prefix = '', maxRetries = 0, timeout = 15000 } = {}) {
  const OpenAI = await openaiSdk();
  return new OpenAI({ apiKey, baseURL: `${http}${prefix}/v1`, maxRetries, timeout });
}

// @google/genai pointed at `http` (+ `prefix`). `apiVersion` defaults to
// v1beta (the SDK's own default is v1); the key goes in x-goog-api-key, as
// the SDK always sends it. The SDK does not retry unless given retryOptions.
export async function geminiClient(http, { apiKey = GEMINI_KEY, prefix = '', apiVersion = 'v1beta', timeout = 15000 } = {}) {
  const { GoogleGenAI } = await genaiSdk();
  const httpOptions = { baseUrl: `${http}${prefix}`, timeout };
  if (apiVersion !== null) httpOptions.apiVersion = apiVersion;
  return new GoogleGenAI({ apiKey, httpOptions });
}

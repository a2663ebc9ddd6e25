// What the client's tests share: the binary under test, a clean child
// environment, bounded waits and a server started per test file.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startServer } from '../index.js';

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// ctest sets UNDERSTUDY_BIN; by hand, the CMake build's binary.
export const BIN =
  process.env.UNDERSTUDY_BIN || path.resolve(PACKAGE_DIR, '..', '..', 'build', 'cli', 'understudy');

export function requireBinary() {
  if (!fs.existsSync(BIN)) {
    throw new Error(`understudy binary not found at ${BIN}: build it (cmake --build build) or set UNDERSTUDY_BIN`);
  }
}

// The environment for the server: nothing of the developer's that could
// change what a test sees (UNDERSTUDY_*, provider settings, proxies).
export function cleanEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^UNDERSTUDY_/.test(k) || /^(OPENAI|ANTHROPIC)_/.test(k) || /^(http|https|all|no)_proxy$/i.test(k)) continue;
    env[k] = v;
  }
  return env;
}

// `understudy serve` on loopback ports with a fresh database.
export function serve(args = []) {
  requireBinary();
  return startServer({ binary: BIN, args, env: cleanEnv() });
}

// `promise`, or a rejection naming `what` after `ms`.
export async function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// Collects an async iterable.
export async function collect(iterable) {
  const out = [];
  for await (const item of iterable) out.push(item);
  return out;
}

// Shared test harness: the real `understudy` binary as a child process,
// CLI runs, temp dirs, bounded waits and the SDK import guard.
//
// Every wait here has a deadline; nothing sleeps for a fixed time. Children
// get the parent's environment minus anything that could change what a test
// sees (UNDERSTUDY_*, provider base URLs and keys, proxies), and every child
// still running when the test process exits is killed.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const NODE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const FIXTURES = path.join(NODE_DIR, 'fixtures');

// The binary under test. ctest sets UNDERSTUDY_BIN; a developer running
// `node --test tests/node/` by hand gets the CMake build's binary.
export const BIN =
  process.env.UNDERSTUDY_BIN || path.resolve(NODE_DIR, '..', '..', 'build', 'cli', 'understudy');

// Imports an npm dependency of the suite (`openai`, `@anthropic-ai/sdk`),
// failing with the fix when tests/node/node_modules was never installed.
export async function importDependency(name) {
  const dir = path.join(NODE_DIR, 'node_modules', ...name.split('/'));
  if (!fs.existsSync(dir)) {
    throw new Error(
      `tests/node: npm dependency "${name}" is not installed in ${path.join(NODE_DIR, 'node_modules')}; ` +
        'run scripts/setup (it runs `npm ci` in tests/node from the committed lockfile)',
    );
  }
  return import(name);
}

export async function openaiSdk() {
  return (await importDependency('openai')).default;
}

export async function anthropicSdk() {
  return (await importDependency('@anthropic-ai/sdk')).default;
}

// Fails before any test runs when the binary is missing, naming the fix.
export function requireBinary() {
  if (!fs.existsSync(BIN)) {
    throw new Error(
      `understudy binary not found at ${BIN}: build it (ninja -C build understudy) or set UNDERSTUDY_BIN`,
    );
  }
}

// The environment for children: no developer settings leak in.
export function cleanEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^UNDERSTUDY_/.test(k)) continue;
    // Provider keys and endpoints of the machine never reach a test's processes.
    if (/^(OPENAI|ANTHROPIC|AWS|AZURE|GEMINI|GOOGLE|CO|OLLAMA)_/.test(k)) continue;
    if (/^(http|https|all|no)_proxy$/i.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

// A fresh directory under the system temp dir, removed by `t.after` unless
// UNDERSTUDY_KEEP_TMP is set (then its path is printed for debugging).
export function tempDir(t, prefix = 'understudy-node-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => {
    if (process.env.UNDERSTUDY_KEEP_TMP) {
      t.diagnostic(`kept ${dir}`);
    } else {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
  return dir;
}

// Polls `condition` (sync or async) until it returns a truthy value, which
// is returned; throws naming `what` when `timeoutMs` passes first.
export async function waitFor(condition, { timeoutMs = 5000, intervalMs = 10, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

// `promise`, or a rejection naming `what` after `timeoutMs`.
export async function withTimeout(promise, timeoutMs, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms: ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const live = new Set();
process.on('exit', () => {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
});

function track(child) {
  live.add(child);
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve(signal ? `signal ${signal}` : code);
    });
  });
  return exited;
}

// `understudy serve` on 127.0.0.1:0 (gRPC and HTTP), stderr to a file in
// `dir`. Resolves once the first stdout line names the bound addresses.
export class Server {
  static async start(t, dir, { db = 'understudy.db', args = [], name = 'serve', logLevel = 'info', env = {} } = {}) {
    const server = new Server();
    server.db = path.join(dir, db);
    server.stderrPath = path.join(dir, `${name}.${Date.now()}.${Math.random().toString(16).slice(2, 6)}.stderr`);
    const stderr = fs.openSync(server.stderrPath, 'w');
    const argv = [
      '--log-level', logLevel, 'serve', '--db', server.db,
      '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0', ...args,
    ];
    server.argv = argv;
    server.child = spawn(BIN, argv, { stdio: ['ignore', 'pipe', stderr], env: cleanEnv(env) });
    fs.closeSync(stderr);
    server.exited = track(server.child);
    t.after(() => server.kill());

    let buffered = '';
    const line = new Promise((resolve, reject) => {
      server.child.stdout.setEncoding('utf8');
      server.child.stdout.on('data', (data) => {
        buffered += data;
        const nl = buffered.indexOf('\n');
        if (nl >= 0) resolve(buffered.slice(0, nl));
      });
      server.exited.then((code) =>
        reject(new Error(`understudy serve exited (${code}) before serving: ${server.stderr()}`)),
      );
      server.child.once('error', reject);
    });
    const first = await withTimeout(line, 10000, `understudy ${argv.join(' ')} to print its address`);
    const m = /^understudy serving grpc=(\S+) http=(\S+) db=(\S+)(?: run=(\S+))?$/.exec(first);
    if (!m) throw new Error(`unexpected first stdout line: ${JSON.stringify(first)}`);
    server.grpc = m[1];
    server.http = `http://${m[2]}`;
    server.run = m[4] || '';
    return server;
  }

  // The server's log so far.
  stderr() {
    try {
      return fs.readFileSync(this.stderrPath, 'utf8');
    } catch {
      return '';
    }
  }

  // SIGTERM, then the exit code (bounded). The default run ends and a
  // recorded session closes on the way out.
  async stop(timeoutMs = 15000) {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.exited;
    this.child.kill('SIGTERM');
    return withTimeout(this.exited, timeoutMs, `understudy serve to exit on SIGTERM; log:\n${this.stderr()}`);
  }

  kill() {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

// Runs `understudy ARGS` (or any program with `{ program }`) to completion
// with a deadline. Resolves { code, stdout, stderr }; code is a number, or
// "signal SIG".
export async function run(args, { program = BIN, env = {}, timeoutMs = 20000, cwd } = {}) {
  const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv(env), cwd });
  const exited = track(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const spawnError = once(child, 'error').then(([e]) => {
    throw e;
  });
  try {
    const code = await withTimeout(Promise.race([exited, spawnError]), timeoutMs, `${program} ${args.join(' ')}`);
    // 'exit' may precede the end of the pipes.
    await Promise.all([
      child.stdout.readableEnded ? null : once(child.stdout, 'end'),
      child.stderr.readableEnded ? null : once(child.stderr, 'end'),
    ]);
    return { code, stdout, stderr };
  } catch (e) {
    child.kill('SIGKILL');
    e.message += `\nstdout: ${stdout}\nstderr: ${stderr}`;
    throw e;
  }
}

// `understudy export NAME --db DB`: the raw JSONL and its parsed lines.
export async function exportSession(db, session) {
  const r = await run(['export', session, '--db', db]);
  if (r.code !== 0) throw new Error(`export ${session} exited ${r.code}: ${r.stderr}`);
  const lines = r.stdout.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  return { raw: r.stdout, header: lines[0].header, exchanges: lines.slice(1).map((l) => l.exchange) };
}

// proto3 JSON writes `bytes` fields as base64: the text of a native body.
export function bytesField(b64) {
  return b64 === undefined ? '' : Buffer.from(b64, 'base64').toString('utf8');
}

// Collects a Node readable (or web ReadableStream via fetch) into a Buffer.
export async function readAll(body) {
  const parts = [];
  for await (const part of body) parts.push(Buffer.from(part));
  return Buffer.concat(parts);
}

// Splits SSE text into events: { event, data, raw }. Comments are skipped.
export function parseSse(text) {
  const events = [];
  for (const block of text.split(/\n\n/)) {
    if (block.trim() === '') continue;
    let event = '';
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      if (line.startsWith('event:')) event = line.slice(6).trim();
      if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length > 0) events.push({ event, data: data.join('\n'), raw: `${block}\n\n` });
  }
  return events;
}

// The record-then-replay journey of tests/node/lib/record_replay.js, for
// this suite's fakes and SDKs: that helper starts tests/node's chat-only
// fake and openai 6 clients, so the few lines of the journey are repeated
// here with the fake and the upstream flag as parameters. Everything else
// (the process harness, temp dirs, export, raw HTTP) is tests/node/lib's.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Server, run, tempDir } from '../../node/lib/harness.js';

// Runs `scenario({ http, phase, fake, server })` twice: against a server
// in record mode forwarding `--upstream NAME=FAKE` to a fresh fake from
// `startFake()`, then — the fake closed — against a server replaying the
// session strictly (`--mode none`, the same flags), both at `logLevel`.
// Resolves { recorded, replayed, fake, dir, db, session, recordServer,
// replayServer }; both servers exited 0.
export async function recordThenReplay(t, { upstream, startFake, session = 'golden', args = [], logLevel = 'info' }, scenario) {
  const dir = tempDir(t, 'understudy-node22-');
  const fake = await startFake();
  t.after(() => fake.close());
  const flags = ['--session', session, '--upstream', `${upstream}=${fake.url}`, ...args];

  const rec = await Server.start(t, dir, { name: 'record', logLevel, args: ['--mode', 'record', ...flags] });
  const recorded = await scenario({ http: rec.http, phase: 'record', fake, server: rec });
  assert.equal(await rec.stop(), 0, `record server exit code; log:\n${rec.stderr()}`);
  await fake.close();

  const rep = await Server.start(t, dir, { name: 'replay', logLevel, args: ['--mode', 'none', ...flags] });
  const replayed = await scenario({ http: rep.http, phase: 'replay', fake, server: rep });
  assert.equal(await rep.stop(), 0, `replay server exit code; log:\n${rep.stderr()}`);
  return { recorded, replayed, fake, dir, db: rec.db, session, recordServer: rec, replayServer: rep };
}

// A stopped server's run, as `understudy trace RUN --json` prints it: one
// parsed event per line, and the raw text.
export async function traceOf(server) {
  assert.ok(server.run, 'the ready line names the default run');
  const r = await run(['trace', server.run, '--json', '--db', server.db]);
  assert.equal(r.code, 0, r.stderr);
  return { raw: r.stdout, events: r.stdout.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l)) };
}

export const attr = (event, name) => event.attributes?.[name];

// Every DB file's bytes that exist right now (main, -wal, -shm, -journal).
export function dbBytes(db) {
  const files = {};
  for (const suffix of ['', '-wal', '-shm', '-journal']) {
    if (fs.existsSync(db + suffix)) files[db + suffix] = fs.readFileSync(db + suffix);
  }
  return files;
}

// Fails naming the file when `needle` occurs in any of `haystacks`
// ({ name: Buffer | string }).
export function assertNowhere(what, haystacks, needle) {
  for (const [name, bytes] of Object.entries(haystacks)) {
    assert.equal(Buffer.from(bytes).indexOf(needle), -1, `${what}: "${needle}" found in ${name}`);
  }
}

// POSTs `body` (text) and reads the whole answer, within `timeoutMs`:
// { status, headers, text, json }.
export async function post(url, body, headers = {}, { timeoutMs = 15000 } = {}) {
  const res = await fetch(url, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // asserted by the caller
  }
  return { status: res.status, headers: res.headers, text, json };
}

// `understudy record -- AGENT` with every `fakes` entry ({ name: fake }) as
// `--upstream NAME=URL`, then — the fakes closed and each port held by a
// TCP tripwire — `understudy replay -- AGENT` three times. `env` is the
// agent's environment when recording, `replayEnv` when replaying. Resolves
// { recorded, replays: [3 results], wires: { name: tripwire }, db }; each
// run exited 0. The tripwires are left for the caller to assert on.
export async function recordThenReplayThrice(t, { fakes, agent, session, env, replayEnv, args = [] }) {
  const { tcpTripwire } = await import('./mcp.js');
  const dir = tempDir(t, 'understudy-node22-');
  const db = `${dir}/${session}.db`;
  const upstreams = Object.entries(fakes).flatMap(([name, fake]) => ['--upstream', `${name}=${fake.url}`]);
  const recorded = await run(['record', '--db', db, '--session', session, ...upstreams, ...args, '--', ...agent],
    { env, timeoutMs: 60000 });
  assert.equal(recorded.code, 0, `record: ${recorded.stderr}`);
  const wires = {};
  for (const [name, fake] of Object.entries(fakes)) {
    const port = Number(new URL(fake.url).port);
    await fake.close();
    wires[name] = await tcpTripwire(t, port);
  }
  const replays = [];
  for (let i = 0; i < 3; i += 1) {
    const r = await run(['replay', '--db', db, '--session', session, ...args, '--', ...agent],
      { env: replayEnv, timeoutMs: 60000 });
    assert.equal(r.code, 0, `replay ${i + 1}: ${r.stderr}`);
    replays.push(r);
  }
  return { recorded, replays, wires, db };
}

// The client's own surface: starting and stopping the binary, runs,
// useUnderstudy with a non-node:test context, errors, the proto directory.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Client, PROTO_FILES, UnderstudyError, assertions, connect, loadProtos, startServer, useUnderstudy } from '../index.js';
import { BIN, cleanEnv, requireBinary, serve } from '../test_support/env.js';

const SCENARIO = `schema: understudy.scenario/v1
name: hello
rules:
  - name: hello
    respond: {content: "hello"}
`;

test('startServer prints where it serves; stop() ends it with 0', async (t) => {
  const server = await serve();
  t.after(() => server.kill());
  assert.match(server.grpc, /^127\.0\.0\.1:\d+$/);
  assert.match(server.http, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.ok(server.db.endsWith('understudy.db'));
  const client = server.client();
  assert.equal(server.client(), client, 'one client per server');
  const run = await client.startRun({ scenarioText: SCENARIO, runId: 'client-test-1' });
  assert.equal(run.id, 'client-test-1');
  assert.equal((await client.getRun(run.id)).state, 'RUN_STATE_ACTIVE');
  const summary = await client.endRun(run.id);
  assert.equal(summary.run.state, 'RUN_STATE_ENDED');
  assert.equal(await server.stop(), 0, server.stderr());
  assert.ok(!fs.existsSync(path.dirname(server.db)), 'its temp database is removed');
});

test('startServer with a db keeps it, and passes extra args', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'understudy-client-test-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  requireBinary();
  const db = path.join(dir, 'kept.db');
  const ready = path.join(dir, 'ready.json');
  const server = await startServer({ binary: BIN, db, args: ['--ready-file', ready], env: cleanEnv() });
  t.after(() => server.kill());
  assert.equal(server.db, db);
  assert.equal(JSON.parse(fs.readFileSync(ready, 'utf8')).grpc, server.grpc);
  assert.equal(await server.stop(), 0);
  assert.ok(fs.existsSync(db));
  assert.match(server.stderr(), /\S/, 'stderr is kept');
});

test('startServer fails fast and says why', async () => {
  await assert.rejects(
    startServer({ binary: '/nonexistent/understudy', timeoutMs: 5000 }),
    /cannot start \/nonexistent\/understudy/,
  );
  requireBinary();
  await assert.rejects(
    startServer({ binary: BIN, args: ['--no-such-flag'], env: cleanEnv(), timeoutMs: 5000 }),
    (e) => /exited \(\d+\) before serving/.test(e.message) && /no-such-flag/.test(e.message),
  );
});

test('startServer stops waiting for a silent program', async () => {
  // A program that never prints its address: the first-line wait is bounded.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'understudy-client-test-'));
  try {
    const script = path.join(dir, 'silent.sh');
    fs.writeFileSync(script, '#!/bin/sh\nexec sleep 30\n', { mode: 0o755 });
    const started = Date.now();
    await assert.rejects(startServer({ binary: script, timeoutMs: 300 }), /timed out after 300 ms/);
    assert.ok(Date.now() - started < 5000);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('useUnderstudy works with any object that has after(), and ends the run', async () => {
  const server = await serve();
  try {
    const hooks = [];
    const ctx = { after: (fn) => hooks.push(fn) };
    const us = await useUnderstudy(ctx, { server, scenarioText: SCENARIO });
    assert.equal(hooks.length, 1);
    assert.equal(us.env.OPENAI_BASE_URL, us.openaiBaseURL);
    assert.equal(us.env.UNDERSTUDY_RUN, us.runId);
    assert.equal(us.baseURL('executor'), `${server.http}/run/${us.runId}/agent/executor/v1`);

    const r = await fetch(`${us.baseURL('executor')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(r.status, 200);
    await us.assertAgentSequence(['executor']);
    await us.assertCount('==', 1, { kind: 'exchange', agent: 'executor' });

    for (const fn of hooks) await fn();
    const run = await server.client().getRun(us.runId);
    assert.equal(run.state, 'RUN_STATE_ENDED');
    assert.equal(us.summary.run.id, us.runId);
    // end() again is the same summary, not a second EndRun.
    assert.equal(await us.end(), us.summary);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('useUnderstudy reads UNDERSTUDY_ADDR / UNDERSTUDY_HTTP without a server', async (t) => {
  const server = await serve();
  const saved = { addr: process.env.UNDERSTUDY_ADDR, http: process.env.UNDERSTUDY_HTTP };
  process.env.UNDERSTUDY_ADDR = server.grpc;
  process.env.UNDERSTUDY_HTTP = server.http;
  t.after(() => {
    for (const [k, v] of [['UNDERSTUDY_ADDR', saved.addr], ['UNDERSTUDY_HTTP', saved.http]]) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  const us = await useUnderstudy(t, { scenarioText: SCENARIO });
  // after() hooks run in the order they were added: the run ends (the hook
  // useUnderstudy added) before the server stops.
  t.after(() => server.stop());
  assert.equal(us.openaiBaseURL, `${server.http}/run/${us.runId}/v1`);
  assert.ok(us.client instanceof Client);
  assert.equal((await us.query({ kind: 'run_started' })).length, 1);
});

test('useUnderstudy refuses a context without after()', async () => {
  await assert.rejects(useUnderstudy({}, {}), /t needs an after\(fn\) method/);
});

test('startRun: modes, strict, and the server\'s refusals', async (t) => {
  const server = await serve();
  t.after(() => server.stop());
  const c = server.client();
  const run = await c.startRun({ mode: 'replay', scenarioText: SCENARIO, strict: false });
  assert.equal(run.strict, false);
  await c.endRun(run.id);

  await assert.rejects(c.startRun({ mode: 'bogus' }), /mode: "bogus" is not one of record, replay/);
  await assert.rejects(c.startRun({ scenarioText: 'schema: understudy.scenario/v1\nrules: [{name: x}]\n' }), (e) => {
    assert.ok(e instanceof UnderstudyError);
    assert.equal(e.codeName, 'INVALID_ARGUMENT');
    assert.equal(e.rpc, 'StartRun');
    assert.match(e.message, /rules\[0\]/);
    return true;
  });
  await assert.rejects(c.startRun({ mode: 'record', session: 's' }), (e) =>
    e.codeName === 'FAILED_PRECONDITION' && /^record mode needs an upstream model/.test(e.message));
  await assert.rejects(c.endRun('no-such-run'), (e) => e.codeName === 'NOT_FOUND' && /no-such-run/.test(e.message));
});

test('startRun: traceLevel summary keeps the start and the end, off keeps nothing', async (t) => {
  const server = await serve();
  t.after(() => server.stop());
  const c = server.client();
  const request = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
  const kept = {};
  for (const traceLevel of ['summary', 'off', 'full']) {
    const run = await c.startRun({ scenarioText: SCENARIO, traceLevel });
    assert.equal(run.traceLevel, `TRACE_LEVEL_${traceLevel.toUpperCase()}`);
    const r = await fetch(`${server.http}/run/${run.id}/agent/executor/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    assert.equal(r.status, 200);
    const summary = await c.endRun(run.id);
    assert.equal(summary.run.served, 1, 'the counts are kept at every level');
    kept[traceLevel] = (await c.query(run.id)).map((e) => e.kind);
  }
  assert.deepEqual(kept.summary, ['run_started', 'run_ended']);
  assert.deepEqual(kept.off, []);
  assert.ok(kept.full.includes('exchange'), kept.full.join());
  await assert.rejects(c.startRun({ scenarioText: SCENARIO, traceLevel: 'loud' }),
    /traceLevel: "loud" is not one of full, summary, off/);
});

// Every field of StartRunRequest, as the proto defines it, is an option of
// startRun (and of useUnderstudy) that reaches the request: a field added
// to the proto fails here until the client takes it.
test('startRun and useUnderstudy take every StartRunRequest field', async () => {
  const fields = loadProtos().StartRunRequest.type.field.map((f) => f.name.replace(/_([a-z])/g, (_, c) => c.toUpperCase()));
  const options = {
    mode: 'new', session: 'golden@2', strict: false, runId: 'every-field', scenario: 'rate-limit',
    scenarioText: 'schema: understudy.scenario/v1', repeat: true, traceLevel: 'summary',
  };
  assert.deepEqual(Object.keys(options).sort(), [...fields].sort(), 'this test names every field');
  const sent = [];
  const fake = { StartRun: (request, _opts, done) => { sent.push(request); done(null, { id: request.runId }); } };
  const c = connect('127.0.0.1:1');
  const real = c.runs;
  try {
    c.runs = fake;
    await c.startRun(options);
    await useUnderstudy({ after() {} }, { server: { grpc: '127.0.0.1:1', client: () => c }, ...options });
  } finally {
    c.runs = real;
    c.close();
  }
  assert.equal(sent.length, 2);
  for (const request of sent) {
    for (const field of fields) {
      assert.ok(request[field] !== undefined && request[field] !== '' && request[field] !== 0, `${field} not sent: ${JSON.stringify(request)}`);
    }
    assert.equal(request.repeat, true);
    assert.equal(request.strict, false);
    assert.equal(request.mode, 'RUN_MODE_NEW');
    assert.equal(request.traceLevel, 'TRACE_LEVEL_SUMMARY');
  }
});

test('startRun: repeat reaches the server', async (t) => {
  const server = await serve();
  t.after(() => server.stop());
  const c = server.client();
  const repeating = await c.startRun({ scenarioText: SCENARIO, repeat: true });
  assert.equal(repeating.repeat, true);
  const once = await c.startRun({ scenarioText: SCENARIO });
  assert.equal(once.repeat, false);
  await c.endRun(repeating.id);
  await c.endRun(once.id);
});

test('a client of a server that is not there fails within its deadline', async () => {
  const c = connect('127.0.0.1:1', { deadlineMs: 1000 });
  try {
    const started = Date.now();
    await assert.rejects(c.startRun({ scenarioText: SCENARIO }), (e) =>
      ['UNAVAILABLE', 'DEADLINE_EXCEEDED'].includes(e.codeName));
    assert.ok(Date.now() - started < 5000);
  } finally {
    c.close();
  }
});

test('assertion builders make the proto\'s messages', () => {
  assert.deepEqual(assertions.agentSequence(['a', 'b'], { match: 'prefix', collapseRepeats: true, name: 'n' }), {
    name: 'n', agentSequence: { agents: ['a', 'b'], match: 'SEQUENCE_MATCH_PREFIX', collapseRepeats: true },
  });
  assert.deepEqual(assertions.toolCalls(['read', { name: 'write', arguments: { path: 'x' } }], { agent: 'e' }).toolCalls, {
    agent: 'e',
    calls: [{ name: 'read', arguments: '' }, { name: 'write', arguments: '{"path":"x"}' }],
    match: 'SEQUENCE_MATCH_EXACT',
  });
  assert.deepEqual(assertions.count('>=', 2, { kind: 'miss' }).count, {
    filter: { kinds: ['miss'] }, comparison: 'COMPARISON_GE', n: 2,
  });
  assert.throws(() => assertions.phaseTransitions(['a'], { match: 'some' }), /match: "some" is not one of exact/);
  assert.throws(() => assertions.toolCalls([{ name: 'x', arguments: [1] }]), /calls\[0\]\.arguments/);
});

// Runs `connect('127.0.0.1:1')` from the index.js at `index` in a new node
// process with `env`; its stdout is 'loaded' or the error's message.
function connectIn(index, env) {
  const script = `import(${JSON.stringify(index)}).then((m) => {
    try { m.connect('127.0.0.1:1').close(); console.log('loaded'); } catch (e) { console.log(e.message); }
  });`;
  return spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8', timeout: 20000 });
}

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PACKAGE_DIR = path.resolve(HERE, '..');

function envWithoutProtoDir() {
  const env = { ...process.env };
  delete env.UNDERSTUDY_PROTO_DIR;
  return env;
}

test('the protos load from UNDERSTUDY_PROTO_DIR', () => {
  const index = path.join(PACKAGE_DIR, 'index.js');
  const bad = connectIn(index, { ...process.env, UNDERSTUDY_PROTO_DIR: '/nonexistent/proto' });
  assert.match(
    bad.stdout,
    /understudy proto not found at \/nonexistent\/proto\/understudy\/v1\/understudy\.proto: UNDERSTUDY_PROTO_DIR=\/nonexistent\/proto has no understudy\/v1\/understudy\.proto/,
  );
  const good = connectIn(index, { ...process.env, UNDERSTUDY_PROTO_DIR: path.resolve(PACKAGE_DIR, '..', '..', 'proto') });
  assert.equal(good.stdout.trim(), 'loaded', good.stderr);
});

test('by default the protos are read from the package\'s own proto/', () => {
  const script = `import(${JSON.stringify(path.join(PACKAGE_DIR, 'index.js'))}).then((m) => console.log(m.protoDir()));`;
  const out = spawnSync(process.execPath, ['-e', script], { env: envWithoutProtoDir(), encoding: 'utf8', timeout: 20000 });
  assert.equal(out.stdout.trim(), path.join(PACKAGE_DIR, 'proto'), out.stderr);
  for (const rel of PROTO_FILES) {
    assert.ok(fs.existsSync(path.join(PACKAGE_DIR, 'proto', rel)), `${rel} is not in ${PACKAGE_DIR}/proto`);
  }
  assert.equal(connectIn(path.join(PACKAGE_DIR, 'index.js'), envWithoutProtoDir()).stdout.trim(), 'loaded');
});

test('a package without its protos names itself and the missing file', (t) => {
  // The package as npm would install it with proto/ left out of "files".
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'understudy-client-noproto-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, 'package.json'), 'utf8'));
  for (const f of ['package.json', ...manifest.files.filter((f) => !f.startsWith('proto/'))]) {
    fs.copyFileSync(path.join(PACKAGE_DIR, f), path.join(dir, f));
  }
  fs.symlinkSync(path.join(PACKAGE_DIR, 'node_modules'), path.join(dir, 'node_modules'));
  const out = connectIn(path.join(dir, 'index.js'), envWithoutProtoDir());
  assert.equal(
    out.stdout.trim(),
    `understudy proto not found at ${path.join(dir, 'proto', 'understudy', 'v1', 'understudy.proto')}: ` +
      `proto file understudy/v1/understudy.proto missing from the @understudy/client package at ${dir} ` +
      '(its package.json "files" must list proto/; or set UNDERSTUDY_PROTO_DIR to a directory holding understudy/v1/*.proto)',
    out.stderr,
  );
  // One of the files understudy.proto imports, missing from a protoDir given.
  fs.mkdirSync(path.join(dir, 'given', 'understudy', 'v1'), { recursive: true });
  fs.copyFileSync(
    path.join(PACKAGE_DIR, 'proto', 'understudy', 'v1', 'understudy.proto'),
    path.join(dir, 'given', 'understudy', 'v1', 'understudy.proto'),
  );
  assert.throws(
    () => new Client('127.0.0.1:1', { protoDir: path.join(dir, 'given') }),
    new RegExp(`the protoDir given \\(${path.join(dir, 'given')}\\) has no understudy/v1/completion\\.proto`),
  );
});

// The npm package as a user gets it: run by packaging/verify/npm.sh in a
// project that installed the @understudy/client tarball, with a clean
// environment and nothing of the repository on any path.
//
//   1. The installed package is a copy under ./node_modules and holds every
//      file it needs: what its package.json names (main, types, exports)
//      and the .proto files, understudy.proto and what it imports.
//   2. Its json_reporter loads and reports a test.
//   3. Its startServer() starts the installed server ($UNDERSTUDY_BIN) with
//      a fake OpenAI upstream on loopback; one chat completion is recorded
//      through it with the official openai SDK, then replayed with the
//      upstream closed: the same answer.
//   4. Its assertion helpers check the replay's trace (Traces.Assert), and
//      one that must fail does, with the server's report.
//
// Exits 0 when all of it holds; otherwise 1 with a message naming what was
// missing or wrong.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE = '@understudy/client';
const SESSION = 'npm-smoke';
const AGENT = 'packager';
const DEADLINE_MS = 45000;

let step = 'starting';
const watchdog = setTimeout(() => fail(`timed out after ${DEADLINE_MS} ms while ${step}`), DEADLINE_MS);
watchdog.unref();

function fail(message) {
  process.stderr.write(`npm smoke: FAILED: ${message}\n`);
  process.exit(1);
}

function say(message) {
  process.stderr.write(`npm smoke: ${message}\n`);
}

// ---------------------------------------------------------------------------
// 1. What the package holds
// ---------------------------------------------------------------------------

function installedPackageDir() {
  let entry;
  try {
    entry = fileURLToPath(import.meta.resolve(PACKAGE));
  } catch (error) {
    fail(`${PACKAGE} does not resolve from ${process.cwd()}: ${error.message}`);
  }
  const dir = path.dirname(entry);
  const expected = path.join(fs.realpathSync(process.cwd()), 'node_modules', ...PACKAGE.split('/'));
  if (fs.realpathSync(dir) !== expected) {
    fail(`${PACKAGE} resolved to ${dir} (${fs.realpathSync(dir)}), not to the installed copy ${expected}`);
  }
  return dir;
}

// Every file the package.json points at: main, types and exports targets.
function declaredFiles(manifest) {
  const out = new Set(['package.json']);
  const add = (target) => {
    if (typeof target === 'string') out.add(path.posix.normalize(target));
    else if (target && typeof target === 'object') Object.values(target).forEach(add);
  };
  add(manifest.main);
  add(manifest.types);
  add(manifest.exports);
  return [...out];
}

// understudy.proto and, transitively, every file it imports (google's
// well-known types come with the loader).
function protoClosure(protoDir) {
  const seen = new Set();
  const missing = [];
  const queue = ['understudy/v1/understudy.proto'];
  while (queue.length) {
    const rel = queue.shift();
    if (seen.has(rel)) continue;
    seen.add(rel);
    const file = path.join(protoDir, ...rel.split('/'));
    if (!fs.existsSync(file)) {
      missing.push(rel);
      continue;
    }
    for (const m of fs.readFileSync(file, 'utf8').matchAll(/^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;/gm)) {
      if (!m[1].startsWith('google/protobuf/')) queue.push(m[1]);
    }
  }
  return { files: [...seen], missing };
}

async function checkContents(dir) {
  const problems = [];
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  for (const rel of declaredFiles(manifest)) {
    if (!fs.existsSync(path.join(dir, rel))) {
      problems.push(`file ${rel} (named in its package.json) missing from the installed ${PACKAGE} package at ${dir}`);
    }
  }
  const protos = protoClosure(path.join(dir, 'proto'));
  for (const rel of protos.missing) {
    problems.push(`proto file ${rel} missing from the installed ${PACKAGE} package at ${dir} (expected at proto/${rel})`);
  }
  if (problems.length) {
    // What a user would see: the client's own error, if it has one.
    try {
      const client = await import(PACKAGE);
      client.connect('127.0.0.1:1').close();
    } catch (error) {
      problems.push(`the installed client itself says: ${error.message}`);
    }
    fail(problems.join('\n  '));
  }
  return { manifest, protos: protos.files };
}

// ---------------------------------------------------------------------------
// 3. A fake OpenAI upstream
// ---------------------------------------------------------------------------

// Answers POST /v1/chat/completions with one completion whose text holds a
// nonce of this process, so a replayed answer can only come from the
// recording.
async function startFakeOpenAI() {
  const nonce = crypto.randomUUID();
  let served = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `the fake serves POST /v1/chat/completions, not ${req.method} ${req.url}` } }));
        return;
      }
      const body = JSON.parse(raw);
      served += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        id: `chatcmpl-smoke-${nonce}`,
        object: 'chat.completion',
        created: 1700000000,
        model: body.model,
        choices: [{
          index: 0,
          message: { role: 'assistant', content: `Packaged and shipped (${nonce}).`, refusal: null },
          logprobs: null,
          finish_reason: 'stop',
        }],
        usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 },
      }));
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    served: () => served,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

// A stand-in for a test runner's context: useUnderstudy() registers its
// cleanup here, and runAfter() runs it.
function testContext() {
  const hooks = [];
  return {
    after: (fn) => hooks.push(fn),
    runAfter: async () => {
      for (const fn of hooks.reverse()) await fn();
    },
  };
}

async function ask(OpenAI, baseURL) {
  const sdk = new OpenAI({ apiKey: 'sk-smoke-not-a-key', baseURL, maxRetries: 0, timeout: 15000 });
  return sdk.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: 'You are the packager. Answer in one sentence.' },
      { role: 'user', content: 'Is the package installed?' },
    ],
  });
}

// ---------------------------------------------------------------------------

async function main() {
  step = 'checking the installed package';
  const dir = installedPackageDir();
  const { manifest, protos } = await checkContents(dir);
  say(`${PACKAGE}@${manifest.version} installed at ${dir} with ${protos.join(', ')}`);

  step = 'importing the package';
  const client = await import(PACKAGE);
  for (const name of ['connect', 'startServer', 'useUnderstudy', 'assertions', 'UnderstudyError', 'protoDir', 'verifyInstall']) {
    if (!(name in client)) fail(`the installed ${PACKAGE} does not export ${name}`);
  }
  if (path.resolve(client.protoDir()) !== path.join(dir, 'proto')) {
    fail(`the installed client reads its protos from ${client.protoDir()}, not from its own ${path.join(dir, 'proto')}`);
  }

  step = 'running the json reporter';
  const { default: jsonReporter } = await import(`${PACKAGE}/json_reporter`);
  let reported = '';
  for await (const chunk of jsonReporter((async function* events() {
    yield { type: 'test:start', data: { name: 'installs', nesting: 0, file: 'smoke.mjs' } };
    yield { type: 'test:pass', data: { name: 'installs', nesting: 0, file: 'smoke.mjs', details: { duration_ms: 5 } } };
  })())) reported += chunk;
  assert.deepEqual(JSON.parse(reported).tests.map((t) => [t.name, t.outcome]), [['installs', 'passed']],
    `the installed ${PACKAGE}/json_reporter wrote ${reported}`);

  step = 'loading the openai SDK';
  const { default: OpenAI } = await import('openai');

  const bin = process.env.UNDERSTUDY_BIN;
  if (!bin) fail('UNDERSTUDY_BIN is not set: it names the installed understudy binary');
  if (!fs.existsSync(bin)) fail(`the installed understudy binary ${bin} (UNDERSTUDY_BIN) does not exist`);

  step = 'starting the fake upstream';
  const fake = await startFakeOpenAI();
  step = `starting ${bin} serve`;
  const server = await client.startServer({ binary: bin, args: ['--upstream', `openai=${fake.url}`] });
  try {
    step = 'recording one exchange';
    const rec = testContext();
    const recording = await client.useUnderstudy(rec, { server, mode: 'record', session: SESSION });
    const recorded = await ask(OpenAI, recording.baseURL(AGENT));
    await rec.runAfter();
    const summary = recording.summary;
    assert.equal(summary?.run?.state, 'RUN_STATE_ENDED', `the recording run ended: ${JSON.stringify(summary)}`);
    assert.deepEqual(summary.recorded.map((r) => r.agent), [AGENT], `the recording run recorded one exchange of ${AGENT}`);
    assert.equal(fake.served(), 1, 'the fake upstream answered the recording');
    await fake.close();

    step = 'replaying it with the upstream closed';
    const rep = testContext();
    const replay = await client.useUnderstudy(rep, { server, mode: 'replay', session: SESSION });
    const replayed = await ask(OpenAI, replay.baseURL(AGENT));
    assert.deepEqual(replayed, recorded, 'the replayed completion is the recorded one');

    step = 'asserting on the replay trace';
    await replay.assertSpec(`schema: understudy.spec/v1
assertions:
  - agent_sequence: [${AGENT}]
  - count: {select: {kind: exchange, agent: ${AGENT}}, eq: 1}
  - no_misses: true
`);
    await replay.assertAgentSequence([AGENT]);
    await replay.assertNoMisses();
    const failed = await replay.assertCount('==', 2, { kind: 'exchange' }).then(
      () => fail('assertCount(==, 2) passed on a replay of one exchange: the assertion helper cannot fail'),
      (error) => error,
    );
    assert.equal(failed.name, 'AssertionError', `a failed check throws an AssertionError, got ${failed.stack}`);
    assert.equal(failed.response?.passed, false, 'the AssertionError carries the AssertResponse');
    assert.match(failed.message, /FAIL/, 'the AssertionError message is the server report');
    await replay.end();
    await replay.assertAllConsumed();
    await rep.runAfter();

    step = 'stopping the server';
    const code = await server.stop();
    assert.equal(code, 0, `understudy serve exit status; stderr:\n${server.stderr()}`);
    say(`recorded and replayed "${recorded.choices[0].message.content}"; trace assertions passed, a failing one reported:\n    ${failed.message.split('\n')[0]}`);
  } catch (error) {
    server.kill();
    await fake.close();
    error.message += `\nunderstudy serve stderr (last lines):\n${server.stderr().split('\n').slice(-20).join('\n')}`;
    throw error;
  }
}

main().then(
  () => {
    say('OK');
    process.exit(0);
  },
  (error) => fail(`while ${step}: ${error.stack ?? error}`),
);

// `understudy record|replay --session S -- CMD`: the command finds
// understudy through the environment alone (OPENAI_BASE_URL, …), its stdout
// is untouched, its exit code is the wrapper's, and the run's summary goes
// to stderr.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { FIXTURES, importDependency, requireBinary, run, tempDir } from './lib/harness.js';
import { startFake } from './lib/record_replay.js';

requireBinary();

const AGENT = path.join(FIXTURES, 'agent.js');
const KEY = 'sk-test-wrap-0001';

function wrap(mode, db, session, { upstream, exitCode, question } = {}) {
  const args = [mode, '--session', session, '--db', db];
  if (upstream) args.push('--upstream', `openai=${upstream}`);
  args.push('--', process.execPath, AGENT);
  if (question) args.push(question);
  const env = { OPENAI_API_KEY: KEY };
  if (exitCode !== undefined) env.AGENT_EXIT_CODE = String(exitCode);
  return run(args, { env, timeoutMs: 20000 });
}

function summary(stderr) {
  const m = /^understudy: run (\S+) \((\S+)\): served (\d+), recorded (\d+), misses (\d+), unused recordings (\d+)$/m.exec(stderr);
  assert.ok(m, `a run summary on stderr:\n${stderr}`);
  return { run: m[1], session: m[2], served: Number(m[3]), recorded: Number(m[4]), misses: Number(m[5]), unused: Number(m[6]) };
}

test('wrap: record then replay a node agent; same stdout, exit codes passed through, summary on stderr', { timeout: 40000 }, async (t) => {
  await importDependency('openai'); // the agent needs it: fail with the setup hint
  const dir = tempDir(t);
  const db = path.join(dir, 'wrap.db');
  const fake = await startFake('openai');
  t.after(() => fake.close());

  const rec = await wrap('record', db, 'wrapped', { upstream: fake.url });
  assert.equal(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^You said: What does an understudy do\?.*\nid=chatcmpl-\S+ created=\d+\n$/);
  assert.doesNotMatch(rec.stdout, /understudy:/, 'stdout is the command\'s own');
  const recSummary = summary(rec.stderr);
  assert.deepEqual({ ...recSummary, run: undefined }, { run: undefined, session: 'wrapped@1', served: 1, recorded: 1, misses: 0, unused: 0 });
  // The command got the run's addresses from the environment.
  const env = /^agent: OPENAI_BASE_URL=(\S+) ANTHROPIC_BASE_URL=(\S+) UNDERSTUDY_ADDR=(\S+) UNDERSTUDY_HTTP=(\S+) UNDERSTUDY_RUN=(\S+)$/m.exec(rec.stderr);
  assert.ok(env, rec.stderr);
  assert.equal(env[1], `${env[4]}/run/${recSummary.run}/v1`);
  assert.equal(env[2], `${env[4]}/run/${recSummary.run}`);
  assert.match(env[3], /^127\.0\.0\.1:\d+$/);
  assert.equal(env[5], recSummary.run);
  assert.equal(fake.requests.length, 1);
  assert.equal(fake.requests[0].headers.authorization, `Bearer ${KEY}`, 'the key reached the upstream');

  // A command exiting 3 while recording: the wrapper exits 3 (and records).
  const rec3 = await wrap('record', db, 'wrapped3', { upstream: fake.url, exitCode: 3 });
  assert.equal(rec3.code, 3, rec3.stderr);
  assert.equal(summary(rec3.stderr).recorded, 1);

  await fake.close();

  // Replay with the upstream gone: the same output.
  const rep = await wrap('replay', db, 'wrapped');
  assert.equal(rep.code, 0, rep.stderr);
  assert.equal(rep.stdout, rec.stdout);
  const repSummary = summary(rep.stderr);
  assert.equal(repSummary.session, 'wrapped@1');
  assert.deepEqual([repSummary.served, repSummary.recorded, repSummary.misses, repSummary.unused], [1, 0, 0, 0]);
  assert.notEqual(repSummary.run, recSummary.run);

  // Exit code 3 passes through in replay too.
  const rep3 = await wrap('replay', db, 'wrapped3', { exitCode: 3 });
  assert.equal(rep3.code, 3, rep3.stderr);
  assert.equal(rep3.stdout, rec3.stdout);

  // A question never recorded: the agent fails (its exit 9 passes through)
  // and the summary reports the miss.
  const miss = await wrap('replay', db, 'wrapped', { question: 'Something else entirely?' });
  assert.equal(miss.code, 9, miss.stderr);
  assert.equal(miss.stdout, '');
  assert.match(miss.stderr, /agent: 404 /);
  const missSummary = summary(miss.stderr);
  assert.deepEqual([missSummary.served, missSummary.misses, missSummary.unused], [0, 1, 1]);
  assert.match(miss.stderr, /^ {2}miss: no recorded exchange matches this request/m);
});

// A recorded golden session for the tests of understudy's own MCP tools:
// the orchestrator / executor / reviewer loop of tests/testgen
// (review_agents.py) recorded from its scripted model (fake_openai.py)
// through `understudy serve --mode record`, into a fresh database.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server, cleanEnv, run, withTimeout } from '../../node/lib/harness.js';

export const TESTGEN_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'testgen');
export const REVIEW_AGENTS = path.join(TESTGEN_DIR, 'review_agents.py');
export const FAKE_MODEL = path.join(TESTGEN_DIR, 'fake_openai.py');
export const PYTHON = '/usr/bin/python3';

// fake_openai.py on a free loopback port; stopped by t.after.
export async function startFakeModel(t) {
  const child = spawn(PYTHON, [FAKE_MODEL], { stdio: ['pipe', 'pipe', 'inherit'], env: cleanEnv() });
  t.after(() => child.kill('SIGKILL'));
  let buffered = '';
  const line = new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d) => {
      buffered += d;
      const nl = buffered.indexOf('\n');
      if (nl >= 0) resolve(buffered.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`fake_openai.py exited (${code}) before listening`)));
  });
  const first = await withTimeout(line, 10000, 'fake_openai.py to listen');
  const m = /listening (\S+)$/.exec(first);
  if (!m) throw new Error(`fake_openai.py said ${JSON.stringify(first)}`);
  return `http://${m[1]}`;
}

// Records session `session` into DIR/golden.db: one record run of
// review_agents.py (with `agentArgs`). Resolves { db, session, run }.
export async function recordGolden(t, dir, { session = 'golden', agentArgs = [] } = {}) {
  const model = await startFakeModel(t);
  const server = await Server.start(t, dir, {
    db: 'golden.db',
    name: 'record',
    args: ['--mode', 'record', '--session', session, '--upstream', `openai=${model}`],
  });
  const agents = await run([REVIEW_AGENTS, ...agentArgs], {
    program: PYTHON,
    env: { OPENAI_BASE_URL: `${server.http}/v1` },
    timeoutMs: 30000,
  });
  if (agents.code !== 0) throw new Error(`review_agents.py failed (${agents.code}): ${agents.stderr}`);
  const code = await server.stop();
  if (code !== 0) throw new Error(`recording server exited ${code}: ${server.stderr()}`);
  return { db: server.db, session, run: server.run };
}

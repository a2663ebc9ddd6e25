// `understudy verify-install` end to end: the agents in agent_pkg/ (npm) and
// agent_py/ (a wheel) are recorded from a fake OpenAI upstream, then packed,
// installed in a sandbox and run from there under a replay, their specs
// checked: the npm package as shipped (passes), a copy with its entry file
// left out of `files` (fails naming it), a --package folder that is not a
// package (usage error), and once through each client helper — Node with a
// check that fails, Python with the wheel.
//
// npm installs the agent's `openai` dependency from the npm cache (or the
// registry); recording runs the agent from its folder with the openai that
// clients/node's devDependencies install.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { verifyInstall } from '../../clients/node/verify_install.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const BIN = process.env.UNDERSTUDY_BIN || path.join(REPO, 'build', 'cli', 'understudy');
// Debian's interpreter: python3-setuptools, python3-venv and the gRPC
// packages the Python client needs are installed for it.
const PYTHON = '/usr/bin/python3';
const QUESTION = 'What is the weather in Paris?';
const ANSWER = 'In Paris it is 18°C and sunny.';
const NODE_MODULES = path.join(REPO, 'clients', 'node', 'node_modules');

// The environment of every child: nothing of the developer's understudy or
// provider settings.
function cleanEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(UNDERSTUDY_|OPENAI_|ANTHROPIC_)/.test(k) && k !== 'UNDERSTUDY_PY_STUBS') continue;
    if (/^(http|https|all|no)_proxy$/i.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

// Runs a command to completion: { code, stdout, stderr }; rejects after
// `timeoutMs` (the child is killed) naming the command.
function run(command, args, { env = cleanEnv(), cwd, timeoutMs = 60000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out after ${timeoutMs} ms: ${command} ${args.join(' ')}\n${stdout}${stderr}`));
    }, timeoutMs);
    child.once('error', (e) => { clearTimeout(timer); reject(e); });
    child.once('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

// A fake OpenAI Chat Completions upstream on 127.0.0.1:0: asked about the
// weather in CITY with a tool offered, it calls get_weather({city: CITY});
// given the tool's result, it answers with it.
async function startFakeOpenAI() {
  const requests = [];
  const server = http.createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text);
    requests.push({ path: req.url, body });
    const user = body.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
    const city = /weather in (\w+)/.exec(user)?.[1] ?? 'nowhere';
    const result = body.messages.find((m) => m.role === 'tool');
    const message = result
      ? { role: 'assistant', content: `In ${city} it is ${result.content}.`, refusal: null }
      : {
          role: 'assistant',
          content: null,
          refusal: null,
          tool_calls: [{ id: 'call_weather_1', type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city }) } }],
        };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id: `chatcmpl-fake-${requests.length}`,
      object: 'chat.completion',
      created: 1700000000 + requests.length,
      model: body.model,
      choices: [{ index: 0, message, finish_reason: result ? 'stop' : 'tool_calls', logprobs: null }],
      usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 },
    }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

const spec = (city) => `schema: understudy.spec/v1
session: golden
description: the agent asks the weather tool about ${city} and ends in two exchanges
assertions:
  - tool_calls: {calls: [{name: get_weather, arguments: {city: ${city}}}]}
  - count: {select: {kind: exchange}, eq: 2}
  - no_misses: true
`;

let tmp;
let db;
let pkg;
let broken;
let pyPkg;
let parisSpec;
let londonSpec;

before(async () => {
  assert.ok(fs.existsSync(BIN), `understudy binary not found at ${BIN}: build it or set UNDERSTUDY_BIN`);
  // The agent pins the openai its tests record with: clients/node's.
  const client = JSON.parse(fs.readFileSync(path.join(REPO, 'clients', 'node', 'package.json'), 'utf8'));
  const agent = JSON.parse(fs.readFileSync(path.join(HERE, 'agent_pkg', 'package.json'), 'utf8'));
  assert.equal(agent.dependencies.openai, client.devDependencies.openai,
    'tests/packaging/agent_pkg pins the openai of clients/node/package.json devDependencies');
  assert.ok(fs.existsSync(path.join(NODE_MODULES, 'openai')),
    `openai is not installed in ${NODE_MODULES}: run scripts/setup (npm ci in clients/node)`);

  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'understudy-packaging-'));
  db = path.join(tmp, 'golden.db');
  // The package as it sits in its repository: its dependencies installed
  // beside it (here, linked), which the sandbox never sees.
  pkg = path.join(tmp, 'agent_pkg');
  fs.cpSync(path.join(HERE, 'agent_pkg'), pkg, { recursive: true });
  fs.symlinkSync(NODE_MODULES, path.join(pkg, 'node_modules'));
  // The same package with its entry file left out of `files`: only the bin
  // shim is packed (npm always packs `bin` files).
  broken = path.join(tmp, 'agent_pkg_broken');
  fs.cpSync(path.join(HERE, 'agent_pkg'), broken, { recursive: true });
  const manifest = JSON.parse(fs.readFileSync(path.join(broken, 'package.json'), 'utf8'));
  manifest.files = ['bin/'];
  fs.writeFileSync(path.join(broken, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // A copy: building the wheel writes build/ and *.egg-info beside it.
  pyPkg = path.join(tmp, 'agent_py');
  fs.cpSync(path.join(HERE, 'agent_py'), pyPkg, { recursive: true });
  parisSpec = path.join(tmp, 'paris.spec.yaml');
  fs.writeFileSync(parisSpec, spec('Paris'));
  londonSpec = path.join(tmp, 'london.spec.yaml');
  fs.writeFileSync(londonSpec, spec('London'));

  const fake = await startFakeOpenAI();
  try {
    const upstream = ['--db', db, '--upstream', `openai=${fake.url}`];
    const node = await run(BIN, ['record', '--session', 'golden', ...upstream, '--',
      process.execPath, path.join(pkg, 'bin', 'agent.js'), '--question', QUESTION]);
    assert.equal(node.code, 0, `recording the npm agent:\n${node.stdout}${node.stderr}`);
    assert.equal(node.stdout, `${ANSWER}\n`);
    const py = await run(BIN, ['record', '--session', 'golden-py', ...upstream, '--',
      PYTHON, '-m', 'packaging_agent_py.cli', '--question', QUESTION], { env: cleanEnv({ PYTHONPATH: pyPkg }) });
    assert.equal(py.code, 0, `recording the Python agent:\n${py.stdout}${py.stderr}`);
    assert.equal(py.stdout, `${ANSWER}\n`);
    assert.equal(fake.requests.length, 4, 'two exchanges per agent reached the upstream');
  } finally {
    await fake.close(); // from here on, only replays answer
  }
});

after(() => {
  if (tmp && !process.env.UNDERSTUDY_KEEP_TMP) fs.rmSync(tmp, { recursive: true, force: true });
});

function verifyArgs(packageDir, specFile, ...extra) {
  return ['verify-install', '--db', db, '--session', 'golden', '--spec', specFile, '--package', packageDir,
    ...extra, '--', 'packaging-agent', '--question', QUESTION];
}

test('the npm package as shipped passes its spec from the sandbox', async () => {
  const r = await run(BIN, verifyArgs(pkg, parisSpec));
  const all = `${r.stdout}${r.stderr}`;
  assert.equal(r.code, 0, all);
  assert.match(r.stderr, /understudy: packing .*agent_pkg \(npm pack\)/);
  assert.match(r.stderr, /installing understudy-packaging-agent-1\.0\.0\.tgz into \S+\/sandbox \(npm install\)/);
  // `--question TEXT` after -- reached the agent verbatim: it asked about
  // Paris, as recorded (another question would miss).
  assert.equal(r.stdout, [
    ANSWER,
    'PASS tool_calls',
    'PASS count',
    'PASS no_misses',
    '3 of 3 checks passed',
    '',
  ].join('\n'));
  assert.match(r.stderr, /served 2, recorded 0, misses 0, unused recordings 0/);
  // The sandbox is gone.
  const sandbox = /installing \S+ into (\S+)\/sandbox/.exec(r.stderr)[1];
  assert.ok(!fs.existsSync(sandbox), `${sandbox} was removed`);
});

test('a package with its entry file left out of `files` fails, naming the file', async () => {
  const r = await run(BIN, verifyArgs(broken, parisSpec, '--keep'));
  const all = `${r.stdout}${r.stderr}`;
  assert.equal(r.code, 1, all);
  assert.match(r.stderr, /the agent packaging-agent --question 'What is the weather in Paris\?' from understudy-packaging-agent@1\.0\.0 exited with status 1/);
  assert.match(r.stderr, /Cannot find module '\S+\/node_modules\/understudy-packaging-agent\/agent\.js'/);
  assert.ok(r.stderr.includes(`hint: agent.js is in ${fs.realpathSync(broken)} but not in the installed package: add it to \`files\``), r.stderr);
  assert.doesNotMatch(r.stdout, /PASS|FAIL/, 'no checks run after the agent failed');
  // --keep: the sandbox stays, and it lacks the file.
  const kept = /sandbox \(kept\): (\S+)/.exec(r.stderr)?.[1];
  assert.ok(kept, r.stderr);
  const installed = path.join(kept, 'sandbox', 'node_modules', 'understudy-packaging-agent');
  assert.ok(fs.existsSync(path.join(installed, 'bin', 'agent.js')));
  assert.ok(!fs.existsSync(path.join(installed, 'agent.js')));
  fs.rmSync(kept, { recursive: true, force: true });
});

test('a --package folder that is not a package is a usage error naming it', async () => {
  const missing = path.join(tmp, 'no-such-package');
  const r = await run(BIN, verifyArgs(missing, parisSpec));
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stderr, `understudy: --package ${missing}: no such folder\n`);
  const empty = fs.mkdtempSync(path.join(tmp, 'empty-'));
  const e = await run(BIN, verifyArgs(empty, parisSpec));
  assert.equal(e.code, 2, e.stderr);
  assert.match(e.stderr, new RegExp(`--package ${empty} has no package\\.json or pyproject\\.toml`));
  // No entry after --.
  const n = await run(BIN, ['verify-install', '--db', db, '--session', 'golden', '--spec', parisSpec, '--package', pkg]);
  assert.equal(n.code, 2, n.stderr);
  assert.match(n.stderr, /give the agent's entry point after --/);
});

test('the Node helper reports a check that fails', async () => {
  const r = await verifyInstall({
    packageDir: pkg,
    session: 'golden',
    spec: londonSpec,
    entry: 'packaging-agent',
    args: ['--question', QUESTION],
    db,
    understudyBin: BIN,
    env: cleanEnv(),
  });
  assert.equal(r.ok, false, r.output);
  assert.equal(r.exitCode, 1, r.output);
  assert.match(r.output, /^FAIL tool_calls: .*London.*Paris/m);
  assert.match(r.output, /^2 of 3 checks passed$/m);
  assert.equal(r.command[0], BIN);
});

test('the Python helper checks a wheel as shipped', async () => {
  const script = `
import json, sys
from understudy_testing.verify_install import verify_install
r = verify_install(sys.argv[1], "golden-py", sys.argv[2], "packaging-agent-py",
                   args=["--question", sys.argv[3]], db=sys.argv[4], understudy_bin=sys.argv[5],
                   python=sys.argv[6])
print(json.dumps({"ok": r.ok, "exit_code": r.exit_code, "output": r.output}))
`;
  const r = await run(PYTHON, ['-c', script, pyPkg, parisSpec, QUESTION, db, BIN, PYTHON], {
    env: cleanEnv({ PYTHONPATH: path.join(REPO, 'clients', 'python'), PYTHONDONTWRITEBYTECODE: '1' }),
  });
  assert.equal(r.code, 0, r.stderr);
  const result = JSON.parse(r.stdout);
  assert.equal(result.exit_code, 0, result.output);
  assert.equal(result.ok, true);
  assert.match(result.output, /building a wheel of .*agent_py \(pip wheel\)/);
  assert.match(result.output, /installing understudy_packaging_agent_py-1\.0\.0-py3-none-any\.whl into \S+\/venv \(pip install --no-index\)/);
  assert.ok(result.output.includes(`${ANSWER}\n`), result.output);
  assert.match(result.output, /^3 of 3 checks passed$/m);
});

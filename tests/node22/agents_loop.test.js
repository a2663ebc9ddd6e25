// The loop a coding agent runs to write a regression test, end to end and
// deterministic: fixtures/testing_agent.mjs (an agent whose only tools are
// `understudy mcp`'s, started from its MCP config) with its model played by
// an understudy playbook (fixtures/testing_agent.yaml). It drafts a spec
// with a misspelled check, takes the validator's suggestion, validates
// again, generates a pytest file, checks it, runs it against a replay of
// the golden session and gets green; told that the agent changed, it tests
// the changed agent and analyze_test_results names what changed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { BIN, Server, requireBinary, run, tempDir } from '../node/lib/harness.js';
import { REVIEW_AGENTS, recordGolden } from './lib/golden.js';
import { FIXTURES, NODE22_BIN } from './lib/sdk.js';

requireBinary();

test('a testing agent fixes its spec from the validator, writes a pytest file that passes on the replay, and learns why the changed agent fails', { timeout: 300000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-loop-');
  const golden = await recordGolden(t, dir);
  fs.copyFileSync(REVIEW_AGENTS, path.join(dir, 'review_agents.py'));
  const brain = await Server.start(t, dir, {
    db: 'brain.db', name: 'brain',
    args: ['--mode', 'replay', '--scenario', path.join(FIXTURES, 'testing_agent.yaml')],
  });

  const agent = await run([
    path.join(FIXTURES, 'testing_agent.mjs'), '--understudy', BIN, '--db', golden.db, '--root', dir,
    'Write a regression test for session golden.', 'Now the agent changed: check it.',
  ], { program: NODE22_BIN, env: { OPENAI_BASE_URL: `${brain.http}/v1` }, timeoutMs: 240000 });
  assert.equal(agent.code, 0, `${agent.stdout}\n${agent.stderr}\n${brain.stderr()}`);
  const steps = agent.stdout.trim().split('\n').map((line) => JSON.parse(line));
  assert.deepEqual(steps.map((s) => s.tool ?? 'answer'), [
    'validate_test_spec', 'validate_test_spec', 'generate_tests_from_spec', 'validate_test_code',
    'run_tests', 'answer', 'generate_tests_from_spec', 'run_tests', 'analyze_test_results', 'answer',
  ]);

  // The draft fails validation with the path, position and suggestion the fix was made from...
  const draft = steps[0].result;
  assert.equal(draft.valid, false);
  assert.deepEqual(draft.errors.map((e) => [e.path, e.line, e.column, e.suggestion]),
    [['assertions[0].agent_sequnce', 4, 5, 'did you mean "agent_sequence"?']]);
  // ...and the second attempt (of at most three) is valid.
  assert.match(steps[1].arguments.document, /- agent_sequence: /);
  assert.equal(steps[1].result.valid, true, steps[1].result.report);
  assert.equal(steps.filter((s) => s.tool === 'validate_test_spec').length <= 3, true);

  // The generated test is checked, then passes on a replay of the golden session.
  assert.equal(steps[2].isError, false);
  assert.equal(fs.existsSync(path.join(dir, 'test_review.py')), true);
  assert.equal(fs.readFileSync(path.join(dir, 'review.spec.yaml'), 'utf8'), steps[2].arguments.spec);
  assert.equal(steps[3].result.valid, true, steps[3].result.report);
  assert.equal(steps[4].result.ok, true, steps[4].result.output);
  assert.deepEqual(steps[4].result.tests.map((x) => x.outcome), ['passed']);
  assert.deepEqual(steps[5], { answer: 'test_review.py ok=true' });

  // The changed agent (it no longer asks the reviewer) fails the same spec,
  // and the analysis names the check, what the run did, and what to change.
  assert.equal(steps[7].result.ok, false);
  assert.deepEqual(steps[7].result.tests.map((x) => x.outcome), ['failed']);
  const findings = steps[8].result.findings;
  assert.equal(steps[8].result.ok, false);
  assert.equal(findings[0].kind, 'expectation');
  assert.match(findings[0].check, /agent_sequence/);
  assert.match(findings[0].explanation, /\[orchestrator, executor\]/);
  assert.match(findings[0].actual, /orchestrator, executor/);
  assert.equal(steps[9].answer, findings[0].suggestion);

  // The playbook was used up exactly, with no request it could not answer.
  assert.equal(await brain.stop(), 0, brain.stderr());
  assert.doesNotMatch(brain.stderr(), /playbook: no action left|expects a user message/);
});

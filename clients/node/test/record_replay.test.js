// The whole journey with the client: record a three-agent review loop from a
// fake OpenAI-compatible upstream through understudy, replay it with the
// upstream gone under a scenario that names the agents by system prompt and
// extracts the workflow phase from continue({phase}) calls, and assert on
// the replay's trace.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import OpenAI from 'openai';

import { assertions, useUnderstudy } from '../index.js';
import { APPROVAL, INSECURE, PROMPTS, SECURE, startFakeOpenAI } from '../test_support/fake_openai.js';
import { reviewLoop } from '../test_support/review_loop.js';
import { serve } from '../test_support/env.js';

const AGENTS = `agents:
  - {name: orchestrator, system_prompt: '^You are the orchestrator'}
  - {name: executor, system_prompt: '^You are the executor'}
  - {name: reviewer, system_prompt: '^You are the reviewer'}
`;

// The recording run names the agents too, so recorded exchanges carry them.
const RECORD_SCENARIO = `schema: understudy.scenario/v1
name: review-record
${AGENTS}`;

const REPLAY_SCENARIO = `schema: understudy.scenario/v1
name: review-replay
${AGENTS}extractors:
  phase: {tool: continue, argument: phase}
`;

const SESSION = 'review-loop';
const AGENT_SEQUENCE = [
  'orchestrator', 'executor', 'executor', 'reviewer',
  'orchestrator', 'executor', 'executor', 'reviewer',
  'orchestrator',
];

function sdk(baseURL) {
  return new OpenAI({ apiKey: 'sk-test-not-a-key', baseURL, maxRetries: 0, timeout: 15000 });
}

let server;
let fake;
let recorded;

before(async () => {
  fake = await startFakeOpenAI();
  server = await serve(['--upstream', `openai=${fake.url}`]);
  const client = server.client();
  const run = await client.startRun({ mode: 'record', session: SESSION, scenarioText: RECORD_SCENARIO });
  recorded = await reviewLoop(sdk(`${server.http}/run/${run.id}/v1`));
  const summary = await client.endRun(run.id);
  assert.equal(summary.run.state, 'RUN_STATE_ENDED', JSON.stringify(summary));
  assert.equal(summary.recorded.length, AGENT_SEQUENCE.length, JSON.stringify(summary.recorded));
  assert.deepEqual(summary.recorded.map((r) => r.agent), AGENT_SEQUENCE);
  // From here on there is no upstream: every answer comes from the recording.
  await fake.close();
});

after(async () => {
  await fake?.close();
  if (server) assert.equal(await server.stop(), 0, `understudy serve exit code; stderr:\n${server.stderr()}`);
});

test('the recording saw the loop the fake plays', () => {
  assert.deepEqual(recorded.phases, ['execute', 'review', 'fix', 'review', 'done']);
  assert.equal(recorded.code, SECURE);
  assert.equal(recorded.feedback, APPROVAL);
  assert.equal(fake.requests.length, AGENT_SEQUENCE.length);
});

test('replay: the same loop, asserted with every helper', async (t) => {
  const us = await useUnderstudy(t, { server, mode: 'replay', session: SESSION, scenarioText: REPLAY_SCENARIO });
  assert.match(us.runId, /\S/);
  assert.equal(us.openaiBaseURL, `${server.http}/run/${us.runId}/v1`);
  assert.equal(us.anthropicBaseURL, `${server.http}/run/${us.runId}`);
  assert.deepEqual(us.metadata, { 'understudy-run': us.runId });
  assert.equal(us.run.mode, 'RUN_MODE_REPLAY');
  assert.equal(us.run.scenario, 'review-replay');

  const replayed = await reviewLoop(sdk(us.openaiBaseURL));
  assert.deepEqual(replayed, recorded);

  await us.assertAgentSequence(AGENT_SEQUENCE);
  await us.assertAgentSequence(
    ['orchestrator', 'executor', 'reviewer', 'orchestrator', 'executor', 'reviewer', 'orchestrator'],
    { collapseRepeats: true },
  );
  await us.assertAgentSequence(['orchestrator', 'reviewer', 'orchestrator'], { match: 'subsequence' });
  await us.assertAgentSequence(['orchestrator', 'executor'], { match: 'prefix' });

  await us.assertPhaseTransitions(['execute', 'review', 'fix', 'review', 'done']);
  await us.assertPhaseTransitions(['fix', 'done'], { match: 'subsequence' });

  await us.assertToolCalls(
    [
      { name: 'write_file', arguments: { path: 'login.js', content: INSECURE } },
      { name: 'continue', arguments: { phase: 'review' } },
      { name: 'write_file', arguments: { path: 'login.js', content: SECURE } },
      { name: 'continue', arguments: '{"phase":"review"}' },
    ],
    { agent: 'executor' },
  );
  await us.assertToolCalls(
    [{ name: 'continue', arguments: { phase: 'execute' } }, 'write_file', { name: 'continue', arguments: { phase: 'done' } }],
    { match: 'subsequence' },
  );
  await us.assertToolCalls(['continue', 'continue', 'continue'], { agent: 'orchestrator' });

  await us.assertFeedbackPropagated({ from: 'reviewer', to: 'executor', keyword: 'parameterized query' });
  await us.assertFeedbackPropagated({ from: 'reviewer', to: 'orchestrator', keyword: 'LGTM' });

  await us.assertCount('==', AGENT_SEQUENCE.length, { kind: 'exchange' });
  await us.assertCount('==', 4, { kind: 'tool_call', agent: 'executor' });
  await us.assertCount('==', 5, { kinds: ['phase_transition'] });
  await us.assertCount('>=', 2, { kind: 'tool_call', tool: 'write_file' });
  await us.assertCount('==', 0, { kind: 'miss' });
  await us.assertNoMisses();

  // The trace, as the assertions saw it.
  const exchanges = await us.query({ kind: 'exchange' });
  assert.deepEqual(exchanges.map((e) => e.agent), AGENT_SEQUENCE);
  assert.ok(exchanges.every((e, i) => i === 0 || e.seq > exchanges[i - 1].seq), 'events come in seq order');
  const transitions = await us.query({ kind: 'phase_transition' });
  assert.deepEqual(transitions.map((e) => e.attributes['understudy.phase.to']), ['execute', 'review', 'fix', 'review', 'done']);
  const writes = await us.query({ kind: 'tool_call', tool: 'write_file' });
  assert.equal(writes.length, 2);
  assert.deepEqual(JSON.parse(writes[1].attributes['gen_ai.tool.call.arguments']), { path: 'login.js', content: SECURE });

  // Several at once, in one response.
  const verdict = await us.check([
    assertions.agentSequence(AGENT_SEQUENCE, { name: 'who spoke' }),
    assertions.noMisses(),
  ]);
  assert.equal(verdict.passed, true, verdict.report);
  assert.deepEqual(verdict.results.map((r) => [r.name, r.passed]), [['who spoke', true], ['no_misses', true]]);

  // A spec document: select-and-expect items and built-in checks together.
  const spec = await us.assertSpec(`assertions:
  - name: the executor hands over to review
    select: {kind: tool_call, agent: executor, tool: continue}
    position: last
    expect:
      count: 2
      attributes:
        gen_ai.tool.call.arguments: {json_subset: {phase: review}}
  - agent_sequence: {agents: [orchestrator, executor, reviewer], match: subsequence}
  - phase_transitions: [execute, review, fix, review, done]
  - feedback_propagated: {from: reviewer, to: executor, keyword: parameterized query}
  - no_misses: true
`);
  assert.equal(spec.results.length, 5, spec.report);
  assert.equal(spec.results[0].name, 'the executor hands over to review');

  // all_consumed reads the run's summary: end the run first.
  const summary = await us.end();
  assert.equal(summary.run.state, 'RUN_STATE_ENDED');
  assert.deepEqual(summary.unconsumed, []);
  assert.equal(us.summary, summary);
  await us.assertAllConsumed();
});

test('a broken expectation throws an AssertionError with the readable diff', async (t) => {
  const us = await useUnderstudy(t, { server, session: SESSION, scenarioText: REPLAY_SCENARIO });
  await reviewLoop(sdk(us.openaiBaseURL));

  // Agents in the wrong order: the first divergence is position 2.
  let error = await rejection(us.assertAgentSequence(['orchestrator', 'reviewer', 'executor']));
  assert.ok(error instanceof assert.AssertionError, `expected an AssertionError, got ${error}`);
  assert.equal(error.response.passed, false);
  assert.equal(error.message, error.response.report);
  assert.match(error.message, /^FAIL agent_sequence: agent_sequence \(exact\)/);
  assert.match(error.message, /orchestrator, reviewer, executor/); // what was expected
  assert.match(error.message, /orchestrator, executor, executor, reviewer/); // what happened
  assert.match(error.message, /position 2/);
  assert.match(error.message, /event #\d+/);
  assert.equal(error.response.results[0].divergenceIndex, 1);

  // A tool call's arguments that never happened: the diff names them.
  error = await rejection(us.assertToolCalls([{ name: 'write_file', arguments: { path: 'signup.js' } }], {
    agent: 'executor', match: 'subsequence',
  }));
  assert.ok(error instanceof assert.AssertionError);
  assert.match(error.message, /^FAIL tool_calls: tool_calls by executor \(subsequence\)/);
  assert.match(error.message, /signup\.js/);
  assert.match(error.message, /write_file/);

  // A phase the run never entered.
  error = await rejection(us.assertPhaseTransitions(['execute', 'review', 'done']));
  assert.ok(error instanceof assert.AssertionError);
  assert.match(error.message, /^FAIL phase_transitions: phase_transitions \(exact\)/);
  assert.match(error.message, /execute, review, fix, review, done/);
  assert.match(error.message, /position 3/);

  // Feedback that never reached the executor.
  error = await rejection(us.assertFeedbackPropagated({ from: 'reviewer', to: 'executor', keyword: 'LGTM' }));
  assert.ok(error instanceof assert.AssertionError);
  assert.match(error.message, /^FAIL feedback_propagated: feedback_propagated: expected "LGTM" to go from reviewer to executor/);
  assert.match(error.message, /but executor made no exchange after #\d+/);

  // A count that does not hold.
  error = await rejection(us.assertCount('<', 3, { kind: 'exchange' }));
  assert.ok(error instanceof assert.AssertionError);
  assert.match(error.message, /^FAIL count: /);
  assert.match(error.message, /9/);

  // A spec item that fails: its line in the report says why.
  error = await rejection(us.assertSpec(`assertions:
  - name: the reviewer approves at once
    select: {kind: exchange, agent: reviewer}
    position: first
    expect:
      count: 1
  - no_misses: true
`));
  assert.ok(error instanceof assert.AssertionError);
  assert.match(error.message, /^FAIL the reviewer approves at once: /m);
  assert.match(error.message, /^PASS no_misses$/m);

  // all_consumed before the run ended is not a verdict but a refusal.
  error = await rejection(us.assertAllConsumed());
  assert.equal(error.codeName, 'FAILED_PRECONDITION', String(error));

  // A named assertion in a batch: the report has one line per result.
  const verdict = await us.check([
    assertions.noMisses(),
    assertions.count('==', 1, { kind: 'exchange' }, { name: 'one exchange' }),
  ]);
  assert.equal(verdict.passed, false);
  const lines = verdict.report.split('\n');
  assert.equal(lines[0], 'PASS no_misses');
  assert.match(lines[1], /^FAIL one exchange: /);
});

test('a replay that drifts shows as misses, and assertNoMisses says which', async (t) => {
  const us = await useUnderstudy(t, { server, session: SESSION, scenarioText: REPLAY_SCENARIO });
  const openai = sdk(us.openaiBaseURL);
  await assert.rejects(
    openai.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'system', content: PROMPTS.orchestrator }, { role: 'user', content: 'Task: something else' }],
    }),
    (e) => e.status === 404,
  );
  const error = await rejection(us.assertNoMisses());
  assert.ok(error instanceof assert.AssertionError);
  assert.match(error.message, /^FAIL no_misses: /);
  assert.match(error.message, /the run had 1 miss/);
  assert.match(error.message, /event #\d+ \(agent orchestrator\)/);
  await us.assertCount('==', 1, { kind: 'miss', agent: 'orchestrator' });

  const summary = await us.end();
  assert.equal(summary.misses.length, 1);
  const consumed = await rejection(us.assertAllConsumed());
  assert.ok(consumed instanceof assert.AssertionError);
  assert.match(consumed.message, /^FAIL all_consumed: /);
});

test('an assertion the server cannot evaluate rejects with its reason', async (t) => {
  const us = await useUnderstudy(t, { server, session: SESSION, scenarioText: REPLAY_SCENARIO });
  const error = await rejection(us.assertToolCalls([{ name: 'continue', arguments: '[1, 2]' }]));
  assert.equal(error.name, 'UnderstudyError');
  assert.equal(error.codeName, 'INVALID_ARGUMENT');
  assert.match(error.message, /tool_calls\.calls\[0\]\.arguments/);
  await assert.rejects(us.assertCount('~', 1), /op: "~" is not one of/);
  const spec = await rejection(us.assertSpec('assertions:\n  - select: {kind: exchange}\n    expect: {cuont: 1}\n'));
  assert.equal(spec.codeName, 'INVALID_ARGUMENT', String(spec));
  assert.match(spec.message, /cuont/);
  assert.match(spec.message, /did you mean "count"/);
});

async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected a rejection');
}

// Scenario files (docs/scenarios.md) answering the official SDKs over HTTP:
// `understudy serve --mode replay --scenario FILE` with no recording and no
// upstream. A multi-agent loop driven entirely by rules (agents named by
// their system prompts, no understudy headers), every action with the
// effect an SDK sees (errors and their retry headers, retries, hangs,
// dropped connections, delays, sequences, recorded exchanges), `times`
// under concurrency — and the run's trace, read with `understudy trace`.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { FIXTURES, Server, anthropicSdk, openaiSdk, requireBinary, run, tempDir } from './lib/harness.js';
import { API_KEY, anthropicClient, openaiClient, plain, startFake } from './lib/record_replay.js';

requireBinary();

const OPENAI_MODEL = 'gpt-4o-mini';
const CLAUDE = 'claude-haiku-4-5';

// `understudy serve --mode replay --scenario fixtures/FIXTURE` (plus `args`).
// Scenario files shared with the other suites.
const SHARED_SCENARIOS = path.resolve(FIXTURES, '..', '..', 'scenarios');

function serveScenario(t, dir, fixture, { args = [], name = 'scenario' } = {}) {
  return Server.start(t, dir, { name, args: ['--mode', 'replay', '--scenario', path.resolve(FIXTURES, fixture), ...args] });
}

// Stops the server (SIGTERM ends its default run and flushes the trace),
// then reads the run's trace: one parsed event per line.
async function stopAndTrace(server) {
  assert.ok(server.run, 'the ready line names the default run');
  assert.equal(await server.stop(), 0, `serve exit code; log:\n${server.stderr()}`);
  const r = await run(['trace', server.run, '--json', '--db', server.db]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

const attr = (event, name) => event.attributes?.[name];
const exchanges = (events) => events.filter((e) => e.kind === 'exchange');

// A request's last user message as the trace stores it (proto JSON).
function traceUserText(event) {
  const users = (event.request?.messages ?? []).filter((m) => m.role === 'user');
  const last = users.at(-1);
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return JSON.stringify(last);
}

// ---------------------------------------------------------------------------
// 1. The executor → reviewer → executor loop, scripted by
//    tests/scenarios/review-loop.yaml (8 rules; shared with the Python gRPC test).

const TASK = 'Implement login(user, password) against the users table.';
const PROMPTS = {
  orchestrator: 'You are the orchestrator. Reply with JSON naming the next agents and the phase.',
  executor: 'You are the executor. Change code with write_file; call continue to hand over, complete when done.',
  reviewer: 'You are a senior engineer: you review the change and call continue with the next phase.',
};
const TOOL_SPECS = {
  write_file: {
    description: 'Write a file',
    parameters: { type: 'object', properties: { path: { type: 'string' }, text: { type: 'string' } }, required: ['path', 'text'] },
  },
  continue: {
    description: 'Hand over to the next phase',
    parameters: { type: 'object', properties: { phase: { type: 'string' } }, required: ['phase'] },
  },
  complete: {
    description: 'The task is done',
    parameters: { type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'] },
  },
};

// Provider adapters: the same loop over either SDK, streamed or not. `ask`
// answers { content, toolCalls: [{ id, name, args }], finish, usage, raw }.
function openaiAdapter(client, { stream }) {
  return {
    user: (text) => ({ role: 'user', content: text }),
    async ask(system, conversation, tools) {
      const params = {
        model: OPENAI_MODEL,
        messages: [{ role: 'system', content: system }, ...conversation],
      };
      if (tools.length > 0) {
        params.tools = tools.map((name) => ({ type: 'function', function: { name, ...TOOL_SPECS[name] } }));
      }
      const completion = stream
        ? await client.chat.completions.stream({ ...params, stream_options: { include_usage: true } }).finalChatCompletion()
        : await client.chat.completions.create(params);
      const message = completion.choices[0].message;
      return {
        content: message.content ?? '',
        toolCalls: (message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) })),
        finish: completion.choices[0].finish_reason,
        usage: completion.usage ? { input: completion.usage.prompt_tokens, output: completion.usage.completion_tokens } : null,
        raw: completion,
      };
    },
    afterTools(answer, results) {
      return [
        { role: 'assistant', content: answer.raw.choices[0].message.content, tool_calls: answer.raw.choices[0].message.tool_calls },
        ...results.map((r) => ({ role: 'tool', tool_call_id: r.id, content: r.content })),
      ];
    },
  };
}

function anthropicAdapter(client, { stream }) {
  return {
    user: (text) => ({ role: 'user', content: text }),
    async ask(system, conversation, tools) {
      const params = { model: CLAUDE, max_tokens: 256, system, messages: conversation };
      if (tools.length > 0) {
        params.tools = tools.map((name) => ({ name, description: TOOL_SPECS[name].description, input_schema: TOOL_SPECS[name].parameters }));
      }
      const message = stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
      return {
        content: message.content.filter((b) => b.type === 'text').map((b) => b.text).join(''),
        toolCalls: message.content.filter((b) => b.type === 'tool_use').map((b) => ({ id: b.id, name: b.name, args: b.input })),
        finish: message.stop_reason,
        usage: { input: message.usage.input_tokens, output: message.usage.output_tokens },
        raw: message,
      };
    },
    afterTools(answer, results) {
      return [
        { role: 'assistant', content: answer.raw.content },
        { role: 'user', content: results.map((r) => ({ type: 'tool_result', tool_use_id: r.id, content: r.content })) },
      ];
    },
  };
}

// The agent system under test: an orchestrator picks the first agent; the
// executor works in a tool loop and hands over with continue(phase); the
// reviewer answers with continue(phase); complete() ends it. Every model
// answer is logged. Bounded: at most 12 model calls.
async function runReviewLoop(model) {
  const log = [];
  let calls = 0;
  const ask = async (agent, conversation, tools) => {
    if (++calls > 12) throw new Error(`the loop did not finish; answers so far: ${JSON.stringify(log)}`);
    const answer = await model.ask(PROMPTS[agent], conversation, tools);
    log.push({ agent, content: answer.content, tools: answer.toolCalls.map((c) => ({ name: c.name, args: c.args })), finish: answer.finish });
    return answer;
  };
  const files = {};

  const route = JSON.parse((await ask('orchestrator', [model.user(TASK)], [])).content);
  let next = route.agents[0];
  let inbox = `${TASK} Phase: ${route.phase}.`;
  for (;;) {
    if (next === 'executor') {
      const conversation = [model.user(inbox)];
      for (;;) {
        const answer = await ask('executor', conversation, ['write_file', 'continue', 'complete']);
        const done = answer.toolCalls.find((c) => c.name === 'complete');
        if (done) return { log, files, summary: done.args.summary, last: answer };
        if (answer.toolCalls.some((c) => c.name === 'continue')) {
          next = 'reviewer';
          inbox = `Please review: ${answer.content}`;
          break;
        }
        if (answer.toolCalls.length === 0) throw new Error(`executor stopped without a tool call: ${answer.content}`);
        const results = answer.toolCalls.map((c) => {
          assert.equal(c.name, 'write_file');
          files[c.args.path] = c.args.text;
          return { id: c.id, content: `wrote ${c.args.text.length} bytes to ${c.args.path}` };
        });
        conversation.push(...model.afterTools(answer, results));
      }
    } else if (next === 'reviewer') {
      const answer = await ask('reviewer', [model.user(inbox)], ['continue']);
      const phase = answer.toolCalls.find((c) => c.name === 'continue')?.args.phase;
      next = 'executor';
      inbox = phase === 'done' ? `The reviewer approved: ${answer.content} Finish up.` : `Review feedback: ${answer.content}`;
    } else {
      throw new Error(`routed to unknown agent ${next}`);
    }
  }
}

const LOOP_RULES = [
  'orchestrator-routes', 'executor-writes', 'executor-requests-review', 'reviewer-finds-hole',
  'executor-fixes', 'reviewer-approves', 'executor-completes',
];

for (const [provider, stream] of [['openai', false], ['openai', true], ['anthropic', false], ['anthropic', true]]) {
  test(`${provider}${stream ? ' (streamed)' : ''}: the executor → reviewer → executor loop runs on rules alone, and the trace tells it`, { timeout: 30000 }, async (t) => {
    const dir = tempDir(t);
    const server = await serveScenario(t, dir, path.join(SHARED_SCENARIOS, 'review-loop.yaml'));
    const client = provider === 'openai' ? await openaiClient(server.http) : await anthropicClient(server.http);
    const model = provider === 'openai' ? openaiAdapter(client, { stream }) : anthropicAdapter(client, { stream });

    const result = await runReviewLoop(model);
    const toolStop = provider === 'openai' ? 'tool_calls' : 'tool_use';
    const textStop = provider === 'openai' ? 'stop' : 'end_turn';
    assert.deepEqual(result.log, [
      { agent: 'orchestrator', content: '{"agents": ["executor"], "phase": "implement", "reason": "code first, review after"}', tools: [], finish: textStop },
      { agent: 'executor', content: 'Writing login().', tools: [{ name: 'write_file', args: { path: 'login.py', text: 'def login(user, password): ...' } }], finish: toolStop },
      { agent: 'executor', content: 'login() is written; please review.', tools: [{ name: 'continue', args: { phase: 'review' } }], finish: toolStop },
      { agent: 'reviewer', content: 'SQL injection in login(): the query concatenates user input.', tools: [{ name: 'continue', args: { phase: 'fix' } }], finish: toolStop },
      { agent: 'executor', content: 'Fixed: login() now uses a parameterized query.', tools: [{ name: 'continue', args: { phase: 'review' } }], finish: toolStop },
      { agent: 'reviewer', content: 'Approved: no remaining issues.', tools: [{ name: 'continue', args: { phase: 'done' } }], finish: toolStop },
      { agent: 'executor', content: 'Done.', tools: [{ name: 'complete', args: { summary: 'login() implemented and fixed after review' } }], finish: toolStop },
    ]);
    assert.deepEqual(result.files, { 'login.py': 'def login(user, password): ...' });
    assert.deepEqual(result.last.usage, { input: 42, output: 7 }, 'the rule\'s usage reaches the SDK');

    const events = await stopAndTrace(server);
    const started = events.find((e) => e.kind === 'run_started');
    assert.equal(attr(started, 'understudy.scenario.name'), 'review-loop');
    const ex = exchanges(events);
    assert.deepEqual(ex.map((e) => attr(e, 'gen_ai.agent.name')),
      ['orchestrator', 'executor', 'executor', 'reviewer', 'executor', 'reviewer', 'executor'], 'agent order');
    assert.deepEqual(ex.map((e) => attr(e, 'understudy.rule.name')), LOOP_RULES, 'rule order');
    assert.deepEqual(ex.map((e) => attr(e, 'understudy.agent.iteration')), ['1', '1', '2', '1', '3', '2', '4']);
    assert.deepEqual(ex.map((e) => attr(e, 'understudy.iteration')), ['1', '2', '3', '4', '5', '6', '7']);
    for (const e of ex) {
      assert.equal(attr(e, 'understudy.answer.source'), 'rule');
      assert.equal(attr(e, 'understudy.action'), 'respond');
      assert.equal(attr(e, 'understudy.streamed'), String(stream));
    }
    assert.deepEqual(ex.slice(1).map((e) => attr(e, 'understudy.previous_agent')),
      ['orchestrator', 'executor', 'executor', 'reviewer', 'executor', 'reviewer']);

    const routing = events.filter((e) => e.kind === 'routing_decision');
    assert.equal(routing.length, 1);
    assert.equal(attr(routing[0], 'understudy.routing.agents'), 'executor');
    assert.equal(attr(routing[0], 'understudy.routing.phase'), 'implement');
    assert.deepEqual(events.filter((e) => e.kind === 'tool_call').map((e) => attr(e, 'gen_ai.tool.name')),
      ['write_file', 'continue', 'continue', 'continue', 'continue', 'complete']);
    const phases = events.filter((e) => e.kind === 'phase_transition');
    assert.deepEqual(phases.map((e) => [attr(e, 'understudy.phase.from'), attr(e, 'understudy.phase.to'), e.agent]), [
      ['', 'implement', 'orchestrator'],
      ['implement', 'review', 'executor'],
      ['review', 'fix', 'reviewer'],
      ['fix', 'review', 'executor'],
      ['review', 'done', 'reviewer'],
    ]);
    const ends = events.filter((e) => e.kind === 'workflow_end');
    assert.equal(ends.length, 1, 'one workflow_end');
    assert.equal(ends[0].agent, 'executor');
    const seqOf = (e) => Number(e.seq);
    assert.ok(seqOf(ends[0]) > seqOf(ex.at(-1)), 'the workflow ends with the last exchange');
    assert.ok(seqOf(phases[1]) > seqOf(ex[2]) && seqOf(phases[1]) < seqOf(ex[3]),
      'the phase turns to review between the executor\'s hand-over and the reviewer');
    assert.equal(events.filter((e) => e.kind === 'miss').length, 0);
  });
}

// ---------------------------------------------------------------------------
// 2. Each action, as the SDKs see it: fixtures/scenario_actions.yaml.

const ask = (client, content, extra = {}) =>
  client.chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: 'user', content }], ...extra });
const failure = (promise) => promise.then((v) => assert.fail(`expected a failure, got ${JSON.stringify(v)}`), (e) => e);
const DEFAULT_ANSWER = 'alpha beta gamma delta epsilon';

test('error: 429 with retry-after in each provider\'s shape (no SDK retries)', { timeout: 30000 }, async (t) => {
  const server = await serveScenario(t, tempDir(t), 'scenario_actions.yaml');
  const OpenAI = await openaiSdk();
  const err = await failure(ask(await openaiClient(server.http), 'rate limit me'));
  assert.ok(err instanceof OpenAI.RateLimitError, String(err));
  assert.equal(err.status, 429);
  assert.equal(err.headers.get('retry-after'), '3', 'ceil(2.5) seconds');
  assert.equal(err.headers.get('retry-after-ms'), '2500');
  assert.equal(err.type, 'rate_limit_error');
  assert.match(err.message, /slow down/);

  const Anthropic = await anthropicSdk();
  const aerr = await failure((await anthropicClient(server.http)).messages.create({
    model: CLAUDE, max_tokens: 64, messages: [{ role: 'user', content: 'rate limit me' }],
  }));
  assert.ok(aerr instanceof Anthropic.RateLimitError, String(aerr));
  assert.equal(aerr.status, 429);
  assert.equal(aerr.headers.get('retry-after'), '3');
  assert.equal(aerr.headers.get('retry-after-ms'), '2500');
  assert.equal(aerr.error.type, 'error');
  assert.equal(aerr.error.error.type, 'rate_limit_error');
  assert.match(aerr.error.error.message, /slow down/);

  const ex = exchanges(await stopAndTrace(server));
  assert.equal(ex.length, 2, 'one exchange per request: nothing was retried');
  for (const e of ex) {
    assert.equal(attr(e, 'understudy.rule.name'), 'rate-limited');
    assert.equal(attr(e, 'understudy.action'), 'error');
    assert.equal(attr(e, 'error.type'), 'RESOURCE_EXHAUSTED');
  }
});

test('fail_then_succeed: the openai SDK\'s default retries get through two 503s; the trace shows three exchanges', { timeout: 30000 }, async (t) => {
  const server = await serveScenario(t, tempDir(t), 'scenario_actions.yaml');
  const OpenAI = await openaiSdk();
  const client = new OpenAI({ apiKey: API_KEY, baseURL: `${server.http}/v1`, timeout: 10000 }); // maxRetries: default 2
  const started = Date.now();
  const answer = await ask(client, 'flaky');
  assert.equal(answer.choices[0].message.content, 'recovered after two failures');
  assert.ok(Date.now() - started < 5000, 'retry-after-ms 0: no back-off to speak of');

  const ex = exchanges(await stopAndTrace(server));
  assert.equal(ex.length, 3, 'two failures and the answer');
  assert.deepEqual(ex.map((e) => attr(e, 'understudy.rule.name')), ['flaky', 'flaky', 'flaky']);
  assert.deepEqual(ex.map((e) => attr(e, 'understudy.rule.use')), ['1', '2', '3']);
  assert.deepEqual(ex.map((e) => attr(e, 'understudy.action')), ['error', 'error', 'respond']);
  assert.deepEqual(ex.map((e) => attr(e, 'error.type')), ['UNAVAILABLE', 'UNAVAILABLE', undefined]);
});

test('hang: the SDK\'s timeout fires, and the server keeps answering others meanwhile and after', { timeout: 30000 }, async (t) => {
  const server = await serveScenario(t, tempDir(t), 'scenario_actions.yaml');
  const OpenAI = await openaiSdk();
  const impatient = new OpenAI({ apiKey: API_KEY, baseURL: `${server.http}/v1`, timeout: 2000, maxRetries: 0 });
  const client = await openaiClient(server.http);

  const started = Date.now();
  let settled = false;
  const held = failure(ask(impatient, 'hang')).finally(() => (settled = true));
  // While the hang holds its call, another is answered.
  const during = await ask(client, 'hello while one hangs');
  assert.equal(during.choices[0].message.content, DEFAULT_ANSWER);
  assert.equal(settled, false, 'answered while the other call still hangs');

  const err = await held;
  assert.ok(err instanceof OpenAI.APIConnectionTimeoutError, `a timeout, got ${err}`);
  assert.ok(Date.now() - started >= 1900, `the SDK waited for its timeout (${Date.now() - started} ms)`);

  const after = await ask(client, 'hello after the hang');
  assert.equal(after.choices[0].message.content, DEFAULT_ANSWER);

  const ex = exchanges(await stopAndTrace(server));
  const rows = ex.map((e) => [attr(e, 'understudy.rule.name'), attr(e, 'understudy.action'), attr(e, 'understudy.answer.source')]);
  assert.equal(rows.length, 3);
  // The held call and the one answered meanwhile were sent together: they
  // reach the server in either order (a loaded machine shows both).
  const key = (r) => JSON.stringify(r);
  assert.deepEqual(rows.slice(0, 2).map(key).sort(),
    [['stall', 'hang', 'rule'], [undefined, 'respond', 'default']].map(key).sort());
  assert.deepEqual(rows[2], [undefined, 'respond', 'default'], 'the call after the hang comes last');
});

test('disconnect after 3 chunks: the stream yields exactly the first 3 pieces, then throws', { timeout: 30000 }, async (t) => {
  const server = await serveScenario(t, tempDir(t), 'scenario_actions.yaml');
  const client = await openaiClient(server.http);

  // The default answer, in full, for contrast: five words, five pieces.
  const full = [];
  for await (const chunk of await ask(client, 'hello', { stream: true })) full.push(chunk.choices[0]?.delta?.content ?? null);
  assert.deepEqual(full, ['alpha ', 'beta ', 'gamma ', 'delta ', 'epsilon', null]);

  const pieces = [];
  const stream = await ask(client, 'cut mid-stream', { stream: true });
  const err = await failure((async () => {
    for await (const chunk of stream) pieces.push(chunk.choices[0]?.delta?.content);
  })());
  assert.deepEqual(pieces, ['alpha ', 'beta ', 'gamma '], `the pieces before the cut (then: ${err})`);

  // Unary, the same rule closes the connection before any response.
  const OpenAI = await openaiSdk();
  const unary = await failure(ask(client, 'cut mid-stream'));
  assert.ok(unary instanceof OpenAI.APIConnectionError, String(unary));

  const ex = exchanges(await stopAndTrace(server));
  const cut = ex.filter((e) => attr(e, 'understudy.rule.name') === 'cut-mid-stream');
  assert.equal(cut.length, 2);
  for (const e of cut) {
    assert.equal(attr(e, 'understudy.disconnect.after_chunks'), '3');
    assert.equal(attr(e, 'understudy.answer.source'), 'default', 'the next source renders what is cut');
  }
});

test('disconnect before any chunk: a connection error, streamed or not; the next request is answered', { timeout: 30000 }, async (t) => {
  const server = await serveScenario(t, tempDir(t), 'scenario_actions.yaml');
  const OpenAI = await openaiSdk();
  const client = await openaiClient(server.http);
  const unary = await failure(ask(client, 'drop'));
  assert.ok(unary instanceof OpenAI.APIConnectionError, String(unary));
  const streamed = await failure(ask(client, 'drop', { stream: true }));
  assert.ok(streamed instanceof OpenAI.APIConnectionError, String(streamed));
  assert.equal((await ask(client, 'hello')).choices[0].message.content, DEFAULT_ANSWER);

  const Anthropic = await anthropicSdk();
  const aerr = await failure((await anthropicClient(server.http)).messages.create({
    model: CLAUDE, max_tokens: 64, messages: [{ role: 'user', content: 'drop' }],
  }));
  assert.ok(aerr instanceof Anthropic.APIConnectionError, String(aerr));

  const ex = exchanges(await stopAndTrace(server));
  assert.deepEqual(ex.map((e) => attr(e, 'understudy.rule.name')), ['drop', 'drop', undefined, 'drop']);
  for (const e of ex.filter((x) => attr(x, 'understudy.rule.name') === 'drop')) {
    assert.equal(attr(e, 'understudy.disconnect.after_chunks'), '0');
  }
});

test('delay: 300 ms, then the default answers', { timeout: 30000 }, async (t) => {
  const server = await serveScenario(t, tempDir(t), 'scenario_actions.yaml');
  const client = await openaiClient(server.http);
  for (const stream of [false, true]) {
    const started = performance.now();
    let text;
    if (stream) {
      text = '';
      for await (const chunk of await ask(client, 'slow', { stream: true })) text += chunk.choices[0]?.delta?.content ?? '';
    } else {
      text = (await ask(client, 'slow')).choices[0].message.content;
    }
    const elapsed = performance.now() - started;
    assert.equal(text, DEFAULT_ANSWER);
    assert.ok(elapsed >= 300, `stream=${stream}: answered after ${elapsed.toFixed(1)} ms, expected >= 300`);
  }
  const ex = exchanges(await stopAndTrace(server));
  assert.equal(ex.length, 2);
  for (const e of ex) {
    assert.equal(attr(e, 'understudy.rule.name'), 'slow');
    assert.equal(attr(e, 'understudy.delay_ms'), '300');
    assert.equal(attr(e, 'understudy.answer.source'), 'default');
  }
});

test('sequence: one step per use, cycling', { timeout: 30000 }, async (t) => {
  const server = await serveScenario(t, tempDir(t), 'scenario_actions.yaml');
  const client = await openaiClient(server.http);
  const outcomes = [];
  for (let i = 0; i < 4; i++) {
    outcomes.push(await ask(client, 'sequence').then(
      (c) => c.choices[0].message.content,
      (e) => `${e.status}: ${e.error?.message ?? e.message}`,
    ));
  }
  assert.deepEqual(outcomes, ['500: step one fails', 'step two answers', 'step three answers', '500: step one fails']);
  const ex = exchanges(await stopAndTrace(server));
  assert.deepEqual(ex.map((e) => attr(e, 'understudy.rule.use')), ['1', '2', '3', '4']);
  assert.deepEqual(ex.map((e) => attr(e, 'understudy.action')), ['error', 'respond', 'respond', 'error']);
});

test('from_session: a scenario serves a recorded session\'s exchanges, by seq and in order', { timeout: 30000 }, async (t) => {
  const dir = tempDir(t);
  const fake = await startFake('openai');
  t.after(() => fake.close());
  const rec = await Server.start(t, dir, { name: 'record', args: ['--mode', 'record', '--session', 'golden', '--upstream', `openai=${fake.url}`] });
  const recClient = await openaiClient(rec.http);
  const recorded = [];
  for (const q of ['First question?', 'Second question?', 'Third question?']) recorded.push(plain(await ask(recClient, q)));
  assert.equal(await rec.stop(), 0);
  await fake.close();
  assert.equal(fake.requests.length, 3);
  assert.match(recorded[1].choices[0].message.content, /Second question/);

  // The same DB, a scenario and no session: the fake is closed and no
  // upstream is configured, so every answer is from the recording.
  const server = await serveScenario(t, dir, 'scenario_from_session.yaml');
  const client = await openaiClient(server.http);
  assert.deepEqual(plain(await ask(client, 'which one?')), recorded[1], 'seq 2, as recorded');
  assert.deepEqual(plain(await ask(client, 'next')), recorded[0], 'the first exchange not yet served');
  assert.deepEqual(plain(await ask(client, 'next')), recorded[2]);
  const err = await failure(ask(client, 'next'));
  assert.match(err.message, /every exchange of session "golden" has been served/, String(err));

  const ex = exchanges(await stopAndTrace(server));
  assert.deepEqual(ex.map((e) => [attr(e, 'understudy.rule.name'), attr(e, 'understudy.action'), attr(e, 'understudy.from_session'), attr(e, 'understudy.exchange.seq')]), [
    ['second-recorded', 'from_session', 'golden', '2'],
    ['next-recorded', 'from_session', 'golden', '1'],
    ['next-recorded', 'from_session', 'golden', '3'],
  ]);
});

// ---------------------------------------------------------------------------
// 3. `times` under concurrency: fixtures/scenario_concurrent.yaml.

test('32 concurrent SDK requests: times 5 / times 10 / default answer exactly 5 / 10 / 17, iterations 1..32', { timeout: 30000 }, async (t) => {
  const server = await serveScenario(t, tempDir(t), 'scenario_concurrent.yaml');
  const client = await openaiClient(server.http);
  const N = 32;
  const answers = await Promise.all(Array.from({ length: N }, (_, i) => client.chat.completions.create({
    model: OPENAI_MODEL,
    messages: [{ role: 'system', content: 'You are a worker.' }, { role: 'user', content: `task ${i}` }],
  }).then((c) => c.choices[0].message.content)));
  const counts = {};
  for (const a of answers) counts[a] = (counts[a] ?? 0) + 1;
  assert.deepEqual(counts, { 'first five': 5, 'next ten': 10, 'default answer': 17 });

  const ex = exchanges(await stopAndTrace(server));
  assert.equal(ex.length, N);
  const iterations = ex.map((e) => Number(attr(e, 'understudy.agent.iteration'))).sort((a, b) => a - b);
  assert.deepEqual(iterations, Array.from({ length: N }, (_, i) => i + 1), 'each request its own iteration');
  for (const e of ex) {
    assert.equal(attr(e, 'gen_ai.agent.name'), 'worker');
    // Counting and choosing are one step: the first 5 iterations took the
    // first rule, the next 10 the second, the rest fell to the default.
    const k = Number(attr(e, 'understudy.agent.iteration'));
    const expected = k <= 5 ? ['first-five', 'rule', String(k)] : k <= 15 ? ['next-ten', 'rule', String(k - 5)] : [undefined, 'default', undefined];
    assert.deepEqual([attr(e, 'understudy.rule.name'), attr(e, 'understudy.answer.source'), attr(e, 'understudy.rule.use')], expected, `iteration ${k}`);
    // The answer the client got for this request is the one the trace names.
    const i = Number(/task (\d+)/.exec(traceUserText(e))?.[1]);
    assert.ok(Number.isInteger(i), `the trace holds the request: ${JSON.stringify(e.request)}`);
    assert.equal(answers[i], { 'first-five': 'first five', 'next-ten': 'next ten' }[expected[0]] ?? 'default answer', `task ${i}`);
  }
});

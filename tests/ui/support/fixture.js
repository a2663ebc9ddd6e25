// Canned data for the mock API (support/mock_api.js), shaped as the real
// /api/v1 serves it: protobuf's JSON mapping of the gRPC messages
// (lowerCamelCase fields, int64 as strings, enums by name).
//
// buildFixture() returns { sessions, exchanges, runs, events } where
// exchanges maps "name@version" to the session's exchanges and events maps
// a run id to its TraceEvents.

export const AGENTS = ['orchestrator', 'executor', 'reviewer'];
export const XSS_SCRIPT = '<script>window.__pwned=1</script>';
export const XSS_IMG = '<img src=x onerror="window.__pwned=1">';
const T0 = 1795702693000000; // µs

const CONTINUE = { name: 'continue', description: 'Move the workflow on.', parameters: '{"type":"object","properties":{"phase":{"type":"string"}}}' };
const WRITE = { name: 'write_file', description: 'Write a file.', parameters: '{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}' };

// One scripted call of the review loop: the agent, what it sends and gets.
function loopCalls({ rounds = 2, answer = 'SQL injection in login(): use a parameterized query.' } = {}) {
  const calls = [];
  let n = 0;
  for (let round = 0; round < rounds; round++) {
    const last = round === rounds - 1;
    calls.push({ agent: 'orchestrator', user: round ? `The reviewer says: ${answer}` : 'Task: write login(name).', tool: ['continue', { phase: 'execute' }], phase: ['review', 'execute'] });
    calls.push({ agent: 'executor', user: 'Task: write login(name).', tool: ['write_file', { path: 'login.js', content: `v${round}` }] });
    calls.push({ agent: 'executor', user: 'Task: write login(name).', toolResult: ['write_file', `call_${n}`, 'wrote login.js'], tool: ['continue', { phase: 'review' }], phase: ['execute', 'review'] });
    calls.push({ agent: 'reviewer', user: `Review login.js: v${round}`, text: last ? 'LGTM' : answer });
    n++;
  }
  return calls;
}

function request(c) {
  const messages = [
    { role: 'system', content: `You are the ${c.agent}.` },
    { role: 'user', content: c.user },
  ];
  if (c.toolResult) {
    messages.push({ role: 'assistant', toolCalls: [{ id: c.toolResult[1], name: c.toolResult[0], arguments: '{"path":"login.js"}' }] });
    messages.push({ role: 'tool', content: c.toolResult[2], toolCallId: c.toolResult[1] });
  }
  return { model: 'gpt-test', messages, tools: c.agent === 'reviewer' ? [] : [WRITE, CONTINUE] };
}

function response(c, i) {
  const message = { role: 'assistant' };
  if (c.tool) message.toolCalls = [{ id: `call_${i}`, name: c.tool[0], arguments: JSON.stringify(c.tool[1]) }];
  if (c.text) message.content = c.text;
  return { id: `chatcmpl-${i}`, model: 'gpt-test', message, finishReason: c.tool ? 'tool_calls' : 'stop', usage: { inputTokens: '10', outputTokens: '5' } };
}

// The events a run of `calls` leaves, as the server traces them.
export function traceOf(runId, calls, { mode = 'record', session = 'review-loop', version = 1, strict = true, missAt = -1, startSeq = 1, t0 = T0, started = true, ended = true, custom = true } = {}) {
  const events = [];
  let seq = startSeq - 1;
  let t = t0;
  let prev = '';
  const push = (kind, agent, attributes, extra = {}) => {
    seq += 1;
    t += 1200 + (seq % 7) * 310;
    const attrs = agent ? { 'gen_ai.agent.name': agent, ...attributes } : attributes;
    events.push({ run: runId, seq: String(seq), kind, ...(agent ? { agent } : {}), timeMicros: String(t), attributes: attrs, ...extra });
  };
  if (started) {
    push('run_started', '', {
      'understudy.run.mode': mode, 'understudy.run.strict': String(strict),
      'understudy.session.name': session, 'understudy.session.version': String(version),
    });
  }
  let misses = 0;
  const requests = {};
  calls.forEach((c, i) => {
    requests[c.agent] = (requests[c.agent] || 0) + 1;
    if (c.agent !== prev) {
      push('agent_execution', c.agent, { 'understudy.agent.iteration': String(requests[c.agent]), ...(prev ? { 'understudy.previous_agent': prev } : {}) });
      prev = c.agent;
    }
    if (c.toolResult) push('tool_result', c.agent, { 'gen_ai.tool.name': c.toolResult[0], 'gen_ai.tool.call.id': c.toolResult[1], 'gen_ai.tool.call.result': c.toolResult[2] });
    const req = request(c);
    let source = mode === 'record' ? 'upstream' : 'recording';
    if (i === missAt) {
      misses += 1;
      req.messages[1].content += ' (changed)';
      push('miss', c.agent, {
        'gen_ai.request.model': 'gpt-test',
        'understudy.miss.closest_seq': String(i + 1),
        'understudy.miss.served_seq': strict ? '0' : String(i + 1),
        'understudy.miss.report': `no recorded exchange matches this request (agent "${c.agent}", session "${session}@${version}"); closest is exchange #${i + 1} (agent "${c.agent}"), 1 field differs:\n  messages[1].content: recorded ${JSON.stringify(c.user)} got ${JSON.stringify(req.messages[1].content)}`,
      }, { request: req });
      if (strict) return;
      source = 'closest_recording';
    }
    // What the answer caused: traced after its exchange in a replay, and
    // before it when the upstream answered (the exchange is traced once
    // recorded).
    const effects = () => {
      if (c.tool) {
        push('tool_call', c.agent, { 'gen_ai.tool.name': c.tool[0], 'gen_ai.tool.call.id': `call_${i}`, 'gen_ai.tool.call.arguments': JSON.stringify(c.tool[1]) });
      }
      if (c.phase) push('phase_transition', c.agent, { 'understudy.phase.from': c.phase[0], 'understudy.phase.to': c.phase[1] });
    };
    const upstream = !c.rule && source === 'upstream';
    if (upstream) effects();
    push('exchange', c.agent, {
      'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-test', 'gen_ai.response.id': `chatcmpl-${i}`,
      'understudy.answer.source': c.rule ? 'rule' : source, 'understudy.exchange.seq': String(i + 1), 'understudy.iteration': String(i + 1),
      'understudy.agent.iteration': String(requests[c.agent]),
      ...(c.rule ? { 'understudy.rule.name': c.rule } : {}),
    }, { request: req, response: response(c, i) });
    if (!upstream) effects();
  });
  if (custom) push('test.checkpoint', '', { note: 'loop done' });
  if (ended) push('run_ended', '', { 'understudy.run.served': String(calls.length), 'understudy.run.misses': String(misses) });
  return events;
}

function run(id, { mode = 'RUN_MODE_RECORD', session = 'review-loop', version = 1, state = 'RUN_STATE_ENDED', strict = true, misses = 0, served = 8, recorded = 0, start = T0, durationMicros = 276000 } = {}) {
  const r = {
    id, session, sessionVersion: String(version), mode, strict, state, served: String(served), recorded: String(recorded),
    misses: String(misses), startedAtMicros: String(start), traceLevel: 'TRACE_LEVEL_FULL',
  };
  if (state !== 'RUN_STATE_ACTIVE') r.endedAtMicros = String(start + durationMicros);
  return r;
}

export function buildFixture() {
  const calls = loopCalls();
  const exchanges = {
    'review-loop@1': calls.map((c, i) => ({ seq: String(i + 1), agent: c.agent, request: request(c), response: response(c, i), recordedAtMicros: String(T0 + i) })),
  };
  const xssCalls = [{ agent: 'reviewer', user: 'Review this.', text: `Looks fine. ${XSS_SCRIPT} ${XSS_IMG}` }];
  exchanges['xss@1'] = xssCalls.map((c, i) => ({ seq: String(i + 1), agent: c.agent, request: request(c), response: response(c, i) }));
  const bigCalls = [];
  while (bigCalls.length < 320) bigCalls.push(...loopCalls({ rounds: 1 }));
  const sessions = [
    { name: 'review-loop', version: '1', state: 'SESSION_STATE_CLOSED', exchangeCount: String(calls.length), createdAtMicros: String(T0), agents: AGENTS },
    { name: 'xss', version: '1', state: 'SESSION_STATE_CLOSED', exchangeCount: '1', createdAtMicros: String(T0 + 5e6), agents: ['reviewer'] },
  ];
  const runs = [
    run('run-rec', { recorded: calls.length, served: calls.length }),
    run('run-rep', { mode: 'RUN_MODE_REPLAY', strict: false, misses: 1, served: calls.length, start: T0 + 1e6, durationMicros: 61000 }),
    run('run-live', { mode: 'RUN_MODE_REPLAY', state: 'RUN_STATE_ACTIVE', served: 0, start: T0 + 2e6 }),
    run('run-live-rec', { state: 'RUN_STATE_ACTIVE', served: 0, start: T0 + 2.5e6 }),
    run('run-xss', { session: 'xss', served: 1, recorded: 1, start: T0 + 3e6 }),
    run('run-big', { mode: 'RUN_MODE_REPLAY', session: 'review-loop', served: bigCalls.length, start: T0 + 4e6, durationMicros: 5e6 }),
  ];
  const events = {
    'run-rec': traceOf('run-rec', calls),
    'run-rep': traceOf('run-rep', calls, { mode: 'replay', strict: false, missAt: 4 }),
    'run-live': traceOf('run-live', calls.slice(0, 2), { mode: 'replay', ended: false, custom: false }),
    'run-live-rec': traceOf('run-live-rec', calls.slice(0, 1), { ended: false, custom: false }),
    'run-xss': traceOf('run-xss', xssCalls, { session: 'xss' }),
  };
  const big = traceOf('run-big', bigCalls, { mode: 'replay', custom: false });
  events['run-big'] = big.slice(0, 999).concat([{ ...big[big.length - 1], seq: '1000' }]);
  return { sessions, exchanges, runs, events, calls };
}

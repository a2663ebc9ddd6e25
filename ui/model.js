// What the API's records mean to a reader: a run's mode, state and
// session; an event's agent, and what it draws in the sequence diagram
// (its shape and lanes), which the detail panel and the views describe too.

import { clip, duration, num } from './format.js';

// Runs and sessions.

const MODES = ['unspecified', 'record', 'replay', 'passthrough', 'once', 'new'];
const STATES = ['unspecified', 'active', 'ended', 'failed'];
const LEVELS = ['unspecified', 'full', 'summary', 'off'];

function enumName(v, prefix, names) {
  if (v === undefined || v === null) return names[0];
  if (typeof v === 'number' || /^\d+$/.test(String(v))) return names[Number(v)] || String(v);
  return String(v).replace(prefix, '').toLowerCase();
}

export const runMode = (r) => enumName(r.mode, 'RUN_MODE_', MODES);
export const runState = (r) => (r.active === true ? 'active' : enumName(r.state, 'RUN_STATE_', STATES));
export const runLevel = (r) => enumName(r.traceLevel, 'TRACE_LEVEL_', LEVELS);
export const sessionState = (v) => enumName(v.state, 'SESSION_STATE_', ['unspecified', 'open', 'closed']);

export function sessionLabel(r) {
  if (!r.session) return '';
  if (r.session.includes('@') || !num(r.sessionVersion)) return r.session;
  return `${r.session}@${num(r.sessionVersion)}`;
}

export const sessionName = (r) => (r.session || '').replace(/@\d+$/, '');

// How long the run took, or has taken so far.
export function runDuration(r) {
  const start = num(r.startedAtMicros);
  const end = num(r.endedAtMicros);
  if (!start) return '—';
  if (end) return duration(end - start);
  return runState(r) === 'active' ? `${duration(Date.now() * 1000 - start)} so far` : '—';
}

// Events: who did what, for the diagram and the panels.

export const attr = (ev, k) => (ev.attributes && ev.attributes[k]) || '';
export const agentOf = (ev) => ev.agent || attr(ev, 'gen_ai.agent.name');
const UNNAMED = '(unnamed agent)';
const laneOfAgent = (ev) => agentOf(ev) || UNNAMED;

function toolCallsText(calls) {
  return (calls || []).map((c) => `${c.name}(${clip(c.arguments, 40)})`).join(', ');
}

// An answer in a line: its text and its tool calls, whichever it has.
function answerSummary(ev) {
  if (attr(ev, 'error.type')) return `error: ${attr(ev, 'error.type')}`;
  const m = (ev.response && ev.response.message) || {};
  const said = m.content ? `“${m.content}”` : '';
  const calls = m.toolCalls && m.toolCalls.length ? `⇢ ${toolCallsText(m.toolCalls)}` : '';
  if (said || calls) return [said, calls].filter(Boolean).join(' ');
  const action = attr(ev, 'understudy.action');
  if (action && action !== 'respond') return action;
  return 'answer';
}

function sourceLabel(ev) {
  const src = attr(ev, 'understudy.answer.source');
  if (src === 'rule') return `rule ${attr(ev, 'understudy.rule.name')}`.trim();
  if (src === 'closest_recording') return `closest recording #${attr(ev, 'understudy.exchange.seq')}`;
  if (src === 'recording') return `recording #${attr(ev, 'understudy.exchange.seq')}`;
  return src;
}

// The lines "  path: recorded X got Y" of a miss report.
export function parseMissDiffs(report) {
  const out = [];
  for (const line of String(report || '').split('\n')) {
    const m = /^\s+(\S.*?): recorded (.*?) got (.*)$/.exec(line);
    if (m) out.push({ path: m[1], recorded: m[2], got: m[3] });
  }
  return out;
}

// What an event draws: an arrow between two lanes (with an optional
// return arrow), or a mark on one lane. `label` is plain text. `turn`
// numbers an agent_execution among its agent's turns (1 for its first),
// which the event itself does not say: its understudy.agent.iteration
// counts the agent's requests.
export function shapeOf(ev, { turn = 0 } = {}) {
  const k = ev.kind;
  const agent = laneOfAgent(ev);
  const a = (name) => attr(ev, name);
  switch (k) {
    case 'exchange': {
      const req = ev.request || {};
      const msgs = (req.messages || []).length;
      const op = a('gen_ai.operation.name') || 'chat';
      return {
        type: 'call', from: agent, to: 'model', cls: 'model',
        label: `${op} ${req.model || a('gen_ai.request.model')}${msgs ? ` · ${msgs} msg${msgs > 1 ? 's' : ''}` : ''}`,
        back: answerSummary(ev),
        badge: a('understudy.answer.source') === 'rule' ? 'R' : '',
        rule: a('understudy.rule.name'),
        note: sourceLabel(ev),
      };
    }
    case 'miss': {
      const closest = a('understudy.miss.closest_seq');
      const served = num(a('understudy.miss.served_seq'));
      const diffs = parseMissDiffs(a('understudy.miss.report'));
      let label = 'miss: no recording matches';
      if (served) label = `miss: answered from closest #${served}`;
      else if (num(closest)) label = `miss: closest #${closest}`;
      if (diffs.length) label += ` (${diffs[0].path} differs)`;
      return { type: 'call', from: agent, to: 'model', cls: 'miss', label, cross: true };
    }
    case 'tool_call':
    case 'sim.tool_call':
      return { type: 'call', from: agent, to: 'tools', cls: 'tool', label: `${a('gen_ai.tool.name')}(${a('gen_ai.tool.call.arguments')})` };
    case 'tool_result':
    case 'sim.tool_result':
      return {
        type: 'call', from: 'tools', to: agent, cls: 'tool', dashed: true,
        label: `${a('gen_ai.tool.name') || 'result'} → ${a('gen_ai.tool.call.result') || a('understudy.sim.output') || ''}`,
      };
    case 'ui_call':
      return {
        type: 'call', from: agent, to: 'test', cls: 'ui',
        label: `asks: ${a('understudy.ui.prompt')}`, back: `“${a('understudy.ui.answer')}”`,
      };
    case 'sim.prompt':
      return { type: 'call', from: 'test', to: agent, cls: 'ui', label: `prompt: ${a('understudy.sim.prompt') || a('understudy.sim.text')}` };
    case 'agent_execution':
      return { type: 'mark', lane: agent, mark: 'start', label: turn ? `${agent} starts turn ${turn}` : `${agent} starts a turn` };
    case 'phase_transition':
      return { type: 'mark', lane: agent, mark: 'phase', label: `phase ${a('understudy.phase.from') || '∅'} → ${a('understudy.phase.to')}` };
    case 'routing_decision': {
      const reason = a('understudy.routing.reason');
      return { type: 'mark', lane: agent, mark: 'route', label: `route to ${a('understudy.routing.agents') || a('understudy.routing.phase')}${reason ? ` (${reason})` : ''}` };
    }
    case 'workflow_end':
      return { type: 'mark', lane: agent, mark: 'end', label: 'workflow end' };
    case 'run_started':
      return {
        type: 'mark', lane: 'test', mark: 'run',
        label: `run started: ${a('understudy.run.mode')}${a('understudy.session.name') ? ` of ${a('understudy.session.name')}@${a('understudy.session.version')}` : ''}${a('understudy.run.strict') === 'true' ? ', strict' : ''}`,
      };
    case 'run_ended':
      return {
        type: 'mark', lane: 'test', mark: 'run',
        label: `run ended: ${a('understudy.run.served') || 0} served, ${a('understudy.run.misses') || 0} misses`,
      };
    default: {
      const pairs = Object.entries(ev.attributes || {})
        .filter(([key]) => key !== 'gen_ai.agent.name')
        .slice(0, 2)
        .map(([key, v]) => `${key}=${v}`);
      const own = k.startsWith('sim.') ? 'sim' : 'custom';
      return { type: 'mark', lane: agentOf(ev) ? agent : 'test', mark: own, label: `${k}${pairs.length ? ` ${pairs.join(' ')}` : ''}` };
    }
  }
}

// Turns: adds to `into` (seq → n) the number of each agent_execution of
// `events` (in seq order) among its agent's turns, from 1, counting on
// from `counts` (lane → turns so far, updated). Events already in `into`
// are left alone. Returns `into`.
export function turnsOf(events, counts = new Map(), into = new Map()) {
  for (const ev of events) {
    if (ev.kind !== 'agent_execution' || into.has(num(ev.seq))) continue;
    const n = (counts.get(laneOfAgent(ev)) || 0) + 1;
    counts.set(laneOfAgent(ev), n);
    into.set(num(ev.seq), n);
  }
  return into;
}

// Where `ev` goes among the events placed so far (`shown`, in answer
// order): the index to insert it at. The engine traces what an answer
// caused (tool_call, routing_decision, phase_transition, workflow_end, in
// that order) as soon as the answer arrives, but an exchange answered by the
// upstream (record and passthrough runs) only once it is stored, so there
// its effects come first; a replay traces the exchange first. An upstream
// exchange goes before the trailing effects it can have caused: the same
// agent's; no more tool calls than it has, with its call ids; routing and
// phase only from JSON-object text or tool calls; a workflow end only from
// tool calls (the order `understudy timeline` shows, cli/timeline.cc).
// Any other event goes last.
export function answerPosition(ev, shown) {
  let at = shown.length;
  if (ev.kind !== 'exchange' || attr(ev, 'understudy.answer.source') !== 'upstream' || !ev.response) return at;
  const m = ev.response.message || {};
  const calls = m.toolCalls || [];
  const json = String(m.content || '').trimStart().startsWith('{');
  const agent = agentOf(ev);
  const previous = (kind) => at > 0 && shown[at - 1].kind === kind && agentOf(shown[at - 1]) === agent;
  if (calls.length && previous('workflow_end')) at--;
  if ((calls.length || json) && previous('phase_transition')) at--;
  if (json && previous('routing_decision')) at--;
  const ids = new Set(calls.map((c) => c.id || ''));
  for (let taken = 0; taken < calls.length && previous('tool_call'); taken++) {
    const id = attr(shown[at - 1], 'gen_ai.tool.call.id');
    if (id && !ids.has(id)) break;
    at--;
  }
  return at;
}

// `events` (in seq order) in answer order: each model call before what its
// answer caused (answerPosition), as the diagram draws and compares them.
export function inAnswerOrder(events) {
  const out = [];
  for (const ev of events) out.splice(answerPosition(ev, out), 0, ev);
  return out;
}

// Lanes: the test first, the agents in order of first appearance, then the
// model and the tools.
export function lanesFor(...eventLists) {
  const agents = [];
  for (const events of eventLists) {
    for (const ev of events) {
      const sh = shapeOf(ev);
      for (const lane of sh.type === 'mark' ? [sh.lane] : [sh.from, sh.to]) {
        if (!['test', 'model', 'tools'].includes(lane) && !agents.includes(lane)) agents.push(lane);
      }
    }
  }
  return ['test', ...agents, 'model', 'tools'];
}

// The detail panel: one event's request, answer and attributes; for a miss,
// its report, the closest recording and the fields that differ.

import { api } from './api.js';
import { canonicalRequest, diffPaths } from './diff.js';
import { block, h } from './dom.js';
import { isoMicros, jsonValueText, num, offset, prettyJson, prettyText } from './format.js';
import { agentOf, attr, parseMissDiffs, sessionName, shapeOf } from './model.js';

// Chat messages, one per item, with their role and tool calls.
function conversation(messages) {
  return h('ol', { class: 'conversation' }, (messages || []).map((m) =>
    h('li', { class: `msg role-${String(m.role || 'unknown').replace(/[^a-z]/g, '')}` },
      h('span', { class: 'role' }, m.role || '?', m.name ? ` (${m.name})` : '', m.toolCallId ? ` ← ${m.toolCallId}` : ''),
      m.content ? h('div', { class: 'content' }, m.content) : null,
      (m.toolCalls || []).map((c) => h('div', { class: 'tool-call' }, `⇢ ${c.name}(`, h('code', null, c.arguments || ''), ')')))));
}

// A two-column table of [key, value] rows.
function kv(rows) {
  return h('table', { class: 'kv' }, h('tbody', null, rows.map(([k, v]) =>
    h('tr', null, h('th', { scope: 'row' }, k), h('td', null, v)))));
}

// Fills `panel` with one event. `ctx` gives the run's start (t0), a loader
// of the session exchange a miss came closest to (loadRecorded), the
// number of an agent_execution among its agent's turns (turnOf) and what
// closing the panel does (close).
export function renderDetail(panel, ev, ctx) {
  const seq = num(ev.seq);
  const agent = agentOf(ev);
  const t = num(ev.timeMicros);
  const sh = shapeOf(ev, { turn: ctx.turnOf ? ctx.turnOf(seq) : 0 });
  const body = [];
  body.push(h('header', { class: 'detail-head' },
    h('h3', null, `#${seq} `, h('span', { class: `kind kind-${ev.kind === 'miss' ? 'miss' : 'other'}` }, ev.kind), agent ? h('span', { class: 'agent-chip' }, agent) : null),
    h('button', { type: 'button', class: 'close', 'data-action': 'close-detail', 'aria-label': 'Close', on: { click: () => ctx.close && ctx.close() } }, '×')));
  body.push(h('p', { class: 'when' }, isoMicros(t), ctx.t0 ? ` · ${offset(t - ctx.t0)} after the run started` : ''));
  body.push(h('p', { class: 'summary' }, sh.label || '', sh.back ? h('br') : null, sh.back || ''));
  if (sh.note) body.push(h('p', { class: 'note' }, `answered from: ${sh.note}`));

  if (ev.kind === 'miss') body.push(missBlock(ev, ctx));

  if (ev.kind === 'tool_call' || ev.kind === 'sim.tool_call') {
    body.push(block('Arguments', null, h('pre', { 'data-json': 'arguments' }, prettyText(attr(ev, 'gen_ai.tool.call.arguments')))));
  }
  if (ev.kind === 'tool_result') {
    body.push(block('Result', null, h('pre', { 'data-json': 'result' }, prettyText(attr(ev, 'gen_ai.tool.call.result')))));
  }
  if (ev.request) {
    body.push(block('Request', { 'data-section': 'request' },
      conversation(ev.request.messages),
      h('details', { class: 'raw', open: ev.kind !== 'exchange' && ev.kind !== 'miss' ? true : undefined },
        h('summary', null, 'as JSON'),
        h('pre', { 'data-json': 'request' }, prettyJson(ev.request)))));
  }
  if (ev.response) {
    const m = ev.response.message;
    body.push(block('Answer', { 'data-section': 'response' },
      m ? conversation([m]) : null,
      h('pre', { 'data-json': 'response' }, prettyJson(ev.response))));
  }
  const attrs = Object.entries(ev.attributes || {}).filter(([k]) => k !== 'understudy.miss.report').sort(([a], [b]) => a.localeCompare(b));
  if (attrs.length) body.push(block('Attributes', null, kv(attrs)));
  panel.replaceChildren(...body);
  panel.hidden = false;
  panel.scrollTop = 0;
}

function missBlock(ev, ctx) {
  const report = attr(ev, 'understudy.miss.report');
  const closest = num(attr(ev, 'understudy.miss.closest_seq'));
  const served = num(attr(ev, 'understudy.miss.served_seq'));
  const diffs = parseMissDiffs(report);
  const sec = block('Miss', { class: 'block miss-block', 'data-section': 'miss' });
  sec.append(h('p', null, served
    ? `Nothing matched this request exactly; recorded exchange #${served} answered it instead (non-strict replay).`
    : 'Nothing recorded answered this request.'));
  if (report) sec.append(h('pre', { 'data-miss-report': '' }, report));
  const diffHost = h('div', { 'data-diffs': '' });
  sec.append(diffHost);
  const showDiffs = (list, source) => {
    if (!list.length) return;
    diffHost.replaceChildren(h('h5', null, `Differing fields (${source})`),
      h('ul', { class: 'diffs' }, list.map((d) => h('li', null,
        h('code', { class: 'path' }, d.path),
        h('div', { class: 'sides' },
          h('div', { class: 'recorded' }, h('span', { class: 'side-name' }, 'recorded'), jsonValueText(d.recorded)),
          h('div', { class: 'got' }, h('span', { class: 'side-name' }, 'this request'), jsonValueText(d.got)))))));
  };
  showDiffs(diffs, 'from the miss report');
  if (closest && ctx.loadRecorded) {
    const host = h('div', { class: 'closest', 'data-closest': closest }, h('p', { class: 'muted' }, `Loading the closest recording, exchange #${closest}…`));
    sec.append(host);
    ctx.loadRecorded(closest).then((ex) => {
      if (!ex) {
        host.replaceChildren(h('p', { class: 'muted' }, `Closest recording: exchange #${closest} (not found in the session).`));
        return;
      }
      if (!diffs.length && ev.request && ex.request) {
        showDiffs(diffPaths(canonicalRequest(ex.request), canonicalRequest(ev.request)).slice(0, 20).map((d) => ({ path: d.path, recorded: d.a, got: d.b })), 'computed');
      }
      host.replaceChildren(
        h('h5', null, `Closest recording: exchange #${num(ex.seq)}${ex.agent ? ` (agent ${ex.agent})` : ''}`),
        ex.request ? conversation(ex.request.messages) : null,
        ex.request ? h('details', null, h('summary', null, 'its request as JSON'), h('pre', { 'data-json': 'closest-request' }, prettyJson(ex.request))) : null,
        ex.response ? h('details', null, h('summary', null, 'its recorded answer'), h('pre', { 'data-json': 'closest-response' }, prettyJson(ex.response))) : null);
    }).catch((e) => {
      host.replaceChildren(h('p', { class: 'error' }, `Closest recording #${closest}: ${e.message}`));
    });
  } else if (closest) {
    sec.append(h('p', null, `Closest recording: exchange #${closest}.`));
  }
  return sec;
}

// The session exchange a miss came closest to, cached per session version.
export function recordedLoader(run, signal) {
  let pending = null;
  return async (seq) => {
    const name = sessionName(run);
    if (!name) return null;
    if (!pending) {
      const v = num(run.sessionVersion);
      pending = api(`/sessions/${encodeURIComponent(name)}${v ? `?version=${v}` : ''}`, { signal });
    }
    const resp = await pending;
    return (resp.exchanges || []).find((x) => num(x.seq) === seq) || null;
  };
}

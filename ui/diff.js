// Comparing events: where two requests or answers differ (a miss's
// computed diffs in the detail panel) and where two runs first part ways
// (the compare view).

import { clip, jsonValueText, num } from './format.js';
import { agentOf, attr, inAnswerOrder } from './model.js';

// A request or an answer as compared: the fields a reader cares about, each
// present (absent ones as "" or []), in a fixed order.
export function canonicalRequest(r) {
  r = r || {};
  return {
    model: r.model || '',
    operation: r.operation || '',
    messages: (r.messages || []).map((m) => ({
      role: m.role || '', content: m.content || '', name: m.name || '', toolCallId: m.toolCallId || '',
      toolCalls: (m.toolCalls || []).map((c) => ({ name: c.name || '', arguments: c.arguments || '' })),
    })),
    tools: (r.tools || []).map((t) => ({ name: t.name || '', parameters: t.parameters || '' })),
    extra: r.extra || '',
  };
}

function canonicalAnswer(r) {
  const m = (r && r.message) || {};
  return {
    content: m.content || '',
    toolCalls: (m.toolCalls || []).map((c) => ({ name: c.name || '', arguments: c.arguments || '' })),
    finishReason: (r && r.finishReason) || '',
  };
}

// Paths at which two JSON values differ ({path, a, b}, a and b as JSON text).
export function diffPaths(a, b, path = '', out = []) {
  if (out.length >= 50) return out;
  const isObj = (v) => v && typeof v === 'object';
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const p = `${path}[${i}]`;
      if (i >= a.length || i >= b.length) out.push({ path: p, a: i < a.length ? JSON.stringify(a[i]) : '', b: i < b.length ? JSON.stringify(b[i]) : '' });
      else diffPaths(a[i], b[i], p, out);
    }
  } else if (isObj(a) && isObj(b) && !Array.isArray(a) && !Array.isArray(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      diffPaths(a[k], b[k], path ? `${path}.${k}` : k, out);
    }
  } else if (JSON.stringify(a) !== JSON.stringify(b)) {
    out.push({ path: path || '(value)', a: a === undefined ? '' : JSON.stringify(a), b: b === undefined ? '' : JSON.stringify(b) });
  }
  return out;
}

// Why two events (same position in two runs) differ, or '' when they are
// the same for a reader: kind, agent, tool, and an exchange's content.
function eventDifference(ea, eb) {
  const what = [];
  if (ea.kind !== eb.kind) {
    what.push(`kind differs: ${ea.kind} vs ${eb.kind}`);
  }
  if (agentOf(ea) !== agentOf(eb)) what.push(`agent differs: ${agentOf(ea) || '(none)'} vs ${agentOf(eb) || '(none)'}`);
  const ta = attr(ea, 'gen_ai.tool.name');
  const tb = attr(eb, 'gen_ai.tool.name');
  if (ta !== tb) what.push(`tool differs: ${ta || '(none)'} vs ${tb || '(none)'}`);
  const content = (label, x, y) => {
    const d = diffPaths(x, y);
    if (!d.length) return;
    const quote = (t) => (t ? `“${t}”` : '(absent)');
    const [sa, sb] = contrast(d[0].a && jsonValueText(d[0].a), d[0].b && jsonValueText(d[0].b));
    what.push(`${label} differs at ${d[0].path}: ${quote(sa)} vs ${quote(sb)}`);
  };
  if ((ea.request || eb.request) && ['exchange', 'miss'].includes(ea.kind) && ['exchange', 'miss'].includes(eb.kind)) {
    content('request', canonicalRequest(ea.request), canonicalRequest(eb.request));
  }
  if (ea.kind === 'exchange' && eb.kind === 'exchange') {
    content('answer', canonicalAnswer(ea.response), canonicalAnswer(eb.response));
  }
  if (ea.kind === eb.kind && ['tool_call', 'sim.tool_call'].includes(ea.kind)) {
    content('arguments', attr(ea, 'gen_ai.tool.call.arguments'), attr(eb, 'gen_ai.tool.call.arguments'));
  }
  if (ea.kind === eb.kind && ea.kind === 'tool_result') {
    content('result', attr(ea, 'gen_ai.tool.call.result'), attr(eb, 'gen_ai.tool.call.result'));
  }
  return what.join('; ');
}

// Two long texts cut to where they start to differ (with a little before).
function contrast(a, b, width = 60) {
  a = String(a);
  b = String(b);
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  const from = Math.max(0, p - 20);
  const cut = (t) => (from ? '…' : '') + clip(t.slice(from), width);
  return [a && cut(a), b && cut(b)];
}

// The first place at which two runs differ, their events taken in answer
// order (a recording traces an answer's effects before its exchange, a
// replay after it: model.js, answerPosition): { a, b, why } (a or b
// undefined when that run has ended), or null when they do not.
export function firstDivergence(eventsA, eventsB) {
  const a = inAnswerOrder(eventsA);
  const b = inAnswerOrder(eventsB);
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (i >= a.length) return { b: b[i], why: `A ended after ${a.length} events; B goes on with #${num(b[i].seq)} ${b[i].kind}` };
    if (i >= b.length) return { a: a[i], why: `B ended after ${b.length} events; A goes on with #${num(a[i].seq)} ${a[i].kind}` };
    const why = eventDifference(a[i], b[i]);
    if (why) return { a: a[i], b: b[i], why };
  }
  return null;
}

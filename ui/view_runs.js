// The runs view (#/runs, or #/session/NAME for one session's runs): each
// run's mode, status, counts and duration; two picked runs open the compare
// view.

import { api } from './api.js';
import { h } from './dom.js';
import { num, shortTime } from './format.js';
import { runDuration, runMode, runState, sessionLabel } from './model.js';
import { errorBox, runHref, setCrumbs, stateBadge } from './page.js';

export async function viewRuns(ctx, name) {
  const title = name ? name : 'All runs';
  setCrumbs({ text: 'Sessions', href: '#/' }, { text: title });
  document.title = `${title} · understudy`;
  const q = name ? `?session=${encodeURIComponent(name)}` : '';
  const [sessionsResp, runsResp] = await Promise.all([
    name ? api('/sessions', { signal: ctx.signal }) : Promise.resolve({ sessions: [] }),
    api(`/runs${q}`, { signal: ctx.signal }),
  ]);
  const versions = (sessionsResp.sessions || []).filter((x) => x.name === name);
  const runs = runsResp.runs || [];
  if (name && !versions.length && !runs.length) {
    errorBox(ctx, `session "${name}" not found`);
    return;
  }
  const picked = [];
  const compareBtn = h('button', { type: 'button', 'data-action': 'compare', disabled: true, class: 'primary' }, 'Compare the two picked runs');
  const pickHint = h('span', { class: 'muted', 'data-compare-hint': '' }, 'Pick two runs to compare them side by side.');
  const updatePick = () => {
    compareBtn.disabled = picked.length !== 2;
    pickHint.textContent = picked.length === 2 ? 'Ready: the older run goes on the left.' : `Pick two runs to compare them side by side (${picked.length}/2).`;
  };
  compareBtn.addEventListener('click', () => {
    if (picked.length !== 2) return;
    const [a, b] = picked.map((id) => runs.find((r) => r.id === id)).sort((x, y) => num(x.startedAtMicros) - num(y.startedAtMicros));
    location.hash = `#/compare/${encodeURIComponent(a.id)}/${encodeURIComponent(b.id)}`;
  });
  const rows = runs.map((r) => {
    const state = runState(r);
    const misses = num(r.misses);
    const box = h('input', { type: 'checkbox', 'data-compare-pick': r.id, 'aria-label': `pick ${r.id} to compare` });
    box.addEventListener('change', () => {
      if (box.checked) {
        picked.push(r.id);
        if (picked.length > 2) {
          const drop = picked.shift();
          const other = ctx.main.querySelector(`input[data-compare-pick="${CSS.escape(drop)}"]`);
          if (other) other.checked = false;
        }
      } else {
        picked.splice(picked.indexOf(r.id), 1);
      }
      updatePick();
    });
    const go = () => { location.hash = runHref(r.id); };
    return h('tr', {
      'data-run': r.id, class: 'clickable', tabindex: 0,
      on: { click: (e) => { if (!e.target.closest('a,input,label')) go(); }, keydown: (e) => { if (e.key === 'Enter' && e.target === e.currentTarget) go(); } },
    },
    h('td', { class: 'pick' }, box),
    h('td', { 'data-col': 'id' }, h('a', { href: runHref(r.id) }, r.id)),
    h('td', { 'data-col': 'mode' }, runMode(r), r.strict ? '' : runMode(r) === 'replay' ? h('span', { class: 'muted' }, ' (lenient)') : ''),
    h('td', { 'data-col': 'status' }, stateBadge(state)),
    name ? null : h('td', { 'data-col': 'session' }, sessionLabel(r) || h('span', { class: 'muted' }, '—')),
    h('td', { 'data-col': 'version', class: name ? 'num' : 'hidden' }, name && num(r.sessionVersion) ? `v${num(r.sessionVersion)}` : ''),
    h('td', { 'data-col': 'served', class: 'num' }, String(num(r.served))),
    h('td', { 'data-col': 'recorded', class: 'num' }, String(num(r.recorded))),
    h('td', { 'data-col': 'misses', class: `num${misses ? ' has-misses' : ''}` }, String(misses)),
    h('td', { 'data-col': 'started' }, shortTime(num(r.startedAtMicros))),
    h('td', { 'data-col': 'duration', class: 'num' }, runDuration(r)));
  });
  const summary = versions.length ? h('p', { class: 'session-summary' },
    versions.map((v) => h('span', { class: 'version' }, `v${num(v.version)}: ${num(v.exchangeCount)} exchanges`)),
    ' · agents: ', [...new Set(versions.flatMap((v) => v.agents || []))].map((a) => h('span', { class: 'agent-chip' }, a))) : null;
  ctx.main.replaceChildren(
    h('div', { class: 'view-head' }, h('h2', null, name ? ['Runs of ', h('span', { class: 'mono' }, name)] : 'All runs'), summary),
    h('div', { class: 'toolbar' }, compareBtn, pickHint),
    h('table', { class: 'grid', 'data-view': 'runs' },
      h('thead', null, h('tr', null, h('th', { class: 'pick' }, h('span', { class: 'sr' }, 'compare')), h('th', null, 'Run'), h('th', null, 'Mode'), h('th', null, 'Status'),
        name ? null : h('th', null, 'Session'), h('th', { class: name ? 'num' : 'hidden' }, 'Version'), h('th', { class: 'num' }, 'Served'), h('th', { class: 'num' }, 'Recorded'),
        h('th', { class: 'num' }, 'Misses'), h('th', null, 'Started'), h('th', { class: 'num' }, 'Duration'))),
      h('tbody', null, rows.length ? rows : h('tr', { class: 'empty' }, h('td', { colspan: 11 }, 'No runs yet.')))));
  updatePick();
}

// The sessions view (#/): every recorded session with its versions, their
// exchange counts and agents.

import { api } from './api.js';
import { h } from './dom.js';
import { num, shortTime } from './format.js';
import { sessionState } from './model.js';
import { sessionHref, setCrumbs } from './page.js';

export async function viewSessions(ctx) {
  setCrumbs({ text: 'Sessions' });
  document.title = 'Sessions · understudy';
  const { sessions = [] } = await api('/sessions', { signal: ctx.signal });
  const byName = new Map();
  for (const sess of sessions) {
    if (!byName.has(sess.name)) byName.set(sess.name, []);
    byName.get(sess.name).push(sess);
  }
  const rows = [...byName.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, versions]) => {
    versions.sort((x, y) => num(x.version) - num(y.version));
    const agents = [];
    for (const v of versions) for (const a of v.agents || []) if (!agents.includes(a)) agents.push(a);
    const latest = versions[versions.length - 1];
    const go = () => { location.hash = sessionHref(name); };
    return h('tr', {
      'data-session': name, class: 'clickable', tabindex: 0,
      on: { click: (e) => { if (!e.target.closest('a')) go(); }, keydown: (e) => { if (e.key === 'Enter') go(); } },
    },
    h('td', { 'data-col': 'name' }, h('a', { href: sessionHref(name) }, name)),
    h('td', { 'data-col': 'versions' }, versions.map((v) => h('span', { class: 'version' }, `v${num(v.version)}`,
      sessionState(v) === 'open' ? h('span', { class: 'badge state-active' }, 'open') : null))),
    h('td', { 'data-col': 'exchanges', class: 'num' }, versions.map((v) => h('span', { class: 'version-count', title: `v${num(v.version)}` }, String(num(v.exchangeCount))))),
    h('td', { 'data-col': 'agents' }, agents.length ? agents.map((a) => h('span', { class: 'agent-chip' }, a)) : h('span', { class: 'muted' }, '—')),
    h('td', { 'data-col': 'created' }, shortTime(num(latest.createdAtMicros))));
  });
  ctx.main.replaceChildren(
    h('div', { class: 'view-head' }, h('h2', null, 'Sessions'),
      h('p', { class: 'muted' }, 'Recorded sessions (golden recordings), with each version’s exchange count. Open one to see its runs.')),
    h('table', { class: 'grid', 'data-view': 'sessions' },
      h('thead', null, h('tr', null, h('th', null, 'Session'), h('th', null, 'Versions'), h('th', { class: 'num' }, 'Exchanges'), h('th', null, 'Agents'), h('th', null, 'Latest recorded'))),
      h('tbody', null, rows.length ? rows : h('tr', { class: 'empty' }, h('td', { colspan: 5 }, 'No session recorded yet. ', h('a', { href: '#/runs' }, 'All runs'), ' lists runs without one.')))));
}

// The compare view (#/compare/A/B): two runs' diagrams side by side on the
// same lanes, with the first place they differ marked, at one height in
// both.

import { api, loadEvents } from './api.js';
import { Diagram, legend } from './diagram.js';
import { recordedLoader, renderDetail } from './detail.js';
import { firstDivergence } from './diff.js';
import { h } from './dom.js';
import { num } from './format.js';
import { agentOf, lanesFor, runDuration, runMode, runState, sessionLabel } from './model.js';
import { errorBox, notFoundMessage, runHref, setCrumbs, stateBadge } from './page.js';

export async function viewCompare(ctx, idA, idB) {
  setCrumbs({ text: 'Sessions', href: '#/' }, { text: `compare ${idA} with ${idB}` });
  document.title = `compare ${idA} · ${idB} · understudy`;
  const load = async (id) => {
    try {
      const [run, events] = await Promise.all([api(`/runs/${encodeURIComponent(id)}`, { signal: ctx.signal }), loadEvents(id, ctx.signal)]);
      return { run: run.run && !run.id ? run.run : run, events };
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw Object.assign(new Error(notFoundMessage(e, 'run', id)), { shown: true });
    }
  };
  let A;
  let B;
  try {
    [A, B] = await Promise.all([load(idA), load(idB)]);
  } catch (e) {
    if (e.shown) {
      errorBox(ctx, e.message);
      return;
    }
    throw e;
  }
  if (ctx.signal.aborted) return;
  const lanes = lanesFor(A.events, B.events);
  const div = firstDivergence(A.events, B.events);
  const panel = h('aside', { class: 'detail', 'data-panel': 'detail', hidden: true });
  const diagrams = {};
  const runs = { A, B };
  for (const label of ['A', 'B']) {
    const d = new Diagram({ width: (ctx.main.clientWidth - 40 - 14) / 2 - 22, signal: ctx.signal, onSelect: (ev) => select(label, num(ev.seq)) });
    d.draw(runs[label].events, lanes);
    d.svg.dataset.side = label;
    diagrams[label] = d;
  }
  // The first divergence at one height in both diagrams: the side with
  // less above it gets the difference as room above its row.
  if (div && div.a && div.b) {
    const ya = diagrams.A.rowTop(div.a.seq);
    const yb = diagrams.B.rowTop(div.b.seq);
    if (ya !== yb) {
      const [label, ev] = ya < yb ? ['A', div.a] : ['B', div.b];
      diagrams[label].draw(runs[label].events, lanes, { gaps: new Map([[num(ev.seq), Math.abs(ya - yb)]]) });
    }
  }
  const side = (label) => {
    const X = runs[label];
    return h('section', { class: 'compare-side', 'data-side': label },
      h('div', { class: 'side-head' },
        h('h3', null, h('span', { class: 'side-tag' }, label), ' ', h('a', { class: 'mono', href: runHref(X.run.id) }, X.run.id), ' ', stateBadge(runState(X.run))),
        h('p', { class: 'muted' }, `${runMode(X.run)}${sessionLabel(X.run) ? ` of ${sessionLabel(X.run)}` : ''} · ${X.events.length} events · ${num(X.run.misses)} misses · ${runDuration(X.run)}`)),
      diagrams[label].el);
  };
  function select(label, seq) {
    const d = diagrams[label];
    const ev = d.bySeq.get(seq);
    if (!ev) return;
    for (const x of Object.values(diagrams)) x.clear('selected');
    d.mark(seq, 'selected');
    d.reveal(seq);
    renderDetail(panel, ev, {
      t0: d.t0,
      turnOf: (q) => d.turns.get(q),
      loadRecorded: recordedLoader(runs[label].run, ctx.signal),
      close: () => { panel.hidden = true; for (const x of Object.values(diagrams)) x.clear('selected'); },
    });
    panel.querySelector('h3').prepend(h('span', { class: 'side-tag' }, label), ' ');
  }
  const sides = h('div', { class: 'compare' }, side('A'), side('B'));
  let line;
  if (div) {
    const ea = div.a;
    const eb = div.b;
    if (ea) diagrams.A.mark(ea.seq, 'divergence');
    if (eb) diagrams.B.mark(eb.seq, 'divergence');
    const link = (label, ev) => (ev ? h('button', { type: 'button', class: 'seq-link', 'data-goto': `${label}${num(ev.seq)}`, on: { click: () => select(label, num(ev.seq)) } },
      `${label} #${num(ev.seq)} ${ev.kind}${agentOf(ev) ? ` (${agentOf(ev)})` : ''}`) : h('span', { class: 'muted' }, `${label}: (ended)`));
    line = h('p', { class: 'divergence-line', 'data-first-divergence': '', 'data-seq-a': ea ? num(ea.seq) : '', 'data-seq-b': eb ? num(eb.seq) : '' },
      h('strong', null, 'First divergence: '), link('A', ea), ' vs ', link('B', eb), ' — ', h('span', { 'data-why': '' }, div.why));
  } else {
    line = h('p', { class: 'divergence-line same', 'data-first-divergence': 'none' },
      `No divergence: both runs have the same ${A.events.length} events (kinds, agents, tools, requests and answers).`);
  }
  ctx.main.replaceChildren(h('div', { 'data-view': 'compare', class: 'compare-view' },
    h('div', { class: 'view-head' }, h('h2', null, 'Compare two runs'),
      h('p', { class: 'muted' }, 'Events side by side in order; they are compared by kind, agent, tool and, for model calls, request and answer content. ',
        h('a', { href: `#/compare/${encodeURIComponent(idB)}/${encodeURIComponent(idA)}` }, 'Swap sides'))),
    line, legend(), sides, panel));
  // Both boxes as tall as the taller and scrolled alike, so that the
  // divergence's rows (at one height in both) sit side by side.
  const [da, db] = [diagrams.A, diagrams.B];
  const boxH = Math.max(da.wrap.clientHeight, db.wrap.clientHeight);
  for (const d of [da, db]) d.wrap.style.height = `${boxH}px`;
  if (div && div.a && div.b) {
    const top = da.rowTop(div.a.seq);
    const most = Math.min(da.wrap.scrollHeight, db.wrap.scrollHeight) - boxH;
    da.wrap.scrollTop = db.wrap.scrollTop = Math.max(0, Math.min(top - boxH / 3, most));
  } else if (div) {
    if (div.a) da.reveal(div.a.seq);
    if (div.b) db.reveal(div.b.seq);
  }
  performance.mark('understudy:diagram-drawn');
}

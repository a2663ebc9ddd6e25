// The run view (#/run/ID): the run's header and counts, its sequence
// diagram (drawn page by page, then live while the run is active), the
// detail panel of the event clicked, and assertions checked against it.

import { api, watchEvents } from './api.js';
import { Diagram, legend } from './diagram.js';
import { recordedLoader, renderDetail } from './detail.js';
import { block, h } from './dom.js';
import { isoMicros, num, shortTime } from './format.js';
import { lanesFor, runDuration, runLevel, runMode, runState, sessionLabel, sessionName } from './model.js';
import { errorBox, notFoundMessage, sessionHref, setCrumbs, stateBadge } from './page.js';

// The run header: what the run is and its counts; update() refreshes it.
function runHeader(run, events) {
  const el = h('section', { class: 'run-head' });
  const update = (r, evs) => {
    const kinds = {};
    for (const ev of evs) kinds[ev.kind] = (kinds[ev.kind] || 0) + 1;
    const agents = lanesFor(evs).length - 3;
    const missEvents = kinds.miss || 0;
    const misses = Math.max(num(r.misses), missEvents);
    const state = runState(r);
    const session = sessionLabel(r);
    const pair = (name, ...value) => h('div', { 'data-field': name.toLowerCase() }, h('dt', null, name), h('dd', null, ...value));
    const count = (key, n, label, cls = '') => h('div', { class: `count ${cls}` }, h('span', { class: 'n', [`data-count`]: key }, String(n)), h('span', { class: 'what' }, label));
    el.replaceChildren(
      h('div', { class: 'title-row' },
        h('h2', null, 'Run ', h('span', { class: 'mono' }, r.id)), stateBadge(state),
        h('span', { class: 'live', 'data-live': el.dataset.live || 'off' }, el.dataset.live === 'on' ? '● live' : '')),
      h('dl', { class: 'meta' },
        pair('Session', session ? h('a', { href: sessionHref(sessionName(r)) }, session) : '—'),
        pair('Mode', runMode(r), runMode(r) === 'replay' ? (r.strict ? ', strict' : ', lenient (closest recording answers a miss)') : ''),
        r.scenario ? pair('Scenario', r.scenario) : null,
        pair('Trace', runLevel(r)),
        pair('Started', h('span', { title: isoMicros(num(r.startedAtMicros)) }, shortTime(num(r.startedAtMicros)))),
        pair('Duration', runDuration(r))),
      h('div', { class: 'counts' },
        count('events', evs.length, 'events'),
        count('exchanges', kinds.exchange || 0, 'model calls'),
        count('tool-calls', (kinds.tool_call || 0) + (kinds['sim.tool_call'] || 0), 'tool calls'),
        count('misses', misses, misses === 1 ? 'miss' : 'misses', misses ? 'bad' : ''),
        count('agents', agents, agents === 1 ? 'agent' : 'agents'),
        count('served', Math.max(num(r.served), kinds.exchange || 0), 'served'),
        count('recorded', num(r.recorded), 'recorded')));
  };
  update(run, events);
  return { el, update };
}

// What the spec box shows while it is empty, and what Check checks then.
const EXAMPLE_SPEC = `assertions:
  - no_misses: true
`;

// The events a check's result points at, and which of them mark the
// diagram. A sequence check that failed (divergenceIndex ≥ 0) lists the
// events that matched, then the one at which the run differed, if the run
// had one there (docs/assertions.md): only that one is marked. Any other
// failed check marks every event it lists.
function pointsOf(r) {
  const seqs = (r.eventSeqs || []).map(num);
  const at = r.divergenceIndex === undefined ? -1 : num(r.divergenceIndex);
  if (r.passed) return { seqs, marked: [], label: 'events: ' };
  if (at < 0) return { seqs, marked: seqs, label: 'points at: ' };
  const differs = at < seqs.length ? [seqs[at]] : [];
  return { seqs: seqs.slice(0, at), marked: differs, label: 'matched before it: ', differs };
}

// A spec box whose checks run against the run (POST .../assert); failed
// checks mark the events they point at, which select() opens.
function assertionPanel(runId, diagram, select, signal) {
  const spec = h('textarea', {
    'data-assert-spec': '', rows: 6, spellcheck: 'false', 'aria-label': 'assertion spec (YAML or JSON)',
    placeholder: `# Paste or type a spec here. Left empty, Check checks this one:\n${EXAMPLE_SPEC}`,
  });
  const results = h('div', { 'data-assert-results': '', 'aria-live': 'polite' });
  const button = h('button', { type: 'button', 'data-action': 'assert', class: 'primary' }, 'Check');
  const links = (seqs) => seqs.map((q) =>
    h('button', { type: 'button', class: 'seq-link', 'data-points-to-seq': q, on: { click: () => select(q) } }, `#${q}`));
  button.addEventListener('click', async () => {
    button.disabled = true;
    results.replaceChildren(h('p', { class: 'muted' }, 'Checking…'));
    diagram.clear('failed-check');
    if (!spec.value.trim()) spec.value = EXAMPLE_SPEC;
    try {
      const resp = await api(`/runs/${encodeURIComponent(runId)}/assert`, { method: 'POST', body: spec.value, signal });
      const list = resp.results || [];
      results.replaceChildren(
        h('p', { class: `verdict ${resp.passed ? 'pass' : 'fail'}` }, resp.passed ? `All ${list.length} checks passed` : `${list.filter((r) => !r.passed).length} of ${list.length} checks failed`),
        h('ul', { class: 'results' }, list.map((r) => {
          const points = pointsOf(r);
          for (const q of points.marked) diagram.mark(q, 'failed-check');
          return h('li', { class: r.passed ? 'pass' : 'fail', 'data-check': r.name || '' },
            h('span', { class: `badge ${r.passed ? 'pass' : 'fail'}` }, r.passed ? 'PASS' : 'FAIL'), ' ',
            h('strong', null, r.name || 'check'),
            h('p', { class: 'explanation' }, r.explanation || ''),
            points.differs && points.differs.length ? h('p', { class: 'points', 'data-differs-at': points.differs[0] }, 'differs at: ', links(points.differs)) : null,
            points.seqs.length ? h('p', { class: 'points' }, points.label, links(points.seqs)) : null);
        })));
    } catch (e) {
      if (e.name === 'AbortError') return;
      results.replaceChildren(h('p', { class: 'error', 'data-assert-error': '' }, e.message));
    } finally {
      button.disabled = false;
    }
  });
  return block('Check assertions', { class: 'block assert-block' },
    h('p', { class: 'muted' }, 'A spec as ', h('code', null, 'understudy assert'), ' takes it (YAML or JSON); failed checks mark the events they point at (a sequence check: the event where the run differed).'),
    spec, h('div', { class: 'toolbar' }, button), results);
}

// The first page of events is drawn at once; the rest follow in pages,
// appended a chunk per frame, so that a long run paints its beginning
// quickly and the page stays responsive while the remainder arrives.
const FIRST_PAGE = 40;
const PAGE = 2000;
const CHUNK = 500;

const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

export async function viewRun(ctx, runId) {
  setCrumbs({ text: 'Sessions', href: '#/' }, { text: `run ${runId}` });
  document.title = `${runId} · understudy`;
  const eventsPath = (after, limit) => `/runs/${encodeURIComponent(runId)}/events?after_seq=${after}&limit=${limit}`;
  let run;
  let page;
  try {
    [run, page] = await Promise.all([
      api(`/runs/${encodeURIComponent(runId)}`, { signal: ctx.signal }),
      api(eventsPath(0, FIRST_PAGE), { signal: ctx.signal }),
    ]);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    errorBox(ctx, notFoundMessage(e, 'run', runId));
    return;
  }
  if (ctx.signal.aborted) return;
  performance.mark('understudy:events-loaded');
  if (run.run && !run.id) run = run.run;
  const events = page.events || [];
  const name = sessionName(run);
  setCrumbs({ text: 'Sessions', href: '#/' }, name ? { text: name, href: sessionHref(name) } : { text: 'All runs', href: '#/runs' }, { text: runId });

  const panel = h('aside', { class: 'detail', 'data-panel': 'detail', hidden: true });
  const placeholder = h('p', { class: 'detail-empty muted' }, 'Click an event in the diagram to see its request and answer.');
  const head = runHeader(run, events);
  const wide = window.matchMedia('(min-width: 1101px)').matches;
  const diagram = new Diagram({ width: ctx.main.clientWidth - 40 - (wide ? 454 : 0) - 22, signal: ctx.signal, onSelect: (ev) => select(num(ev.seq)) });
  const loadRecorded = recordedLoader(run, ctx.signal);
  const detailCtx = {
    loadRecorded,
    get t0() { return diagram.t0; },
    turnOf: (seq) => diagram.turns.get(seq),
    close: () => { panel.hidden = true; placeholder.hidden = false; diagram.clear('selected'); },
  };
  function select(seq) {
    const ev = diagram.bySeq.get(seq);
    if (!ev) return;
    diagram.clear('selected');
    diagram.mark(seq, 'selected');
    diagram.reveal(seq);
    placeholder.hidden = true;
    renderDetail(panel, ev, detailCtx);
    // One column (a narrow window): the panel is below the diagram.
    if (window.matchMedia('(max-width: 1100px)').matches) panel.scrollIntoView({ block: 'start', behavior: 'smooth' });
  }

  diagram.draw(events);
  const side = h('div', { class: 'side' }, placeholder, panel);
  const empty = h('p', { class: 'muted', 'data-empty': '', hidden: events.length > 0 },
    runLevel(run) === 'off' ? 'This run kept no trace (trace level off).' : 'No events yet.');
  let next = num(page.nextAfterSeq);
  const more = h('p', { class: 'muted loading-more', 'data-loading-more': '', hidden: !next }, `Loading the rest of the events… (${events.length} so far)`);
  const view = h('div', { 'data-view': 'run', class: 'run-view', 'data-loaded': next ? 'partial' : 'all' },
    head.el,
    h('div', { class: 'run-body' },
      h('div', { class: 'main-col' },
        h('section', { class: 'diagram-box' }, legend(), empty, more, diagram.el),
        assertionPanel(runId, diagram, select, ctx.signal)),
      side));
  ctx.main.replaceChildren(view);
  performance.mark('understudy:diagram-drawn');
  requestAnimationFrame(() => setTimeout(() => performance.mark('understudy:diagram-painted'), 0));

  while (next) {
    await nextFrame();
    const rest = await api(eventsPath(next, PAGE), { signal: ctx.signal });
    const got = rest.events || [];
    for (let i = 0; i < got.length; i += CHUNK) {
      if (ctx.signal.aborted) return;
      const chunk = got.slice(i, i + CHUNK);
      events.push(...chunk);
      diagram.append(chunk);
      more.textContent = `Loading the rest of the events… (${events.length} so far)`;
      await nextFrame();
    }
    const after = num(rest.nextAfterSeq);
    next = got.length && after > next ? after : 0;
  }
  if (ctx.signal.aborted) return;
  more.hidden = true;
  view.dataset.loaded = 'all';
  head.update(run, events);
  performance.mark('understudy:diagram-complete');

  if (runState(run) === 'active') watchRun(ctx, run, events, diagram, head, empty);
}

// Follows an active run over server-sent events until it ends.
function watchRun(ctx, run, events, diagram, head, empty) {
  const last = events.length ? num(events[events.length - 1].seq) : 0;
  const source = watchEvents(run.id, last);
  let seen = last;
  const live = (on) => {
    head.el.dataset.live = on ? 'on' : 'off';
    const mark = head.el.querySelector('[data-live]');
    if (mark) {
      mark.dataset.live = on ? 'on' : 'off';
      mark.textContent = on ? '● live' : '';
    }
  };
  let pending = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (!pending.length || ctx.signal.aborted) return;
    const follow = diagram.atBottom();
    const batch = pending;
    pending = [];
    events.push(...batch);
    diagram.append(batch);
    empty.hidden = true;
    head.update(run, events);
    live(source.readyState !== EventSource.CLOSED);
    if (follow) diagram.wrap.scrollTop = diagram.wrap.scrollHeight;
  };
  source.addEventListener('open', () => live(true));
  source.addEventListener('trace', (msg) => {
    let ev;
    try {
      ev = JSON.parse(msg.data);
    } catch {
      return;
    }
    if (num(ev.seq) <= seen) return;
    seen = num(ev.seq);
    pending.push(ev);
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(flush);
    }
  });
  source.addEventListener('end', async () => {
    source.close();
    flush();
    live(false);
    try {
      const r = await api(`/runs/${encodeURIComponent(run.id)}`, { signal: ctx.signal });
      Object.assign(run, r.run && !r.id ? r.run : r);
      head.update(run, events);
      live(false);
    } catch {
      // the header keeps what it had
    }
  });
  source.addEventListener('error', () => {
    if (source.readyState === EventSource.CLOSED) live(false);
  });
  live(true);
  ctx.onCleanup(() => source.close());
}

// understudy's web view: the recorded sessions, their runs, and one run as a
// sequence diagram (lanes for the test, each agent, the model and the
// tools), live while the run is active, and two runs side by side.
//
// This is the entry (index.html loads it as a module): it routes the
// location's hash to a view. Everything comes from the JSON API under
// /api/v1/ (api.js, docs/ui.md); nothing else is fetched. Every text that
// comes from a recording is put in the page as text, never parsed as HTML
// (dom.js).
//
// The modules, lowest first: format.js (text), dom.js (elements), api.js
// (the server), model.js (what records mean), diff.js (comparing events),
// diagram.js, detail.js (the detail panel), page.js (what views share),
// view_sessions.js, view_runs.js, view_run.js, view_compare.js.

import { h } from './dom.js';
import { errorBox, setCrumbs } from './page.js';
import { viewCompare } from './view_compare.js';
import { viewRun } from './view_run.js';
import { viewRuns } from './view_runs.js';
import { viewSessions } from './view_sessions.js';

// Each view renders into `ctx.main`, stops when ctx.signal aborts (the
// hash changed), and registers its cleanups with ctx.onCleanup.
const ROUTES = [
  [/^#?\/?$/, (ctx) => viewSessions(ctx)],
  [/^#\/runs\/?$/, (ctx) => viewRuns(ctx, '')],
  [/^#\/session\/(.+)$/, (ctx, m) => viewRuns(ctx, decodeURIComponent(m[1]))],
  [/^#\/run\/([^/]+)\/?$/, (ctx, m) => viewRun(ctx, decodeURIComponent(m[1]))],
  [/^#\/compare\/([^/]+)\/([^/]+)\/?$/, (ctx, m) => viewCompare(ctx, decodeURIComponent(m[1]), decodeURIComponent(m[2]))],
];

let current = null;

async function route() {
  if (current) current.stop();
  const main = document.getElementById('app');
  const controller = new AbortController();
  const cleanups = [];
  const ctx = {
    main,
    signal: controller.signal,
    onCleanup: (fn) => cleanups.push(fn),
    stop: () => {
      controller.abort();
      for (const fn of cleanups.splice(0)) fn();
    },
  };
  current = ctx;
  const hash = location.hash || '#/';
  main.replaceChildren(h('p', { class: 'loading' }, 'Loading…'));
  for (const [re, view] of ROUTES) {
    const m = re.exec(hash);
    if (!m) continue;
    try {
      await view(ctx, m);
    } catch (e) {
      if (e.name === 'AbortError' || ctx.signal.aborted) return;
      errorBox(ctx, e.message);
    }
    return;
  }
  setCrumbs({ text: 'Sessions', href: '#/' });
  errorBox(ctx, `no page at ${hash}`);
}

window.addEventListener('hashchange', route);
route();

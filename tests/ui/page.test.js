// The page alone, against the mock API of support/mock_api.js (canned data
// shaped as /api/v1 serves it): what the real server cannot easily be made
// to do on cue — a new agent appearing in a live run, a 1,000-event run
// arriving page by page, the API going away.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { Browser, open, textOf, waitInPage } from './support/browser.js';
import { traceOf } from './support/fixture.js';
import { UI_DIR, startMockApi } from './support/mock_api.js';

let mock;
let browser;

before(async () => {
  mock = await startMockApi();
  browser = await Browser.launch();
});

after(async () => {
  await browser?.close();
  await mock?.close();
});

async function page(t, allowed = []) {
  const p = await browser.page();
  t.after(async () => {
    const problems = p.problems.filter((x) => !allowed.some((re) => re.test(x)));
    await p.closeAll();
    assert.deepEqual(problems, [], 'console errors or failed requests in the page');
  });
  return p;
}

const drawnSeqs = (p) => p.$$eval('svg[data-diagram] g[data-event-seq]', (gs) => gs.map((g) => Number(g.dataset.eventSeq)));

test('a live run takes new events and a new agent lane without reload, and stops at the end', async (t) => {
  const p = await page(t);
  await open(p, mock.url, '#/run/run-live', '[data-live=on]');
  await p.evaluate(() => { window.__sameDocument = true; });
  const before = await drawnSeqs(p);
  await p.click(`g[data-event-seq="${before.at(-1)}"] rect.hit`);

  // A critic, never seen before, joins the run.
  const calls = [{ agent: 'critic', user: 'Critique login.js', text: 'Too many joins.' }];
  const more = traceOf('run-live', calls, { started: false, ended: false, custom: false, startSeq: before.length + 1 });
  mock.append('run-live', more);
  await waitInPage(p, (n) => document.querySelectorAll('svg[data-diagram] g[data-event-seq]').length === n, [before.length + more.length], 'the new events');
  const lanes = await p.$$eval('svg[data-diagram] g[data-lane]', (gs) => gs.map((g) => g.dataset.lane));
  assert.deepEqual(lanes, ['test', 'orchestrator', 'executor', 'critic', 'model', 'tools']);
  assert.deepEqual(await drawnSeqs(p), [...before, ...more.map((e) => Number(e.seq))]);
  assert.ok(await p.$(`g.selected[data-event-seq="${before.at(-1)}"]`), 'the selection survives the redraw');
  assert.equal(await p.evaluate(() => window.__sameDocument), true);

  mock.endRun('run-live');
  await waitInPage(p, () => document.querySelector('[data-live=off]') && document.querySelector('[data-status]').textContent === 'ended', [], 'live off');
});

test('a live recording draws each model call above the tool calls its answer made, which are traced first', async (t) => {
  const p = await page(t);
  const kinds = () => p.$$eval('svg[data-diagram] g[data-event-seq]', (gs) => gs.map((g) => g.dataset.kind));
  await open(p, mock.url, '#/run/run-live-rec', '[data-live=on]');
  const first = mock.fixture.events['run-live-rec'];
  assert.deepEqual(first.map((e) => e.kind), ['run_started', 'agent_execution', 'tool_call', 'phase_transition', 'exchange'], 'as a recording traces them');
  assert.deepEqual(await kinds(), ['run_started', 'agent_execution', 'exchange', 'tool_call', 'phase_transition']);

  // The executor (a new lane: the diagram is drawn again) and then the
  // orchestrator again, whose exchange comes in a later message than its
  // tool call and phase transition.
  const { calls } = mock.fixture;
  let seq = first.length;
  const more = (call) => {
    const evs = traceOf('run-live-rec', [call], { started: false, ended: false, custom: false, startSeq: seq + 1 });
    seq += evs.length;
    return evs;
  };
  const executor = more(calls[1]);
  mock.append('run-live-rec', executor);
  await waitInPage(p, (n) => document.querySelectorAll('svg[data-diagram] g[data-event-seq]').length === n, [seq], 'the executor\'s events');
  assert.deepEqual((await kinds()).slice(first.length), ['agent_execution', 'exchange', 'tool_call']);

  const orchestrator = more(calls[4]);
  assert.deepEqual(orchestrator.map((e) => e.kind), ['agent_execution', 'tool_call', 'phase_transition', 'exchange']);
  mock.append('run-live-rec', orchestrator.slice(0, 3));
  await waitInPage(p, (n) => document.querySelectorAll('svg[data-diagram] g[data-event-seq]').length === n, [seq - 1], 'the effects');
  const call = orchestrator[1].seq;
  await p.click(`g[data-event-seq="${call}"] rect.hit`);
  await p.waitForSelector(`g.selected[data-event-seq="${call}"]`);
  mock.append('run-live-rec', orchestrator.slice(3));
  await waitInPage(p, (n) => document.querySelectorAll('svg[data-diagram] g[data-event-seq]').length === n, [seq], 'the exchange');
  const rows = await p.$$eval('svg[data-diagram] g[data-event-seq]', (gs) => gs.map((g) => ({
    seq: g.dataset.eventSeq, kind: g.dataset.kind, y: Number(g.querySelector('rect.hit').getAttribute('y')),
    height: Number(g.querySelector('rect.hit').getAttribute('height')), selected: g.classList.contains('selected'),
  })));
  assert.deepEqual(rows.slice(-4).map((r) => r.kind), ['agent_execution', 'exchange', 'tool_call', 'phase_transition']);
  for (let i = 1; i < rows.length; i++) assert.equal(rows[i].y, rows[i - 1].y + rows[i - 1].height, `row #${rows[i].seq} right below #${rows[i - 1].seq}`);
  assert.deepEqual(rows.filter((r) => r.selected).map((r) => r.seq), [call], 'the selected tool call stays selected');
  assert.deepEqual(await p.$$eval('g[data-kind=agent_execution] text.label', (ts) => ts.map((x) => x.textContent)),
    ['orchestrator starts turn 1', 'executor starts turn 1', 'orchestrator starts turn 2']);
  mock.endRun('run-live-rec');
  await waitInPage(p, () => document.querySelector('[data-live=off]'), [], 'live off');
});

test('a 1,000-event run arrives page by page and is drawn whole', async (t) => {
  const p = await page(t);
  await open(p, mock.url, '#/run/run-big', '[data-view=run][data-loaded=all]');
  const seqs = await drawnSeqs(p);
  assert.equal(seqs.length, 1000);
  assert.deepEqual(seqs, Array.from({ length: 1000 }, (_, i) => i + 1));
  assert.equal(await textOf(p, '[data-count=events]'), '1000');
  const pages = mock.requests.filter((r) => r.url.startsWith('/api/v1/runs/run-big/events'));
  assert.ok(pages.length >= 2, `the events came in pages: ${pages.map((r) => r.url).join(', ')}`);
  assert.match(pages[0].url, /after_seq=0&limit=40$/, 'a small first page, drawn at once');
  const marks = await p.evaluate(() => ['understudy:diagram-drawn', 'understudy:diagram-complete'].map((n) => performance.getEntriesByName(n)[0]?.startTime));
  assert.ok(marks[0] < marks[1], 'the first rows were drawn before the rest');
});

test('index.html preloads every module of ui/, so that they load at once, not import by import', () => {
  const html = fs.readFileSync(path.join(UI_DIR, 'index.html'), 'utf8');
  assert.match(html, /<script type="module" src="\/ui\/app\.js"><\/script>/);
  const preloaded = [...html.matchAll(/<link rel="modulepreload" href="\/ui\/([^"]+)">/g)].map((m) => m[1]);
  const modules = fs.readdirSync(UI_DIR).filter((f) => f.endsWith('.js') && f !== 'app.js');
  assert.deepEqual(preloaded.sort(), modules.sort());
});

test('an unknown session, an unknown page and an unreachable API say so', async (t) => {
  const p = await page(t, [/status of 404/, /ERR_CONNECTION_REFUSED/, /request failed/]);
  await open(p, mock.url, '#/session/no-such-session', '[data-error]');
  assert.equal(await textOf(p, '[data-error] h2'), 'session "no-such-session" not found');
  await open(p, mock.url, '#/nowhere', '[data-error]');
  assert.equal(await textOf(p, '[data-error] h2'), 'no page at #/nowhere');

  await open(p, mock.url, '#/', '[data-view=sessions]');
  await mock.close();
  await p.evaluate(() => { location.hash = '#/run/run-rec'; });
  await p.waitForSelector('[data-error]');
  assert.match(await textOf(p, '[data-error] h2'), /^run "run-rec": cannot reach the server/);
  mock = null;
});

// The web view (/ui) of the real binary in Debian's headless Chromium: a
// three-agent review loop recorded from a fake OpenAI upstream, replayed
// with a changed request (a miss), a run watched live while its agents
// work, two runs compared, an unknown run, a recorded answer with markup in
// it, and the page's weight and first paint for a 1,000-event run.
//
// What the page shows is checked against the trace as the gRPC Traces
// service returns it. Screenshots and figures go to $UNDERSTUDY_ARTIFACTS
// (default build/test-artifacts/ui).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { ARTIFACTS, Browser, open, saveArtifact, textOf, waitInPage, within } from './support/browser.js';
import { UI_DIR } from './support/mock_api.js';
import { XSS_ANSWER, XSS_IMG, XSS_SCRIPT, QUOTER, startUnderstudy } from './support/understudy.js';

const BIG_EVENTS = 1000;

let us;
let browser;
const runs = {};
const traces = {};

async function trace(runId) {
  return us.client.query(runId);
}

// A page of the real server; its console errors and failed requests are
// checked when the test is done.
async function page(t) {
  const p = await browser.page();
  t.after(async () => {
    const problems = p.problems.slice();
    const foreign = p.urls.filter((u) => !u.startsWith(`${us.http}/ui`) && !u.startsWith(`${us.http}/api/v1/`) && !u.startsWith('data:'));
    await p.closeAll();
    assert.deepEqual(foreign, [], 'the page fetched something besides /ui and /api/v1');
    assert.deepEqual(problems, [], 'console errors or failed requests in the page');
  });
  return p;
}

const gSeqs = (p, root = 'svg[data-diagram]') =>
  p.$$eval(`${root} g[data-event-seq]`, (gs) => gs.map((g) => ({ seq: Number(g.dataset.eventSeq), kind: g.dataset.kind, cls: g.getAttribute('class') })));

before(async () => {
  us = await startUnderstudy();
  browser = await Browser.launch();
  const c = us.client;

  // The golden recording: three agents, two rounds, nine calls.
  runs.rec = (await c.startRun({ mode: 'record', session: 'review-loop' })).id;
  await us.reviewLoop(runs.rec);
  await c.emit(runs.rec, 'test.checkpoint', { note: 'loop done' });
  await c.endRun(runs.rec);

  // A lenient replay whose first review request differs: one miss, answered
  // from the closest recording, the loop otherwise the same.
  runs.rep = (await c.startRun({ mode: 'replay', session: 'review-loop', strict: false })).id;
  let reviews = 0;
  await us.reviewLoop(runs.rep, {
    change: (agent, body) => {
      if (agent === 'reviewer' && reviews++ === 0) body.messages[1].content += '\n(please be brief)';
    },
  });
  await c.emit(runs.rep, 'test.checkpoint', { note: 'loop done' });
  await c.endRun(runs.rep);

  // A strict replay of the same change: the miss fails the reviewer's
  // call and the loop stops there, a run much shorter than the golden one.
  runs.strict = (await c.startRun({ mode: 'replay', session: 'review-loop', strict: true })).id;
  reviews = 0;
  await assert.rejects(us.reviewLoop(runs.strict, {
    change: (agent, body) => {
      if (agent === 'reviewer' && reviews++ === 0) body.messages[1].content += '\n(please be brief)';
    },
  }), /HTTP 404/);
  await c.endRun(runs.strict);

  // An answer with markup and script in it, recorded.
  runs.xss = (await c.startRun({ mode: 'record', session: 'quotes' })).id;
  await us.chat(runs.xss, 'quoter', {
    model: 'gpt-test',
    messages: [{ role: 'system', content: QUOTER }, { role: 'user', content: `Quote this: ${XSS_IMG}` }],
  });
  await c.endRun(runs.xss);

  for (const [k, id] of Object.entries(runs)) traces[k] = await trace(id);
});

after(async () => {
  await browser?.close();
  console.log(`ui screenshots: ${ARTIFACTS}`);
  if (us) assert.equal(await us.stop(), 0, `understudy serve exit code; stderr:\n${us.server.stderr()}`);
});

describe('ui', () => {
  test('the sessions view lists the recorded three-agent session with its counts', async (t) => {
    const p = await page(t);
    await open(p, us.http, '#/', 'tr[data-session="review-loop"]');
    const row = await p.$eval('[data-view=sessions] tr[data-session="review-loop"]', (tr) => ({
      versions: tr.querySelector('[data-col=versions]').textContent,
      exchanges: tr.querySelector('[data-col=exchanges]').textContent,
      agents: [...tr.querySelectorAll('[data-col=agents] .agent-chip')].map((e) => e.textContent),
    }));
    assert.equal(row.versions.trim(), 'v1');
    assert.equal(row.exchanges.trim(), '9', 'nine exchanges recorded');
    assert.deepEqual(row.agents, ['orchestrator', 'executor', 'reviewer']);
    assert.ok(await p.$('tr[data-session="quotes"]'), 'the second session is listed too');
    await browser.screenshot(p, 'sessions');

    await p.click('tr[data-session="review-loop"] td[data-col=exchanges]');
    await p.waitForSelector('[data-view=runs]');
    assert.equal(await p.evaluate(() => location.hash), '#/session/review-loop');
  });

  test('the runs view lists the session\'s runs with mode, status and misses', async (t) => {
    const p = await page(t);
    await open(p, us.http, '#/session/review-loop', `tr[data-run="${runs.rep}"]`);
    const rows = await p.$$eval('[data-view=runs] tr[data-run]', (trs) => trs.map((tr) => ({
      id: tr.dataset.run,
      mode: tr.querySelector('[data-col=mode]').textContent,
      status: tr.querySelector('[data-col=status]').textContent,
      misses: tr.querySelector('[data-col=misses]').textContent,
      duration: tr.querySelector('[data-col=duration]').textContent,
    })));
    assert.deepEqual(rows.map((r) => r.id), [runs.strict, runs.rep, runs.rec], 'the three runs of the session, newest first');
    assert.match(rows[0].mode, /^replay/);
    assert.match(rows[1].mode, /^replay/);
    assert.match(rows[2].mode, /^record/);
    assert.deepEqual(rows.map((r) => r.status), ['ended', 'ended', 'ended']);
    assert.deepEqual(rows.map((r) => r.misses), ['1', '1', '0']);
    for (const r of rows) assert.match(r.duration, /\d+(\.\d+)? (µs|ms|s)$/);
    await browser.screenshot(p, 'runs');
  });

  test('the run view draws a lane per agent, the arrows in order and the counts', async (t) => {
    const p = await page(t);
    const events = traces.rec;
    await open(p, us.http, `#/run/${runs.rec}`, '[data-view=run][data-loaded=all]');
    const lanes = await p.$$eval('svg[data-diagram] g[data-lane]', (gs) => gs.map((g) => g.dataset.lane));
    assert.deepEqual(lanes, ['test', 'orchestrator', 'executor', 'reviewer', 'model', 'tools']);

    const drawn = await gSeqs(p);
    assert.deepEqual(drawn.map((g) => g.seq).sort((a, b) => a - b), events.map((e) => e.seq), 'one mark per event');
    assert.deepEqual(drawn.map((g) => g.kind).sort(), events.map((e) => e.kind).sort());
    assert.equal(drawn.filter((g) => g.kind === 'exchange').length, 9, 'nine model calls');
    // A recording traces an answer's tool call before the exchange that
    // carries it; the diagram shows the model call first, then the call,
    // and keeps seq order otherwise.
    const recorded = events.filter((e) => e.kind === 'tool_call');
    assert.ok(recorded.length > 0 && recorded.every((t) => events.find((e) => e.seq === t.seq + 1)?.kind === 'exchange'),
      'in a recording each tool call comes just before its exchange');
    const expected = events.slice();
    for (const t of recorded) {
      const i = expected.indexOf(t);
      [expected[i], expected[i + 1]] = [expected[i + 1], expected[i]];
    }
    assert.deepEqual(drawn.map((g) => g.seq), expected.map((e) => e.seq), 'each model call drawn above the tool call of its answer');
    assert.equal(await textOf(p, '[data-count=events]'), String(events.length));
    assert.equal(await textOf(p, '[data-count=misses]'), '0');

    // Each model call is an arrow from its agent's lane to the model's and
    // back; each tool call an arrow to the tools; rows go down in order.
    const geometry = await p.evaluate(() => {
      const laneX = {};
      for (const g of document.querySelectorAll('svg[data-diagram] g[data-lane]')) {
        laneX[g.dataset.lane] = Number(g.querySelector('line.lifeline').getAttribute('x1'));
      }
      return [...document.querySelectorAll('svg[data-diagram] g[data-event-seq]')].map((g) => {
        const line = g.querySelector('line.arrow');
        return {
          seq: Number(g.dataset.eventSeq),
          kind: g.dataset.kind,
          y: Number(g.querySelector('rect.hit').getAttribute('y')),
          x1: line && Number(line.getAttribute('x1')),
          x2: line && Number(line.getAttribute('x2')),
          title: g.querySelector('title').textContent,
          laneX,
        };
      });
    });
    const { laneX } = geometry[0];
    const near = (x, lane) => Math.abs(x - laneX[lane]) < 14;
    for (let i = 1; i < geometry.length; i++) assert.ok(geometry[i].y > geometry[i - 1].y, `row of #${geometry[i].seq} below #${geometry[i - 1].seq}`);
    const rowY = (seq) => geometry.find((x) => x.seq === seq).y;
    for (const t of recorded) {
      const ex = events.find((e) => e.kind === 'exchange' && e.response?.message?.toolCalls?.some((c) => c.id === t.attributes['gen_ai.tool.call.id']));
      assert.ok(ex && rowY(t.seq) > rowY(ex.seq), `tool call #${t.seq} drawn below the model call #${ex?.seq} whose answer made it`);
    }
    for (const ev of events) {
      const g = geometry.find((x) => x.seq === ev.seq);
      assert.match(g.title, new RegExp(`^#${ev.seq} ${ev.kind.replace('.', '\\.')}`));
      assert.match(g.title, new RegExp(new Date(ev.timeMicros / 1000).toISOString().slice(0, 19)), `#${ev.seq}: its time on hover`);
      if (ev.kind === 'exchange') {
        assert.ok(near(g.x1, ev.agent) && near(g.x2, 'model'), `#${ev.seq}: ${ev.agent} → model`);
      }
      if (ev.kind === 'tool_call') assert.ok(near(g.x1, ev.agent) && near(g.x2, 'tools'), `#${ev.seq}: ${ev.agent} → tools`);
      if (ev.kind === 'tool_result') assert.ok(near(g.x1, 'tools') && near(g.x2, ev.agent), `#${ev.seq}: tools → ${ev.agent}`);
    }
    assert.ok(await p.$('[data-legend]'), 'the legend explains the marks');
    await browser.screenshot(p, 'run');
  });

  test('each agent\'s turns are numbered from 1, whatever its request count', async (t) => {
    const p = await page(t);
    const events = traces.rec;
    await open(p, us.http, `#/run/${runs.rec}`, '[data-view=run][data-loaded=all]');
    const turns = await p.$$eval('svg[data-diagram] g[data-kind=agent_execution] text.label', (ts) => ts.map((x) => x.textContent));
    const executions = events.filter((e) => e.kind === 'agent_execution');
    const seen = {};
    assert.deepEqual(turns, executions.map((e) => `${e.agent} starts turn ${(seen[e.agent] = (seen[e.agent] || 0) + 1)}`));
    // The executor's second turn starts at its third request.
    const second = executions.filter((e) => e.agent === 'executor')[1];
    assert.equal(second.attributes['understudy.agent.iteration'], '3');
    assert.equal(await textOf(p, `g[data-event-seq="${second.seq}"] text.label`), 'executor starts turn 2');
    await p.$eval(`g[data-event-seq="${second.seq}"]`, (g) => g.scrollIntoView({ block: 'center' }));
    await p.click(`g[data-event-seq="${second.seq}"] rect.hit`);
    await p.waitForSelector('[data-panel=detail] .summary');
    assert.equal(await textOf(p, '[data-panel=detail] .summary'), 'executor starts turn 2');
  });

  test('a run longer than its box says how many events are out of sight below, until the last is in view', async (t) => {
    const p = await page(t);
    await open(p, us.http, `#/run/${runs.rec}`, '[data-view=run][data-loaded=all]');
    // In sight at the bottom of what is in view of the box: how many rows
    // are out of sight below it.
    const fold = () => p.$eval('[data-scroll]', (w) => {
      const bottom = Math.min(w.getBoundingClientRect().top + w.clientHeight, window.innerHeight);
      const hidden = [...w.querySelectorAll('g[data-event-seq] rect.hit')].filter((r) => r.getBoundingClientRect().bottom > bottom + 1).length;
      const more = w.parentElement.querySelector('[data-more-below]');
      const at = more?.getBoundingClientRect();
      return { hidden, shown: !!more && !more.hidden && at.height > 0 && at.top >= 0 && at.bottom <= window.innerHeight, text: more?.textContent, scrollTop: w.scrollTop };
    });
    await waitInPage(p, () => document.querySelector('[data-more-below]:not([hidden])'), [], 'the hint');
    const first = await fold();
    assert.ok(first.hidden > 0, 'the run is longer than the box');
    assert.equal(first.shown, true, 'a hint in the window says more is below');
    assert.match(first.text, new RegExp(`^▼ ${first.hidden} more events below`));
    await p.click('[data-more-below]');
    await waitInPage(p, (top) => document.querySelector('[data-scroll]').scrollTop > top, [first.scrollTop], 'the hint scrolling the box');
    await p.$eval('[data-scroll]', (w) => {
      w.scrollTop = w.scrollHeight;
      window.scrollTo(0, document.documentElement.scrollHeight);
    });
    await waitInPage(p, () => document.querySelector('[data-more-below]').hidden, [], 'the hint gone with the last row in view');
  });

  test('clicking an exchange opens its request and answer', async (t) => {
    const p = await page(t);
    const first = traces.rec.find((e) => e.kind === 'exchange');
    await open(p, us.http, `#/run/${runs.rec}`, `g[data-event-seq="${first.seq}"]`);
    assert.equal(await p.$eval('[data-panel=detail]', (el) => el.hidden), true, 'no detail before a click');
    await p.click(`g[data-event-seq="${first.seq}"] rect.hit`);
    await p.waitForSelector('[data-panel=detail] pre[data-json=request]', { visible: false });
    const request = JSON.parse(await textOf(p, '[data-panel=detail] pre[data-json=request]'));
    assert.equal(request.messages[0].content, us.PROMPTS.orchestrator);
    assert.equal(request.messages[1].content, `Task: ${us.TASK}`);
    const response = JSON.parse(await textOf(p, '[data-panel=detail] pre[data-json=response]'));
    assert.equal(response.message.toolCalls[0].name, 'continue');
    const visible = await p.$eval('[data-panel=detail]', (el) => el.innerText);
    assert.ok(visible.includes(`Task: ${us.TASK}`), 'the request body is readable in the panel');
    assert.ok(await p.$(`g.selected[data-event-seq="${first.seq}"]`), 'the clicked event is marked selected');
    await browser.screenshot(p, 'run-detail');
  });

  test('an event reached by key is in view with the row above it, clear of the lane heads', async (t) => {
    const p = await page(t);
    await open(p, us.http, `#/run/${runs.rec}`, '[data-view=run][data-loaded=all]');
    await p.$eval('[data-scroll]', (w) => {
      w.scrollTop = w.scrollHeight;
      w.querySelector('svg[data-diagram] g[data-event-seq]:last-of-type').focus({ preventScroll: true });
    });
    // What the focused row and the row above it show below the lane heads.
    const focused = () => p.evaluate(() => {
      const g = document.activeElement;
      const w = g.closest('[data-scroll]');
      const heads = w.querySelector('svg.lane-heads').getBoundingClientRect();
      const above = g.previousElementSibling?.querySelector('rect.hit').getBoundingClientRect();
      return { seq: Number(g.dataset.eventSeq), above: above ? above.top - heads.bottom : 0 };
    });
    const start = await focused();
    for (let i = 0; i < 20; i++) {
      await p.keyboard.down('Shift');
      await p.keyboard.press('Tab');
      await p.keyboard.up('Shift');
      const f = await focused();
      assert.ok(f.seq !== start.seq, 'the focus moved up the diagram');
      assert.ok(f.above >= -0.5, `#${f.seq} focused: the row above it starts ${-f.above}px under the lane heads`);
    }
    const { seq } = await focused();
    await p.keyboard.press('Enter');
    await p.waitForSelector(`g.selected[data-event-seq="${seq}"]`);
    assert.match(await textOf(p, '[data-panel=detail] h3'), new RegExp(`^#${seq} `), 'Enter opened it');
    assert.ok((await focused()).above >= -0.5, 'the opened event keeps the row above it in view');
  });

  test('a replay miss is marked red and its detail shows the closest recording and the differing field', async (t) => {
    const p = await page(t);
    const miss = traces.rep.find((e) => e.kind === 'miss');
    assert.ok(miss, 'the replay traced a miss');
    await open(p, us.http, `#/run/${runs.rep}`, `g[data-event-seq="${miss.seq}"]`);
    const drawn = await gSeqs(p);
    assert.deepEqual(drawn.filter((g) => /\bmiss\b/.test(g.cls)).map((g) => g.seq), [miss.seq], 'exactly the miss has class miss');
    assert.equal(await textOf(p, '[data-count=misses]'), '1');
    const stroke = await p.$eval(`g[data-event-seq="${miss.seq}"] line.arrow`, (l) => getComputedStyle(l).stroke);
    assert.equal(stroke, 'rgb(217, 45, 32)', 'the miss arrow is red');

    await p.click(`g[data-event-seq="${miss.seq}"] rect.hit`);
    await p.waitForSelector('[data-panel=detail] [data-closest] h5');
    const panel = await p.$eval('[data-panel=detail]', (el) => ({
      report: el.querySelector('[data-miss-report]')?.textContent,
      paths: [...el.querySelectorAll('[data-diffs] .path')].map((e) => e.textContent),
      got: el.querySelector('[data-diffs] .got')?.textContent,
      closest: el.querySelector('[data-closest] h5').textContent,
    }));
    assert.equal(panel.report, miss.attributes['understudy.miss.report']);
    assert.deepEqual(panel.paths, ['messages[1].content']);
    assert.match(panel.got, /please be brief/);
    assert.match(panel.closest, new RegExp(`^Closest recording: exchange #${miss.attributes['understudy.miss.closest_seq']} \\(agent reviewer\\)`));
    await browser.screenshot(p, 'run-miss');
  });

  test('assertion results mark the event a failed check points at', async (t) => {
    const p = await page(t);
    const miss = traces.rep.find((e) => e.kind === 'miss');
    await open(p, us.http, `#/run/${runs.rep}`, '[data-action=assert]');
    await p.$eval('[data-assert-spec]', (el) => {
      el.value = 'assertions:\n  - agent_sequence: {agents: [orchestrator, executor, executor, reviewer], match: prefix}\n  - no_misses: true\n';
    });
    await p.click('[data-action=assert]');
    await p.waitForSelector('[data-assert-results] li.fail');
    const results = await p.$$eval('[data-assert-results] li', (lis) => lis.map((li) => ({
      cls: li.className, text: li.textContent, seqs: [...li.querySelectorAll('[data-points-to-seq]')].map((b) => Number(b.dataset.pointsToSeq)),
    })));
    assert.equal(results.length, 2);
    assert.equal(results[0].cls, 'pass');
    assert.equal(results[1].cls, 'fail');
    assert.match(results[1].text, /no_misses/);
    assert.deepEqual(results[1].seqs, [miss.seq], 'the failed check links to the miss');
    assert.ok(await p.$(`g.failed-check[data-event-seq="${miss.seq}"]`), 'the miss is marked failed-check');
    await p.click(`[data-assert-results] [data-points-to-seq="${miss.seq}"]`);
    await p.waitForSelector(`g.selected[data-event-seq="${miss.seq}"]`);
    await p.$eval('[data-assert-results]', (el) => el.scrollIntoView({ block: 'end' }));
    await browser.screenshot(p, 'run-assert');

    // A failed sequence check marks where the run differed, not every
    // exchange that matched before it: [orchestrator, executor, reviewer]
    // against orchestrator, executor, executor, … differs at the second
    // executor call.
    const exchanges = traces.rep.filter((e) => e.kind === 'exchange');
    const differs = exchanges[2];
    assert.equal(differs.agent, 'executor');
    await p.$eval('[data-assert-spec]', (el) => {
      el.value = 'assertions:\n  - agent_sequence: {agents: [orchestrator, executor, reviewer]}\n';
    });
    await p.click('[data-action=assert]');
    await p.waitForSelector('[data-assert-results] li.fail [data-differs-at]');
    assert.deepEqual(await p.$$eval('g.failed-check', (gs) => gs.map((g) => Number(g.dataset.eventSeq))), [differs.seq],
      'only the exchange where the sequence differs is marked');
    assert.equal(await p.$eval('[data-differs-at]', (el) => Number(el.dataset.differsAt)), differs.seq);
    assert.deepEqual(await p.$$eval('[data-assert-results] [data-points-to-seq]', (bs) => bs.map((b) => Number(b.dataset.pointsToSeq))),
      [differs.seq, exchanges[0].seq, exchanges[1].seq], 'a link to where it differs, then to what matched before it');

    // An invalid spec is an error in the panel, not a verdict.
    await p.$eval('[data-assert-spec]', (el) => { el.value = 'assertions:\n  - no_such_check: true\n'; });
    await p.click('[data-action=assert]');
    await p.waitForSelector('[data-assert-results] [data-assert-error]');
    assert.match(await textOf(p, '[data-assert-error]'), /no_such_check/);
    p.problems.splice(0, p.problems.length, ...p.problems.filter((x) => !/status of 400/.test(x)));
  });

  test('a spec pasted into the empty spec box is the spec checked', async (t) => {
    const p = await page(t);
    await open(p, us.http, `#/run/${runs.rep}`, '[data-action=assert]');
    const box = await p.$eval('[data-assert-spec]', (el) => ({ value: el.value, placeholder: el.placeholder }));
    assert.equal(box.value, '', 'the box starts empty');
    assert.match(box.placeholder, /no_misses: true/, 'the example shows as a placeholder');
    const pasted = 'assertions:\n  - agent_sequence: {agents: [orchestrator], match: prefix}\n';
    await p.click('[data-assert-spec]');
    await p.keyboard.sendCharacter(pasted);
    assert.equal(await p.$eval('[data-assert-spec]', (el) => el.value), pasted);
    await p.click('[data-action=assert]');
    await p.waitForSelector('[data-assert-results] .verdict');
    assert.equal(await textOf(p, '[data-assert-results] .verdict'), 'All 1 checks passed');
    assert.deepEqual(await p.$$eval('[data-assert-results] li', (lis) => lis.map((li) => li.dataset.check)), ['agent_sequence']);

    // Left empty, Check checks the example.
    await p.$eval('[data-assert-spec]', (el) => { el.value = ''; });
    await p.click('[data-action=assert]');
    await p.waitForSelector('[data-assert-results] li[data-check=no_misses]');
    assert.match(await p.$eval('[data-assert-spec]', (el) => el.value), /no_misses: true/);
  });

  test('rule hits, phase transitions, routing decisions and the workflow end are marked on their lanes', async (t) => {
    // docs/scenarios.md's example: three scripted answers, no recording.
    const scenarioText = [
      'schema: understudy.scenario/v1',
      'name: review-loop',
      'extractors:',
      '  phase: {tool: continue, argument: phase}',
      '  routing: {}',
      '  end: {tool: complete}',
      'rules:',
      '  - name: executor-hands-over',
      '    when: {agent: executor, iteration: 1}',
      '    respond: {content: "Handing over to review.", tool_calls: [{name: continue, arguments: {phase: review}}]}',
      '  - name: reviewer-objects',
      '    when: {agent: reviewer, phase: review}',
      '    respond: {content: \'{"agents": ["executor"], "phase": "fix", "reason": "SQL injection in login()"}\'}',
      '  - name: executor-fixes',
      '    when: {agent: executor, previous_agent: reviewer, phase: fix}',
      '    respond: {tool_calls: [{name: complete, arguments: {summary: fixed}}]}',
      '',
    ].join('\n');
    const run = (await us.client.startRun({ mode: 'replay', scenarioText })).id;
    for (const [agent, prompt] of [['executor', 'You are the executor.'], ['reviewer', 'You review code.'], ['executor', 'You are the executor.']]) {
      await us.chat(run, agent, { model: 'gpt-test', messages: [{ role: 'system', content: prompt }, { role: 'user', content: 'Go on.' }] });
    }
    await us.client.endRun(run);
    const events = await trace(run);
    const p = await page(t);
    await open(p, us.http, `#/run/${run}`, '[data-view=run][data-loaded=all]');
    const marks = await p.$$eval('svg[data-diagram] g[data-event-seq]', (gs) => gs.map((g) => ({
      seq: Number(g.dataset.eventSeq),
      kind: g.dataset.kind,
      rule: g.classList.contains('rule-hit'),
      label: [...g.querySelectorAll('text.label')].map((x) => x.textContent).join(' | '),
      title: g.querySelector('title').textContent,
    })));
    assert.deepEqual(marks.map((m) => m.seq), events.map((e) => e.seq));
    const byKind = (k) => marks.filter((m) => m.kind === k);
    assert.deepEqual(byKind('exchange').map((m) => m.rule), [true, true, true], 'each answer is marked as a rule hit');
    assert.match(byKind('exchange')[0].label, /executor-hands-over/);
    assert.match(byKind('exchange')[0].label, /^.* \| “Handing over to review\.” ⇢ continue/, 'an answer with text and a tool call shows both');
    assert.match(byKind('exchange')[0].title, /\n“Handing over to review\.” ⇢ continue\(\{"phase":"review"\}\)\n/);
    assert.deepEqual(byKind('phase_transition').map((m) => m.label), ['phase ∅ → review', 'phase review → fix']);
    assert.deepEqual(byKind('routing_decision').map((m) => m.label), ['route to executor (SQL injection in login())']);
    assert.equal(byKind('workflow_end').length, 1);
    const laneX = await p.$$eval('svg[data-diagram] g[data-lane]', (gs) => Object.fromEntries(gs.map((g) => [g.dataset.lane, Number(g.querySelector('line').getAttribute('x1'))])));
    const routing = events.find((e) => e.kind === 'routing_decision');
    const routingX = await p.$eval(`g[data-event-seq="${routing.seq}"] .mark-shape`, (el) => el.getBBox().x + el.getBBox().width / 2);
    assert.ok(Math.abs(routingX - laneX[routing.agent]) < 2, `the routing decision sits on the lane of ${routing.agent}, the agent that made it`);
    await p.click(`g[data-event-seq="${byKind('exchange')[1].seq}"] rect.hit`);
    await p.waitForSelector('[data-panel=detail] [data-section=response]');
    assert.match(await textOf(p, '[data-panel=detail] .note'), /answered from: rule reviewer-objects/);
    await browser.screenshot(p, 'scenario');
  });

  test('a live run grows in the page while the agents work, then ends', async (t) => {
    const p = await page(t);
    const run = (await us.client.startRun({ mode: 'replay', session: 'review-loop' })).id;
    let ended = false;
    t.after(async () => {
      if (!ended) await us.client.endRun(run).catch(() => {});
    });
    await open(p, us.http, `#/run/${run}`, '[data-live=on]');
    await p.evaluate(() => { window.__sameDocument = true; });
    const count = () => p.$$eval('svg[data-diagram] g[data-event-seq]', (gs) => gs.length);
    const before = await count();
    let shots = 0;
    await us.reviewLoop(run, {
      // Before each call, the page has drawn the events of the last one.
      before: async () => {
        const n = (await us.client.query(run)).length;
        await waitInPage(p, (k) => document.querySelectorAll('svg[data-diagram] g[data-event-seq]').length >= k, [n], `${n} events drawn live`);
        if (shots++ === 4) await browser.screenshot(p, 'live');
      },
    });
    const n = (await us.client.query(run)).length;
    await waitInPage(p, (k) => document.querySelectorAll('svg[data-diagram] g[data-event-seq]').length >= k, [n], `${n} events drawn live`);
    assert.ok(n > before + 20, `the run grew from ${before} to ${n} events`);
    assert.equal(await textOf(p, '[data-count=events]'), String(n));
    assert.equal(await p.evaluate(() => window.__sameDocument), true, 'no reload');

    await us.client.endRun(run);
    ended = true;
    await waitInPage(p, () => document.querySelector('g[data-kind=run_ended]') && !document.querySelector('[data-live=on]'), [], 'the run_ended event and live off');
    const drawn = await gSeqs(p);
    const all = await us.client.query(run);
    assert.deepEqual(drawn.map((g) => g.seq), all.map((e) => e.seq), 'every event once, in order');
    assert.equal(await textOf(p, '[data-status]'), 'ended');
  });

  test('two runs side by side with the first divergence marked', async (t) => {
    const p = await page(t);
    // Picked from the runs view.
    await open(p, us.http, '#/session/review-loop', `input[data-compare-pick="${runs.rep}"]`);
    await p.click(`input[data-compare-pick="${runs.rep}"]`);
    await p.click(`input[data-compare-pick="${runs.rec}"]`);
    await p.click('[data-action=compare]');
    await p.waitForSelector('[data-view=compare] [data-first-divergence]');
    assert.equal(await p.evaluate(() => location.hash), `#/compare/${runs.rec}/${runs.rep}`, 'the older run on the left');

    const miss = traces.rep.find((e) => e.kind === 'miss');
    const sides = await p.$$eval('svg[data-diagram]', (svgs) => svgs.map((s) => ({
      side: s.dataset.side,
      events: s.querySelectorAll('g[data-event-seq]').length,
      divergence: [...s.querySelectorAll('g.divergence')].map((g) => ({ seq: Number(g.dataset.eventSeq), kind: g.dataset.kind })),
    })));
    assert.deepEqual(sides.map((s) => s.side), ['A', 'B']);
    assert.deepEqual(sides.map((s) => s.events), [traces.rec.length, traces.rep.length]);
    // The golden run's answer to the reviewer's first request, which the
    // replay missed.
    const golden = traces.rec.filter((e) => e.kind === 'exchange' && e.agent === 'reviewer')[0];
    assert.deepEqual(sides[0].divergence, [{ seq: golden.seq, kind: golden.kind }]);
    assert.deepEqual(sides[1].divergence, [{ seq: miss.seq, kind: 'miss' }]);
    const line = await textOf(p, '[data-first-divergence]');
    assert.match(line, new RegExp(`A #${golden.seq} exchange \\(reviewer\\)`));
    assert.match(line, new RegExp(`B #${miss.seq} miss \\(reviewer\\)`));
    assert.match(line, /kind differs: exchange vs miss/);
    assert.match(line, /request differs at messages\[1\]\.content/);

    await browser.screenshot(p, 'compare');

    // A run compared with itself does not diverge.
    await open(p, us.http, `#/compare/${runs.rec}/${runs.rec}`, '[data-first-divergence]');
    assert.equal(await p.$eval('[data-first-divergence]', (e) => e.dataset.firstDivergence), 'none');
    assert.equal(await p.$$eval('g.divergence', (gs) => gs.length), 0);
  });

  test('compared runs show each lane\'s whole name in panes that hold every lane', async (t) => {
    const p = await page(t);
    await open(p, us.http, `#/compare/${runs.rec}/${runs.rep}`, '[data-view=compare] [data-first-divergence]');
    const names = await p.$$eval('svg[data-diagram] g[data-lane]', (gs) => gs.map((g) => [g.dataset.lane, g.querySelector('text.lane-name').textContent]));
    assert.equal(names.length, 12);
    for (const [lane, shown] of names) assert.equal(shown, lane, 'the lane name is not clipped');
    const headNames = await p.$$eval('svg.lane-heads text.lane-name', (ts) => ts.map((x) => x.textContent));
    assert.deepEqual(headNames, names.map(([lane]) => lane), 'the heads that stay in view too');
    const fits = await p.$$eval('.compare [data-scroll]', (ws) => ws.map((w) => w.scrollWidth <= w.clientWidth));
    assert.deepEqual(fits, [true, true], 'six lanes fit in each pane, with their names');
  });

  test('compared runs show their first divergence side by side', async (t) => {
    // The golden run and the strict replay that stopped at its miss: a
    // long pane and a short one.
    const p = await page(t);
    await open(p, us.http, `#/compare/${runs.rec}/${runs.strict}`, '[data-view=compare] [data-first-divergence]');
    const miss = traces.strict.find((e) => e.kind === 'miss');
    assert.ok(miss && traces.strict.length < traces.rec.length / 2, 'the strict replay stopped at its miss');
    assert.equal(await p.$eval('[data-first-divergence]', (e) => e.dataset.seqB), String(miss.seq));
    // The two divergent rows at one height on the screen, in view below
    // the lane heads.
    const rows = await p.$$eval('g.divergence rect.hit', (rs) => rs.map((r) => {
      const w = r.closest('[data-scroll]');
      const box = w.getBoundingClientRect();
      const at = r.getBoundingClientRect();
      return { top: at.top, bottom: at.bottom, boxTop: box.top, boxBottom: box.top + w.clientHeight };
    }));
    assert.equal(rows.length, 2);
    assert.ok(Math.abs(rows[0].top - rows[1].top) < 1, `the divergence at one height in both panes: ${rows[0].top} and ${rows[1].top}`);
    for (const r of rows) assert.ok(r.top >= r.boxTop + 40 && r.bottom <= r.boxBottom, `the divergence in view: ${JSON.stringify(r)}`);
    await browser.screenshot(p, 'compare-aligned');
  });

  test('opening an event of a compared run scrolls its pane to it, clear of the lane heads', async (t) => {
    const p = await page(t);
    await open(p, us.http, `#/compare/${runs.rec}/${runs.rep}`, '[data-view=compare] [data-first-divergence]');
    // A row of pane A half under the lane heads, clicked where it shows.
    const target = await p.$eval('[data-side=A] [data-scroll]', (w) => {
      const hit = (x) => x.querySelector('rect.hit');
      const g = [...w.querySelectorAll('svg[data-diagram] g[data-event-seq]')]
        .find((x) => Number(hit(x).getAttribute('y')) >= 150 && Number(hit(x).getAttribute('height')) >= 40);
      w.scrollTop = Number(hit(g).getAttribute('y')) - 20;
      const box = w.getBoundingClientRect();
      return { seq: Number(g.dataset.eventSeq), x: box.left + box.width / 2, y: (hit(g).getBoundingClientRect().bottom + box.top + 40) / 2 };
    });
    await p.mouse.click(target.x, target.y);
    await p.waitForSelector(`[data-side=A] g.selected[data-event-seq="${target.seq}"]`);
    const opened = await p.$eval(`[data-side=A] g[data-event-seq="${target.seq}"]`, (g) => {
      const w = g.closest('[data-scroll]');
      const box = w.getBoundingClientRect();
      const above = g.previousElementSibling.querySelector('rect.hit').getBoundingClientRect();
      const at = g.querySelector('rect.hit').getBoundingClientRect();
      return { headsBottom: w.querySelector('svg.lane-heads').getBoundingClientRect().bottom, above: above.top, bottom: at.bottom, boxBottom: box.top + w.clientHeight };
    });
    assert.ok(opened.above >= opened.headsBottom - 0.5 && opened.bottom <= opened.boxBottom + 0.5, `the opened event and the row above it in view: ${JSON.stringify(opened)}`);
  });

  test('an unknown run id gives a page that says so', async (t) => {
    const p = await page(t);
    await open(p, us.http, '#/run/run-does-not-exist', '[data-error]');
    assert.equal((await textOf(p, '[data-error] h2')).trim(), 'run "run-does-not-exist" not found');
    assert.equal(await p.$('svg[data-diagram]'), null);
    await browser.screenshot(p, 'not-found');
    // The 404 of the API shows in the console; nothing else may.
    p.problems.splice(0, p.problems.length, ...p.problems.filter((x) => !/status of 404/.test(x)));
  });

  test('a recorded answer with <script> and <img onerror> in it renders as text', async (t) => {
    const p = await page(t);
    const ex = traces.xss.find((e) => e.kind === 'exchange');
    assert.equal(ex.response.message.content, XSS_ANSWER, 'the markup was recorded as sent');
    await open(p, us.http, `#/run/${runs.xss}`, `g[data-event-seq="${ex.seq}"]`);
    await p.click(`g[data-event-seq="${ex.seq}"] rect.hit`);
    await p.waitForSelector('[data-panel=detail] [data-section=response]');
    const shown = await p.$eval('[data-panel=detail]', (el) => ({
      text: el.innerText,
      markup: el.querySelectorAll('script, img, b').length,
    }));
    assert.ok(shown.text.includes(XSS_SCRIPT), 'the <script> tag is shown as text');
    assert.ok(shown.text.includes(XSS_IMG), 'the <img onerror> tag is shown as text');
    assert.equal(shown.markup, 0, 'no element was made from the recording');
    const diagramText = await p.$eval('svg[data-diagram]', (el) => el.textContent);
    assert.ok(diagramText.includes('<script>'), 'the diagram label shows it as text too');
    assert.equal(await p.evaluate(() => document.querySelectorAll('img, script:not([src])').length), 0);
    assert.equal(await p.evaluate(() => window.__pwned), undefined, 'no recorded script ran');
    await browser.screenshot(p, 'xss');
  });

  test('page weight and first paint of a 1,000-event run (figures)', async (t) => {
    // A passthrough run of the loop, round after round, then custom events
    // up to 999 and run_ended: 1,000 events.
    const c = us.client;
    const run = (await c.startRun({ mode: 'passthrough' })).id;
    let n = 0;
    while (n < BIG_EVENTS - 40) {
      await us.reviewLoop(run);
      n = (await c.query(run)).length;
    }
    for (; n < BIG_EVENTS - 1; n++) await c.emit(run, 'test.marker', { i: String(n) });
    await c.endRun(run);
    assert.equal((await c.query(run)).length, BIG_EVENTS);

    const p = await page(t);
    await open(p, us.http, `#/run/${run}`, '[data-view=run][data-loaded=all]');
    await waitInPage(p, () => performance.getEntriesByName('understudy:diagram-painted').length > 0, [], 'the diagram painted');
    const figures = await p.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      const ui = [nav, ...performance.getEntriesByType('resource').filter((r) => new URL(r.name).pathname.startsWith('/ui'))];
      const at = (name) => performance.getEntriesByName(name)[0]?.startTime;
      return {
        events: document.querySelectorAll('svg[data-diagram] g[data-event-seq]').length,
        uiResources: ui.map((r) => ({ path: new URL(r.name).pathname, transferred: r.transferSize, body: r.encodedBodySize })),
        uiTransferredBytes: ui.reduce((sum, r) => sum + r.transferSize, 0),
        uiBodyBytes: ui.reduce((sum, r) => sum + r.encodedBodySize, 0),
        firstContentfulPaintMs: at('first-contentful-paint'),
        diagramDrawnMs: at('understudy:diagram-drawn'),
        diagramPaintedMs: at('understudy:diagram-painted'),
        diagramCompleteMs: at('understudy:diagram-complete'),
        domContentLoadedMs: nav.domContentLoadedEventEnd,
      };
    });
    await browser.screenshot(p, 'run-1000');
    const file = saveArtifact('figures.json', `${JSON.stringify(figures, null, 2)}\n`);
    const line = `ui figures: page weight ${figures.uiTransferredBytes} bytes transferred (${figures.uiBodyBytes} bytes of bodies: ` +
      `${figures.uiResources.map((r) => `${r.path} ${r.body}`).join(', ')}); 1,000-event run: first contentful paint ` +
      `${figures.firstContentfulPaintMs?.toFixed(1)} ms; the diagram's first rows drawn at ${figures.diagramDrawnMs?.toFixed(1)} ms, ` +
      `painted by ${figures.diagramPaintedMs?.toFixed(1)} ms; all 1,000 events drawn at ${figures.diagramCompleteMs?.toFixed(1)} ms ` +
      `(ms after navigation start; budget: < 300 KB, < 200 ms to first paint); ${file}`;
    t.diagnostic(line);
    console.log(line);
    assert.equal(figures.events, BIG_EVENTS);
    // The page and every script and stylesheet of ui/ (its modules: none is
    // dead weight), each once, and nothing else.
    const scripts = fs.readdirSync(UI_DIR).filter((f) => /\.(js|css)$/.test(f)).map((f) => `/ui/${f}`);
    assert.deepEqual(figures.uiResources.map((r) => r.path).sort(), ['/ui/', ...scripts].sort());
    assert.ok(figures.uiTransferredBytes < 300 * 1024, `page weight ${figures.uiTransferredBytes} bytes is under 300 KB`);
  });
});

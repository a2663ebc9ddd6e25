// Waiting for, watching and emitting trace events with the client, against
// runs scripted by a scenario alone (no recording, no upstream).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { useUnderstudy } from '../index.js';
import { collect, serve, within } from '../test_support/env.js';

const SCENARIO = `schema: understudy.scenario/v1
name: events
rules:
  - name: hello
    respond: {content: "hello"}
`;

let server;

before(async () => {
  server = await serve();
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, `understudy serve exit code; stderr:\n${server.stderr()}`);
});

function open(t) {
  return useUnderstudy(t, { server, scenarioText: SCENARIO });
}

test('emit appends a custom event and returns it with its seq', async (t) => {
  const us = await open(t);
  const first = await us.emit('custom.checkpoint', { step: 'plan', n: 3 }, { agent: 'executor' });
  assert.equal(first.kind, 'custom.checkpoint');
  assert.equal(first.run, us.runId);
  assert.equal(first.agent, 'executor');
  assert.equal(first.attributes.step, 'plan');
  assert.equal(first.attributes.n, '3'); // non-strings as their JSON text
  assert.equal(first.attributes['gen_ai.agent.name'], 'executor');
  assert.ok(first.seq > 0);
  const second = await us.emit('custom.checkpoint', { step: 'review' });
  assert.equal(second.seq, first.seq + 1);

  const events = await us.query({ kind: 'custom.checkpoint' });
  assert.deepEqual(events.map((e) => [e.seq, e.attributes.step]), [[first.seq, 'plan'], [second.seq, 'review']]);
  assert.deepEqual((await us.query({ kind: 'custom.checkpoint', agent: 'executor' })).map((e) => e.seq), [first.seq]);
  assert.deepEqual((await us.query({ attributePatterns: { step: '^rev' } })).map((e) => e.seq), [second.seq]);
  const all = await us.query();
  assert.equal(all[0].kind, 'run_started');
  assert.deepEqual(all.map((e) => e.seq), all.map((_, i) => i + 1));
});

test('emit refuses a bad kind with the server\'s reason', async (t) => {
  const us = await open(t);
  await assert.rejects(us.emit('exchange', {}), (e) => {
    assert.equal(e.name, 'UnderstudyError');
    assert.equal(e.codeName, 'INVALID_ARGUMENT');
    assert.match(e.message, /^kind: "exchange" is understudy's own/);
    return true;
  });
  await assert.rejects(us.emit('Not A Kind', {}), (e) => {
    assert.equal(e.codeName, 'INVALID_ARGUMENT');
    assert.match(e.message, /is not \[a-z\]\[a-z0-9_\.\]\*/);
    return true;
  });
  await assert.rejects(us.emit('', {}), (e) => e.codeName === 'INVALID_ARGUMENT' && /^kind: /.test(e.message));
  await assert.rejects(us.emit('custom.x', { '': 'v' }), (e) => e.codeName === 'INVALID_ARGUMENT' && /^attributes: /.test(e.message));
  await assert.rejects(
    us.client.emit('no-such-run', 'custom.x', {}),
    (e) => e.codeName === 'NOT_FOUND',
  );
  // Nothing was appended by the refusals.
  assert.deepEqual((await us.query({ kinds: ['custom.x', 'exchange'] })), []);
});

test('waitFor finds an event that already happened', async (t) => {
  const us = await open(t);
  const emitted = await us.emit('custom.ready', { who: 'past' });
  const found = await us.waitFor({ kind: 'custom.ready' }, { timeoutMs: 2000 });
  assert.equal(found.seq, emitted.seq);
  assert.equal(found.attributes.who, 'past');
});

test('waitFor waits for an event still to come', async (t) => {
  const us = await open(t);
  await us.emit('custom.ready', { who: 'decoy' });
  const started = Date.now();
  const timer = setTimeout(() => {
    us.emit('custom.done', { who: 'future' }).catch(() => {});
  }, 300);
  t.after(() => clearTimeout(timer));
  const found = await within(10000, 'waitFor custom.done', us.waitFor({ kind: 'custom.done' }, { timeoutMs: 5000 }));
  assert.equal(found.kind, 'custom.done');
  assert.equal(found.attributes.who, 'future');
  assert.ok(Date.now() - started >= 250, 'answered only once the event came');
});

test('waitFor with an attribute filter skips events that do not match', async (t) => {
  const us = await open(t);
  const timer = setTimeout(async () => {
    try {
      await us.emit('custom.step', { n: '1' });
      await us.emit('custom.step', { n: '2' });
    } catch {
      // the test reports the wait's failure
    }
  }, 100);
  t.after(() => clearTimeout(timer));
  const found = await us.waitFor({ kind: 'custom.step', attributes: { n: '2' } }, { timeoutMs: 5000 });
  assert.equal(found.attributes.n, '2');
});

test('waitFor times out with the server\'s explanation', async (t) => {
  const us = await open(t);
  await us.emit('custom.ready', {});
  const started = Date.now();
  const error = await us.waitFor({ kind: 'custom.never' }, { timeoutMs: 400 }).then(
    () => assert.fail('waitFor resolved'),
    (e) => e,
  );
  const elapsed = Date.now() - started;
  assert.ok(error instanceof Error);
  assert.equal(error.codeName, 'DEADLINE_EXCEEDED', String(error));
  // The message is the server's: the filter, the run's state, its last event.
  assert.match(error.message, /^no event matching kind=custom\.never came in time; /);
  assert.match(error.message, new RegExp(`run "${us.runId}" is active with 2 events; the last is #2 custom\\.ready`));
  assert.ok(elapsed >= 350 && elapsed < 5000, `timed out after ${elapsed} ms`);
});

test('waitFor on a run that ends without the event fails at once', async (t) => {
  const us = await open(t);
  const waiting = us.waitFor({ kind: 'custom.never' }, { timeoutMs: 10000 });
  const timer = setTimeout(() => us.end().catch(() => {}), 200);
  t.after(() => clearTimeout(timer));
  const error = await within(5000, 'waitFor to fail when the run ends', waiting.then(() => null, (e) => e));
  assert.ok(error, 'waitFor resolved');
  assert.equal(error.codeName, 'FAILED_PRECONDITION', String(error));
  assert.match(error.message, /^the run ended with no event matching kind=custom\.never/);
});

test('waitForState and waitForDone follow a simulated agent\'s turns', async (t) => {
  const us = await open(t);
  // sim.state events as `understudy sim` emits them, faked with emit.
  const state = (agent, to, from) =>
    us.emit('sim.state', { 'understudy.sim.state': to, 'understudy.sim.state.from': from, 'understudy.sim.reason': 'test' }, { agent });
  await state('coder', 'STARTING', '');
  const idle = await state('coder', 'IDLE', 'STARTING');
  await state('coder', 'WORKING', 'IDLE');
  await state('other', 'WORKING', 'IDLE');
  const otherDone = await state('other', 'IDLE', 'WORKING'); // not coder's turn

  assert.equal((await us.waitForState('coder', 'IDLE', { timeoutMs: 1000 })).seq, idle.seq);
  assert.equal((await us.waitForDone('other', { timeoutMs: 1000 })).seq, otherDone.seq);
  const timedOut = (p) => p.then(() => assert.fail('resolved'), (e) => e.codeName);
  assert.equal(await timedOut(us.waitForState('coder', 'IDLE', { afterSeq: idle.seq, timeoutMs: 300 })), 'DEADLINE_EXCEEDED');
  assert.equal(await timedOut(us.waitForDone('coder', { timeoutMs: 300 })), 'DEADLINE_EXCEEDED'); // STARTING -> IDLE is no turn

  const started = Date.now();
  const timer = setTimeout(() => state('coder', 'IDLE', 'WORKING').catch(() => {}), 300);
  t.after(() => clearTimeout(timer));
  const done = await within(10000, 'waitForDone coder', us.waitForDone('coder', { afterSeq: idle.seq, timeoutMs: 5000 }));
  assert.ok(Date.now() - started >= 250, 'answered only once the turn ended');
  assert.equal(done.agent, 'coder');
  assert.equal(done.seq, otherDone.seq + 1);
  assert.equal(done.attributes['understudy.sim.state.from'], 'WORKING');

  // ASKING -> CRASHED ends a turn; IDLE -> DONE (an exit between turns) does not.
  const exited = await state('coder', 'DONE', 'IDLE');
  assert.equal(await timedOut(us.waitForDone('coder', { afterSeq: done.seq, timeoutMs: 300 })), 'DEADLINE_EXCEEDED');
  assert.equal((await us.waitForState('coder', 'DONE', { afterSeq: done.seq, timeoutMs: 1000 })).seq, exited.seq);
  await state('asker', 'ASKING', 'WORKING');
  const crashed = await state('asker', 'CRASHED', 'ASKING');
  assert.equal((await us.client.waitForDone(us.runId, 'asker', { timeoutMs: 1000 })).seq, crashed.seq);
});

test('watch yields the past and the new events until the run ends', async (t) => {
  const us = await open(t);
  await us.emit('custom.a', { i: '1' });
  const watched = collect(us.watch());
  const onlyB = collect(us.watch({ kind: 'custom.b' }));
  const http = await fetch(`${us.openaiBaseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(http.status, 200);
  assert.equal((await http.json()).choices[0].message.content, 'hello');
  await us.emit('custom.b', { i: '2' });
  await us.emit('custom.b', { i: '3' });
  await us.end();
  const events = await within(10000, 'watch to end with the run', watched);
  assert.deepEqual(events.map((e) => e.kind), ['run_started', 'custom.a', 'exchange', 'custom.b', 'custom.b', 'run_ended']);
  assert.deepEqual(events.map((e) => e.seq), [1, 2, 3, 4, 5, 6]);
  const bs = await within(10000, 'filtered watch to end', onlyB);
  assert.deepEqual(bs.map((e) => e.attributes.i), ['2', '3']);

  // An ended run's watch gives its whole trace and ends.
  const again = await within(10000, 'watch of an ended run', collect(us.watch({}, { afterSeq: 4 })));
  assert.deepEqual(again.map((e) => e.seq), [5, 6]);
});

test('leaving a watch early cancels it', async (t) => {
  const us = await open(t);
  const seen = [];
  const timer = setTimeout(() => us.emit('custom.tick', {}).catch(() => {}), 100);
  t.after(() => clearTimeout(timer));
  await within(10000, 'the first custom.tick', (async () => {
    for await (const e of us.watch({ kind: 'custom.tick' })) {
      seen.push(e);
      break;
    }
  })());
  assert.equal(seen.length, 1);
  // And an AbortSignal ends it quietly.
  const controller = new AbortController();
  const watching = collect(us.watch({ kind: 'custom.never' }, { signal: controller.signal }));
  setTimeout(() => controller.abort(), 100);
  assert.deepEqual(await within(5000, 'the aborted watch to end', watching), []);
});

test('waitFor, watch and query name an unknown run', async (t) => {
  const us = await open(t);
  const c = us.client;
  // One at a time: a rejection no one awaits yet would be unhandled.
  for (const call of [
    () => c.waitFor('no-such-run', {}, { timeoutMs: 1000 }),
    () => collect(c.watch('no-such-run')),
    () => c.query('no-such-run'),
  ]) {
    await assert.rejects(within(5000, 'an unknown run', call()), (e) => e.codeName === 'NOT_FOUND' && /no-such-run/.test(e.message));
  }
});

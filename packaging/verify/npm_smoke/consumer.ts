// Compiled (never run) by packaging/verify/npm.sh with `tsc --noEmit
// --strict` against the installed @understudy/client: every export of its
// index.d.ts used as a TypeScript user would, and misuses that must not
// compile (@ts-expect-error fails the build when the line compiles).
import { test } from 'node:test';

import {
  Client,
  PROTO_FILES,
  Server,
  UnderstudyError,
  VerifyInstallResult,
  assertions,
  connect,
  eventFilter,
  grpc,
  loadProtos,
  protoDir,
  startServer,
  status,
  useUnderstudy,
  verifyInstall,
} from '@understudy/client';
import type {
  AssertResponse,
  Assertion,
  ExitStatus,
  Run,
  RunSummary,
  TraceEvent,
  UnderstudyAssertionError,
  UnderstudyRun,
} from '@understudy/client';
import jsonReporter from '@understudy/client/json_reporter';

const files: readonly string[] = PROTO_FILES;
const dir: string = protoDir();
const v1 = loadProtos(dir);
const runsCtor: grpc.ServiceClientConstructor = v1.Runs;
const notFound: number = status.NOT_FOUND;
void [files, runsCtor, notFound];

async function journey(): Promise<void> {
  const server: Server = await startServer({ binary: 'understudy', args: ['--upstream', 'openai=http://127.0.0.1:1'] });
  const client: Client = server.client();
  const other = connect(server.grpc, { deadlineMs: 1000, credentials: grpc.credentials.createInsecure() });
  const run: Run = await client.startRun({ mode: 'record', session: 's', traceLevel: 'summary', strict: true });
  const mode: 'RUN_MODE_RECORD' | string = run.mode;
  const events: TraceEvent[] = await client.query(run.id, { kind: 'exchange' }, { afterSeq: 0 });
  const seq: number = events[0].seq;
  const model: string | undefined = events[0].request?.model;
  const first: TraceEvent = await client.waitFor(run.id, { kinds: ['exchange'], agent: 'a' }, { timeoutMs: 10 });
  await client.waitForState(run.id, 'agent', 'IDLE', { afterSeq: seq });
  await client.waitForDone(run.id, 'agent');
  for await (const e of client.watch(run.id, {}, { signal: AbortSignal.timeout(10) })) void e.attributes['k'];
  const emitted = await client.emit(run.id, 'my.event', { n: 1, s: 'x' }, { agent: 'a' });
  const list: Assertion[] = [
    assertions.agentSequence(['a', 'b'], { match: 'prefix', collapseRepeats: true }),
    assertions.phaseTransitions(['x'], { name: 'phases' }),
    assertions.toolCalls(['read', { name: 'write', arguments: { path: 'x' } }], { agent: 'e', match: 'subsequence' }),
    assertions.feedbackPropagated({ from: 'r', to: 'e', keyword: 'k' }),
    assertions.count('>=', 1, { kind: 'exchange' }),
    assertions.noMisses(),
    assertions.allConsumed({ name: 'all' }),
    assertions.spec('assertions: [{no_misses: true}]'),
    { name: 'raw', noMisses: true },
  ];
  const checked: AssertResponse = await client.check(run.id, list);
  const report: string = checked.report;
  await client.assertAll(run.id, list);
  await client.assertAgentSequence(run.id, ['a']);
  await client.assertPhaseTransitions(run.id, ['x'], { match: 'exact' });
  await client.assertToolCalls(run.id, ['read']);
  await client.assertFeedbackPropagated(run.id, { from: 'r', to: 'e', keyword: 'k' });
  await client.assertCount(run.id, 'eq', 0, { kind: 'miss' }, { name: 'no misses' });
  await client.assertNoMisses(run.id);
  await client.assertSpec(run.id, 'assertions: [{no_misses: true}]');
  const summary: RunSummary = await client.endRun(run.id);
  const recorded: number = summary.recorded.length + (summary.run?.recorded ?? 0);
  await client.assertAllConsumed(run.id);
  const again: Run = await client.getRun(run.id);
  const filter = eventFilter({ kinds: 'exchange', attributes: { a: 'b' }, minSeq: 1 });
  const kinds: string[] | undefined = filter.kinds;
  try {
    await client.startRun({ mode: 'replay', session: 'missing' });
  } catch (e) {
    if (e instanceof UnderstudyError) {
      const name: string = e.codeName;
      const code: grpc.status | undefined = e.code;
      void [name, code, e.rpc];
    } else {
      const failure = e as UnderstudyAssertionError;
      const response: AssertResponse = failure.response;
      void response;
    }
  }
  other.close();
  const exit: ExitStatus = await server.stop({ timeoutMs: 100 });
  server.kill();
  void [mode, model, first, emitted, report, recorded, again, kinds, exit, server.stderr(), server.process.pid];

  // Misuses the declarations must refuse.
  // @ts-expect-error: not a mode
  await client.startRun({ mode: 'rewind' });
  // @ts-expect-error: kind and kinds together
  eventFilter({ kind: 'a', kinds: ['b'] });
  // @ts-expect-error: not an operator
  assertions.count('~=', 1);
  // @ts-expect-error: the run id is a string
  await client.endRun(42);
  // @ts-expect-error: not a sim state
  await client.waitForState(run.id, 'a', 'SLEEPING');
  // @ts-expect-error: a message field is possibly null
  void summary.run.id;
}

test('a run per test', async (t) => {
  const us: UnderstudyRun = await useUnderstudy(t, { server: { grpc: '127.0.0.1:1', http: 'http://127.0.0.1:2' }, session: 's' });
  const base: string | undefined = us.openaiBaseURL;
  const url: string = us.baseURL('executor');
  const env: string = us.env.UNDERSTUDY_RUN;
  const events: TraceEvent[] = await us.query({ kind: 'exchange' });
  await us.assertAgentSequence(['a'], { match: 'subsequence' });
  await us.assertSpec('assertions: [{no_misses: true}]');
  const summary: RunSummary = await us.end();
  void [base, url, env, events, summary, us.summary?.misses, us.metadata['understudy-run']];
  // @ts-expect-error: the bound helpers take no run id
  await us.assertNoMisses(us.runId, {});
  // @ts-expect-error: t needs an after(fn)
  await useUnderstudy({}, {});
});

async function shipped(): Promise<void> {
  const result: VerifyInstallResult = await verifyInstall({
    packageDir: '.', session: 'golden', spec: ['golden.spec.yaml'], entry: 'my-agent', args: ['--n', 3], timeoutMs: 60000,
  });
  const ok: boolean = result.ok;
  const code: number | null = result.exitCode;
  void [ok, code, result.output, result.command];
  // @ts-expect-error: session, spec and entry are required
  await verifyInstall({ packageDir: '.' });
}

const reporter: AsyncGenerator<string, void, unknown> = jsonReporter((async function* () {})());
void [journey, shipped, reporter];

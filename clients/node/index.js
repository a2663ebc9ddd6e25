// A thin Node client for understudy (proto/understudy/v1): runs, the trace
// of a run (query, wait, watch, custom events) and trace assertions, over
// gRPC; plus a way to start the `understudy` binary, a per-test helper and
// verifyInstall() for a user's own agent package.
//
//   import { connect } from '@understudy/client';
//   const us = connect('127.0.0.1:7140');
//   const run = await us.startRun({ mode: 'replay', session: 'golden' });
//   ... point the agent at `http://127.0.0.1:7141/run/${run.id}/v1` ...
//   await us.assertAgentSequence(run.id, ['orchestrator', 'executor', 'reviewer']);
//   await us.endRun(run.id);
//   us.close();
//
// Messages are plain objects with the proto's fields in lowerCamelCase
// (run.sessionVersion, event.attributes['gen_ai.tool.name']); int64 fields
// are numbers; enums are their names ('RUN_STATE_ENDED'). A failed call
// rejects with an UnderstudyError whose message is the server's own text
// (its gRPC status is in .code / .codeName).
//
// Nothing here depends on a test runner: the assertion helpers throw
// node:assert's AssertionError, which node:test, vitest, mocha and jest all
// report, and useUnderstudy() takes any object with an `after(fn)`.
import assert from 'node:assert';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const PACKAGE_NAME = '@understudy/client';
const PACKAGE_DIR = path.dirname(fileURLToPath(import.meta.url));
// The package's own copy of the .proto files. In the repository its
// understudy/v1 is a symlink to the repository's proto/understudy/v1;
// scripts/pack.sh puts the files themselves in the tarball. Nothing outside
// the package is read.
const PACKAGE_PROTO_DIR = path.join(PACKAGE_DIR, 'proto');

// The .proto files the client loads, relative to the proto directory:
// understudy.proto and every file it imports (no google/protobuf types).
export const PROTO_FILES = Object.freeze(['understudy/v1/understudy.proto', 'understudy/v1/completion.proto']);

// Where the .proto files are read from: $UNDERSTUDY_PROTO_DIR, else the
// package's own proto/.
export function protoDir() {
  return process.env.UNDERSTUDY_PROTO_DIR || PACKAGE_PROTO_DIR;
}

const LOADER_OPTIONS = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  arrays: true,
  objects: true,
  oneofs: true,
};

const loaded = new Map();

// Why `rel` is not in `dir`, naming where `dir` came from.
function missingProto(dir, rel, file) {
  const where = `understudy proto not found at ${file}`;
  if (path.resolve(dir) === PACKAGE_PROTO_DIR) {
    return `${where}: proto file ${rel} missing from the ${PACKAGE_NAME} package at ${PACKAGE_DIR} ` +
      `(its package.json "files" must list proto/; or set UNDERSTUDY_PROTO_DIR to a directory holding understudy/v1/*.proto)`;
  }
  if (dir === process.env.UNDERSTUDY_PROTO_DIR) {
    return `${where}: UNDERSTUDY_PROTO_DIR=${dir} has no ${rel} ` +
      `(unset it to use the copy inside the ${PACKAGE_NAME} package at ${PACKAGE_DIR})`;
  }
  return `${where}: the protoDir given (${dir}) has no ${rel}`;
}

// The understudy.v1 package (grpc-js service constructors), loaded once per
// directory at run time. Throws an Error naming the missing file and where
// the directory came from when one of PROTO_FILES is not there.
export function loadProtos(dir = protoDir()) {
  if (loaded.has(dir)) return loaded.get(dir);
  for (const rel of PROTO_FILES) {
    const at = path.join(dir, ...rel.split('/'));
    if (!fs.existsSync(at)) throw new Error(missingProto(dir, rel, at));
  }
  const file = path.join(dir, ...PROTO_FILES[0].split('/'));
  const definition = protoLoader.loadSync(file, { ...LOADER_OPTIONS, includeDirs: [dir] });
  const v1 = grpc.loadPackageDefinition(definition).understudy.v1;
  loaded.set(dir, v1);
  return v1;
}

// A failed RPC: the server's message as `message`, its status as `code`
// (a number, grpc.status) and `codeName` ('NOT_FOUND', ...).
export class UnderstudyError extends Error {
  constructor(rpc, error) {
    super(error.details || error.message);
    this.name = 'UnderstudyError';
    this.rpc = rpc;
    this.code = error.code;
    this.codeName = grpc.status[error.code] ?? String(error.code);
    this.details = error.details;
    this.metadata = error.metadata;
    this.cause = error;
  }
}

export { grpc };
export const status = grpc.status;

const MODES = {
  record: 'RUN_MODE_RECORD',
  replay: 'RUN_MODE_REPLAY',
  passthrough: 'RUN_MODE_PASSTHROUGH',
  once: 'RUN_MODE_ONCE',
  new: 'RUN_MODE_NEW',
};

// TraceLevel by name (docs/assertions.md, "Trace levels").
const TRACE_LEVELS = {
  full: 'TRACE_LEVEL_FULL',
  summary: 'TRACE_LEVEL_SUMMARY',
  off: 'TRACE_LEVEL_OFF',
};

const MATCHES = {
  exact: 'SEQUENCE_MATCH_EXACT',
  subsequence: 'SEQUENCE_MATCH_SUBSEQUENCE',
  prefix: 'SEQUENCE_MATCH_PREFIX',
};

const COMPARISONS = {
  '==': 'COMPARISON_EQ', '===': 'COMPARISON_EQ', eq: 'COMPARISON_EQ',
  '!=': 'COMPARISON_NE', '!==': 'COMPARISON_NE', ne: 'COMPARISON_NE',
  '<': 'COMPARISON_LT', lt: 'COMPARISON_LT',
  '<=': 'COMPARISON_LE', le: 'COMPARISON_LE',
  '>': 'COMPARISON_GT', gt: 'COMPARISON_GT',
  '>=': 'COMPARISON_GE', ge: 'COMPARISON_GE',
};

function lookup(table, value, what, prefix) {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') {
    if (value.startsWith(prefix)) return value;
    const found = table[value.toLowerCase()];
    if (found) return found;
  }
  throw new TypeError(`${what}: ${JSON.stringify(value)} is not one of ${Object.keys(table).join(', ')}`);
}

// An EventFilter message from { kinds | kind, agent, tool, phase,
// attributes, attributePatterns, minSeq, maxSeq }.
export function eventFilter(filter = {}) {
  if (filter === null || typeof filter !== 'object') throw new TypeError('filter: expected an object');
  const { kind, kinds, ...rest } = filter;
  const out = { ...rest };
  if (kind !== undefined && kinds !== undefined) throw new TypeError('filter: give kind or kinds, not both');
  if (kind !== undefined) out.kinds = [kind];
  else if (kinds !== undefined) out.kinds = typeof kinds === 'string' ? [kinds] : [...kinds];
  return out;
}

function jsonArguments(args, where) {
  if (args === undefined || args === null || args === '') return '';
  if (typeof args === 'string') return args;
  if (typeof args === 'object' && !Array.isArray(args)) return JSON.stringify(args);
  throw new TypeError(`${where}: expected an object or its JSON text`);
}

// Builders of Assertion messages, for Client.check(); each takes an optional
// `name` shown in the results.
export const assertions = {
  agentSequence(agents, { match = 'exact', collapseRepeats = false, name = '' } = {}) {
    return {
      name,
      agentSequence: { agents: [...agents], match: lookup(MATCHES, match, 'match', 'SEQUENCE_MATCH_'), collapseRepeats },
    };
  },
  phaseTransitions(phases, { match = 'exact', name = '' } = {}) {
    return { name, phaseTransitions: { phases: [...phases], match: lookup(MATCHES, match, 'match', 'SEQUENCE_MATCH_') } };
  },
  // calls: tool names, or { name, arguments } where arguments (an object or
  // its JSON text) must be a subset of the call's.
  toolCalls(calls, { agent = '', match = 'exact', name = '' } = {}) {
    return {
      name,
      toolCalls: {
        agent,
        calls: calls.map((c, i) =>
          typeof c === 'string'
            ? { name: c, arguments: '' }
            : { name: c.name, arguments: jsonArguments(c.arguments, `calls[${i}].arguments`) },
        ),
        match: lookup(MATCHES, match, 'match', 'SEQUENCE_MATCH_'),
      },
    };
  },
  feedbackPropagated({ from, to, keyword, name = '' } = {}) {
    return { name, feedbackPropagated: { from, to, keyword } };
  },
  // op: '==', '!=', '<', '<=', '>', '>=' (or eq, ne, lt, le, gt, ge).
  count(op, n, filter = {}, { name = '' } = {}) {
    return {
      name,
      count: { filter: eventFilter(filter), comparison: lookup(COMPARISONS, op, 'op', 'COMPARISON_'), n },
    };
  },
  noMisses({ name = '' } = {}) {
    return { name, noMisses: true };
  },
  allConsumed({ name = '' } = {}) {
    return { name, allConsumed: true };
  },
  spec(specText, { name = '' } = {}) {
    return { name, spec: specText };
  },
};

function assertionFailure(response) {
  const failed = response.results.filter((r) => !r.passed);
  const error = new assert.AssertionError({
    message: response.report,
    actual: failed.length === 1 ? failed[0].actual : failed.map((r) => r.actual),
    expected: failed.length === 1 ? failed[0].expected : failed.map((r) => r.expected),
    operator: 'understudy',
  });
  error.response = response;
  return error;
}

const DEFAULT_DEADLINE_MS = 30000;
const DEFAULT_WAIT_MS = 30000;
// How much later than the server's own timeout the client gives up on a
// WaitFor, so that the server's explanation arrives first.
const WAIT_GRACE_MS = 5000;

// The attributes of a simulated agent's sim.state events, and the patterns
// of a finished turn (docs/sim.md#trace).
const SIM_STATE = 'understudy.sim.state';
const SIM_STATE_FROM = 'understudy.sim.state.from';
const SIM_DONE_STATES = '^(IDLE|DONE|CRASHED)$';
const SIM_BUSY_STATES = '^(WORKING|ASKING)$';

export class Client {
  // address: host:port of `understudy serve --listen`. Options:
  //   deadlineMs    per unary call and QueryStream (default 30000)
  //   credentials   grpc credentials (default insecure: understudy listens
  //                 on loopback)
  //   protoDir      where the .proto files are (default protoDir())
  //   channelOptions  grpc-js channel options
  constructor(address, { deadlineMs = DEFAULT_DEADLINE_MS, credentials, protoDir: dir, channelOptions = {} } = {}) {
    this.address = String(address).replace(/^grpc:\/\//, '');
    this.deadlineMs = deadlineMs;
    const v1 = loadProtos(dir);
    const creds = credentials ?? grpc.credentials.createInsecure();
    this.runs = new v1.Runs(this.address, creds, channelOptions);
    const shared = { ...channelOptions, channelOverride: this.runs.getChannel() };
    this.traces = new v1.Traces(this.address, creds, shared);
    this.sessions = new v1.Sessions(this.address, creds, shared);
  }

  close() {
    this.runs.close();
  }

  _deadline(ms = this.deadlineMs) {
    return new Date(Date.now() + ms);
  }

  _unary(service, method, request, { deadlineMs } = {}) {
    return new Promise((resolve, reject) => {
      service[method](request, { deadline: this._deadline(deadlineMs) }, (error, response) => {
        if (error) reject(new UnderstudyError(method, error));
        else resolve(response);
      });
    });
  }

  // Runs.StartRun; the options are StartRunRequest's fields, in camelCase.
  // mode: record | replay | passthrough | once | new.
  // traceLevel: full | summary (start, misses, end) | off; unset keeps the
  // server's --trace-level. repeat: in replay, once every identical
  // recording of a request is used, answer it again from the last one
  // instead of missing (polling agents, retries).
  // Resolves the Run ({ id, session, sessionVersion, mode, strict, state, ... }).
  async startRun({ mode = 'replay', session = '', scenario = '', scenarioText = '', runId = '', strict, traceLevel, repeat = false } = {}) {
    const request = { mode: lookup(MODES, mode, 'mode', 'RUN_MODE_'), session, scenario, scenarioText, runId, repeat: Boolean(repeat) };
    if (strict !== undefined) request.strict = Boolean(strict);
    if (traceLevel !== undefined) request.traceLevel = lookup(TRACE_LEVELS, traceLevel, 'traceLevel', 'TRACE_LEVEL_');
    return this._unary(this.runs, 'StartRun', request);
  }

  // Runs.EndRun: the RunSummary ({ run, misses, unconsumed, recorded, failures }).
  endRun(runId) {
    return this._unary(this.runs, 'EndRun', { run: runId });
  }

  getRun(runId) {
    return this._unary(this.runs, 'GetRun', { run: runId });
  }

  // Traces.QueryStream, collected: every matching event of the run, by seq.
  // options.afterSeq starts after that seq.
  async query(runId, filter = {}, { afterSeq = 0, deadlineMs } = {}) {
    return new Promise((resolve, reject) => {
      const events = [];
      const call = this.traces.QueryStream(
        { run: runId, filter: eventFilter(filter), afterSeq },
        { deadline: this._deadline(deadlineMs) },
      );
      call.on('data', (e) => events.push(e));
      call.on('error', (error) => reject(new UnderstudyError('QueryStream', error)));
      call.on('end', () => resolve(events));
    });
  }

  // Traces.WaitFor: the first matching event, past or future. Rejects after
  // timeoutMs (default 30000) with the server's explanation (the run's state
  // and last events) as message, codeName 'DEADLINE_EXCEEDED'; with
  // FAILED_PRECONDITION when the run ended without one.
  async waitFor(runId, filter = {}, { timeoutMs = DEFAULT_WAIT_MS } = {}) {
    if (!(timeoutMs > 0)) throw new RangeError('timeoutMs: must be more than 0');
    return this._unary(
      this.traces,
      'WaitFor',
      { run: runId, filter: eventFilter(filter), timeoutMs },
      { deadlineMs: timeoutMs + WAIT_GRACE_MS },
    );
  }

  // For a simulated terminal agent (`understudy sim --agent NAME`,
  // docs/sim.md): the first sim.state event of `agent` entering `state`
  // (IDLE, WORKING, ASKING, DONE, CRASHED) after seq `afterSeq`, past or
  // future. Rejects as waitFor.
  async waitForState(runId, agent, state, { afterSeq = 0, timeoutMs = DEFAULT_WAIT_MS } = {}) {
    return this.waitFor(
      runId,
      { kinds: ['sim.state'], agent, attributes: { [SIM_STATE]: state }, minSeq: afterSeq + 1 },
      { timeoutMs },
    );
  }

  // The first sim.state event after seq `afterSeq` in which `agent` finished
  // a turn: from WORKING or ASKING to IDLE, DONE or CRASHED. Pass the
  // previous turn's seq to wait for the next one. Rejects as waitFor.
  async waitForDone(runId, agent, { afterSeq = 0, timeoutMs = DEFAULT_WAIT_MS } = {}) {
    return this.waitFor(
      runId,
      {
        kinds: ['sim.state'],
        agent,
        attributePatterns: { [SIM_STATE]: SIM_DONE_STATES, [SIM_STATE_FROM]: SIM_BUSY_STATES },
        minSeq: afterSeq + 1,
      },
      { timeoutMs },
    );
  }

  // Traces.Watch: an async iterator of the run's matching events as they
  // happen (those already there first), ending when the run ends. Leaving
  // the loop early cancels the call. options: afterSeq, signal (AbortSignal).
  async *watch(runId, filter = {}, { afterSeq = 0, signal } = {}) {
    if (signal?.aborted) return;
    const call = this.traces.Watch({ run: runId, filter: eventFilter(filter), afterSeq });
    const onAbort = () => call.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    let done = false;
    try {
      for await (const event of call) yield event;
      done = true;
    } catch (error) {
      if (signal?.aborted && error.code === grpc.status.CANCELLED) return;
      throw new UnderstudyError('Watch', error);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (!done) call.cancel();
    }
  }

  // Traces.Emit: appends a custom event (kind [a-z][a-z0-9_.]*, not one of
  // understudy's) and resolves it with its seq.
  async emit(runId, kind, attributes = {}, { agent = '' } = {}) {
    const attrs = {};
    for (const [k, v] of Object.entries(attributes ?? {})) attrs[k] = typeof v === 'string' ? v : JSON.stringify(v);
    return this._unary(this.traces, 'Emit', { run: runId, kind, agent, attributes: attrs });
  }

  // Traces.Assert: the AssertResponse ({ passed, results, report }).
  // assertions: Assertion messages (see `assertions` for builders).
  async check(runId, list) {
    return this._unary(this.traces, 'Assert', { run: runId, assertions: list });
  }

  // Checks one assertion; throws an AssertionError whose message is the
  // server's report when it fails. Resolves the AssertResponse.
  async _assert(runId, assertion) {
    const response = await this.check(runId, [assertion]);
    if (!response.passed) throw assertionFailure(response);
    return response;
  }

  // Every assertion of `list` at once; one AssertionError with the whole report.
  async assertAll(runId, list) {
    const response = await this.check(runId, list);
    if (!response.passed) throw assertionFailure(response);
    return response;
  }

  async assertAgentSequence(runId, agents, options = {}) {
    return this._assert(runId, assertions.agentSequence(agents, options));
  }

  async assertPhaseTransitions(runId, phases, options = {}) {
    return this._assert(runId, assertions.phaseTransitions(phases, options));
  }

  async assertToolCalls(runId, calls, options = {}) {
    return this._assert(runId, assertions.toolCalls(calls, options));
  }

  async assertFeedbackPropagated(runId, options) {
    return this._assert(runId, assertions.feedbackPropagated(options));
  }

  async assertCount(runId, op, n, filter = {}, options = {}) {
    return this._assert(runId, assertions.count(op, n, filter, options));
  }

  async assertNoMisses(runId, options = {}) {
    return this._assert(runId, assertions.noMisses(options));
  }

  // Needs the run to have ended (the server answers FAILED_PRECONDITION
  // while it is active).
  async assertAllConsumed(runId, options = {}) {
    return this._assert(runId, assertions.allConsumed(options));
  }

  async assertSpec(runId, specText, options = {}) {
    return this._assert(runId, assertions.spec(specText, options));
  }
}

export function connect(address, options = {}) {
  return new Client(address, options);
}

// ---------------------------------------------------------------------------
// The binary
// ---------------------------------------------------------------------------

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const STDERR_KEEP = 64 * 1024;

// A running `understudy serve`: grpc ('127.0.0.1:PORT'), http
// ('http://127.0.0.1:PORT'), db, process, stderr(), client(), stop(), kill().
export class Server {
  // Resolves the exit code (or 'signal SIG') once the process has exited:
  // SIGTERM, then SIGKILL if it has not exited within timeoutMs.
  async stop({ timeoutMs = 15000 } = {}) {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGTERM');
    try {
      return await withTimeout(this.exited, timeoutMs, `waiting for understudy serve to exit on SIGTERM`);
    } catch (error) {
      this.process.kill('SIGKILL');
      await this.exited;
      error.message += `; killed it. stderr:\n${this.stderr()}`;
      throw error;
    } finally {
      this._client?.close();
      this._cleanup();
    }
  }

  kill() {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
    this._client?.close();
  }

  // The last 64 KiB the server wrote to stderr.
  stderr() {
    return this._stderr;
  }

  // A Client connected to this server (one, closed by stop()).
  client(options) {
    this._client ??= connect(this.grpc, options);
    return this._client;
  }
}

// Spawns `understudy serve --listen 127.0.0.1:0 --http 127.0.0.1:0 --db DB
// ARGS` and resolves a Server once its first stdout line names the bound
// addresses (or rejects after timeoutMs, with its stderr).
//   binary   default $UNDERSTUDY_BIN, else `understudy` on PATH
//   db       default a file in a new temp directory, removed by stop()
//   args     more `serve` flags (--upstream openai=URL, --scenario ...)
//   env      the child's environment (default process.env)
export async function startServer({ binary, db, args = [], env = process.env, timeoutMs = 10000 } = {}) {
  const bin = binary || process.env.UNDERSTUDY_BIN || 'understudy';
  let tmp = null;
  if (!db) {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'understudy-client-'));
    db = path.join(tmp, 'understudy.db');
  }
  const argv = ['serve', '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0', '--db', db, ...args];
  const server = new Server();
  server.db = db;
  server.argv = argv;
  server._stderr = '';
  server._cleanup = () => {
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
    tmp = null;
  };
  const child = spawn(bin, argv, { stdio: ['ignore', 'pipe', 'pipe'], env });
  server.process = child;
  server.exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : code));
  });
  child.stderr.setEncoding('utf8').on('data', (d) => {
    server._stderr = (server._stderr + d).slice(-STDERR_KEEP);
  });
  let buffered = '';
  const firstLine = new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d) => {
      if (buffered === null) return; // later output: drained, not kept
      buffered += d;
      const nl = buffered.indexOf('\n');
      if (nl >= 0) {
        resolve(buffered.slice(0, nl));
        buffered = null;
      }
    });
    child.once('error', (e) => reject(new Error(`cannot start ${bin}: ${e.message}`)));
    server.exited.then((code) =>
      reject(new Error(`understudy serve exited (${code}) before serving; stderr:\n${server._stderr}`)),
    );
  });
  let line;
  try {
    line = await withTimeout(firstLine, timeoutMs, `waiting for ${bin} ${argv.join(' ')} to print its address`);
  } catch (error) {
    server.kill();
    server._cleanup();
    if (!/stderr:/.test(error.message)) error.message += `; stderr:\n${server._stderr}`;
    throw error;
  }
  const m = /^understudy serving grpc=(\S+) http=(\S+) db=(\S+)(?: run=(\S+))?/.exec(line);
  if (!m) {
    server.kill();
    server._cleanup();
    throw new Error(`unexpected first line from understudy serve: ${JSON.stringify(line)}`);
  }
  server.grpc = m[1];
  server.http = `http://${m[2]}`;
  server.run = m[4] || '';
  return server;
}

// `understudy verify-install` from Node: the user's own agent package,
// packed, installed in a sandbox and checked there (verify_install.js).
export { VerifyInstallResult, verifyInstall } from './verify_install.js';

// ---------------------------------------------------------------------------
// The per-test helper
// ---------------------------------------------------------------------------

const BOUND = [
  'query', 'waitFor', 'waitForState', 'waitForDone', 'watch', 'emit', 'check', 'assertAll',
  'assertAgentSequence', 'assertPhaseTransitions', 'assertToolCalls', 'assertFeedbackPropagated',
  'assertCount', 'assertNoMisses', 'assertAllConsumed', 'assertSpec',
];

// Opens a run for one test and ends it when the test is done. `t` is any
// object with an `after(fn)` method: node:test's test context, or for
// vitest `{ after: onTestFinished }`.
//   server   a Server (startServer), or { grpc, http }; default the
//            environment `understudy record|replay -- CMD` sets:
//            UNDERSTUDY_ADDR and UNDERSTUDY_HTTP
//   mode, session, scenario, scenarioText, strict, runId, traceLevel, repeat:
//            as startRun
// Resolves {
//   runId, run, client, http,
//   openaiBaseURL      http://H:P/run/ID/v1
//   anthropicBaseURL   http://H:P/run/ID
//   metadata           { 'understudy-run': ID } for gRPC Model calls
//   env                OPENAI_BASE_URL, ANTHROPIC_BASE_URL, UNDERSTUDY_ADDR,
//                      UNDERSTUDY_HTTP, UNDERSTUDY_RUN for a child process
//   baseURL(agent)     the OpenAI base URL naming an agent too
//   end()              ends the run now (once); resolves the RunSummary
//   summary            the RunSummary once ended
//   query, waitFor, waitForState, waitForDone, watch, emit, check,
//   assertAll, assert*: the Client's,
//                      with the run id bound
// }
export async function useUnderstudy(t, { server, client, mode = 'replay', session, scenario, scenarioText, strict, runId, traceLevel, repeat } = {}) {
  if (!t || typeof t.after !== 'function') {
    throw new TypeError('useUnderstudy(t, ...): t needs an after(fn) method (node:test context, or { after: onTestFinished })');
  }
  const address = server?.grpc ?? process.env.UNDERSTUDY_ADDR;
  const http = server?.http ?? process.env.UNDERSTUDY_HTTP;
  if (!address) throw new Error('useUnderstudy: no server given and UNDERSTUDY_ADDR is not set');
  let owned = null;
  if (!client) {
    client = typeof server?.client === 'function' ? server.client() : (owned = connect(address));
  }
  const run = await client.startRun({ mode, session, scenario, scenarioText, strict, runId, traceLevel, repeat });
  const id = run.id;
  const base = http ? `${http.replace(/\/+$/, '')}/run/${encodeURIComponent(id)}` : undefined;
  let ending = null;
  const ctx = {
    runId: id,
    run,
    client,
    http,
    openaiBaseURL: base && `${base}/v1`,
    anthropicBaseURL: base,
    metadata: { 'understudy-run': id },
    env: {
      UNDERSTUDY_ADDR: address,
      UNDERSTUDY_RUN: id,
      ...(base ? { UNDERSTUDY_HTTP: http, OPENAI_BASE_URL: `${base}/v1`, ANTHROPIC_BASE_URL: base } : {}),
    },
    baseURL(agent) {
      if (!base) throw new Error('useUnderstudy: the server has no HTTP address');
      return `${base}/agent/${encodeURIComponent(agent)}/v1`;
    },
    summary: undefined,
    end() {
      ending ??= client.endRun(id).then((summary) => {
        ctx.summary = summary;
        return summary;
      });
      return ending;
    },
  };
  for (const name of BOUND) ctx[name] = (...args) => client[name](id, ...args);
  t.after(async () => {
    try {
      await ctx.end();
    } finally {
      owned?.close();
    }
  });
  return ctx;
}

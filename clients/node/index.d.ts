// Type declarations for @understudy/client (index.js). The messages are the
// proto's (proto/understudy/v1/*.proto) as the client hands them over:
// fields in lowerCamelCase, every scalar and repeated field present (with
// its default when unset), a submessage null when unset, int64 as number,
// bytes as Buffer, enums as their names.
import type { AssertionError } from 'node:assert';
import type { ChildProcess } from 'node:child_process';

import * as grpc from '@grpc/grpc-js';

export { grpc };

/** grpc-js status codes by name (`status.NOT_FOUND === 5`). */
export const status: typeof grpc.status;

// ---------------------------------------------------------------------------
// Protos
// ---------------------------------------------------------------------------

/** The .proto files the client loads, relative to the proto directory. */
export const PROTO_FILES: readonly ['understudy/v1/understudy.proto', 'understudy/v1/completion.proto'];

/** `$UNDERSTUDY_PROTO_DIR`, else the package's own `proto/`. */
export function protoDir(): string;

/** A grpc-js client of one of understudy's services (methods by proto name). */
export type ServiceClient = InstanceType<grpc.ServiceClientConstructor>;

/** The `understudy.v1` package: a constructor per service. */
export interface UnderstudyV1 extends grpc.GrpcObject {
  Model: grpc.ServiceClientConstructor;
  Runs: grpc.ServiceClientConstructor;
  Recorder: grpc.ServiceClientConstructor;
  Sessions: grpc.ServiceClientConstructor;
  Traces: grpc.ServiceClientConstructor;
  Tools: grpc.ServiceClientConstructor;
  Ui: grpc.ServiceClientConstructor;
}

/**
 * Loads the protos from `dir` (default `protoDir()`), once per directory.
 * Throws an Error naming the missing file and where `dir` came from when a
 * file of PROTO_FILES is not there.
 */
export function loadProtos(dir?: string): UnderstudyV1;

// ---------------------------------------------------------------------------
// Enums
// ---------------------------------------------------------------------------

export type RunMode =
  | 'RUN_MODE_UNSPECIFIED'
  | 'RUN_MODE_RECORD'
  | 'RUN_MODE_REPLAY'
  | 'RUN_MODE_PASSTHROUGH'
  | 'RUN_MODE_ONCE'
  | 'RUN_MODE_NEW';
/** A run mode by its short name or its enum name. */
export type RunModeName = 'record' | 'replay' | 'passthrough' | 'once' | 'new' | Exclude<RunMode, 'RUN_MODE_UNSPECIFIED'>;

export type RunState = 'RUN_STATE_UNSPECIFIED' | 'RUN_STATE_ACTIVE' | 'RUN_STATE_ENDED' | 'RUN_STATE_FAILED';

export type TraceLevel = 'TRACE_LEVEL_UNSPECIFIED' | 'TRACE_LEVEL_FULL' | 'TRACE_LEVEL_SUMMARY' | 'TRACE_LEVEL_OFF';
/** A trace level by its short name or its enum name. */
export type TraceLevelName = 'full' | 'summary' | 'off' | Exclude<TraceLevel, 'TRACE_LEVEL_UNSPECIFIED'>;

export type SequenceMatch = 'SEQUENCE_MATCH_EXACT' | 'SEQUENCE_MATCH_SUBSEQUENCE' | 'SEQUENCE_MATCH_PREFIX';
/** How a sequence is compared: short name or enum name. */
export type SequenceMatchName = 'exact' | 'subsequence' | 'prefix' | SequenceMatch;

export type Comparison =
  | 'COMPARISON_EQ'
  | 'COMPARISON_NE'
  | 'COMPARISON_LT'
  | 'COMPARISON_LE'
  | 'COMPARISON_GT'
  | 'COMPARISON_GE';
/** A comparison operator, by symbol, short name or enum name. */
export type ComparisonOp =
  | '==' | '===' | 'eq'
  | '!=' | '!==' | 'ne'
  | '<' | 'lt'
  | '<=' | 'le'
  | '>' | 'gt'
  | '>=' | 'ge'
  | Comparison;

/** The states of a simulated terminal agent (docs/sim.md). */
export type SimState = 'IDLE' | 'WORKING' | 'ASKING' | 'DONE' | 'CRASHED';

// ---------------------------------------------------------------------------
// Messages the server returns
// ---------------------------------------------------------------------------

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text, as the model produced it. */
  arguments: string;
}

export interface Message {
  /** "system", "user", "assistant" or "tool". */
  role: string;
  content: string;
  toolCalls: ToolCall[];
  toolCallId: string;
  name: string;
  /** Provider fields with no canonical equivalent, as JSON object text. */
  extra: string;
}

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments, as JSON text. */
  parameters: string;
}

/** Sampling parameters; unset ones are absent. */
export interface SamplingParams {
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop: string[];
  seed?: number;
}

export interface CompletionRequest {
  model: string;
  messages: Message[];
  tools: ToolDefinition[];
  params: SamplingParams | null;
  extra: string;
  /** "" (chat) or "embeddings". */
  operation: string;
  run: string;
  agent: string;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

export interface CompletionResponse {
  id: string;
  model: string;
  message: Message | null;
  finishReason: string;
  usage: Usage | null;
}

export interface Run {
  id: string;
  session: string;
  sessionVersion: number;
  mode: RunMode;
  strict: boolean;
  state: RunState;
  served: number;
  recorded: number;
  misses: number;
  startedAtMicros: number;
  endedAtMicros: number;
  scenario: string;
  repeat: boolean;
  traceLevel: TraceLevel;
}

export interface FieldDiff {
  /** Path in the canonical request, e.g. `messages[2].content`. */
  path: string;
  recorded: string;
  got: string;
}

export interface MissReport {
  agent: string;
  closestSeq: number;
  closestAgent: string;
  diffs: FieldDiff[];
  consumedOnly: boolean;
  text: string;
  eventSeq: number;
  servedSeq: number;
}

export interface ExchangeRef {
  seq: number;
  agent: string;
}

export interface RunSummary {
  run: Run | null;
  misses: MissReport[];
  unconsumed: ExchangeRef[];
  recorded: ExchangeRef[];
  failures: string[];
}

/** One entry of a run's trace (kinds and attributes: docs/assertions.md). */
export interface TraceEvent {
  run: string;
  seq: number;
  kind: string;
  agent: string;
  timeMicros: number;
  attributes: Record<string, string>;
  /** exchange and miss events: what the agent sent. */
  request: CompletionRequest | null;
  /** exchange events: what it got back. */
  response: CompletionResponse | null;
}

export interface AssertionResult {
  name: string;
  passed: boolean;
  explanation: string;
  expected: string;
  actual: string;
  /** -1 when there is none. */
  divergenceIndex: number;
  eventSeqs: number[];
}

export interface AssertResponse {
  passed: boolean;
  results: AssertionResult[];
  /** Every result's explanation: what a test prints. */
  report: string;
}

// ---------------------------------------------------------------------------
// Filters and assertions the client sends
// ---------------------------------------------------------------------------

/** An EventFilter message (every field that is set must hold). */
export interface EventFilter {
  kinds?: string[];
  agent?: string;
  tool?: string;
  phase?: string;
  /** Attributes equal to these values. */
  attributes?: Record<string, string>;
  /** Attributes in which these RE2 patterns are found. */
  attributePatterns?: Record<string, string>;
  /** Inclusive; 0: unbounded. */
  minSeq?: number;
  maxSeq?: number;
}

/** A filter as the client's methods take it: `kind` or `kinds`, not both. */
export type EventFilterInput = Omit<EventFilter, 'kinds'> &
  ({ kind?: string; kinds?: never } | { kind?: never; kinds?: string | readonly string[] });

/** Builds an EventFilter message; throws a TypeError for kind and kinds together. */
export function eventFilter(filter?: EventFilterInput): EventFilter;

export interface AgentSequenceAssertion {
  agents: string[];
  match?: SequenceMatch;
  collapseRepeats?: boolean;
}
export interface PhaseTransitionsAssertion {
  phases: string[];
  match?: SequenceMatch;
}
export interface ExpectedToolCall {
  name: string;
  /** A JSON object text that must be a subset of the call's; "" for any. */
  arguments?: string;
}
export interface ToolCallsAssertion {
  agent?: string;
  calls: ExpectedToolCall[];
  match?: SequenceMatch;
}
export interface FeedbackPropagatedAssertion {
  from: string;
  to: string;
  keyword: string;
}
export interface CountAssertion {
  filter?: EventFilter;
  comparison?: Comparison;
  n: number;
}

/** An Assertion message: an optional name and exactly one check. */
export type Assertion = { name?: string } & (
  | { agentSequence: AgentSequenceAssertion }
  | { phaseTransitions: PhaseTransitionsAssertion }
  | { toolCalls: ToolCallsAssertion }
  | { feedbackPropagated: FeedbackPropagatedAssertion }
  | { count: CountAssertion }
  | { noMisses: boolean }
  | { allConsumed: boolean }
  | { spec: string }
);

export interface NameOption {
  /** Shown in the results and the report. */
  name?: string;
}
export interface MatchOptions extends NameOption {
  match?: SequenceMatchName;
}
export interface AgentSequenceOptions extends MatchOptions {
  /** Collapse consecutive repeats of an agent before comparing. */
  collapseRepeats?: boolean;
}
export interface ToolCallsOptions extends MatchOptions {
  /** Whose calls; "" or unset for every agent's. */
  agent?: string;
}
/** A tool call to expect: its name, or its name and a subset of its arguments (an object or its JSON text). */
export type ToolCallInput = string | { name: string; arguments?: string | Record<string, unknown> | null };
export interface FeedbackPropagatedOptions extends NameOption {
  from: string;
  to: string;
  /** Found, case-sensitive, in an answer of `from` and then in a later request of `to`. */
  keyword: string;
}

/** Builders of Assertion messages for Client.check(); each throws a TypeError for a bad match, op or arguments. */
export const assertions: {
  agentSequence(
    agents: readonly string[],
    options?: AgentSequenceOptions,
  ): { name: string; agentSequence: Required<AgentSequenceAssertion> };
  phaseTransitions(
    phases: readonly string[],
    options?: MatchOptions,
  ): { name: string; phaseTransitions: Required<PhaseTransitionsAssertion> };
  toolCalls(
    calls: readonly ToolCallInput[],
    options?: ToolCallsOptions,
  ): { name: string; toolCalls: { agent: string; calls: Required<ExpectedToolCall>[]; match: SequenceMatch } };
  feedbackPropagated(options: FeedbackPropagatedOptions): { name: string; feedbackPropagated: FeedbackPropagatedAssertion };
  count(
    op: ComparisonOp,
    n: number,
    filter?: EventFilterInput,
    options?: NameOption,
  ): { name: string; count: { filter: EventFilter; comparison: Comparison; n: number } };
  noMisses(options?: NameOption): { name: string; noMisses: true };
  allConsumed(options?: NameOption): { name: string; allConsumed: true };
  /** A YAML or JSON spec (docs/assertions.md#spec-files). */
  spec(specText: string, options?: NameOption): { name: string; spec: string };
};

// ---------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------

/**
 * A failed RPC: `message` is the server's own text, `code` its gRPC status
 * (grpc.status), `codeName` the status's name ('NOT_FOUND', ...).
 */
export class UnderstudyError extends Error {
  constructor(rpc: string, error: Partial<grpc.ServiceError> & { message: string });
  name: 'UnderstudyError';
  /** The method that failed ('StartRun', 'QueryStream', ...). */
  rpc: string;
  code: grpc.status | undefined;
  /** The status's name; the number as text for a code grpc-js does not name. */
  codeName: keyof typeof grpc.status | (string & {});
  details: string | undefined;
  metadata: grpc.Metadata | undefined;
  cause: Partial<grpc.ServiceError> & { message: string };
}

/** The AssertionError the assert* helpers throw: the server's report as message. */
export interface UnderstudyAssertionError extends AssertionError {
  operator: 'understudy';
  /** The failed result's `actual` (an array of them when several failed). */
  actual: string | string[];
  expected: string | string[];
  /** The whole AssertResponse. */
  response: AssertResponse;
}

export interface ClientOptions {
  /** Per unary call and QueryStream; default 30000. */
  deadlineMs?: number;
  /** Default insecure (understudy listens on loopback). */
  credentials?: grpc.ChannelCredentials;
  /** Where the .proto files are; default protoDir(). */
  protoDir?: string;
  channelOptions?: Partial<grpc.ChannelOptions>;
}

export interface StartRunOptions {
  /** Default 'replay'. */
  mode?: RunModeName;
  /** Session name; `name@N` picks version N. */
  session?: string;
  /** A scenario pack name or a file under the server's --scenario-dir. */
  scenario?: string;
  /** The scenario document itself (YAML or JSON). */
  scenarioText?: string;
  /** Generated when empty. */
  runId?: string;
  /** Replay: answer a request without an exact match NOT_FOUND (server default true). */
  strict?: boolean;
  /** Unset: the server's --trace-level. */
  traceLevel?: TraceLevelName;
  /** Replay: once every identical recording of a request is used, answer it again from the last one instead of missing (default false). */
  repeat?: boolean;
}

export interface DeadlineOptions {
  deadlineMs?: number;
}
export interface QueryOptions extends DeadlineOptions {
  /** Start after this seq. */
  afterSeq?: number;
}
export interface WaitOptions {
  /** Default 30000; must be more than 0. */
  timeoutMs?: number;
}
export interface SimWaitOptions extends WaitOptions {
  /** Only events after this seq (default 0). */
  afterSeq?: number;
}
export interface WatchOptions {
  afterSeq?: number;
  /** Aborting it ends the iteration (and cancels the call). */
  signal?: AbortSignal;
}
export interface EmitOptions {
  agent?: string;
}

export class Client {
  /**
   * `address`: HOST:PORT (or grpc://HOST:PORT) of `understudy serve --listen`.
   * Throws when the protos cannot be loaded (see loadProtos).
   */
  constructor(address: string, options?: ClientOptions);
  /** HOST:PORT. */
  readonly address: string;
  deadlineMs: number;
  /** The raw grpc-js clients, sharing one channel. */
  readonly runs: ServiceClient;
  readonly traces: ServiceClient;
  readonly sessions: ServiceClient;

  /** Closes the channel. */
  close(): void;

  /** Runs.StartRun; TypeError for an unknown mode or traceLevel. */
  startRun(options?: StartRunOptions): Promise<Run>;
  /** Runs.EndRun. */
  endRun(runId: string): Promise<RunSummary>;
  getRun(runId: string): Promise<Run>;
  /** Traces.QueryStream, collected: every matching event of the run, by seq. */
  query(runId: string, filter?: EventFilterInput, options?: QueryOptions): Promise<TraceEvent[]>;
  /**
   * Traces.WaitFor: the first matching event, past or future. Rejects with
   * codeName 'DEADLINE_EXCEEDED' after timeoutMs, 'FAILED_PRECONDITION' when
   * the run ended without one.
   */
  waitFor(runId: string, filter?: EventFilterInput, options?: WaitOptions): Promise<TraceEvent>;
  /** The first sim.state event of `agent` entering `state` after `afterSeq`. */
  waitForState(runId: string, agent: string, state: SimState, options?: SimWaitOptions): Promise<TraceEvent>;
  /** The first sim.state event after `afterSeq` in which `agent` finished a turn. */
  waitForDone(runId: string, agent: string, options?: SimWaitOptions): Promise<TraceEvent>;
  /** Traces.Watch: matching events as they happen, until the run ends. */
  watch(runId: string, filter?: EventFilterInput, options?: WatchOptions): AsyncGenerator<TraceEvent, void, undefined>;
  /** Traces.Emit: a custom event (values that are not strings are sent as JSON text). */
  emit(runId: string, kind: string, attributes?: Record<string, unknown> | null, options?: EmitOptions): Promise<TraceEvent>;
  /** Traces.Assert. */
  check(runId: string, assertions: readonly Assertion[]): Promise<AssertResponse>;
  /** Every assertion at once; rejects with one UnderstudyAssertionError holding the whole report. */
  assertAll(runId: string, assertions: readonly Assertion[]): Promise<AssertResponse>;
  // Each resolves the AssertResponse when the check passes and rejects with
  // an UnderstudyAssertionError (the server's report) when it fails.
  assertAgentSequence(runId: string, agents: readonly string[], options?: AgentSequenceOptions): Promise<AssertResponse>;
  assertPhaseTransitions(runId: string, phases: readonly string[], options?: MatchOptions): Promise<AssertResponse>;
  assertToolCalls(runId: string, calls: readonly ToolCallInput[], options?: ToolCallsOptions): Promise<AssertResponse>;
  assertFeedbackPropagated(runId: string, options: FeedbackPropagatedOptions): Promise<AssertResponse>;
  assertCount(runId: string, op: ComparisonOp, n: number, filter?: EventFilterInput, options?: NameOption): Promise<AssertResponse>;
  assertNoMisses(runId: string, options?: NameOption): Promise<AssertResponse>;
  /** Needs the run to have ended (FAILED_PRECONDITION while it is active). */
  assertAllConsumed(runId: string, options?: NameOption): Promise<AssertResponse>;
  assertSpec(runId: string, specText: string, options?: NameOption): Promise<AssertResponse>;
}

/** `new Client(address, options)`. */
export function connect(address: string, options?: ClientOptions): Client;

// ---------------------------------------------------------------------------
// The binary
// ---------------------------------------------------------------------------

/** How `understudy serve` exited: its code, or 'signal SIGTERM' and the like. */
export type ExitStatus = number | `signal ${NodeJS.Signals}`;

/** A running `understudy serve` (made by startServer). */
export class Server {
  /** HOST:PORT of the gRPC listener. */
  grpc: string;
  /** http://HOST:PORT of the HTTP listener. */
  http: string;
  /** The database file. */
  db: string;
  /** The `serve` arguments it was started with. */
  argv: string[];
  /** The default run, if `--mode` made one; else "". */
  run: string;
  process: ChildProcess;
  /** Resolves once the process has exited. */
  exited: Promise<ExitStatus>;
  /** SIGTERM, then the exit status; SIGKILL and a rejection if it has not exited within timeoutMs (default 15000). */
  stop(options?: { timeoutMs?: number }): Promise<ExitStatus>;
  /** SIGKILL, now. */
  kill(): void;
  /** The last 64 KiB it wrote to stderr. */
  stderr(): string;
  /** A Client connected to it (one, made on the first call, closed by stop()). */
  client(options?: ClientOptions): Client;
}

export interface StartServerOptions {
  /** Default $UNDERSTUDY_BIN, else `understudy` on PATH. */
  binary?: string;
  /** Default a file in a new temp directory, removed by stop(). */
  db?: string;
  /** More `serve` flags (--upstream openai=URL, --scenario ...). */
  args?: readonly string[];
  /** The child's environment (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** How long to wait for its address line (default 10000). */
  timeoutMs?: number;
}

/**
 * Spawns `understudy serve --listen 127.0.0.1:0 --http 127.0.0.1:0 --db DB
 * ARGS`; resolves once it prints its addresses, rejects (with its stderr)
 * when it exits first or timeoutMs passes.
 */
export function startServer(options?: StartServerOptions): Promise<Server>;

// ---------------------------------------------------------------------------
// A user's own agent package, as shipped
// ---------------------------------------------------------------------------

export interface VerifyInstallOptions {
  /** The folder of the agent's package (default '.'). */
  packageDir?: string;
  /** The golden session, NAME or NAME@N. */
  session: string;
  /** An assertion spec file, or several. */
  spec: string | readonly string[];
  /** The installed command to run: an npm bin, a file of the installed package, or a console script. */
  entry: string;
  /** Its arguments, passed verbatim (default []). */
  args?: readonly (string | number)[];
  /** The golden database (default understudy's: understudy.db or $UNDERSTUDY_DB). */
  db?: string;
  /** Default $UNDERSTUDY_BIN, else `understudy` on PATH. */
  understudyBin?: string;
  /** Keep the sandbox; its path is in the output. */
  keep?: boolean;
  /** The interpreter for a pyproject.toml package. */
  python?: string;
  /** More verify-install flags (--ignore-path X, --mode replay). */
  extraArgs?: readonly string[];
  /** The CLI's environment (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Default 600000: installs may fetch from the registry. */
  timeoutMs?: number;
}

/** What `understudy verify-install` did. */
export class VerifyInstallResult {
  constructor(init: { exitCode: number | null; signal?: NodeJS.Signals | null; output: string; command: string[] });
  /** True when it exited 0: the agent ran and every check passed. */
  ok: boolean;
  /** 0; 1 packing, installing, the entry, the agent or a check failed; 2 usage; 3 unreadable input or a missing tool; null when a signal ended it. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Its stdout and stderr, interleaved as they came. */
  output: string;
  /** The argv that was run, the binary first. */
  command: string[];
}

/**
 * Runs `understudy verify-install` and resolves its result whatever its exit
 * code; rejects when the binary cannot be started or after timeoutMs, and
 * throws a TypeError without session, spec or entry.
 */
export function verifyInstall(options: VerifyInstallOptions): Promise<VerifyInstallResult>;

// ---------------------------------------------------------------------------
// The per-test helper
// ---------------------------------------------------------------------------

/** Anything with an `after(fn)`: node:test's test context, or `{ after: onTestFinished }` (vitest). */
export interface AfterHook {
  after(fn: () => Promise<void>): unknown;
}

export interface UseUnderstudyOptions extends StartRunOptions {
  /** A Server, or its addresses; default UNDERSTUDY_ADDR / UNDERSTUDY_HTTP. */
  server?: Server | { grpc: string; http?: string; client?: () => Client };
  /** The Client to use (default the server's, or a new one closed afterwards). */
  client?: Client;
}

/** The Client's method with the run id bound. */
type BoundToRun<F> = F extends (runId: string, ...args: infer A) => infer R ? (...args: A) => R : never;

/** The names of the Client's methods useUnderstudy binds to its run. */
export type BoundMethodName =
  | 'query'
  | 'waitFor'
  | 'waitForState'
  | 'waitForDone'
  | 'watch'
  | 'emit'
  | 'check'
  | 'assertAll'
  | 'assertAgentSequence'
  | 'assertPhaseTransitions'
  | 'assertToolCalls'
  | 'assertFeedbackPropagated'
  | 'assertCount'
  | 'assertNoMisses'
  | 'assertAllConsumed'
  | 'assertSpec';

export type UnderstudyRun = { [K in BoundMethodName]: BoundToRun<Client[K]> } & {
  runId: string;
  run: Run;
  client: Client;
  /** The server's HTTP address, if known. */
  http: string | undefined;
  /** http://H:P/run/ID/v1 (undefined without an HTTP address). */
  openaiBaseURL: string | undefined;
  /** http://H:P/run/ID. */
  anthropicBaseURL: string | undefined;
  /** For gRPC Model calls. */
  metadata: { 'understudy-run': string };
  /** For a child process: UNDERSTUDY_ADDR, UNDERSTUDY_RUN, and with HTTP UNDERSTUDY_HTTP, OPENAI_BASE_URL, ANTHROPIC_BASE_URL. */
  env: {
    UNDERSTUDY_ADDR: string;
    UNDERSTUDY_RUN: string;
    UNDERSTUDY_HTTP?: string;
    OPENAI_BASE_URL?: string;
    ANTHROPIC_BASE_URL?: string;
  };
  /** The OpenAI base URL naming an agent too; throws without an HTTP address. */
  baseURL(agent: string): string;
  /** The RunSummary once ended. */
  summary: RunSummary | undefined;
  /** Ends the run now (once); resolves the RunSummary. */
  end(): Promise<RunSummary>;
};

/**
 * Opens a run for one test and ends it in `t.after`. Throws a TypeError when
 * `t` has no after(fn), an Error when there is neither a server nor
 * UNDERSTUDY_ADDR.
 */
export function useUnderstudy(t: AfterHook, options?: UseUnderstudyOptions): Promise<UnderstudyRun>;

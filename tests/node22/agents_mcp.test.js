// understudy's own MCP server for coding agents (`understudy mcp` over
// stdio, /mcp on `understudy serve`'s HTTP listener), driven by the official
// MCP TypeScript SDK client: every tool is listed with an input and an
// output schema (the SDK checks each structured result against its output
// schema), each is called with good arguments and with bad ones, and a
// recorded run becomes a validated spec and a passing pytest file.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { createRequire } from 'node:module';
import { BIN, Server, cleanEnv, requireBinary, run, tempDir } from '../node/lib/harness.js';
import { PYTHON, REVIEW_AGENTS, recordGolden } from './lib/golden.js';
import { connectClient, httpTransport, mcpSdk } from './lib/mcp.js';

requireBinary();

// Ajv, as the SDK itself uses it (its dependency), to compile every schema.
const Ajv = createRequire(import.meta.url)('ajv').default;

const TOOLS = [
  'analyze_test_results', 'assert_run', 'generate_test_spec', 'generate_tests_from_spec',
  'get_schema', 'list_sessions', 'query_trace', 'run_tests', 'show_run', 'validate_scenario',
  'validate_test_code', 'validate_test_spec',
];

async function stdioClient(t, args, { cwd } = {}) {
  const { StdioClientTransport } = await mcpSdk();
  const transport = new StdioClientTransport({ command: BIN, args: ['mcp', ...args], env: cleanEnv(), cwd, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.setEncoding('utf8').on('data', (d) => (stderr += d));
  const client = await connectClient(t, transport);
  client.stderrText = () => stderr;
  return client;
}

// A tool's result; the SDK has already checked structuredContent against
// the tool's outputSchema.
async function call(client, name, args, { timeout = 60000 } = {}) {
  return client.callTool({ name, arguments: args }, undefined, { timeout });
}

function toolError(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result).slice(0, 400)}`);
  assert.equal(result.structuredContent, undefined);
  return result.content[0].text;
}

test('understudy mcp over stdio: every tool listed with both schemas, called with good and bad arguments; a recorded run becomes a validated spec and a passing test file in pytest, node:test and GoogleTest', { timeout: 420000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-agents-');
  const golden = await recordGolden(t, dir);
  const client = await stdioClient(t, ['--db', golden.db, '--root', dir]);
  assert.equal(client.getServerVersion().name, 'understudy');

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), TOOLS);
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, 'object', tool.name);
    assert.equal(tool.outputSchema.type, 'object', tool.name);
    assert.ok(tool.description.length > 40, tool.name);
    assert.equal(tool.inputSchema.additionalProperties, false, tool.name);
    const ajv = new Ajv({ strict: true, allowUnionTypes: true });
    assert.doesNotThrow(() => ajv.compile(tool.inputSchema), `${tool.name} inputSchema`);
    assert.doesNotThrow(() => ajv.compile(tool.outputSchema), `${tool.name} outputSchema`);
  }

  // list_sessions
  const sessions = await call(client, 'list_sessions', {});
  assert.deepEqual(sessions.structuredContent.sessions.map((s) => [s.ref, s.exchanges, s.agents]),
    [['golden@1', 6, ['orchestrator', 'executor', 'reviewer']]]);
  assert.match(toolError(await call(client, 'list_sessions', { prefix: 5 })), /arguments\.prefix: expected a string, got 5/);
  assert.match(toolError(await call(client, 'list_sessions', { prefx: 'g' })), /unknown argument "prefx" \(did you mean "prefix"\?\)/);

  // show_run: by session (its latest run) and by run id; the timeline as text.
  const shown = await call(client, 'show_run', { run: 'golden' });
  assert.equal(shown.structuredContent.run, golden.run);
  assert.equal(shown.structuredContent.session, 'golden');
  assert.match(shown.content[0].text, /reviewer .*FEEDBACK: missing input validation/);
  assert.equal(shown.structuredContent.timeline.length, shown.content[0].text.split('\n').length);
  assert.ok(shown.structuredContent.events.some((e) => e.kind === 'tool_call'));
  assert.equal((await call(client, 'show_run', { run: golden.run, events: false })).structuredContent.events.length, 0);
  const cut = (await call(client, 'show_run', { run: golden.run, max_lines: 3, events: false })).structuredContent;
  assert.equal(cut.timeline_truncated, true);
  assert.deepEqual(cut.timeline.slice(0, 3), shown.structuredContent.timeline.slice(0, 3));
  assert.match(cut.timeline[3], new RegExp(`^… ${shown.structuredContent.timeline.length - 3} more lines`));
  assert.match(toolError(await call(client, 'show_run', { run: 'no-such-run' })), /no-such-run/);
  assert.match(toolError(await call(client, 'show_run', { run: '' })), /arguments\.run: must not be empty/);

  // query_trace: filters as in Traces.Query.
  const calls = await call(client, 'query_trace', { run: golden.run, kinds: ['tool_call'], agent: 'executor' });
  assert.equal(calls.structuredContent.count, 2);
  assert.deepEqual(calls.structuredContent.events.map((e) => e.attributes['gen_ai.tool.name']), ['write_file', 'write_file']);
  // A session stands for its latest run, as in show_run and assert_run.
  const bySession = await call(client, 'query_trace', { run: 'golden', kinds: ['tool_call'], agent: 'executor' });
  assert.deepEqual(bySession.structuredContent, calls.structuredContent);
  assert.match(toolError(await call(client, 'query_trace', { run: 'ghost' })), /no run or session "ghost"/);
  const limited = await call(client, 'query_trace', { session: 'golden', limit: 3 });
  assert.equal(limited.structuredContent.count, 3);
  assert.equal(limited.structuredContent.truncated, true);
  assert.match(toolError(await call(client, 'query_trace', { run: golden.run, session: 'golden' })), /exactly one of "run" and "session"/);
  assert.match(toolError(await call(client, 'query_trace', { run: golden.run, kinds: 'miss' })), /arguments\.kinds: expected an array/);
  assert.match(toolError(await call(client, 'query_trace', { run: golden.run, limit: 0 })), /arguments\.limit: 0 is below the minimum 1/);

  // generate_test_spec, then assert_run with it: it passes on its own run.
  const generated = await call(client, 'generate_test_spec', { run: 'golden', output_path: 'golden.spec.yaml' });
  const spec = generated.structuredContent.spec;
  assert.match(spec, /^# understudy spec of run /);
  assert.match(spec, /agents: \[orchestrator, executor, reviewer, orchestrator, executor, reviewer\]/);
  assert.match(spec, /feedback_propagated: \{from: reviewer, to: executor, keyword: "FEEDBACK: missing input validation"\}/);
  assert.equal(fs.readFileSync(path.join(dir, 'golden.spec.yaml'), 'utf8'), spec);
  const checked = await call(client, 'assert_run', { run: golden.run, spec });
  assert.equal(checked.structuredContent.passed, true, checked.structuredContent.report);
  assert.equal(checked.structuredContent.checks, generated.structuredContent.checks);
  const prefixOnly = await call(client, 'generate_test_spec', { run: golden.run, match: 'prefix', arguments: 'none', checks: { feedback: false } });
  assert.doesNotMatch(prefixOnly.structuredContent.spec, /feedback_propagated|arguments:/);
  assert.match(prefixOnly.structuredContent.spec, /match: prefix/);
  assert.match(toolError(await call(client, 'generate_test_spec', { run: golden.run, match: 'exakt' })), /not one of exact, prefix, subsequence \(did you mean "exact"\?\)/);
  assert.match(toolError(await call(client, 'generate_test_spec', { run: 'ghost' })), /ghost/);
  assert.match(toolError(await call(client, 'generate_test_spec', { run: golden.run, output_path: '../escape.yaml' })), /outside the allowed folder/);
  assert.equal(fs.existsSync(path.join(path.dirname(dir), 'escape.yaml')), false);

  // assert_run: a failing check explains itself; a spec (given as an object) that does not validate is an error.
  const wrong = await call(client, 'assert_run', { run: golden.run, spec: { assertions: [{ agent_sequence: ['orchestrator', 'reviewer'] }] } });
  assert.equal(wrong.structuredContent.passed, false);
  assert.match(wrong.structuredContent.results[0].explanation, /first differ at position 2: expected "reviewer", got "executor"/);
  assert.match(toolError(await call(client, 'assert_run', { run: golden.run, spec: 'assertions:\n  - agent_sequnce: [a]\n' })), /assertions\[0\]\.agent_sequnce: unknown field \(did you mean "agent_sequence"\?\)/);
  assert.match(toolError(await call(client, 'assert_run', { run: 'nope', spec })), /nope/);

  // validate_scenario / validate_test_spec: every problem at once, with positions and suggestions.
  const badSpec = 'schema: understudy.spec/v1\nassertions:\n  - agent_sequnce: [orchestrator]\n  - tool_calls: {agent: executor, calls: [{name: write_file, argumnets: {path: sum.py}}]}\n';
  const v = (await call(client, 'validate_test_spec', { document: badSpec, name: 'draft.yaml' })).structuredContent;
  assert.equal(v.valid, false);
  assert.deepEqual(v.errors.map((e) => [e.path, e.line, e.severity]), [
    ['assertions[0].agent_sequnce', 3, 'error'],
    ['assertions[1].tool_calls.calls[0].argumnets', 4, 'error'],
  ]);
  assert.deepEqual(v.suggestions, [
    'assertions[0].agent_sequnce: did you mean "agent_sequence"?',
    'assertions[1].tool_calls.calls[0].argumnets: did you mean "arguments"?',
  ]);
  assert.match(v.report, /^draft\.yaml:3:5: error: assertions\[0\]\.agent_sequnce: unknown field/);
  assert.equal((await call(client, 'validate_test_spec', { document: spec })).structuredContent.valid, true);
  assert.equal((await call(client, 'validate_test_spec', { document: { assertions: [{ no_misses: true }] } })).structuredContent.valid, true);
  const scenario = (await call(client, 'validate_scenario', { document: 'schema: understudy.scenario/v1\nrules:\n  - when: {agnet: executor}\n    respond: {content: hi}\n' })).structuredContent;
  assert.equal(scenario.valid, false);
  const agnet = scenario.errors.find((e) => e.path === 'rules[0].when.agnet');
  assert.ok(agnet, scenario.report);
  assert.deepEqual([agnet.line, agnet.column, agnet.suggestion], [3, 12, 'did you mean "agent"?']);
  assert.match(toolError(await call(client, 'validate_scenario', { document: 'x'.repeat(4 * 1024 * 1024 + 1) })), /more than the 4194304 allowed/);
  const deep = await call(client, 'validate_test_spec', { document: '['.repeat(100000) + ']'.repeat(100000) });
  assert.equal(deep.structuredContent.valid, false);
  const utf8 = await call(client, 'validate_scenario', { document: 'name: "caf\u00e9 \u{1F600}"\nrules: []\n' });
  assert.equal(typeof utf8.structuredContent.valid, 'boolean');

  // get_schema: its description names every kind it serves.
  const getSchema = tools.find((x) => x.name === 'get_schema');
  assert.deepEqual(getSchema.inputSchema.properties.kind.enum, ['scenario', 'session', 'sim', 'sim-meow', 'spec']);
  for (const kind of getSchema.inputSchema.properties.kind.enum) {
    assert.match(getSchema.description, new RegExp(`\\b${kind} \\(understudy `), kind);
  }
  const schema = (await call(client, 'get_schema', { kind: 'spec' })).structuredContent.schema;
  assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
  assert.match(toolError(await call(client, 'get_schema', { kind: 'scenarios' })), /not one of scenario, session, sim, sim-meow, spec/);

  // generate_tests_from_spec → validate_test_code → run_tests → analyze_test_results.
  const gen = await call(client, 'generate_tests_from_spec', {
    framework: 'pytest', spec_path: 'golden.spec.yaml', command: [PYTHON, REVIEW_AGENTS],
    output_path: 'test_golden.py',
  });
  assert.match(gen.structuredContent.code, /^# Generated by `understudy gen-test`/);
  assert.equal(fs.readFileSync(path.join(dir, 'test_golden.py'), 'utf8'), gen.structuredContent.code);
  const codeCheck = (await call(client, 'validate_test_code', { framework: 'pytest', path: 'test_golden.py' })).structuredContent;
  assert.equal(codeCheck.valid, true, codeCheck.report);
  const broken = (await call(client, 'validate_test_code', { framework: 'pytest', code: 'def test_x(:\n    pass\n' })).structuredContent;
  assert.equal(broken.valid, false);
  assert.ok(broken.errors.some((e) => e.line === 1 && /syntax/.test(e.path + e.message)), broken.report);
  const ran = (await call(client, 'run_tests', { framework: 'pytest', path: 'test_golden.py' }, { timeout: 180000 })).structuredContent;
  assert.equal(ran.ok, true, `${ran.exit}\n${ran.output}`);
  assert.equal(ran.passed, 1);
  const analyzed = (await call(client, 'analyze_test_results', { results: ran })).structuredContent;
  assert.deepEqual(analyzed, { ok: true, findings: [] });
  // The same spec as node:test and GoogleTest files, checked and run through the tools.
  for (const [framework, file] of [['node', 'golden.test.mjs'], ['gtest', 'golden_test.cc']]) {
    const made = await call(client, 'generate_tests_from_spec', {
      framework, spec_path: 'golden.spec.yaml', command: [PYTHON, REVIEW_AGENTS], output_path: file,
    });
    assert.equal(made.isError, false, made.content[0].text);
    const checkedCode = (await call(client, 'validate_test_code', { framework, path: file }, { timeout: 180000 })).structuredContent;
    assert.equal(checkedCode.valid, true, `${framework}: ${checkedCode.report}`);
    const result = (await call(client, 'run_tests', { framework, path: file }, { timeout: 240000 })).structuredContent;
    assert.equal(result.ok, true, `${framework}: ${result.exit}\n${result.output}`);
    assert.equal(result.passed, 1, framework);
  }
  assert.match(toolError(await call(client, 'run_tests', { framework: 'pytest', path: '/etc/passwd' })), /outside the allowed folder/);
  assert.match(toolError(await call(client, 'validate_test_code', { framework: 'pytest', path: 'missing_test.py' })), /missing_test\.py/);
  assert.match(toolError(await call(client, 'generate_tests_from_spec', { framework: 'pytest', spec_path: 'golden.spec.yaml', command: [] })), /arguments\.command: needs at least 1 item/);
  assert.match(toolError(await call(client, 'generate_tests_from_spec', { framework: 'rspec', spec_path: 'golden.spec.yaml', command: ['x'] })), /arguments\.framework/);

  // Unknown tools are protocol errors (-32602), as MCP says.
  const { McpError } = await mcpSdk();
  await assert.rejects(call(client, 'show_rnu', { run: 'x' }), (e) => e instanceof McpError && e.code === -32602 && /did you mean "show_run"/.test(e.message));
  assert.match(client.stderrText(), /^$|serving|run/);
});

test('understudy serve answers the same tools at /mcp over Streamable HTTP', { timeout: 120000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-agents-http-');
  const golden = await recordGolden(t, dir);
  const server = await Server.start(t, dir, { db: 'golden.db', name: 'tools', args: ['--tools-root', dir] });
  const client = await connectClient(t, await httpTransport(`${server.http}/mcp`));
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), TOOLS);
  const shown = await call(client, 'show_run', { run: golden.run });
  assert.match(shown.content[0].text, /→ tool write_file \{path: "sum.py"/);
  const generated = await call(client, 'generate_test_spec', { run: 'golden', match: 'subsequence', output_path: 'http.spec.yaml' });
  assert.equal((await call(client, 'assert_run', { run: golden.run, spec: generated.structuredContent.spec })).structuredContent.passed, true);
  assert.match(toolError(await call(client, 'generate_test_spec', { run: 'golden', output_path: '/tmp/x.yaml' })), /outside the allowed folder/);

  // The endpoint's HTTP surface: GET is 405, a notification 202, bad JSON a JSON-RPC error.
  const get = await fetch(`${server.http}/mcp`);
  assert.equal(get.status, 405);
  const note = await fetch(`${server.http}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' });
  assert.equal(note.status, 202);
  const bad = await fetch(`${server.http}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":' });
  assert.equal(bad.status, 200);
  assert.equal((await bad.json()).error.code, -32700);
  // No web page may call the tools: a simple cross-site POST (text/plain)
  // and a foreign Origin are refused before anything runs.
  const list = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}';
  const plain = await fetch(`${server.http}/mcp`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: list });
  assert.equal(plain.status, 415);
  const foreign = await fetch(`${server.http}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', origin: 'http://evil.example' }, body: list });
  assert.equal(foreign.status, 403);
  const local = await fetch(`${server.http}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', origin: 'http://localhost:3000' }, body: list });
  assert.equal(local.status, 200);
  assert.equal((await local.json()).result.tools.length, TOOLS.length);
  assert.equal(await server.stop(), 0, server.stderr());

  // The same from the shell: gen-spec writes the bytes the tool wrote, in
  // another process; gen-test takes the command after -- verbatim.
  const cli = await run(['gen-spec', 'golden', '--db', golden.db, '--match', 'subsequence', '-o', path.join(dir, 'cli.spec.yaml')]);
  assert.equal(cli.code, 0, cli.stderr);
  assert.equal(fs.readFileSync(path.join(dir, 'cli.spec.yaml'), 'utf8'), generated.structuredContent.spec);
  const unknown = await run(['gen-spec', 'nope', '--db', golden.db]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /^understudy: .*nope/);
  const noDb = await run(['gen-spec', 'golden', '--db', path.join(dir, 'missing.db')]);
  assert.equal(noDb.code, 3);
  assert.equal(fs.existsSync(path.join(dir, 'missing.db')), false);
  const noCommand = await run(['gen-test', path.join(dir, 'cli.spec.yaml'), '--framework', 'pytest']);
  assert.equal(noCommand.code, 2);
  const gen = await run(['gen-test', path.join(dir, 'cli.spec.yaml'), '--framework', 'node', '-o', path.join(dir, 'cli.test.mjs'), '--', 'sh', '-c', 'echo "$1" --x', 'sh', '--help']);
  assert.equal(gen.code, 0, gen.stderr);
  assert.match(fs.readFileSync(path.join(dir, 'cli.test.mjs'), 'utf8'), /\["sh", ?"-c", ?"echo \\"\$1\\" --x", ?"sh", ?"--help"\]/);
  const folderSpec = await run(['gen-test', dir, '--framework', 'pytest', '--', 'true']);
  assert.equal(folderSpec.code, 3);
  assert.match(folderSpec.stderr, /^understudy: .* is a directory, not a file\n$/);
  const fileRoot = await run(['mcp', '--root', golden.db, '--db', golden.db]);
  assert.equal(fileRoot.code, 2);
  assert.match(fileRoot.stderr, /--root .*golden\.db: not a directory/);
  const badSpec = await run(['gen-test', path.join(dir, 'golden.db'), '--framework', 'pytest', '--', 'true']);
  assert.notEqual(badSpec.code, 0);
  assert.match(badSpec.stderr, /^understudy: /);
});

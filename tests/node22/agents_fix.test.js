// The testing agent's repair loop through `understudy mcp`, with every
// suggestion applied by a program, as an agent would paste it: a spec
// generated from the golden run of review_agents.py, a pytest file of it
// run against the agent changed to skip its reviewer (red), the analysis,
// each finding applied to the spec as its `action` says (replace the item
// the finding names with its `replacement`, or remove it), the spec
// validated again, and the test generated and run again: green. A
// replacement is spec text (no `write_file({...})` display notation) and
// keeps the failed item's `agent:`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { BIN, cleanEnv, requireBinary, tempDir } from '../node/lib/harness.js';
import { PYTHON, REVIEW_AGENTS, recordGolden } from './lib/golden.js';
import { connectClient, mcpSdk } from './lib/mcp.js';

requireBinary();

async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  assert.notEqual(result.isError, true, `${name}: ${result.content?.[0]?.text}`);
  return result.structuredContent;
}

// The spec's text split at its assertion items: { head, items: [text] },
// each item the "  - ..." line with the deeper lines that continue it.
function splitItems(spec) {
  const lines = spec.split('\n');
  const start = lines.indexOf('assertions:');
  assert.notEqual(start, -1, spec);
  const head = lines.slice(0, start + 1);
  const items = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('  - ')) items.push([line]);
    else if (line.trim() !== '' && items.length > 0) items[items.length - 1].push(line);
  }
  return { head, items: items.map((i) => i.join('\n')) };
}

// The name the report gives an item: its `name:`, else its check's kind.
function itemName(item) {
  const named = /^  - (?:\{)?name: (.+?)(?:,|\n|$)/m.exec(item) ?? /^\s+name: (.+)$/m.exec(item);
  if (named) return named[1].replace(/^"(.*)"$/, '$1');
  return /^  - \{?([a-z_]+):/.exec(item)[1];
}

test('every suggestion of a red run, applied as given, validates and turns the run green', { timeout: 300000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-fix-');
  const golden = await recordGolden(t, dir);
  fs.copyFileSync(REVIEW_AGENTS, path.join(dir, 'review_agents.py'));
  const { StdioClientTransport } = await mcpSdk();
  const client = await connectClient(t, new StdioClientTransport({
    command: BIN, args: ['mcp', '--db', golden.db, '--root', dir], env: cleanEnv(), stderr: 'pipe',
  }));

  const generated = await call(client, 'generate_test_spec', { run: golden.run });
  let spec = generated.spec;
  assert.match(spec, /tool_calls:\n +agent: executor\n/);
  assert.equal((await call(client, 'validate_test_spec', { name: 'review.spec.yaml', document: spec })).valid, true);

  const testRun = async (name) => {
    await call(client, 'generate_tests_from_spec', {
      framework: 'pytest', spec, spec_path: 'review.spec.yaml', output_path: name,
      command: [PYTHON, 'review_agents.py', '--skip-review'],
    });
    return call(client, 'run_tests', { framework: 'pytest', path: name, timeout_seconds: 120 });
  };
  const red = await testRun('test_red.py');
  assert.equal(red.ok, false, red.output);
  const analysis = await call(client, 'analyze_test_results', { results: red });
  const findings = analysis.findings;
  assert.equal(analysis.ok, false);
  assert.ok(findings.some((f) => f.action === 'replace'), JSON.stringify(findings, null, 1));

  const { head, items } = splitItems(spec);
  let kept = items.slice();
  for (const f of findings) {
    assert.notEqual(f.suggestion, '', JSON.stringify(f));
    assert.ok(['replace', 'remove'].includes(f.action), `a finding no program can apply: ${JSON.stringify(f)}`);
    const at = kept.findIndex((item) => item !== null && itemName(item) === f.check);
    assert.notEqual(at, -1, `no item named ${f.check} in\n${spec}`);
    if (f.action === 'remove') {
      kept[at] = null;
      continue;
    }
    // Spec text, quoted in the suggestion, keeping the item's agent.
    assert.doesNotMatch(f.replacement, /\w\(\{/, f.replacement);
    assert.ok(f.suggestion.includes(f.replacement), f.suggestion);
    const agent = /agent: ([^,}\n]+)/.exec(kept[at]);
    if (agent) assert.match(f.replacement, new RegExp(`agent: ${agent[1]}[,}]`), f.replacement);
    const alone = await call(client, 'validate_test_spec', {
      name: 'one.spec.yaml', document: `schema: understudy.spec/v1\nassertions:\n  - ${f.replacement}\n`,
    });
    assert.equal(alone.valid, true, alone.report);
    kept[at] = `  - ${f.replacement}`;
  }
  kept = kept.filter((item) => item !== null);
  spec = [...head, ...kept, ''].join('\n');
  const fixed = await call(client, 'validate_test_spec', { name: 'review.spec.yaml', document: spec });
  assert.equal(fixed.valid, true, `${fixed.report}\n${spec}`);

  const green = await testRun('test_green.py');
  assert.equal(green.ok, true, `${green.output}\n${spec}`);
  assert.deepEqual(green.tests.map((x) => x.outcome), ['passed']);
});

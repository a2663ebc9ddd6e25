// A node:test reporter that writes each test's result as one JSON document,
// for tools that run tests and read their verdicts (understudy's run_tests):
//
//   node --test --test-reporter=spec --test-reporter-destination=stdout \
//        --test-reporter=./clients/node/json_reporter.js \
//        --test-reporter-destination=results.json  my.test.mjs
//
//   {"tests": [{"name": "suite > test", "outcome": "passed" | "failed" |
//               "error" | "skipped", "message": "...", "seconds": 0.12, "file": "..."}]}
//
// Leaf tests only (a suite's own failure, e.g. in a hook, is an "error"
// named after it); "message" is the failure's own message (for understudy's
// assertion helpers the server's report, one "FAIL name: explanation" line
// per failed check), "" for a passed test. A file that fails before any
// test (a syntax error, a failing import) is one "error" named after it.
export default async function* jsonReporter(source) {
  const tests = [];
  const stack = [];  // names of the enclosing suites/tests, by nesting
  const hasChildren = new Set();
  for await (const event of source) {
    const { type, data } = event;
    if (type === 'test:start') {
      stack[data.nesting] = data.name;
      stack.length = data.nesting + 1;
      if (data.nesting > 0) hasChildren.add(`${data.file}\0${stack.slice(0, data.nesting).join(' > ')}`);
      continue;
    }
    if (type !== 'test:pass' && type !== 'test:fail') continue;
    const path = [...stack.slice(0, data.nesting), data.name].join(' > ');
    const key = `${data.file}\0${path}`;
    const details = data.details ?? {};
    const error = details.error;
    const isSuite = hasChildren.has(key) || details.type === 'suite';
    // A file-level failure: node reports the file itself as a failed test.
    const seconds = (details.duration_ms ?? 0) / 1000;
    if (type === 'test:pass') {
      if (isSuite) continue;
      tests.push({ name: path, outcome: data.skip || data.todo ? 'skipped' : 'passed', message: '', seconds, file: data.file ?? '' });
      continue;
    }
    const cause = error?.cause ?? error;
    const message = cause?.message ?? String(cause ?? 'failed');
    const failureType = error?.failureType;
    const outcome = isSuite || (failureType && failureType !== 'testCodeFailure') ? 'error' : 'failed';
    if (isSuite && failureType === 'subtestsFailed') continue;  // its subtests say why
    tests.push({ name: path, outcome, message, seconds, file: data.file ?? '' });
  }
  yield `${JSON.stringify({ tests }, null, 1)}\n`;
}

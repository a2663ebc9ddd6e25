// verifyInstall(): the check that an agent as shipped — packed, installed in
// a fresh sandbox and run from there — still behaves. It runs
// `understudy verify-install` (docs/cli.md, "Verify the package you ship"),
// which packs the package (`npm pack`, or a wheel for a pyproject.toml),
// installs it in a temporary folder, runs `entry` from the installed package
// under a replay of `session` and checks the assertion specs against that
// run.
//
//   import { verifyInstall } from '@understudy/client';
//   const r = await verifyInstall({
//     packageDir: '.', session: 'golden', spec: 'golden.spec.yaml',
//     entry: 'my-agent', args: ['--question', 'What is the weather in Paris?'],
//     db: 'tests/golden.db',
//   });
//   assert.ok(r.ok, r.output);
//
// Node built-ins only: importing this file needs no other dependency.
import { spawn } from 'node:child_process';

// What `understudy verify-install` did.
//   ok        true when it exited 0: the agent ran and every check passed
//   exitCode  0; 1 packing, installing, the entry, the agent or a check
//             failed; 2 usage (a --package folder with no manifest, an
//             invalid spec); 3 unreadable spec or database, npm or Python
//             missing; null when a signal ended it (see `signal`)
//   output    its stdout and stderr interleaved as they came: progress, the
//             agent's stdout, one PASS/FAIL line per check, and on failure
//             the agent's stderr and a hint
//   command   the argv that was run (the binary first)
export class VerifyInstallResult {
  constructor({ exitCode, signal, output, command }) {
    this.ok = exitCode === 0;
    this.exitCode = exitCode;
    this.signal = signal ?? null;
    this.output = output;
    this.command = command;
  }
}

// Runs `understudy verify-install` and resolves a VerifyInstallResult
// whatever its exit code; rejects only when the binary cannot be started,
// or after `timeoutMs` (the process is then killed).
//   packageDir    the folder of the agent's package (default '.')
//   session       the golden session, NAME or NAME@N (required)
//   spec          an assertion spec file, or an array of them (required)
//   entry         the installed command to run: an npm bin, a file of the
//                 installed package, or a console script (required)
//   args          its arguments, passed verbatim (default [])
//   db            the golden database (default: understudy's, understudy.db
//                 or $UNDERSTUDY_DB)
//   understudyBin the binary (default $UNDERSTUDY_BIN, else `understudy`
//                 on PATH)
//   keep          keep the sandbox; its path is in the output
//   python        the interpreter for a pyproject.toml package
//   extraArgs     more verify-install flags (--ignore-path X, --mode replay)
//   env           the CLI's environment (default process.env)
//   timeoutMs     default 600000: installs may fetch from the registry
export async function verifyInstall({
  packageDir = '.',
  session,
  spec,
  entry,
  args = [],
  db,
  understudyBin,
  keep = false,
  python,
  extraArgs = [],
  env = process.env,
  timeoutMs = 600000,
} = {}) {
  if (!session) throw new TypeError('verifyInstall: `session` (the golden session) is required');
  const specs = Array.isArray(spec) ? spec : spec ? [spec] : [];
  if (specs.length === 0) throw new TypeError('verifyInstall: `spec` (an assertion spec file) is required');
  if (!entry) throw new TypeError('verifyInstall: `entry` (the installed command to run) is required');
  const bin = understudyBin || process.env.UNDERSTUDY_BIN || 'understudy';
  const argv = ['verify-install', '--session', session, '--package', packageDir];
  for (const s of specs) argv.push('--spec', s);
  if (db) argv.push('--db', db);
  if (keep) argv.push('--keep');
  if (python) argv.push('--python', python);
  argv.push(...extraArgs, '--', entry, ...args.map(String));

  const child = spawn(bin, argv, { stdio: ['ignore', 'pipe', 'pipe'], env });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d) => { output += d; });
  child.stderr.setEncoding('utf8').on('data', (d) => { output += d; });
  let timer;
  try {
    const { code, signal } = await new Promise((resolve, reject) => {
      child.once('error', (e) => reject(new Error(`verifyInstall: cannot start ${bin}: ${e.message} (pass understudyBin, set UNDERSTUDY_BIN, or put understudy on PATH)`)));
      child.once('close', (c, s) => resolve({ code: c, signal: s }));
      timer = setTimeout(() => {
        child.kill('SIGTERM');
        reject(new Error(`verifyInstall: ${bin} verify-install did not finish within ${timeoutMs} ms; output so far:\n${output}`));
      }, timeoutMs);
    });
    return new VerifyInstallResult({ exitCode: code, signal, output, command: [bin, ...argv] });
  } finally {
    clearTimeout(timer);
  }
}

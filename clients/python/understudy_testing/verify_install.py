"""verify_install(): the check that an agent as shipped -- packed, installed in
a fresh sandbox and run from there -- still behaves.

It runs `understudy verify-install` (docs/cli.md, "Verify the package you
ship"), which packs the package (a wheel for a pyproject.toml, `npm pack` for
a package.json), installs it in a temporary folder, runs `entry` from the
installed package under a replay of `session` and checks the assertion specs
against that run.

    from understudy_testing.verify_install import verify_install

    def test_the_wheel_we_ship_still_behaves():
        result = verify_install(".", "golden", "tests/golden.spec.yaml", "my-agent",
                                args=["--question", "What is the weather in Paris?"],
                                db="tests/golden.db")
        assert result.ok, result.output

A Python package's wheel is installed with `pip install --no-index` into a
venv made with --system-site-packages: its dependencies must already be
installed for that interpreter (on Debian, its python3-* packages).

Standard library only.
"""

import dataclasses
import os
import shutil
import subprocess

__all__ = ["VerifyInstallResult", "verify_install"]


@dataclasses.dataclass(frozen=True)
class VerifyInstallResult:
    """What `understudy verify-install` did.

    ok: it exited 0 -- the agent ran and every check passed.
    exit_code: 0; 1 packing, installing, the entry, the agent or a check
        failed; 2 usage (a package folder with no manifest, an invalid spec);
        3 unreadable spec or database, npm or Python missing; -N when signal N
        ended it.
    output: its stdout and stderr interleaved: progress, the agent's stdout,
        one PASS/FAIL line per check, and on failure the agent's stderr and a
        hint naming what is missing from the package.
    command: the argv that was run (the binary first).
    """

    ok: bool
    exit_code: int
    output: str
    command: tuple

    def check(self):
        """Raises AssertionError with the whole output unless ok."""
        if not self.ok:
            raise AssertionError(
                f"understudy verify-install exited {self.exit_code}:\n{self.output}")
        return self


def verify_install(package_dir, session, spec, entry, args=(), db=None, understudy_bin=None,
                   *, keep=False, python=None, extra_args=(), env=None, timeout=600):
    """Runs `understudy verify-install` and returns a VerifyInstallResult
    whatever its exit code.

    package_dir: the folder of the agent's package (package.json or
        pyproject.toml).
    session: the golden session, NAME or NAME@N.
    spec: an assertion spec file, or a list of them.
    entry: the installed command to run: a console script, an npm bin or a
        file of the installed npm package.
    args: its arguments, passed verbatim.
    db: the golden database (default: understudy's, understudy.db or
        $UNDERSTUDY_DB).
    understudy_bin: the binary (default $UNDERSTUDY_BIN, else `understudy` on
        PATH).
    keep: keep the sandbox; its path is in the output.
    python: the interpreter that builds the wheel and the venv.
    extra_args: more verify-install flags (["--mode", "replay"]).
    env: the command's environment (default os.environ).
    timeout: seconds before it is killed (subprocess.TimeoutExpired).

    Raises FileNotFoundError when the binary cannot be found.
    """
    binary = understudy_bin or os.environ.get("UNDERSTUDY_BIN") or shutil.which("understudy")
    if not binary:
        raise FileNotFoundError(
            "the understudy binary: pass understudy_bin=, set UNDERSTUDY_BIN, or put it on PATH")
    specs = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    if not specs:
        raise ValueError("verify_install: give at least one assertion spec file")
    argv = [os.fspath(binary), "verify-install", "--session", session,
            "--package", os.fspath(package_dir)]
    for s in specs:
        argv += ["--spec", os.fspath(s)]
    if db is not None:
        argv += ["--db", os.fspath(db)]
    if keep:
        argv.append("--keep")
    if python is not None:
        argv += ["--python", os.fspath(python)]
    argv += list(extra_args)
    argv += ["--", entry, *(str(a) for a in args)]
    completed = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env, timeout=timeout, check=False)
    return VerifyInstallResult(
        ok=completed.returncode == 0,
        exit_code=completed.returncode,
        output=completed.stdout.decode("utf-8", errors="replace"),
        command=tuple(argv),
    )

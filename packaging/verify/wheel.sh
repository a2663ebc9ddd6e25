#!/usr/bin/env bash
# Verifies the understudy_testing wheel as a user gets it: installs
# DIST_DIR/understudy_testing-*-py3-none-any.whl into a fresh venv in SANDBOX
# and runs a smoke test there with plain `pytest`.
#
#   UNDERSTUDY_BIN=/installed/understudy packaging/verify/wheel.sh DIST_DIR SANDBOX
#
# Builds nothing. The venv is made by Debian's /usr/bin/python3 with
# --system-site-packages (grpcio, protobuf and pytest come from Debian's
# python3-grpcio, python3-protobuf, python3-pytest) and the wheel is
# installed with --no-index, so a dependency the system cannot satisfy
# fails here. Every command runs with a clean environment (env -i: PATH is
# the venv's bin, /usr/bin and /bin; HOME and TMPDIR are in SANDBOX; no
# PYTHONPATH, no UNDERSTUDY_PY_STUBS) and its working directory in SANDBOX.
# The checks, in order, each failing with a message naming what is missing:
#   1. the venv and the install;
#   2. `import understudy_testing` loads the package and its bundled
#      generated stubs from the venv, and nothing of the repository is on
#      sys.path;
#   3. the pytest11 entry point names understudy_testing.pytest_plugin;
#   4. wheel_smoke/test_smoke.py, copied into SANDBOX, passes under
#      `python -m pytest` with no -p: it records a chat completion from a
#      fake upstream through the plugin's server ($UNDERSTUDY_BIN), replays
#      it byte for byte with the upstream closed, and asserts on the trace;
#   5. the pytest example of README.md (the same in clients/python's
#      README), verbatim: `understudy record` makes golden.db from the
#      example's agents (wheel_smoke/my_agents.py, and its script as a fake
#      upstream), then the README's own `python -m pytest ...` line runs
#      the README's test against it (the venv's python: a bare `pytest` is
#      Debian's /usr/bin/pytest, outside the venv), and so does `understudy
#      replay --db golden.db -- python -m pytest`; golden.db's bytes are the
#      same after both, and the wrapper prints no summary of its unused run.
set -euo pipefail

fail() { echo "verify/wheel: FAIL: $*" >&2; exit 1; }

if [[ $# -ne 2 || -z $1 || -z $2 ]]; then
  echo "usage: UNDERSTUDY_BIN=/path/to/understudy $0 DIST_DIR SANDBOX" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)   # packaging/verify: only wheel_smoke/ (and the READMEs) are read
repo=$(cd "$here/../.." && pwd -P)
[[ -d $1 ]] || fail "no folder $1 (DIST_DIR)"
dist=$(cd "$1" && pwd)
sandbox=$(realpath -m -- "$2")
case $sandbox/ in
  "$repo"/*) fail "SANDBOX $sandbox is inside the repository $repo: use a fresh temporary folder" ;;
esac
mkdir -p "$sandbox"
for d in venv project readme; do
  [[ ! -e $sandbox/$d ]] || fail "SANDBOX $sandbox already has $d/: use a fresh temporary folder"
done

shopt -s nullglob
wheels=("$dist"/understudy_testing-*-py3-none-any.whl)
shopt -u nullglob
((${#wheels[@]} == 1)) ||
  fail "expected one understudy_testing-*-py3-none-any.whl in $dist, found ${#wheels[@]}" \
       "(build it with clients/python/scripts/build-wheel.sh or scripts/package)"
wheel=${wheels[0]}

bin=${UNDERSTUDY_BIN:-}
[[ -n $bin ]] || fail "UNDERSTUDY_BIN is not set: the installed understudy binary (deb.sh prints it)"
[[ -f $bin && -x $bin ]] || fail "UNDERSTUDY_BIN=$bin is not an executable file"
[[ -x /usr/bin/python3 ]] || fail "no /usr/bin/python3 (Debian package python3)"

mkdir -p "$sandbox/home" "$sandbox/tmp" "$sandbox/project" "$sandbox/readme"
clean=(env -i "PATH=$sandbox/venv/bin:/usr/bin:/bin" "HOME=$sandbox/home" "TMPDIR=$sandbox/tmp"
       LANG=C.UTF-8 PIP_CONFIG_FILE=/dev/null)
cd "$sandbox"
step_start=$SECONDS
step() { echo "verify/wheel: $* ($((SECONDS - step_start))s)" >&2; }

# 1. The venv and the install.
"${clean[@]}" /usr/bin/python3 -m venv --system-site-packages venv >"$sandbox/venv.log" 2>&1 || {
  cat "$sandbox/venv.log" >&2
  fail "python3 -m venv failed (above): is Debian's python3-venv installed?"
}
"${clean[@]}" venv/bin/python -m pip install --no-index --no-cache-dir --disable-pip-version-check \
    --quiet "$wheel" >"$sandbox/pip.log" 2>&1 || {
  cat "$sandbox/pip.log" >&2
  fail "pip install --no-index $(basename "$wheel") failed (above): a dependency the system" \
       "site does not provide? (Debian: python3-grpcio, python3-protobuf, python3-pytest)"
}
step "installed $(basename "$wheel") into $sandbox/venv"

# 2. The package and its stubs load from the venv, nothing from the repository.
probe='
import sys
import understudy_testing as u
print(u.__file__)
print(u.understudy_pb2.__file__)
print(u.understudy_pb2_grpc.__file__)
print(u.completion_pb2.__file__)
print("\n".join(p for p in sys.path if p))
'
if ! loaded=$("${clean[@]}" venv/bin/python -c "$probe" 2>"$sandbox/import.log"); then
  cat "$sandbox/import.log" >&2
  fail "import understudy_testing failed in the sandbox: $(tail -n 1 "$sandbox/import.log")"
fi
site=$sandbox/venv/lib/
mapfile -t files < <(head -n 4 <<<"$loaded")
for f in "${files[@]}"; do
  [[ $f == "$site"* ]] || fail "understudy_testing loaded $f, not a file of the sandbox's venv ($site)"
done
[[ ${files[1]} == */understudy_testing/_generated/understudy/v1/understudy_pb2.py ]] ||
  fail "the stubs came from ${files[1]}, not from the wheel's understudy_testing/_generated"
if grep -F -- "$repo" <<<"$loaded" >&2; then
  fail "the sandbox's python has the repository ($repo) on sys.path (above)"
fi
step "understudy_testing and its stubs load from the venv"

# 3. The pytest plugin is registered.
entry='
from importlib.metadata import entry_points
print("\n".join(f"{e.name}={e.value}" for e in entry_points(group="pytest11")))
'
plugins=$("${clean[@]}" venv/bin/python -c "$entry")
grep -qx "understudy_testing.pytest_plugin=understudy_testing.pytest_plugin" <<<"$plugins" ||
  fail "the wheel registers no pytest11 entry point understudy_testing.pytest_plugin" \
       "(clients/python/pyproject.toml, [project.entry-points.pytest11]); found: ${plugins:-none}"
step "pytest11 entry point registered"

# 4. The smoke test, as a user's project: plain pytest, no -p.
cp "$here/wheel_smoke/test_smoke.py" "$here/wheel_smoke/fake_openai.py" project/
set +e
(cd project && "${clean[@]}" "UNDERSTUDY_BIN=$bin" python -m pytest -q -rf test_smoke.py) \
  >"$sandbox/pytest.log" 2>&1
status=$?
set -e
cat "$sandbox/pytest.log" >&2
if ((status != 0)); then
  if grep -q "fixture 'understudy_[a-z_]*' not found" "$sandbox/pytest.log"; then
    fail "pytest did not load understudy_testing's fixtures (the pytest11 entry point" \
         "understudy_testing.pytest_plugin): see above"
  fi
  fail "the smoke test failed in $sandbox/project (pytest exit $status, output above)"
fi
step "smoke test passed: record, byte-identical replay, trace assertions"

# 5. The README's example, verbatim, against a committed-style recording.
cp "$here/wheel_smoke/"{fake_openai,my_agents,record_golden}.py readme/
command=$("${clean[@]}" venv/bin/python "$here/wheel_smoke/readme_example.py" \
  "$repo/README.md" "$repo/clients/python/README.md" readme) ||
  fail "the README's pytest example could not be read (above)"
(cd readme && "${clean[@]}" "UNDERSTUDY_BIN=$bin" python record_golden.py) \
  >"$sandbox/record.log" 2>&1 || { cat "$sandbox/record.log" >&2; fail "recording golden.db failed (above)"; }
rm -f readme/record_golden.py
golden=$(sha256sum readme/golden.db)
set +e
(cd readme && "${clean[@]}" "UNDERSTUDY_BIN=$bin" bash -c "$command") >"$sandbox/readme.log" 2>&1
status=$?
set -e
cat "$sandbox/readme.log" >&2
((status == 0)) || fail "the README's example failed: \`$command\` in $sandbox/readme (exit $status, above)"
[[ $(sha256sum readme/golden.db) == "$golden" ]] || fail "\`$command\` changed golden.db"
set +e
(cd readme && "${clean[@]}" "$bin" replay --db golden.db --session golden -- python -m pytest -q test_review_loop.py) \
  >"$sandbox/replay.log" 2>&1
status=$?
set -e
cat "$sandbox/replay.log" >&2
((status == 0)) || fail "the README's example failed under understudy replay (exit $status, above)"
[[ $(sha256sum readme/golden.db) == "$golden" ]] || fail "understudy replay --db golden.db changed golden.db"
if grep -q "unused recordings" "$sandbox/replay.log"; then
  fail "understudy replay printed the summary of a run the tests did not use (above)"
fi
step "the README's example passed as written: \`$command\`, and under understudy replay; golden.db unchanged"
echo "verify/wheel: OK $(basename "$wheel") in $((SECONDS - step_start))s"

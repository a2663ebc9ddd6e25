#!/usr/bin/env bash
# Checks the Debian packages as a user gets them, with nothing of the
# repository on any path (docs/install.md):
#
#   packaging/verify/deb.sh DIST_DIR SANDBOX
#
# DIST_DIR holds understudy_VERSION_amd64.deb and understudy-dev_VERSION_amd64.deb
# (scripts/package); SANDBOX is an empty folder for everything this check
# creates. It builds nothing from the repository and
#
#   1. checks each package's file list (programs, every scenario pack and
#      JSON Schema, headers, libraries, CMake package), naming what is missing;
#   2. installs the packages: `apt-get install` when run as root with
#      UNDERSTUDY_VERIFY_DEB=install (they stay installed for npm.sh and
#      wheel.sh; scripts/verify-packages purges them at the end); otherwise
#      (the default, so CI never changes the machine) unpacks them with
#      `dpkg-deb -x` into SANDBOX/root after checking that every package
#      their Depends: names is installed here;
#   3. in a clean environment (env -i, PATH=/usr/bin:/bin, HOME and cwd in
#      SANDBOX) runs the installed `understudy --version`, records a chat
#      completion from a fake upstream (Python, loopback, port 0) with
#      `understudy record`, replays it with the upstream gone and compares
#      the bytes, checks the run with `understudy assert`, serves the
#      database with `understudy serve`, and builds and runs a GoogleTest
#      against the installed CMake package (cpp_smoke/: find_package
#      (understudy), understudy::testing) that asserts on the replayed run;
#   4. checks that the installed program finds its installed scenario packs;
#   5. runs the sim's tmux walk-through (docs/sim.md) as the installed docs
#      write it, with the installed reporters (share/understudy/sim), in a
#      private tmux server: the agent's completion and Stop hook reach a
#      listener on a Unix socket.
#
# The last stdout line is `UNDERSTUDY_BIN=PATH` of the installed program
# (for packaging/verify/npm.sh and wheel.sh). Exit 0 when every check passed;
# otherwise 1 with `deb.sh: ...` on stderr naming what is wrong, and the
# logs left in SANDBOX.
set -Eeuo pipefail
# A command failing where no check expected it still says where.
trap 'echo "deb.sh: unexpected failure (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

die() {
  echo "deb.sh: $*" >&2
  exit 1
}
step() { echo "== deb: $*"; }

if (($# != 2)); then
  echo "usage: packaging/verify/deb.sh DIST_DIR SANDBOX" >&2
  exit 2
fi
[[ -d $1 ]] || die "no such directory: $1 (DIST_DIR, where scripts/package puts the .deb files)"
dist=$(cd "$1" && pwd)
sandbox=$(realpath -m -- "$2")
case "$sandbox/" in
  "$(realpath -- "$repo")"/*) die "SANDBOX $sandbox is inside the repository $repo: use a fresh temporary folder" ;;
esac
mkdir -p "$sandbox"

# --- the two packages ---------------------------------------------------------
shopt -s nullglob
servers=("$dist"/understudy_*_amd64.deb)
devs=("$dist"/understudy-dev_*_amd64.deb)
shopt -u nullglob
((${#servers[@]} == 1)) ||
  die "expected one understudy_VERSION_amd64.deb in $dist, found ${#servers[@]}: ${servers[*]:-none} (run scripts/package)"
((${#devs[@]} == 1)) ||
  die "expected one understudy-dev_VERSION_amd64.deb in $dist, found ${#devs[@]}: ${devs[*]:-none} (run scripts/package)"
server_deb=${servers[0]}
dev_deb=${devs[0]}
version=$(dpkg-deb -f "$server_deb" Version)
dev_version=$(dpkg-deb -f "$dev_deb" Version)
[[ $version == "$dev_version" ]] ||
  die "$(basename "$server_deb") is version $version but $(basename "$dev_deb") is $dev_version"
step "packages $(basename "$server_deb") ($(du -k "$server_deb" | cut -f1) KiB), $(basename "$dev_deb") ($(du -k "$dev_deb" | cut -f1) KiB)"

# --- 1. what each package holds -------------------------------------------------
# The files a package must hold, as shell patterns over its paths ("*" for
# the library directory, lib or lib/<triplet>). The packs and schemas are
# the repository's own lists, so a new one cannot be forgotten.
server_files=(/usr/bin/understudy /usr/bin/understudy-sim /usr/share/doc/understudy/README.md
  /usr/share/doc/understudy/docs/sim.md /usr/share/understudy/sim/meow /usr/share/understudy/sim/hook
  /usr/lib/systemd/system/understudy.service /etc/understudy/server.toml)
for f in "$repo"/scenarios/*.yaml; do server_files+=("/usr/share/understudy/scenarios/${f##*/}"); done
for f in "$repo"/schemas/*.json; do server_files+=("/usr/share/understudy/schemas/${f##*/}"); done
dev_files=(
  /usr/include/understudy/clients/cpp/understudy_testing.h
  /usr/include/understudy/understudy/v1/understudy.pb.h
  /usr/include/understudy/understudy/v1/understudy.grpc.pb.h
  /usr/include/understudy/understudy/v1/completion.pb.h
  /usr/include/understudy/understudy/v1/completion.grpc.pb.h
  /usr/include/understudy/understudy/v1/understudy.proto
  /usr/include/understudy/understudy/v1/completion.proto
  /usr/include/understudy/grpc/health/v1/health.pb.h
  "/usr/lib*/libunderstudy_testing.a"
  "/usr/lib*/libunderstudy_proto.a"
  "/usr/lib*/cmake/understudy/understudyConfig.cmake"
  "/usr/lib*/cmake/understudy/understudyConfigVersion.cmake"
  "/usr/lib*/cmake/understudy/understudyTargets.cmake"
)
missing=()
# Appends to `missing` each pattern of $2... that no file of package $1 matches.
check_files() {
  local deb=$1 pattern path found
  shift
  local -a paths
  mapfile -t paths < <(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -e 's|^\./|/|' -e 's|/$||')
  for pattern in "$@"; do
    found=0
    for path in "${paths[@]}"; do
      # shellcheck disable=SC2053  # the pattern is a glob on purpose
      if [[ $path == $pattern ]]; then found=1 && break; fi
    done
    ((found)) || missing+=("$pattern (in $(basename "$deb"))")
  done
}
check_files "$server_deb" "${server_files[@]}"
check_files "$dev_deb" "${dev_files[@]}"
if ((${#missing[@]} > 0)); then
  printf 'deb.sh: missing from the packages:\n' >&2
  printf '  %s\n' "${missing[@]}" >&2
  die "${#missing[@]} file(s) missing (see cmake/Install.cmake)"
fi
step "file lists: ${#server_files[@]} + ${#dev_files[@]} expected files present"
# The shared server's configuration is the admin's: kept across upgrades.
dpkg-deb --ctrl-tarfile "$server_deb" | tar -xO ./conffiles 2>/dev/null | grep -qx /etc/understudy/server.toml ||
  die "$(basename "$server_deb") does not mark /etc/understudy/server.toml as a conffile"
step "conffiles: /etc/understudy/server.toml"

# --- 2. install or unpack ---------------------------------------------------------
installed_here() { # NAME: its version when dpkg has it installed, else nothing
  { dpkg-query -W -f='${db:Status-Status} ${Version}\n' "$1" 2>/dev/null || true; } |
    awk '$1 == "installed" { print $2; exit }'
}

# Checks that every package the Depends: of $1 names is installed here, in a
# version the constraint allows; `understudy` itself is the unpacked one.
check_depends() {
  local deb=$1 group alt name constraint op want have ok
  local -a groups alts unmet=()
  IFS=',' read -ra groups <<<"$(dpkg-deb -f "$deb" Depends)"
  for group in "${groups[@]}"; do
    ok=0
    IFS='|' read -ra alts <<<"$group"
    for alt in "${alts[@]}"; do
      alt=$(echo "$alt" | xargs)
      name=${alt%% *}
      name=${name%%:*}
      constraint=
      [[ $alt == *"("*")"* ]] && constraint=${alt#*(} && constraint=${constraint%)*}
      if [[ $name == understudy ]]; then
        have=$version
      else
        have=$(installed_here "$name")
      fi
      [[ -n $have ]] || continue
      if [[ -n $constraint ]]; then
        read -r op want <<<"$constraint"
        dpkg --compare-versions "$have" "$op" "$want" || continue
      fi
      ok=1
      break
    done
    if ((!ok)); then
      group=$(echo "$group" | xargs)
      have=$(installed_here "${group%% *}")
      unmet+=("$group [installed here: ${have:-none}]")
    fi
  done
  if ((${#unmet[@]} > 0)); then
    printf 'deb.sh: %s depends on packages not installed here:\n' "$(basename "$deb")" >&2
    printf '  %s\n' "${unmet[@]}" >&2
    die "unmet Depends of $(basename "$deb"); install them (apt-get install) and run again"
  fi
}

# Background processes (the fake upstream, the server, the walk-through's
# listener and tmux server) die with the check.
pids=
walk_tmux=
cleanup() {
  local pid
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  if [[ -n $walk_tmux ]]; then tmux -S "$walk_tmux" kill-server 2>/dev/null || true; fi
}
trap cleanup EXIT

if [[ ${UNDERSTUDY_VERIFY_DEB:-} == install && $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  for p in understudy understudy-dev; do
    [[ -z $(installed_here "$p") ]] ||
      die "$p is already installed here; install mode would replace it (purge it first, or unset UNDERSTUDY_VERIFY_DEB)"
  done
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "$server_deb" "$dev_deb" >"$sandbox/apt.log" 2>&1 ||
    die "apt-get install of $(basename "$server_deb") $(basename "$dev_deb") failed: $(tail -5 "$sandbox/apt.log")"
  prefix=/usr
  step "installed with apt-get (remove with: apt-get purge understudy-dev understudy)"
else
  check_depends "$server_deb"
  check_depends "$dev_deb"
  step "Depends: of both packages installed here: $(dpkg-deb -f "$server_deb" Depends | tr -s ' ' | cut -c1-400)"
  rm -rf "$sandbox/root"
  dpkg-deb -x "$server_deb" "$sandbox/root"
  dpkg-deb -x "$dev_deb" "$sandbox/root"
  prefix=$sandbox/root/usr
  step "unpacked into $sandbox/root"
fi
bin=$prefix/bin/understudy

# --- 3. the installed programs, in a clean environment ------------------------------
home=$sandbox/home
work=$sandbox/work
rm -rf "$home" "$work"
mkdir -p "$home" "$work" "$sandbox/tmp"
# The clean environment: `"${clean_env[@]}" CMD...` runs CMD in it (env
# execs CMD, so a background one's $! is its pid).
clean_env=(env -C "$work" -i PATH=/usr/bin:/bin HOME="$home" TMPDIR="$sandbox/tmp" LANG=C.UTF-8)
clean() { "${clean_env[@]}" "$@"; }
# Shows the last lines of log $1 and fails with message $2.
fail_with_log() {
  echo "---- last lines of $1:" >&2
  tail -n 20 "$1" >&2 || true
  die "$2"
}
# Waits up to 10 s for file $1 to be non-empty (written by a background
# process); fails when it stays empty.
wait_for_file() {
  local deadline=$((SECONDS + 10))
  until [[ -s $1 ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
}

for program in understudy understudy-sim; do
  if unresolved=$(clean ldd "$prefix/bin/$program" | grep 'not found'); then
    die "installed $program needs libraries not found here: $(echo "$unresolved" | xargs)"
  fi
done
got=$(clean "$bin" --version) || die "$bin --version failed"
[[ $got == "understudy $version" ]] || die "$bin --version printed \"$got\", expected \"understudy $version\""
got_sim=$(clean "$prefix/bin/understudy-sim" --version) || die "$prefix/bin/understudy-sim --version failed"
[[ $got_sim == "understudy sim $version" ]] ||
  die "$prefix/bin/understudy-sim --version printed \"$got_sim\", expected \"understudy sim $version\""
step "--version: $got; $got_sim"

# A fake OpenAI upstream on loopback: one fixed chat completion.
cat >"$work/fake_openai.py" <<'EOF'
import http.server, json, os, sys

ANSWER = json.dumps({
    "id": "chatcmpl-smoke", "object": "chat.completion", "created": 1700000000,
    "model": "smoke-model",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "Hello from the fake upstream."}}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11},
}).encode()

class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/chat/completions":
            self.send_error(404, "fake upstream: no route " + self.path)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
EOF
# The agent: one chat completion with urllib from $OPENAI_BASE_URL; writes
# the answer's bytes to $1 and its run ($UNDERSTUDY_RUN) to $2.
cat >"$work/chat.py" <<'EOF'
import json, os, sys, urllib.request

request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "smoke-model",
                     "messages": [{"role": "user", "content": "Say hello."}]}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer sk-smoke"})
with urllib.request.urlopen(request, timeout=10) as response:
    body = response.read()
with open(sys.argv[1], "wb") as f:
    f.write(body)
with open(sys.argv[2], "w") as f:
    f.write(os.environ["UNDERSTUDY_RUN"])
EOF

"${clean_env[@]}" /usr/bin/python3 "$work/fake_openai.py" "$work/upstream.port" \
  >/dev/null 2>"$work/upstream.log" &
upstream_pid=$!
pids="$upstream_pid"
wait_for_file "$work/upstream.port" || fail_with_log "$work/upstream.log" "the fake upstream did not start in 10 s"
upstream=http://127.0.0.1:$(cat "$work/upstream.port")

db=$work/smoke.db
clean "$bin" record --session smoke --db "$db" --upstream "openai=$upstream" -- \
  /usr/bin/python3 "$work/chat.py" "$work/recorded.json" "$work/record.run" 2>"$work/record.log" ||
  fail_with_log "$work/record.log" "understudy record --session smoke failed (exit $?)"
grep -q 'Hello from the fake upstream' "$work/recorded.json" ||
  die "the recorded answer is not the fake upstream's: $(head -c 300 "$work/recorded.json")"
step "recorded session smoke (run $(cat "$work/record.run"))"

kill "$upstream_pid"
wait "$upstream_pid" 2>/dev/null || true
pids=
recording=$(sha256sum "$db")
# The replay's run and trace go to a copy (--trace-db); the recording is only read.
trace_db=$work/replay-trace.db
clean "$bin" replay --session smoke --db "$db" --trace-db "$trace_db" -- \
  /usr/bin/python3 "$work/chat.py" "$work/replayed.json" "$work/replay.run" 2>"$work/replay.log" ||
  fail_with_log "$work/replay.log" "understudy replay --session smoke failed (exit $?) with the upstream stopped"
cmp -s "$work/recorded.json" "$work/replayed.json" ||
  die "the replayed answer differs from the recorded one: $(head -c 300 "$work/replayed.json") vs $(head -c 300 "$work/recorded.json")"
[[ $(sha256sum "$db") == "$recording" ]] || die "understudy replay --db $db changed the recording"
run=$(cat "$work/replay.run")
step "replayed with the upstream stopped: byte-identical answer, the recording unchanged (run $run)"

cat >"$work/smoke-spec.yaml" <<'EOF'
schema: understudy.spec/v1
session: smoke
assertions:
  - no_misses: true
  - count: {select: {kind: exchange}, eq: 1}
  - name: the answer came from the recording
    select: {kind: exchange}
    expect:
      attributes:
        understudy.answer.source: recording
        gen_ai.request.model: smoke-model
EOF
clean "$bin" assert --run "$run" --db "$trace_db" "$work/smoke-spec.yaml" >"$work/assert.out" 2>&1 ||
  fail_with_log "$work/assert.out" "understudy assert --run $run smoke-spec.yaml failed (exit $?)"
grep -qx '3 of 3 checks passed' "$work/assert.out" ||
  fail_with_log "$work/assert.out" "understudy assert did not report 3 of 3 checks passed"
# And a check that must fail, so that a passing verdict means something.
cat >"$work/wrong-spec.yaml" <<'EOF'
assertions:
  - count: {select: {kind: exchange}, eq: 2}
EOF
status=0
clean "$bin" assert --run "$run" --db "$trace_db" "$work/wrong-spec.yaml" >"$work/assert-wrong.out" 2>&1 || status=$?
if ((status != 1)) || ! grep -q '^FAIL count' "$work/assert-wrong.out"; then
  fail_with_log "$work/assert-wrong.out" "understudy assert on a wrong spec exited $status, expected 1 with a FAIL line"
fi
step "understudy assert: 3 of 3 checks passed; a wrong count fails"

# The replayed run is in the replay's trace database (the recording holds
# none); serving it lets the GoogleTest below assert on that run.
"${clean_env[@]}" "$bin" serve --db "$trace_db" --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.log" &
serve_pid=$!
pids="$serve_pid"
wait_for_file "$work/serve.out" || fail_with_log "$work/serve.log" "understudy serve printed no serving line in 10 s"
serving=$(head -n 1 "$work/serve.out")
[[ $serving =~ ^understudy\ serving\ grpc=([^ ]+)\ http=([^ ]+) ]] ||
  die "understudy serve's first line is \"$serving\", not \"understudy serving grpc=ADDR http=ADDR ...\""
grpc_addr=${BASH_REMATCH[1]}
step "$serving"

# The C++ helper from the installed package only: configure, build, run.
rm -rf "$sandbox/cpp_smoke"
cp -r "$here/cpp_smoke" "$sandbox/cpp_smoke"
generator=()
[[ -x /usr/bin/ninja ]] && generator=(-G Ninja)
clean cmake -S "$sandbox/cpp_smoke" -B "$sandbox/cpp_smoke/build" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/cpp-configure.log" 2>&1 ||
  fail_with_log "$work/cpp-configure.log" "cmake could not configure cpp_smoke with find_package(understudy) from $prefix"
found=$(sed -n 's/^-- understudy package: //p' "$work/cpp-configure.log")
[[ $found == "$prefix"/* ]] ||
  die "find_package(understudy) found \"$found\", not the installed package under $prefix"
clean cmake --build "$sandbox/cpp_smoke/build" >"$work/cpp-build.log" 2>&1 ||
  fail_with_log "$work/cpp-build.log" "the GoogleTest against the installed understudy::testing did not build"
clean env UNDERSTUDY_ADDR="$grpc_addr" UNDERSTUDY_RUN="$run" \
  "$sandbox/cpp_smoke/build/installed_helper_test" >"$work/cpp-test.log" 2>&1 ||
  fail_with_log "$work/cpp-test.log" "the GoogleTest against the installed understudy::testing failed"
step "C++ test built with find_package(understudy) ($found) passed on run $run"

kill -TERM "$serve_pid"
status=0
wait "$serve_pid" || status=$?
pids=
((status == 0)) || fail_with_log "$work/serve.log" "understudy serve exited $status on SIGTERM, expected 0"

# --- 4. the installed program finds its installed packs ---------------------------
# Asked for a pack that does not exist, understudy names where it searched;
# the packs of this installation must be among those places.
clean "$bin" validate no-such-pack >/dev/null 2>"$work/packs.log" && die "understudy validate no-such-pack passed"
packs_dir=$prefix/share/understudy/scenarios
grep -q "searched.*$packs_dir" "$work/packs.log" ||
  die "the installed understudy does not look for scenario packs in $packs_dir, where the package puts them: $(cat "$work/packs.log")"
if grep -qF "$repo/" "$work/packs.log"; then
  die "the installed understudy looks for scenario packs in the source tree $repo: $(cat "$work/packs.log")"
fi
for f in "$packs_dir"/*.yaml; do
  clean "$bin" validate "$f" >"$work/validate.log" 2>&1 ||
    fail_with_log "$work/validate.log" "the installed pack $f does not validate"
done
step "scenario packs found by name in $packs_dir and valid"

# --- 5. the sim's tmux walk-through, as the installed docs write it -------------
# Its config and settings are taken from the installed docs/sim.md (the
# first yaml and json blocks of "Walk-through with tmux"), with
# /usr/share/understudy standing for this installation's; its reporters are
# the installed ones.
command -v tmux >/dev/null || die "tmux is not installed here: the sim's walk-through needs it"
for f in meow hook; do
  [[ -x $prefix/share/understudy/sim/$f ]] || die "$prefix/share/understudy/sim/$f is not executable"
done
walk=$sandbox/walk
rm -rf "$walk"
mkdir -p "$walk"
cat >"$walk/extract.py" <<'PY'
import re, sys
doc, prefix, out = sys.argv[1:]
text = open(doc, encoding="utf-8").read()
section = text.split("## Walk-through with tmux", 1)[1].split("\n## ", 1)[0]
config = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
settings = re.search(r"```json\n(.*?)```", section, re.S).group(1)
for name, body in (("coder.yaml", config), ("settings.json", settings)):
    with open(f"{out}/{name}", "w", encoding="utf-8") as f:
        f.write(body.replace("/usr/share/understudy/", prefix + "/share/understudy/"))
PY
clean /usr/bin/python3 "$walk/extract.py" "$prefix/share/doc/understudy/docs/sim.md" "$prefix" "$walk" ||
  die "the walk-through's config and settings are not in $prefix/share/doc/understudy/docs/sim.md"
grep -q "$prefix/share/understudy/sim/meow" "$walk/coder.yaml" ||
  die "docs/sim.md's walk-through config does not run the installed meow: $(cat "$walk/coder.yaml")"
# The orchestrator's end: files each message, then answers "ok" (a listener
# may, docs/sim.md says).
cat >"$walk/listen.py" <<'PY'
import socket, sys
path, out = sys.argv[1:]
server = socket.socket(socket.AF_UNIX)
server.bind(path)
server.listen()
while True:
    conn, _ = server.accept()
    with conn:
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
        with open(out, "ab") as f:
            f.write(data)
        conn.sendall(b"ok\n")
PY
"${clean_env[@]}" /usr/bin/python3 "$walk/listen.py" "$walk/orch.sock" "$walk/orch.out" \
  >/dev/null 2>"$walk/listen.log" &
pids="$!"
walk_tmux=$walk/tmux.sock
tmux_walk() { clean tmux -S "$walk_tmux" -f /dev/null "$@"; }
# Waits up to 10 s for the command "$@" to succeed.
wait_until() {
  local deadline=$((SECONDS + 10))
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
}
wait_until test -S "$walk/orch.sock" ||
  fail_with_log "$walk/listen.log" "the walk-through's listener did not start in 10 s"
tmux_walk new-session -d -s work -x 200 -y 50 -c "$walk" \
  -e ORCH_SOCKET="$walk/orch.sock" -e AGENT_ID=a1 -e WORKFLOW_ID=wf-1 -e STEP_ID=s1 \
  "exec $bin sim --config coder.yaml --settings settings.json --dangerously-skip-permissions 2>$walk/a1.log"
at_prompt() { [[ $(tmux_walk capture-pane -p -t work | sed '/^ *$/d' | tail -n 1) == ">" ]]; }
wait_until at_prompt ||
  fail_with_log "$walk/a1.log" "the walk-through's agent showed no prompt in 10 s: $(tmux_walk capture-pane -p -t work)"
tmux_walk send-keys -t work -l -- $'deploy to prod\nthen tell me'
tmux_walk send-keys -t work Enter
stop_reported() { grep -q '"event": "Stop"' "$walk/orch.out" 2>/dev/null; }
wait_until stop_reported ||
  fail_with_log "$walk/a1.log" "no Stop hook reached the walk-through's listener in 10 s: $(cat "$walk/orch.out" 2>/dev/null)"
grep -q '"type": "completion", "agent_id": "a1", "workflow_id": "wf-1", "step_id": "s1"' "$walk/orch.out" &&
  grep -q '"outputs": {"status": "ok"}' "$walk/orch.out" ||
  die "the walk-through's completion did not reach the listener as docs/sim.md says: $(cat "$walk/orch.out")"
tmux_walk capture-pane -p -t work | grep -qx 'Deployed\.' ||
  die "the walk-through's pane does not show the behaviour's output: $(tmux_walk capture-pane -p -t work)"
tmux_walk kill-server
walk_tmux=
kill "$pids" 2>/dev/null || true
pids=
step "the sim's tmux walk-through (docs/sim.md) from the installed files: completion and Stop hook reported"

echo "UNDERSTUDY_BIN=$bin"

#!/usr/bin/env bash
# What the .deb installs for a shared server (packaging/systemd):
#   1. the unit passes `systemd-analyze verify` without a word (its
#      ExecStart pointed at the program under test);
#   2. the example configuration serves as shipped (its database and
#      listen addresses moved into a temporary folder and port 0), and
#      answers GET /metrics;
#   3. the same with every commented option turned on: a token, TLS from a
#      fresh self-signed pair, an allowed host, upstreams, an A2A agent; the
#      token then guards /metrics over HTTPS.
# Exit 0 when all hold; otherwise 1 naming what did not.
set -euo pipefail
BIN=${UNDERSTUDY_BIN:?set UNDERSTUDY_BIN to the understudy program}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
pid=
cleanup() {
  if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "systemd_test: $*" >&2; exit 1; }
for tool in systemd-analyze openssl curl; do
  command -v "$tool" >/dev/null || fail "$tool is missing: run scripts/setup"
done

# 1. The unit.
sed "s#^ExecStart=/usr/bin/understudy #ExecStart=$BIN #" "$SRC/packaging/systemd/understudy.service" \
  >"$tmp/understudy.service"
grep -q "^ExecStart=$BIN serve --config /etc/understudy/server.toml$" "$tmp/understudy.service" ||
  fail "the unit's ExecStart is not 'understudy serve --config /etc/understudy/server.toml'"
said=$(systemd-analyze verify "$tmp/understudy.service" 2>&1) || fail "systemd-analyze verify failed: $said"
[[ -z $said ]] || fail "systemd-analyze verify warned: $said"

# serve CONFIG: starts the program on CONFIG; sets pid and http (HOST:PORT).
serve() {
  local line
  "$BIN" serve --config "$1" >"$tmp/stdout" 2>"$tmp/stderr" &
  pid=$!
  for _ in $(seq 1 100); do
    line=$(head -n1 "$tmp/stdout" 2>/dev/null || true)
    [[ -n $line ]] && break
    kill -0 "$pid" 2>/dev/null || fail "understudy serve --config $1 exited: $(cat "$tmp/stderr")"
    sleep 0.05
  done
  [[ $line =~ http=([^ ]+) ]] || fail "no 'understudy serving ... http=' line: '$line' $(cat "$tmp/stderr")"
  http=${BASH_REMATCH[1]}
}
stop() {
  kill -TERM "$pid"
  wait "$pid" || fail "understudy serve exited $? on SIGTERM: $(cat "$tmp/stderr")"
  pid=
}

# 2. As shipped, on temporary paths.
sed -e "s#^db = .*#db = \"$tmp/shipped.db\"#" -e 's#^listen = .*#listen = "127.0.0.1:0"#' \
  -e 's#^http = .*#http = "127.0.0.1:0"#' "$SRC/packaging/systemd/server.toml" >"$tmp/shipped.toml"
serve "$tmp/shipped.toml"
code=$(curl -s -o "$tmp/metrics" -w '%{http_code}' "http://$http/metrics")
[[ $code == 200 ]] || fail "GET /metrics answered $code"
grep -q '^understudy_runs_active 0$' "$tmp/metrics" || fail "no understudy_runs_active in $(cat "$tmp/metrics")"
grep -q 'retention keep_runs=1000 keep_trace_for=336h interval=1h' "$tmp/stderr" ||
  fail "the example's retention is not in effect: $(cat "$tmp/stderr")"
stop

# 3. Every option on.
mkdir -p "$tmp/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/tls/key.pem" -out "$tmp/tls/cert.pem" 2>/dev/null
token=systemd-test-token-0123456789abcdef
printf '%s\n' "$token" >"$tmp/token"
chmod 600 "$tmp/token"
sed -E -e 's/^# ([a-z0-9-]+ = .*)$/\1/' -e "s#/etc/understudy/#$tmp/#g" "$tmp/shipped.toml" >"$tmp/all.toml"
for key in auth-token-file tls-cert tls-key allow-host upstream a2a-upstream; do
  grep -q "^$key = " "$tmp/all.toml" || fail "the example has no commented '$key = ' line to turn on"
done
serve "$tmp/all.toml"
code=$(curl -s -k -o /dev/null -w '%{http_code}' "https://$http/metrics")
[[ $code == 401 ]] || fail "GET /metrics without the token answered $code, not 401"
code=$(curl -s -k -o "$tmp/metrics" -w '%{http_code}' -H "authorization: Bearer $token" "https://$http/metrics")
[[ $code == 200 ]] || fail "GET /metrics with the token answered $code"
grep -q 'a2a_upstreams="researcher=https://researcher.internal/a2a"' "$tmp/stderr" ||
  fail "the example's A2A agent is not configured: $(cat "$tmp/stderr")"
stop
echo "systemd_test: the unit verifies; the example configuration serves as shipped and with every option on"

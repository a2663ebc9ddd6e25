#!/usr/bin/env bash
# Runs the HTTP listener choice benchmark on loopback and prints one line per
# (round, scenario, server). Servers and clients run alternately, never two
# servers at once. Every process is bounded: servers exit after
# --max-seconds, clients after --duration (and `timeout` guards both).
#
# Usage: bench/http_choice/run.sh BUILD_DIR [OUT_DIR] [ROUNDS] [DURATION_S]
#   BUILD_DIR  where httplib_server, beast_server, conn_load were built
#   OUT_DIR    raw outputs (default /tmp/http_choice-results)
#   ROUNDS     repeats of the whole matrix, to see noise (default 2)
#   DURATION_S seconds per load run (default 10)
# Needs wrk (apt-get install -y wrk) and nstat (iproute2).
set -euo pipefail

build=${1:?usage: run.sh BUILD_DIR [OUT_DIR] [ROUNDS] [DURATION_S]}
out=${2:-/tmp/http_choice-results}
rounds=${3:-2}
dur=${4:-10}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

# name -> command line. httplib_t256 is the "just add threads" variant.
declare -A server_cmd=(
  [httplib]="$build/httplib_server"
  [httplib_t256]="$build/httplib_server --threads=256"
  [beast]="$build/beast_server --threads=2"
)

server_pid=""
start_server() {  # $1 = name; sets server_pid and port
  local log="$out/server.$1.log"
  rm -f "$log"  # Else the poll below may read the previous server's port.
  ${server_cmd[$1]} --port=0 --max-seconds=$((dur + 30)) >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    port=$(awk '/^listening on/{print $3}' "$log" 2>/dev/null || true)
    [[ -n "$port" ]] && return 0
    sleep 0.05
  done
  echo "server $1 did not start" >&2
  return 1
}
stop_server() {  # sets stat to the server's RSS and thread count, stops it
  stat=$(ps -o rss=,nlwp= -p "$server_pid" |
         awk '{printf "rss=%dMB threads=%d", $1 / 1024, $2}' || true)
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
}

run_one() {  # $1 round, $2 scenario, $3 server
  local r=$1 sc=$2 name=$3 f res drops
  f="$out/r$r.$sc.$name.txt"
  start_server "$name"
  nstat -n 2>/dev/null || true  # Reset the kernel counters' baseline.
  case $sc in
    c16) timeout $((dur + 15)) "$build/conn_load" --port="$port" \
           --conns=16 --duration="$dur" >"$f" ;;
    c256) timeout $((dur + 15)) "$build/conn_load" --port="$port" \
            --conns=256 --duration="$dur" >"$f" ;;
    c256s32) timeout $((dur + 15)) "$build/conn_load" --port="$port" \
               --conns=256 --streams=32 --duration="$dur" >"$f" ;;
    wrk256) timeout $((dur + 15)) wrk -t2 -c256 -d"${dur}s" --latency \
              -s "$here/post.lua" \
              "http://127.0.0.1:$port/v1/chat/completions" >"$f" ;;
  esac
  # Final ACKs dropped because the accept queue was full: the client then
  # retransmits with backoff (0.2 s, 0.4 s, ...), so connects stall.
  drops=$(nstat -z TcpExtListenDrops 2>/dev/null |
          awk '/ListenDrops/{print $2}' || true)
  stop_server
  stat="$stat listen_drops=${drops:-?}"
  if [[ $sc == wrk256 ]]; then
    res=$(awk '/Requests\/sec/{rps=$2} /Socket errors/{err=$0}
               / 50%/{p50=$2} / 99%/{p99=$2} /requests in/{n=$1}
               END{printf "wrk rps=%s requests=%s p50=%s p99=%s %s",
                   rps, n, p50, p99, err}' "$f")
  else
    res=$(grep '^RESULT' "$f" | sed 's/^RESULT //')
  fi
  echo "r$r $sc $name $stat $res"
}

for r in $(seq "$rounds"); do
  echo "# round $r  load: $(cut -d' ' -f1-3 /proc/loadavg)"
  for sc in c16 c256 c256s32 wrk256; do
    for name in httplib beast httplib_t256; do
      run_one "$r" "$sc" "$name"
    done
  done
done

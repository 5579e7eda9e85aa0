# Shared helpers for the bench scripts: build brellium once, start emulators on loopback ports,
# read their stats. Source it; it cleans up the emulators it started on exit.
set -euo pipefail
BENCH_TMP=$(mktemp -d)
BENCH_PIDS=()
cleanup() {
  for p in "${BENCH_PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  rm -rf "$BENCH_TMP"
}
trap cleanup EXIT

build_brellium() {
  BRELLIUM="$BENCH_TMP/brellium"
  (cd "$(dirname "${BASH_SOURCE[0]}")/.." && go build -o "$BRELLIUM" .)
}

# start_emulator ARGS… : starts `brellium emulator --addr 127.0.0.1:0 ARGS…` and sets EMU_URL.
start_emulator() {
  local log="$BENCH_TMP/emulator.$RANDOM.log"
  "$BRELLIUM" emulator --addr 127.0.0.1:0 "$@" >"$log" 2>&1 &
  BENCH_PIDS+=($!)
  for _ in $(seq 1 100); do
    if grep -q '^listening on ' "$log"; then
      EMU_URL=$(sed -n 's/^listening on //p' "$log" | head -1)
      return 0
    fi
    sleep 0.05
  done
  echo "the emulator did not start:" >&2; cat "$log" >&2; return 1
}

# stat KEY : a counter from the emulator's /_emulator/stats (requests, rate_limited, …).
stat() {
  curl -s "$EMU_URL/_emulator/stats" | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"
}

now() { date +%s.%N; }

# curl_retry_loops INPUT : the reference wrapper, four `curl --retry 5` processes (xargs -P 4),
# each with a quarter of INPUT's paths (lines `GET PATH`) against EMU_URL; prints the wall
# seconds. A regular file as output: curl truncates it before a retry, which /dev/null refuses
# (exit 23).
curl_retry_loops() {
  local k t0 t1
  for k in 0 1 2 3; do
    awk -v k="$k" -v url="$EMU_URL" -v out="$BENCH_TMP/curl.out.$k" \
      'NR % 4 == k { print "url = \"" url $2 "\"\noutput = \"" out "\"" }' "$1" >"$BENCH_TMP/curl.$k"
  done
  t0=$(now)
  printf '%s\n' 0 1 2 3 | xargs -P 4 -I{} curl -s --retry 5 -H 'Authorization: Bearer bench' -K "$BENCH_TMP/curl.{}" || true
  t1=$(now)
  python3 -c "print($t1-$t0)"
}

# ratio A B : A / B with three decimals.
ratio() { python3 -c "print(f'{$1/$2:.3f}')"; }

# start_redis : starts a redis-server on a free loopback port and sets REDIS_URL ("" without one).
start_redis() {
  REDIS_URL=""
  command -v redis-server >/dev/null || return 0
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$BENCH_TMP" >/dev/null 2>&1 &
  BENCH_PIDS+=($!)
  sleep 0.3
  REDIS_URL="redis://127.0.0.1:$port/0"
}

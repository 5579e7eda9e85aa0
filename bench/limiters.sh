#!/usr/bin/env bash
# One budget for the organization: the same backfill run four ways side by side, four workers
# each, against one emulator with a scaled budget (burst 100, 200/s by default).
#   1. four `brellium batch --limiter process` (each its own bucket: the reference wrapper)
#   2. four `brellium batch --limiter local`   (one flock'd bucket for the machine)
#   3. four `brellium batch --limiter redis://…` (GCRA in Redis)
#   4. four `curl --retry 5` loops (xargs -P 4)
# For each: wall time ÷ the theoretical minimum (N - burst) / rate, and the 429 count.
# Usage: bench/limiters.sh   (env: N=3000 BURST=100 RATE=200; needs redis-server for way 3)
source "$(dirname "$0")/lib.sh"
N=${N:-3000} BURST=${BURST:-100} RATE=${RATE:-200}
build_brellium
for i in $(seq 1 "$N"); do printf 'GET /v2/audits/00000000-0000-4000-8000-%012d\n' $(( (i % 1000) + 1 )); done >"$BENCH_TMP/in.txt"
min=$(python3 -c "print(($N-$BURST)/$RATE)")

start_redis
redis_url=$REDIS_URL

printf '%-34s %8s %8s %7s %9s %6s\n' "way (4 workers, N=$N)" "wall s" "min s" "ratio" "requests" "429s"
row() { # row NAME WALL
  local reqs r429
  reqs=$(stat requests); r429=$(stat rate_limited)
  printf '%-34s %8.2f %8.2f %7s %9d %6d\n' "$1" "$2" "$min" "$(ratio "$2" "$min")" "$reqs" "$r429"
}

batch_way() { # batch_way NAME LIMITER
  start_emulator --burst "$BURST" --rate "$RATE" --audits 1000
  local cache="$BENCH_TMP/cache.$RANDOM" t0 t1
  t0=$(now)
  for k in 1 2 3 4; do
    BRELLIUM_ACCESS_TOKEN=bench BRELLIUM_CACHE_DIR="$cache" "$BRELLIUM" batch "$BENCH_TMP/in.txt" --shard "$k/4" \
      --base-url "$EMU_URL" --limiter "$2" --rate "$RATE" --burst "$BURST" --concurrency 4 -o /dev/null 2>/dev/null &
  done
  wait_batch
  t1=$(now)
  row "$1" "$(python3 -c "print($t1-$t0)")"
  kill "${BENCH_PIDS[-1]}" 2>/dev/null || true
}
wait_batch() { while pgrep -f "$BRELLIUM batch" >/dev/null; do sleep 0.05; done; }

batch_way "brellium --limiter process" process
batch_way "brellium --limiter local" local
if [ -n "$redis_url" ]; then batch_way "brellium --limiter redis" "$redis_url"; else echo "brellium --limiter redis: skipped (no redis-server)"; fi

start_emulator --burst "$BURST" --rate "$RATE" --audits 1000
row "curl --retry 5 (xargs -P 4)" "$(curl_retry_loops "$BENCH_TMP/in.txt")"

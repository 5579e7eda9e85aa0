#!/usr/bin/env bash
# A good neighbour on the organization's budget (issue 20): one emulator organization at burst 100
# and 50/s, another integration drawing 15/s from it in bursts of 5 (`emulator --neighbour`), and
# a backfill of N GETs run several ways, side by side in one run:
#   curl --retry 5 loops (xargs -P 4); brellium before --reserve (BEFORE, a git ref, built from
#   this repository); four brellium batches with --limiter process (a bucket each); brellium now:
#   --reserve 0, one batch (at --concurrency 4, and 32), four with --limiter local, four with
#   --limiter redis://… (needs redis-server); one batch with no neighbour; and one batch with
#   --rate auto (starting at the documented 5/s, learning the 50/s), with and without neighbour.
# For each: wall time, the bound the budget leaves, (N - (burst - reserve)) / (rate - neighbour),
# their ratio, brellium's requests and 429s, the neighbour's requests and 429s while it ran.
#   bash bench/neighbour.sh      (env: N=1000 BURST=100 RATE=50 NEIGHBOUR=15 NB_BURST=5 BEFORE=6c0e6b2;
#                                 ROWS=REGEX runs only the ways whose name matches)
source "$(dirname "$0")/lib.sh"
N=${N:-1000} BURST=${BURST:-100} RATE=${RATE:-50} NEIGHBOUR=${NEIGHBOUR:-15} NB_BURST=${NB_BURST:-5}
BEFORE=${BEFORE:-6c0e6b2}
RESERVE=$(( (BURST + 9) / 10 ))
build_brellium
repo=$(cd "$(dirname "$0")/.." && pwd)
OLD=""
if git -C "$repo" cat-file -e "$BEFORE^{commit}" 2>/dev/null; then
  mkdir -p "$BENCH_TMP/old"
  git -C "$repo" archive "$BEFORE" | tar -x -C "$BENCH_TMP/old"
  (cd "$BENCH_TMP/old" && go build -o "$BENCH_TMP/brellium-before" .) && OLD="$BENCH_TMP/brellium-before"
fi
for i in $(seq 1 "$N"); do printf 'GET /v2/audits/00000000-0000-4000-8000-%012d\n' $(( (i % 1000) + 1 )); done >"$BENCH_TMP/in.txt"

start_redis
redis_url=$REDIS_URL

echo "organization: burst $BURST, $RATE/s; neighbour: $NEIGHBOUR/s in bursts of $NB_BURST; N=$N GETs; default batch reserve $RESERVE"
printf '%-40s %7s %7s %6s %12s %14s\n' "way" "wall s" "bound s" "ratio" "brellium 429s" "neighbour 429s"
emulator_for() { # emulator_for NEIGHBOUR?  (yes|no)
  if [ "$1" = yes ]; then start_emulator --burst "$BURST" --rate "$RATE" --audits 1000 --neighbour "$NEIGHBOUR,burst=$NB_BURST"
  else start_emulator --burst "$BURST" --rate "$RATE" --audits 1000; fi
  nb0=$(stat neighbour_requests); nb4290=$(stat neighbour_rate_limited)
}
row() { # row NAME WALL RESERVE NEIGHBOUR?(yes|no)
  local reqs r429 nreq n429 others bound
  reqs=$(stat requests); r429=$(stat rate_limited)
  nreq=$(( $(stat neighbour_requests) - nb0 )); n429=$(( $(stat neighbour_rate_limited) - nb4290 ))
  others=0; [ "$4" = yes ] && others=$NEIGHBOUR
  bound=$(python3 -c "print(($N-($BURST-$3))/($RATE-$others))")
  printf '%-40s %7.2f %7.2f %6s %5d (%4.1f%%) %5d (%5.1f%%)\n' "$1" "$2" "$bound" "$(ratio "$2" "$bound")" \
    "$r429" "$(python3 -c "print(100*$r429/max($reqs,1))")" "$n429" "$(python3 -c "print(100*$n429/max($nreq,1))")"
  kill "${BENCH_PIDS[-1]}" 2>/dev/null || true
}
wait_batch() { while pgrep -f "$1 batch" >/dev/null; do sleep 0.05; done; }
wanted() { [[ "$1" =~ ${ROWS:-.} ]]; }
batches() { # batches NAME BIN WORKERS LIMITER RESERVE NEIGHBOUR? [extra flags…]
  local name=$1 bin=$2 k=$3 lim=$4 reserve=$5 nb=$6; shift 6
  wanted "$name" || return 0
  emulator_for "$nb"
  local cache="$BENCH_TMP/cache.$RANDOM" t0 t1
  rm -f "$BENCH_TMP"/err.*
  t0=$(now)
  for s in $(seq 1 "$k"); do
    BRELLIUM_ACCESS_TOKEN=bench BRELLIUM_CACHE_DIR="$cache" "$bin" batch "$BENCH_TMP/in.txt" --shard "$s/$k" \
      --base-url "$EMU_URL" --limiter "$lim" --rate "$RATE" --burst "$BURST" --concurrency 4 -o /dev/null "$@" 2>"$BENCH_TMP/err.$s" &
  done
  wait_batch "$bin"
  t1=$(now)
  row "$name" "$(python3 -c "print($t1-$t0)")" "$reserve" "$nb"
  # What the log said of the pace, first lines of the run.
  grep -h "^pace:" "$BENCH_TMP"/err.* 2>/dev/null | head -"${PACE_LINES:-2}" | sed "s/^/    /" || true
}

if wanted "curl --retry 5 (xargs -P 4)"; then
emulator_for yes
row "curl --retry 5 (xargs -P 4)" "$(curl_retry_loops "$BENCH_TMP/in.txt")" 0 yes
fi

if [ -n "$OLD" ]; then batches "brellium $BEFORE (no reserve), 1 batch" "$OLD" 1 local 0 yes
else echo "brellium $BEFORE: skipped (not in this repository's history)"; fi
batches "brellium --limiter process, 4 batches" "$BRELLIUM" 4 process "$RESERVE" yes
batches "brellium --reserve 0, 1 batch" "$BRELLIUM" 1 local 0 yes --reserve 0
batches "brellium (reserve $RESERVE), 1 batch" "$BRELLIUM" 1 local "$RESERVE" yes
batches "brellium (reserve $RESERVE), 1 batch, --concurrency 32" "$BRELLIUM" 1 local "$RESERVE" yes --concurrency 32
batches "brellium (reserve $RESERVE), 4 batches, local" "$BRELLIUM" 4 local "$RESERVE" yes
if [ -n "$redis_url" ]; then batches "brellium (reserve $RESERVE), 4 batches, redis" "$BRELLIUM" 4 "$redis_url" "$RESERVE" yes
else echo "brellium --limiter redis: skipped (no redis-server)"; fi
batches "brellium (reserve $RESERVE), 1 batch, no neighbour" "$BRELLIUM" 1 local "$RESERVE" no
batches "brellium --rate auto, 1 batch" "$BRELLIUM" 1 local "$RESERVE" yes --rate auto
batches "brellium --rate auto, 1 batch, no neighbour" "$BRELLIUM" 1 local "$RESERVE" no --rate auto

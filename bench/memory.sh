#!/usr/bin/env bash
# Memory stays flat, and a journal costs little, against an emulator with no effective limit:
#   1. peak RSS of `brellium batch --journal` over a LINES-line input (default 1,000,000), and of
#      the resume that finds every line done: each ≤ 64 MiB, the resume ≤ 0.1× the run's time;
#   2. the journal's cost: JLINES GETs (default 100,000) at concurrency 16, with and without
#      --journal, median of 3 interleaved rounds: ≤ 1.2×;
#   3. hostile bodies: 24 lines of 8 MB bodies and of gzip bombs (1 GiB inflated) at concurrency
#      4, 16 and 64, through both clients: ≤ 128 MiB;
#   4. peak RSS of `brellium get` of a 1 GiB body to stdout: ≤ 64 MiB.
# Usage: bench/memory.sh   (env: LINES=1000000 JLINES=100000 CONCURRENCY=8)
source "$(dirname "$0")/lib.sh"
LINES=${LINES:-1000000} JLINES=${JLINES:-100000} CONCURRENCY=${CONCURRENCY:-8}
build_brellium
start_emulator --burst 1000000000 --rate 1000000000
export BRELLIUM_ACCESS_TOKEN=bench
sample="GET /v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"

# timed NAME ARGS… : runs brellium under /usr/bin/time, sets RSS_MIB and WALL_S.
timed() {
  local name=$1; shift
  /usr/bin/time -f "%M %e" -o "$BENCH_TMP/$name.time" "$BRELLIUM" "$@" >/dev/null 2>"$BENCH_TMP/$name.err" || true
  # A command that exits non-zero gets a "Command exited with non-zero status N" line first.
  read -r rss WALL_S < <(tail -1 "$BENCH_TMP/$name.time")
  RSS_MIB=$(python3 -c "print(f'{$rss/1024:.1f}')")
}

awk -v n="$LINES" -v l="$sample" 'BEGIN { for (i = 1; i <= n; i++) print l }' >"$BENCH_TMP/in.txt"
timed run batch "$BENCH_TMP/in.txt" --base-url "$EMU_URL" --limiter off --concurrency "$CONCURRENCY" -o /dev/null --journal "$BENCH_TMP/j"
grep '^batch:' "$BENCH_TMP/run.err" || true
printf 'memory: %d lines with --journal: peak RSS %s MiB (target ≤ 64 MiB), wall %s s\n' "$LINES" "$RSS_MIB" "$WALL_S"
run_s=$WALL_S
timed resume batch "$BENCH_TMP/in.txt" --base-url "$EMU_URL" --limiter off --concurrency "$CONCURRENCY" -o /dev/null --journal "$BENCH_TMP/j"
grep '^batch:' "$BENCH_TMP/resume.err" || true
printf 'memory: the resume that skips every line: peak RSS %s MiB (target ≤ 64 MiB), wall %s s = %s of the run (target ≤ 0.1)\n' \
  "$RSS_MIB" "$WALL_S" "$(ratio "$WALL_S" "$run_s")"

awk -v n="$JLINES" -v l="$sample" 'BEGIN { for (i = 1; i <= n; i++) print l }' >"$BENCH_TMP/j.txt"
plain=() journalled=()
for round in 1 2 3; do
  timed plain batch "$BENCH_TMP/j.txt" --base-url "$EMU_URL" --limiter off --concurrency 16 -o /dev/null
  plain+=("$WALL_S")
  rm -f "$BENCH_TMP/j2"
  timed journalled batch "$BENCH_TMP/j.txt" --base-url "$EMU_URL" --limiter off --concurrency 16 -o /dev/null --journal "$BENCH_TMP/j2"
  journalled+=("$WALL_S")
done
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
printf 'journal: %d GETs at concurrency 16: %s s without, %s s with --journal (medians of 3): %s× (target ≤ 1.2)\n' \
  "$JLINES" "$(median "${plain[@]}")" "$(median "${journalled[@]}")" "$(ratio "$(median "${journalled[@]}")" "$(median "${plain[@]}")")"

for q in "bytes=8000000" "bytes=1073741824&gzip=1"; do
  awk -v q="$q" 'BEGIN { for (i = 1; i <= 24; i++) print "GET /_emulator/blob?" q }' >"$BENCH_TMP/hostile.txt"
  for c in 4 16 64; do
    for client in fast net; do
      BRELLIUM_BATCH_CLIENT=$client timed hostile batch "$BENCH_TMP/hostile.txt" --base-url "$EMU_URL" --limiter off --concurrency "$c" -o /dev/null
      printf 'hostile: 24 × %-24s concurrency %-2d %-4s peak RSS %6s MiB (target ≤ 128 MiB) · %s\n' "$q" "$c" "$client" "$RSS_MIB" \
        "$(sed -n 's/^batch: //p' "$BENCH_TMP/hostile.err" | sed 's/ ·.*//')"
    done
  done
done

# A 1 GiB response body goes to stdout as it arrives.
timed blob get "/_emulator/blob?bytes=1073741824" --base-url "$EMU_URL" --limiter off -s
printf 'memory: a 1 GiB body to stdout, peak RSS %s MiB (target ≤ 64 MiB), wall %s s\n' "$RSS_MIB" "$WALL_S"

#!/usr/bin/env bash
# Memory stays flat: peak RSS of `brellium batch` over a LINES-line input (default 1,000,000)
# and of `brellium get` of a 1 GiB body,
# against an emulator with no effective limit. Target: under 64 MiB.
# Usage: bench/memory.sh   (env: LINES=1000000 CONCURRENCY=8)
source "$(dirname "$0")/lib.sh"
LINES=${LINES:-1000000} CONCURRENCY=${CONCURRENCY:-8}
build_brellium
start_emulator --burst 1000000000 --rate 1000000000
awk -v n="$LINES" 'BEGIN { for (i = 1; i <= n; i++) print "GET /v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d" }' >"$BENCH_TMP/in.txt"
BRELLIUM_ACCESS_TOKEN=bench /usr/bin/time -v "$BRELLIUM" batch "$BENCH_TMP/in.txt" --base-url "$EMU_URL" \
  --limiter off --concurrency "$CONCURRENCY" -o /dev/null 2>"$BENCH_TMP/time.txt" || true
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$BENCH_TMP/time.txt")
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$BENCH_TMP/time.txt")
grep '^batch:' "$BENCH_TMP/time.txt" || true
printf 'memory: %d lines, peak RSS %.1f MiB (target ≤ 64 MiB), wall %s\n' "$LINES" "$(python3 -c "print($rss/1024)")" "$wall"

# A 1 GiB response body goes to stdout as it arrives.
BRELLIUM_ACCESS_TOKEN=bench /usr/bin/time -v "$BRELLIUM" get "/_emulator/blob?bytes=1073741824" --base-url "$EMU_URL" \
  --limiter off -s >"$BENCH_TMP/blob.out" 2>"$BENCH_TMP/time2.txt" || true
size=$(wc -c <"$BENCH_TMP/blob.out"); rm -f "$BENCH_TMP/blob.out"  # not stat: lib.sh has a stat()
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$BENCH_TMP/time2.txt")
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$BENCH_TMP/time2.txt")
printf 'memory: a %d-byte body, peak RSS %.1f MiB (target ≤ 64 MiB), wall %s\n' "$size" "$(python3 -c "print($rss/1024)")" "$wall"

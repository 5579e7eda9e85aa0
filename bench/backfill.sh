#!/usr/bin/env bash
# Budgeted backfill: N GETs through `brellium batch` against the emulator at a scaled budget.
# Prints wall time ÷ the theoretical minimum (N - burst) / rate, and the 429 count.
# Usage: bench/backfill.sh   (env: N=3000 BURST=100 RATE=200 CONCURRENCY=4)
source "$(dirname "$0")/lib.sh"
N=${N:-3000} BURST=${BURST:-100} RATE=${RATE:-200} CONCURRENCY=${CONCURRENCY:-4}
build_brellium
start_emulator --burst "$BURST" --rate "$RATE" --audits 1000
for i in $(seq 1 "$N"); do printf 'GET /v2/audits/00000000-0000-4000-8000-%012d\n' $(( (i % 1000) + 1 )); done >"$BENCH_TMP/in.txt"

t0=$(now)
BRELLIUM_ACCESS_TOKEN=bench "$BRELLIUM" batch "$BENCH_TMP/in.txt" --base-url "$EMU_URL" \
  --rate "$RATE" --burst "$BURST" --limiter process --concurrency "$CONCURRENCY" -o "$BENCH_TMP/out.jsonl" 2>"$BENCH_TMP/err.txt" || true
t1=$(now)
wall=$(python3 -c "print($t1-$t0)")
min=$(python3 -c "print(($N-$BURST)/$RATE)")
ok=$(grep -c '"outcome":"ok"' "$BENCH_TMP/out.jsonl" || true)
r429=$(stat rate_limited)
reqs=$(stat requests)
printf 'backfill: N=%d burst=%d rate=%g/s concurrency=%d\n' "$N" "$BURST" "$RATE" "$CONCURRENCY"
printf '  wall %.2fs, theoretical minimum %.2fs, ratio %s\n' "$wall" "$min" "$(ratio "$wall" "$min")"
printf '  ok %d/%d, requests %d, 429s %d (%s%%)\n' "$ok" "$N" "$reqs" "$r429" "$(python3 -c "print(f'{100*$r429/max($reqs,1):.2f}')")"
tail -1 "$BENCH_TMP/err.txt"

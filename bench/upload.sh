#!/usr/bin/env bash
# Uploads: brellium upload against curl -T, side by side, to the emulator's uploads origin on
# loopback (which hashes every byte it gets). A sparse file of SIZE (default 2G) is read from
# disk for each attempt: the figure that matters is brellium's peak memory, which must not grow
# with the file, and its time against curl's on the same machine.
#   bash bench/upload.sh [SIZE] [RUNS]
source "$(dirname "$0")/lib.sh"
size=${1:-2G}
runs=${2:-3}
build_brellium
start_emulator
export BRELLIUM_ACCESS_TOKEN=sandbox
file="$BENCH_TMP/upload.bin"
truncate -s "$size" "$file"
new_url() {
  "$BRELLIUM" post /v2/documents --base-url "$EMU_URL" --limiter process -s \
    -d "{\"documents\":[{\"external_id\":\"bench-$RANDOM$RANDOM\",\"file_name\":\"upload.bin\"}]}" -q '.data[0].upload_url'
}
echo "file: $size (sparse), runs: $runs, after one warm-up upload of each (the first large upload"
echo "to a fresh emulator measured up to 2.8 times slower in trials, so no client is timed on it)"
"$BRELLIUM" upload "$(new_url)" "$file" --timeout 0 --max-time 0 -s >/dev/null
curl -s -T "$file" "$(new_url)" -o /dev/null
for i in $(seq 1 "$runs"); do
  url=$(new_url)
  b=$( { /usr/bin/time -f "%e %M" "$BRELLIUM" upload "$url" "$file" --timeout 0 --max-time 0 -s >/dev/null; } 2>&1 | tail -1)
  url=$(new_url)
  c=$( { /usr/bin/time -f "%e %M" curl -s -T "$file" "$url" -o /dev/null; } 2>&1 | tail -1)
  read -r bt bm <<<"$b"; read -r ct cm <<<"$c"
  echo "run $i: brellium ${bt}s ${bm} KiB peak · curl -T ${ct}s ${cm} KiB peak · time ratio $(ratio "$bt" "$ct")"
done
echo "uploads stored: $(stat uploads) (2 warm-ups included), requests with Authorization: $(stat upload_authorization)"

#!/usr/bin/env bash
# The emulator alone: requests per second that wrk gets from it on loopback (GET of an audit,
# 32 connections, no effective limit), so that the other benchmarks can tell whether the
# emulator is their bottleneck. Needs wrk (apt-get install wrk).
# Usage: bench/emulator.sh   (env: DURATION=10s CONNECTIONS=32)
source "$(dirname "$0")/lib.sh"
DURATION=${DURATION:-10s} CONNECTIONS=${CONNECTIONS:-32}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
build_brellium
start_emulator --burst 1000000000 --rate 1000000000
wrk -t 2 -c "$CONNECTIONS" -d "$DURATION" -H 'Authorization: Bearer bench' \
  "$EMU_URL/v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d" | sed -n 's/^Requests\/sec: *//p' |
  xargs printf 'emulator alone (wrk, %d connections): %.0f req/s\n' "$CONNECTIONS"

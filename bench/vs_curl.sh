#!/usr/bin/env bash
# brellium against curl where only the client counts: an emulator with no effective limit on
# loopback, both run side by side in one run. Prints ratios.
#   1. single-call latency: CALLS calls each of `brellium get` and `curl -s`, interleaved;
#      the median process wall time, and brellium's ÷ curl's (target ≤ 1.3).
#   2. throughput: N GETs at concurrency 32 through `brellium batch` (and again with
#      BRELLIUM_BATCH_CLIENT=net, net/http alone), `curl --parallel --parallel-max 32 -K config`
#      and `xargs -P 32 curl`; requests per second, and brellium's ÷ curl --parallel's
#      (target ≥ 1.2).
# Usage: bench/vs_curl.sh   (env: CALLS=200 N=20000 ROUNDS=5)
source "$(dirname "$0")/lib.sh"
CALLS=${CALLS:-200} N=${N:-20000}
build_brellium
start_emulator --burst 1000000000 --rate 1000000000 --audits 1000
path=/v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d
export BRELLIUM_ACCESS_TOKEN=bench BRELLIUM_CACHE_DIR="$BENCH_TMP/cache"

echo "1. single call, $CALLS each, interleaved (default flags: --limiter local, one state file)"
python3 - "$BRELLIUM" "$EMU_URL" "$path" "$CALLS" <<'PY'
import statistics, subprocess, sys, time
bin, url, path, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
b_cmd = [bin, "get", path, "--base-url", url, "-s"]
c_cmd = ["curl", "-s", "-H", "Authorization: Bearer bench", url + path]
tb, tc = [], []
for _ in range(calls):
    for cmd, acc in ((b_cmd, tb), (c_cmd, tc)):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        acc.append(time.perf_counter() - t0)
mb, mc = statistics.median(tb), statistics.median(tc)
print(f"   brellium get  median {mb*1000:6.2f} ms")
print(f"   curl -s       median {mc*1000:6.2f} ms")
print(f"   ratio brellium ÷ curl: {mb/mc:.2f} (target ≤ 1.3)")
PY

echo "2. throughput: $N GETs, concurrency 32"
for i in $(seq 1 "$N"); do printf 'GET /v2/audits/00000000-0000-4000-8000-%012d\n' $(( (i % 1000) + 1 )); done >"$BENCH_TMP/in.txt"
awk -v url="$EMU_URL" '{ print "url = \"" url $2 "\"\noutput = \"/dev/null\"" }' "$BENCH_TMP/in.txt" >"$BENCH_TMP/curl.cfg"
awk -v url="$EMU_URL" '{ print url $2 }' "$BENCH_TMP/in.txt" >"$BENCH_TMP/urls.txt"

python3 - "$BRELLIUM" "$EMU_URL" "$BENCH_TMP" "$N" "${ROUNDS:-5}" <<'PY'
import statistics, subprocess, sys, time
bin, url, tmp, n, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
batch = [bin, "batch", f"{tmp}/in.txt", "--base-url", url, "--limiter", "off", "--concurrency", "32", "-o", "/dev/null"]
ways = {
    "brellium batch --concurrency 32": batch,
    "  the same, BRELLIUM_BATCH_CLIENT=net": ["env", "BRELLIUM_BATCH_CLIENT=net"] + batch,
    "curl --parallel --parallel-max 32": ["curl", "-s", "--parallel", "--parallel-max", "32",
                                          "-H", "Authorization: Bearer bench", "-K", f"{tmp}/curl.cfg"],
    "xargs -P 32 curl (50 URLs each)": ["sh", "-c", f"xargs -P 32 -n 50 curl -s -H 'Authorization: Bearer bench' < {tmp}/urls.txt"],
}
rps = {k: [] for k in ways}
for _ in range(rounds):  # interleaved, so that drift in the machine hits every way alike
    for name, cmd in ways.items():
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        rps[name].append(n / (time.perf_counter() - t0))
med = {k: statistics.median(v) for k, v in rps.items()}
for name, v in med.items():
    print(f"   {name:36s} {v:8.0f} req/s (median of {rounds})")
b, bn, c, x = med.values()
print(f"   ratio brellium ÷ curl --parallel: {b/c:.2f} (target ≥ 1.2)")
print(f"   ratio brellium (net/http) ÷ curl --parallel: {bn/c:.2f}")
print(f"   ratio brellium ÷ xargs curl:      {b/x:.2f}")
PY

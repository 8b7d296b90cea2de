# Sourced by the benchmark scripts: one h2load measurement of a server.
# Uses WORK (scratch directory with body.json), DURATION, WARMUP and HEADERS from the caller.

run() { # name uris shape -> "req/s p50 p99 ok total"
  # Two passes: throughput without h2load's per-request log (which costs h2load enough to cap nghttpd),
  # then latency percentiles from the log of a second pass. The log is NAME.requests: a server's own
  # output is NAME.log in the callers, shown when it fails.
  local name=$1 uris=$2 shape=$3 log="$WORK/$1.requests"
  rm -f "$log"
  # shellcheck disable=SC2086
  taskset -c 1 h2load $shape -D $DURATION --warm-up-time $WARMUP -d "$WORK/body.json" "${HEADERS[@]}" \
    -i "$uris" > "$WORK/$name.out" 2>&1 || true
  # shellcheck disable=SC2086
  taskset -c 1 h2load $shape -D $DURATION --warm-up-time $WARMUP -d "$WORK/body.json" "${HEADERS[@]}" \
    -i "$uris" --log-file "$log" > "$WORK/$name-latency.out" 2>&1 || true
  python3 - "$log" "$WORK/$name.out" <<'PY'
import re, sys
lat = []; ok = 0
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) >= 3:
        lat.append(int(parts[2]))
        ok += parts[1] == "200"
lat.sort()
out = open(sys.argv[2]).read()
rps = re.search(r"finished in .*?, ([\d.]+) req/s", out)
if not lat or not rps or ok == 0:
    sys.exit(f"h2load: {len(lat)} requests answered, {ok} with 200 (see {sys.argv[2]})")
def pct(p): return lat[min(len(lat) - 1, int(len(lat) * p))] / 1000
print(f"{float(rps.group(1)) if rps else 0:.0f} {pct(0.50):.2f} {pct(0.99):.2f} {ok} {len(lat)}")
PY
}

#!/usr/bin/env bash
# Push rates a 2-core machine sustains: a gateway (core 0), N simulated devices (default 10,000) and
# `pushgate bench` (both on core 1) with the realistic mix, open loop at increasing rates. Reports per
# rate: achieved rate, POST latency (from the intended send time), accept-to-device-ack latency and the
# silent outcomes; then the highest rate whose POST p99 stayed under 20 ms.
# Usage: Benchmarks/bench-rates.sh [devices] [seconds per rate] [rates...]
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICES=${1:-10000}
STEP=${2:-10}
shift $(( $# > 2 ? 2 : $# )) || true
RATES=("$@")
[ ${#RATES[@]} -gt 0 ] || RATES=(2000 5000 10000 15000 20000 30000 40000)
# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh
SETTINGS=(--set "data_dir=$WORK/data" --set event_loops=1 --set devices.port=22499 --set devices.tls.enabled=false
  --set provider.tls.enabled=false --set provider.h2c.port=22498 --set admin.port=22497 --set log.level=warning
  --set provider.rate.device_token.per_second=0 --set provider.rate.team.per_second=0)
(cd "$WORK" && "$PG" keys generate --team-id TEAM123456 --key-id KEY1234567 "${SETTINGS[@]}" >/dev/null)
taskset -c 0 "$PG" serve "${SETTINGS[@]}" 2> "$WORK/serve.log" &
GW=$!
wait_ready $GW 22497 "$WORK/serve.log"
taskset -c 1 "$PG" simulate --profile default --port 22499 --devices "$DEVICES" --threads 1 --duration 3600 \
  --data-dir "$WORK/data" --tokens-file "$WORK/tokens.txt" > "$WORK/simulate.log" 2>&1 &
SIM=$!
wait_tokens $SIM "$WORK/tokens.txt" "$WORK/simulate.log"
for rate in "${RATES[@]}"; do
  taskset -c 1 "$PG" bench --url http://127.0.0.1:22498 --tokens "$WORK/tokens.txt" --rate "$rate" \
    --duration "$STEP" --connections 4 --streams 200 --key "$WORK/AuthKey_KEY1234567.p8" --team-id TEAM123456 \
    --key-id KEY1234567 --admin http://127.0.0.1:22497 --json "$WORK/rate-$rate.json" > "$WORK/rate-$rate.txt" 2>&1 \
    || { show_log "$WORK/rate-$rate.txt"; fail "pushgate bench at $rate/s failed"; }
  kill -0 $SIM 2>/dev/null || { show_log "$WORK/simulate.log"; fail "the simulator exited at $rate/s"; }
  sleep 2
done
echo "Push rates — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores; gateway on core 0, $DEVICES devices and the generator on core 1; realistic mix, ${STEP}s per rate"
echo
python3 - "$WORK" "${RATES[@]}" <<'PY'
import json, os, sys
work, rates = sys.argv[1], sys.argv[2:]
print("| target /s | accepted /s | errors | POST p50 / p99 / p99.9 ms | accept→ack p50 / p99 ms | silent: on budget / piggybacked / coalesced / held | deadline misses |")
print("|---|---|---|---|---|---|---|")
best = None
for rate in rates:
    path = os.path.join(work, f"rate-{rate}.json")
    if not os.path.exists(path):
        sys.exit(f"bench-rates.sh: no figures for {rate}/s")
    r = json.load(open(path))
    if r["acceptedPerSecond"] <= 0:
        sys.exit(f"bench-rates.sh: no push accepted at {rate}/s")
    l, g = r["latency"], r.get("gateway") or {}
    e = g.get("acceptToDeviceAck") or {}
    errors = sum(r["rejected"].values()) + sum(r["failed"].values())
    piggy = g.get("releasedOnAlert", 0) + g.get("releasedOnKeepAlive", 0) + g.get("releasedOtherwise", 0)
    print(f"| {rate} | {r['acceptedPerSecond']:.0f} | {errors} | {l['p50']:.2f} / {l['p99']:.2f} / {l['p999']:.2f} | "
          f"{e.get('p50', float('nan')):.2f} / {e.get('p99', float('nan')):.2f} | {g.get('wokenOnBudget', 0)} / {piggy} / "
          f"{g.get('coalesced', 0)} / {g.get('stillHeld', 0)} | {g.get('deadlineMisses', 0)} |")
    if l["p99"] < 20 and errors == 0 and r["acceptedPerSecond"] >= 0.97 * float(rate):
        best = rate
print()
print(f"Highest rate with POST p99 under 20 ms, no errors, and the rate achieved: {best or 'none'} pushes/s")
PY

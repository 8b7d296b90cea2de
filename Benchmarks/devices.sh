#!/usr/bin/env bash
# Device fleet: connects N simulated devices (default 10,000) over loopback to one gateway and reports
# the gateway's resident memory per connected device and its CPU while the fleet keeps alive.
# Usage: Benchmarks/devices.sh [devices] [seconds to watch, default 60]
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICES=${1:-10000}
WATCH=${2:-60}
# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh
SETTINGS=(--set "data_dir=$WORK/data" --set event_loops=1 --set devices.port=22299 --set devices.tls.enabled=false
  --set provider.tls.enabled=false --set provider.h2c.port=22298 --set admin.port=22297 --set log.level=warning
  --set devices.keep_alive_seconds=60)
taskset -c 0 "$PG" serve "${SETTINGS[@]}" 2> "$WORK/serve.log" &
GW=$!
wait_ready $GW 22297 "$WORK/serve.log"
rss() { awk '/VmRSS/ {print $2}' /proc/$GW/status; }
cpu() { awk '{print $14 + $15}' /proc/$GW/stat; }
BEFORE=$(rss)
taskset -c 1 "$PG" simulate --profile default --host 127.0.0.1 --port 22299 --devices "$DEVICES" --threads 1 \
  --data-dir "$WORK/data" --duration $((WATCH + 180)) --tokens-file "$WORK/tokens.txt" > "$WORK/simulate.log" 2>&1 &
SIM=$!
START=$(date +%s)
wait_tokens $SIM "$WORK/tokens.txt" "$WORK/simulate.log"
CONNECTED_IN=$(( $(date +%s) - START ))
AFTER=$(rss)
TICKS_BEFORE=$(cpu)
sleep "$WATCH"
TICKS_AFTER=$(cpu)
kill -0 $GW 2>/dev/null || { show_log "$WORK/serve.log"; fail "the gateway exited during the run"; }
kill -0 $SIM 2>/dev/null || { show_log "$WORK/simulate.log"; fail "the simulator exited during the run"; }
CONNECTED=$(curl -sf http://127.0.0.1:22297/v1/counters | python3 -c 'import json, sys; print(json.load(sys.stdin)["connectedDevices"])') \
  || fail "cannot read the gateway's counters"
[ "$CONNECTED" -eq "$DEVICES" ] || fail "$CONNECTED of $DEVICES devices connected at the end of the run"
need "RSS before" "$BEFORE"; need "RSS after" "$AFTER"; need "CPU ticks" "$TICKS_BEFORE"; need "CPU ticks" "$TICKS_AFTER"
HZ=$(getconf CLK_TCK)
echo "Device fleet — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), gateway on core 0, devices on core 1"
echo
echo "| devices | connected and installed in | gateway RSS before / after | per device | gateway CPU over ${WATCH}s (60 s keep-alives) |"
echo "|---|---|---|---|---|"
python3 -c "
before, after, devices = $BEFORE, $AFTER, $DEVICES
ticks = ($TICKS_AFTER - $TICKS_BEFORE) / $HZ
print(f'| {devices} | ${CONNECTED_IN} s | {before/1024:.1f} MB / {after/1024:.1f} MB | {(after-before)*1024/devices/1024:.1f} KB | {100*ticks/$WATCH:.1f} % of a core |')
"

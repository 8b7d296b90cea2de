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
  --set provider.tls.enabled=false --set provider.h2c.port=22298 --set log.level=warning --set devices.keep_alive_seconds=60)
taskset -c 0 "$PG" serve "${SETTINGS[@]}" 2> "$WORK/serve.log" &
GW=$!
sleep 2
rss() { awk '/VmRSS/ {print $2}' /proc/$GW/status; }
cpu() { awk '{print $14 + $15}' /proc/$GW/stat; }
BEFORE=$(rss)
taskset -c 1 "$PG" simulate --profile default --host 127.0.0.1 --port 22299 --devices "$DEVICES" --threads 1 \
  --duration $((WATCH + 120)) --tokens-file "$WORK/tokens.txt" > "$WORK/simulate.log" 2>&1 &
SIM=$!
START=$(date +%s)
until [ -s "$WORK/tokens.txt" ] || [ $(( $(date +%s) - START )) -gt 120 ]; do sleep 1; done
CONNECTED_IN=$(( $(date +%s) - START ))
AFTER=$(rss)
TICKS_BEFORE=$(cpu)
sleep "$WATCH"
TICKS_AFTER=$(cpu)
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
tail -1 "$WORK/simulate.log" | tr '\r' '\n' | tail -1

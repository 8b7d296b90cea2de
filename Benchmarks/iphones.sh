#!/usr/bin/env bash
# Simulated iPhones: N devices (default 10,000) of the shipped mix (news 40, chat 30, podcast 20,
# misbehaving 10) against a gateway (core 0) and a content server (`pushgate origin`, core 0), the
# simulator alone on core 1. Measures the simulator's resident memory per device (against a one-device
# run) and its CPU: first idle (the iOS rules, the users' habits and the keep-alives only), then over a
# window after a version is published and announced (silent pushes and alerts to every app). Ends with
# the freshness table the run produced.
# Usage: Benchmarks/iphones.sh [devices] [seconds per window, default 60]
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICES=${1:-10000}
WATCH=${2:-60}
# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh
SETTINGS=(--set "data_dir=$WORK/data" --set event_loops=1 --set devices.port=22599 --set devices.tls.enabled=false
  --set provider.tls.enabled=false --set provider.h2c.port=22598 --set admin.port=22597 --set log.level=warning
  --set provider.rate.device_token.per_second=0 --set provider.rate.team.per_second=0)
(cd "$WORK" && "$PG" keys generate --team-id TEAM123456 --key-id KEY1234567 "${SETTINGS[@]}" >/dev/null)
taskset -c 0 "$PG" serve "${SETTINGS[@]}" 2> "$WORK/serve.log" &
wait_ready $! 22597 "$WORK/serve.log"
taskset -c 0 "$PG" origin --port 22596 > "$WORK/origin.log" 2>&1 &
ORIGIN=$!
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:22596/manifest >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf http://127.0.0.1:22596/manifest >/dev/null || { show_log "$WORK/origin.log"; fail "the content server did not start"; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
simulate() { # devices, seconds, tokens file, more flags (run in the background: `exec` keeps its PID)
  local n=$1 seconds=$2 tokens=$3; shift 3
  exec taskset -c 1 "$PG" simulate --port 22599 --devices "$n" --threads 1 --data-dir "$WORK/data" \
    --origin http://127.0.0.1:22596 --provider http://127.0.0.1:22598 --key "$WORK/AuthKey_KEY1234567.p8" \
    --team-id TEAM123456 --key-id KEY1234567 --publish-every 0 --duration "$seconds" --tokens-file "$tokens" "$@"
}
# The baseline: one device (the process, its threads, the HTTP client, the runtime's tables).
simulate 1 60 "$WORK/one.txt" > "$WORK/one.log" 2>&1 &
ONE=$!
wait_tokens $ONE "$WORK/one.txt" "$WORK/one.log"; sleep "${SETTLE:-5}"
BASE=$(rss $ONE)
kill -INT $ONE; wait $ONE 2>/dev/null || true
simulate "$DEVICES" $((3 * WATCH + 240)) "$WORK/tokens.txt" --json "$WORK/fleet.json" > "$WORK/simulate.log" 2>&1 &
SIM=$!
START=$(date +%s)
wait_tokens $SIM "$WORK/tokens.txt" "$WORK/simulate.log"
INSTALLED_IN=$(( $(date +%s) - START ))
sleep "${SETTLE:-10}"
IDLE_RSS=$(rss $SIM); T0=$(cpu $SIM); sleep "$WATCH"; T1=$(cpu $SIM)
curl -sf -X POST http://127.0.0.1:22596/publish > /dev/null || fail "the content server did not publish"
T2=$(cpu $SIM); sleep "$WATCH"; T3=$(cpu $SIM)
BUSY_RSS=$(rss $SIM)
kill -INT $SIM; wait $SIM 2>/dev/null || true
for figure in "$BASE" "$IDLE_RSS" "$BUSY_RSS" "$T0" "$T1" "$T2" "$T3"; do need "memory or CPU" "$figure"; done
grep -q "^freshness at open" "$WORK/simulate.log" || { show_log "$WORK/simulate.log"; fail "the simulator printed no freshness table"; }
HZ=$(getconf CLK_TCK)
echo "Simulated iPhones — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores; gateway and origin on core 0, the simulator on core 1"
echo
echo "| devices | installed in | simulator RSS: one device / idle / after a publication | per device (idle / after) | simulator CPU idle over ${WATCH} s | CPU over ${WATCH} s after a publication |"
echo "|---|---|---|---|---|---|"
python3 -c "
base, idle, busy, n, hz, w = $BASE, $IDLE_RSS, $BUSY_RSS, $DEVICES, $HZ, $WATCH
print(f'| {n} | ${INSTALLED_IN} s | {base/1024:.1f} / {idle/1024:.1f} / {busy/1024:.1f} MB | {(idle-base)/n:.2f} / {(busy-base)/n:.2f} KB | {100*($T1-$T0)/hz/w:.1f} % of a core | {100*($T3-$T2)/hz/w:.1f} % of a core |')
"
echo
sed -n '/^freshness at open/,$p' "$WORK/simulate.log" | grep -v "^figures written"

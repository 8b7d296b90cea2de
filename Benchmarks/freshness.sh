#!/usr/bin/env bash
# Freshness in real time: N simulated iPhones (default 2,000) of the shipped mix against a gateway, a
# built-in content server on a 20 Mbit/s link publishing every P seconds (default 120), each version
# announced through the provider API, users opening apps 12 more times an hour than their habits, for
# S seconds (default 720: long enough for discretionary background downloads, 300 s late, to land).
# Prints the simulator's freshness table; with OUT=file.json, every figure goes there too.
# Usage: Benchmarks/freshness.sh [devices] [seconds] [publish every]
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICES=${1:-2000}
SECONDS_=${2:-720}
EVERY=${3:-120}
# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh
announcing_gateway 22900
"$PG" simulate "${ANNOUNCE[@]}" --devices "$DEVICES" --tokens-file "$WORK/tokens.txt" \
  --publish-every "$EVERY" --link-bytes-per-second 2500000 --opens-per-hour 12 --duration "$SECONDS_" \
  ${OUT:+--json "$OUT"} > "$WORK/simulate.log" 2>&1 || { show_log "$WORK/simulate.log"; fail "the simulator failed"; }
grep -q "^freshness at open" "$WORK/simulate.log" || { show_log "$WORK/simulate.log"; fail "the simulator printed no freshness table"; }
echo "Freshness — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $DEVICES iPhones, ${SECONDS_} s, a version every ${EVERY} s"
echo
sed -n '/^connected/,$p' "$WORK/simulate.log" | grep -v "^figures written"

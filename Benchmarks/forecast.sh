#!/usr/bin/env bash
# pushgate forecast: a day of N iPhones (default 100,000) of the shipped mix, a version every 10 minutes
# announced as each app's backend does, on one thread and on every core; then a day of M iPhones
# (default 1,000,000) on every core, a --search over 24 variants of 10,000 iPhones, and the same search
# under 3 assumptions (--assume policy.budget.capacity=2,3,5: 72 runs). Prints wall
# time, events per second and peak resident memory (GNU time), and per device above a 1-device run's.
# Fails (non-zero) if a run fails or prints no figure.
# Usage: Benchmarks/forecast.sh [devices, default 100000] [large fleet, default 1000000; 0 skips it]
#        [devices per search variant, default 10000]
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICES=${1:-100000}
LARGE=${2:-1000000}
SEARCHED=${3:-10000}
# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh
command -v /usr/bin/time >/dev/null || { echo "forecast.sh: needs GNU time (apt-get install time)" >&2; exit 1; }
CORES=$(nproc)

run() { # label, flags…: prints one row
  local label=$1; shift
  /usr/bin/time -v "$PG" forecast "$@" > "$WORK/out.txt" 2> "$WORK/time.txt"
  local events wall rss
  events=$(grep -oE '[0-9,]+ events/s' "$WORK/out.txt" | tr -d ', events/s' || true)
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$WORK/time.txt")
  rss=$(awk '/Maximum resident set size/ {print $6}' "$WORK/time.txt")
  if [ -z "$events" ] || [ -z "$rss" ]; then
    echo "forecast.sh: $label printed no figure" >&2; cat "$WORK/out.txt" "$WORK/time.txt" >&2; exit 1
  fi
  echo "$label|$wall|$events|$rss"
}

base=$(run "1 device" --devices 1 --threads 1 | cut -d'|' -f4)
echo "| run | wall | events/s | peak RSS | per device above a 1-device run |"
echo "|---|---|---|---|---|"
row() { # label, devices, flags…
  local label=$1 n=$2; shift 2
  local line; line=$(run "$label" --devices "$n" "$@")
  IFS='|' read -r l wall events rss <<< "$line"
  echo "| $l | $wall | $events | $((rss / 1024)) MB | $(awk -v r="$rss" -v b="$base" -v n="$n" 'BEGIN {printf "%.2f KB", (r - b) / n}') |"
}
row "$DEVICES iPhones, a day, 1 thread" "$DEVICES" --threads 1
row "$DEVICES iPhones, a day, $CORES threads" "$DEVICES" --threads "$CORES"
if [ "$LARGE" -gt 0 ]; then row "$LARGE iPhones, a day, $CORES threads" "$LARGE" --threads "$CORES"; fi
start=$(date +%s.%N)
"$PG" forecast --devices "$SEARCHED" --threads "$CORES" --search app.com.example.news.announce=silent,silent_and_alert,none \
  --search app.com.example.news.fetch=minimum,3600 --search policy.budget.capacity=2,3,5,8 > "$WORK/search.txt" \
  || { cat "$WORK/search.txt" >&2; echo "forecast.sh: the search failed" >&2; exit 1; }
end=$(date +%s.%N)
grep -q "Pareto front" "$WORK/search.txt" || { echo "forecast.sh: the search printed no front" >&2; cat "$WORK/search.txt" >&2; exit 1; }
echo "| --search, 24 variants of $SEARCHED iPhones, $CORES threads | $(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f s", b - a}') | | | |"
start=$(date +%s.%N)
"$PG" forecast --devices "$SEARCHED" --threads "$CORES" --search app.com.example.news.announce=silent,silent_and_alert,none \
  --search app.com.example.news.fetch=minimum,3600 --search policy.budget.refill_seconds=600,1200,2400,3600 \
  --assume policy.budget.capacity=2,3,5 > "$WORK/assume.txt" \
  || { cat "$WORK/assume.txt" >&2; echo "forecast.sh: the search under assumptions failed" >&2; exit 1; }
end=$(date +%s.%N)
grep -q "Best worst case" "$WORK/assume.txt" \
  || { echo "forecast.sh: the search under assumptions named no recommendation" >&2; cat "$WORK/assume.txt" >&2; exit 1; }
echo "| --search under --assume, 24 variants × 3 assumptions of $SEARCHED iPhones, $CORES threads | $(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f s", b - a}') | | | |"
echo
sed -n '/^| variant/,$p' "$WORK/search.txt"
echo
sed -n '/^Under each assumption/,$p' "$WORK/assume.txt"

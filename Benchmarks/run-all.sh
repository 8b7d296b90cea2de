#!/usr/bin/env bash
# The standard measurements, one after the other, into one Markdown file with the machine, the date and
# the commit: Benchmarks/results/<date>-<commit>.md (printed as it goes). Each section prints the
# ratios measured in its own run (absolute figures drift on a shared machine).
# Usage: Benchmarks/run-all.sh [quick|smoke]
#   quick: shorter runs of the release build.
#   smoke: every script at a tiny size on the debug build the tests use (no release build), in about
#          two minutes; its figures mean nothing, its point is that every script still runs and yields
#          its figures. `.ci/run` runs it, so a change that breaks a benchmark fails CI.
# With POSTGRES_URL set (see Benchmarks/store.sh), the store section measures PostgreSQL too, and the
# two-node section runs.
# Exits non-zero, naming them, when any section failed (each section's reason is printed with it).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-full}
case "$MODE" in full|quick|smoke) ;; *) echo "run-all.sh: unknown mode '$MODE' (quick, smoke, or none)" >&2; exit 2;; esac
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$MODE" = smoke ]; then
  export BENCH_CONFIGURATION=debug WARMUP=1 SETTLE=1
  OUT=$(mktemp)
  trap 'rm -f "$OUT"' EXIT
else
  mkdir -p Benchmarks/results
  OUT="Benchmarks/results/$(date -u +%Y-%m-%d)-$COMMIT.md"
fi
{
  echo "# Pushgate benchmarks ($MODE) — $(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT"
  echo
  echo "- machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -sr)"
  echo "- $(swift --version 2>&1 | head -1)"
  echo
} | tee "$OUT"
FAILED=()
ERRORS=$(mktemp)
section() {
  local title=$1 start
  shift
  echo "## $title" | tee -a "$OUT"
  echo | tee -a "$OUT"
  start=$(date +%s)
  # The build's chatter stays out of the report; a failure's reason is printed with it.
  if "$@" 2> "$ERRORS" | tee -a "$OUT"; then
    echo "($(( $(date +%s) - start )) s)" >&2
  else
    grep -v "^warning: \|CMakeLists.txt$\|^\[[0-9]*/[0-9]*\]\|^Building \|^Build \|Planning build" "$ERRORS" | tail -n 30 | tee -a "$OUT" >&2 || true
    echo "(failed: $*)" | tee -a "$OUT"
    FAILED+=("$title")
  fi
  echo | tee -a "$OUT"
}
case "$MODE" in
smoke)
  section "Provider API vs nghttpd" bash Benchmarks/provider-api.sh 1
  command -v perf >/dev/null && section "Provider API profile" bash Benchmarks/provider-profile.sh 1
  section "Silent-push policy" bash Benchmarks/policy.sh 10000 20000
  section "Device fleet" bash Benchmarks/devices.sh 100 2
  section "Simulated iPhones" bash Benchmarks/iphones.sh 50 2
  section "End to end (h2load, alerting pushes)" bash Benchmarks/end-to-end.sh 100 200 2
  section "Push rates" bash Benchmarks/bench-rates.sh 100 2 200
  section "Freshness in real time" bash Benchmarks/freshness.sh 50 10 5
  section "Forecast" bash Benchmarks/forecast.sh 50 0 10
  section "Forecast against a real run" bash Benchmarks/forecast-validate.sh 30 10 5 60
  section "Store backends" bash Benchmarks/store.sh 1 2000
  section "A provider connection that never reads" bash Benchmarks/never-reading.sh 5 1
  section "Broadcast fan-out" bash Benchmarks/broadcast.sh 50 3
  [ -n "${POSTGRES_URL:-}" ] && section "Two nodes on PostgreSQL" bash Benchmarks/nodes.sh 1 50
  [ -n "${POSTGRES_URL:-}" ] && section "A node fleet" bash Benchmarks/fleet.sh 60 2 1
  [ -n "${POSTGRES_URL:-}" ] && section "A node's memory for the fleet's devices" bash Benchmarks/fleet-memory.sh 1000
  ;;
quick)
  section "Provider API vs nghttpd" bash Benchmarks/provider-api.sh 3
  section "Provider API profile" bash Benchmarks/provider-profile.sh 4
  section "Silent-push policy" bash Benchmarks/policy.sh 100000 500000
  section "Device fleet" bash Benchmarks/devices.sh 1000 10
  section "Simulated iPhones" bash Benchmarks/iphones.sh 1000 10
  section "Push rates" bash Benchmarks/bench-rates.sh 1000 3 1000 5000
  section "Store backends" bash Benchmarks/store.sh 3 10000
  section "Broadcast fan-out" bash Benchmarks/broadcast.sh 2000 10
  [ -n "${POSTGRES_URL:-}" ] && section "Two nodes on PostgreSQL" bash Benchmarks/nodes.sh 3 200
  [ -n "${POSTGRES_URL:-}" ] && section "A node fleet" bash Benchmarks/fleet.sh 6000 3 10
  [ -n "${POSTGRES_URL:-}" ] && section "A node's memory for the fleet's devices" bash Benchmarks/fleet-memory.sh 10000
  ;;
full)
  section "Provider API vs nghttpd" bash Benchmarks/provider-api.sh 8
  section "Provider API profile" bash Benchmarks/provider-profile.sh 8
  section "Silent-push policy" bash Benchmarks/policy.sh
  section "Device fleet" bash Benchmarks/devices.sh 10000 60
  section "Simulated iPhones" bash Benchmarks/iphones.sh 10000 60
  section "End to end (h2load, alerting pushes)" bash Benchmarks/end-to-end.sh 10000 5000 20
  section "Push rates (pushgate bench, realistic mix)" bash Benchmarks/bench-rates.sh 10000 10
  section "Forecast" bash Benchmarks/forecast.sh
  section "Forecast against a real run" bash Benchmarks/forecast-validate.sh 500 600 60 12
  section "Store backends and recovery" bash Benchmarks/store.sh 8 1000000
  section "A provider connection that never reads" bash Benchmarks/never-reading.sh 60 2
  section "Broadcast fan-out" bash Benchmarks/broadcast.sh 10000 60
  [ -n "${POSTGRES_URL:-}" ] && section "Two nodes on PostgreSQL" bash Benchmarks/nodes.sh 8 1000
  [ -n "${POSTGRES_URL:-}" ] && section "A node fleet: 100,000 devices on 7 nodes" bash Benchmarks/fleet.sh
  [ -n "${POSTGRES_URL:-}" ] && section "A node's memory for the fleet's devices" bash Benchmarks/fleet-memory.sh
  ;;
esac
rm -f "$ERRORS"
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "run-all.sh $MODE: ${#FAILED[@]} section(s) failed: ${FAILED[*]}" >&2
  exit 1
fi
[ "$MODE" = smoke ] || echo "written to $OUT"

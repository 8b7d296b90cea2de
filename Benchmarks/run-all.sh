#!/usr/bin/env bash
# The standard measurements, one after the other, into one Markdown file with the machine, the date and
# the commit: Benchmarks/results/<date>-<commit>.md (printed as it goes). Each section prints the
# ratios measured in its own run (absolute figures drift on a shared machine).
# Usage: Benchmarks/run-all.sh [quick]   — quick: shorter runs, for a smoke check of the scripts.
# With POSTGRES_URL set (see Benchmarks/store.sh), the store section measures PostgreSQL too.
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=${1:-}
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
mkdir -p Benchmarks/results
OUT="Benchmarks/results/$(date -u +%Y-%m-%d)-$COMMIT.md"
{
  echo "# Pushgate benchmarks — $(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT"
  echo
  echo "- machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -sr)"
  echo "- $(swift --version 2>&1 | head -1)"
  echo
} | tee "$OUT"
section() {
  echo "## $1" | tee -a "$OUT"
  echo | tee -a "$OUT"
  shift
  "$@" 2>/dev/null | tee -a "$OUT" || echo "(failed: $*)" | tee -a "$OUT"
  echo | tee -a "$OUT"
}
if [ "$QUICK" = quick ]; then
  section "Provider API vs nghttpd" bash Benchmarks/provider-api.sh 3
  section "Silent-push policy" bash Benchmarks/policy.sh 100000 500000
  section "Device fleet" bash Benchmarks/devices.sh 1000 10
  section "Simulated iPhones" bash Benchmarks/iphones.sh 1000 10
  section "Push rates" bash Benchmarks/bench-rates.sh 1000 3 1000 5000
  section "Store backends" bash Benchmarks/store.sh 3 10000
  [ -n "${POSTGRES_URL:-}" ] && section "Two nodes on PostgreSQL" bash Benchmarks/nodes.sh 3 200
else
  section "Provider API vs nghttpd" bash Benchmarks/provider-api.sh 8
  section "Silent-push policy" bash Benchmarks/policy.sh
  section "Device fleet" bash Benchmarks/devices.sh 10000 60
  section "Simulated iPhones" bash Benchmarks/iphones.sh 10000 60
  section "End to end (h2load, alerting pushes)" bash Benchmarks/end-to-end.sh 10000 5000 20
  section "Push rates (pushgate bench, realistic mix)" bash Benchmarks/bench-rates.sh 10000 10
  section "Store backends and recovery" bash Benchmarks/store.sh 8 1000000
  [ -n "${POSTGRES_URL:-}" ] && section "Two nodes on PostgreSQL" bash Benchmarks/nodes.sh 8 1000
fi
echo "written to $OUT"

#!/usr/bin/env bash
# Silent-push policy: decisions per second on one core with 1,000,000 (device, app) states, and
# resident bytes per state. Runs twice: with the default 4 KiB pages, and with glibc's malloc asked
# for transparent huge pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, as docker/Dockerfile sets),
# which spares a TLB miss on most random state lookups. Usage: Benchmarks/policy.sh [states] [events]
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIGURATION=${BENCH_CONFIGURATION:-release}  # debug: `run-all.sh smoke`
swift build -c "$CONFIGURATION" --product PolicyBenchmark >&2
BIN="$(swift build -c "$CONFIGURATION" --show-bin-path)/PolicyBenchmark"
echo "Policy benchmark — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), pinned to core 0"
echo "## 4 KiB pages"
taskset -c 0 "$BIN" "${1:-1000000}" "${2:-5000000}"
echo "## transparent huge pages for malloc (glibc.malloc.hugetlb=1)"
GLIBC_TUNABLES=glibc.malloc.hugetlb=1 taskset -c 0 "$BIN" "${1:-1000000}" "${2:-5000000}"

#!/usr/bin/env bash
# Silent-push policy: decisions per second on one core with 1,000,000 (device, app) states, and
# resident bytes per state. Usage: Benchmarks/policy.sh [states] [events]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product PolicyBenchmark >&2
echo "Policy benchmark — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), pinned to core 0"
taskset -c 0 "$(swift build -c release --show-bin-path)/PolicyBenchmark" "${1:-1000000}" "${2:-5000000}"

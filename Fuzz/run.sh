#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser that reads peer or user input (Fuzz/Targets/FuzzTarget.swift),
# with libFuzzer and AddressSanitizer.
#
#   Fuzz/run.sh [seconds per target, default 600] [target …, default all]
#   JOBS=2 Fuzz/run.sh 600      # two targets at a time (one per core)
#
# Each target starts from Fuzz/corpus/<target>/ (seeds: `swift run pushgate-fuzz seed .`) and
# Fuzz/regressions/<target>/; what it finds that adds coverage is merged back into Fuzz/corpus/<target>/
# (minimised by libFuzzer's -merge), so the next run starts from there and FuzzRegressionTests replays it.
# A crash, a broken invariant, a leak or a hang (-timeout) stops that target; its input is copied to
# Fuzz/regressions/<target>/ and the script ends non-zero. Bounded: each target runs for the given time.
# Needs: Swift 6 on Linux (libFuzzer ships with its clang). Builds into .build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=${1:-600}
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(payload request-head provider-token device-message configuration registry-file http2-connection)
fi
JOBS=${JOBS:-1}

swift build --scratch-path .build-fuzz --product pushgate-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING >&2
FUZZER="$(swift build --scratch-path .build-fuzz --show-bin-path)/pushgate-fuzz"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Swift's own crash backtracer reads memory AddressSanitizer then reports as its own error: off, so that
# libFuzzer's report is the one printed.
export SWIFT_BACKTRACE=enable=no

# Inputs larger than this add nothing a smaller one cannot reach, and slow every run.
declare -A MAX_LEN=([payload]=5120 [request-head]=8192 [provider-token]=2048 [device-message]=4096
  [configuration]=8192 [registry-file]=8192 [http2-connection]=16384)

fuzz() {
  local target=$1
  local found="$WORK/$target-found" artifacts="$WORK/$target-artifacts/"
  mkdir -p "$found" "$artifacts" "Fuzz/corpus/$target" "Fuzz/regressions/$target"
  local status=0
  FUZZ_TARGET=$target "$FUZZER" "$found" "Fuzz/corpus/$target" "Fuzz/regressions/$target" \
    -max_total_time="$SECONDS_PER_TARGET" -max_len="${MAX_LEN[$target]}" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts" -print_final_stats=1 > "$WORK/$target.log" 2>&1 || status=$?
  # Keep what adds coverage to the repository's corpus, minimised.
  FUZZ_TARGET=$target "$FUZZER" -merge=1 "Fuzz/corpus/$target" "$found" > "$WORK/$target-merge.log" 2>&1 || true
  local runs execs added
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$WORK/$target.log" | grep -o '[0-9]*$' || echo "?")
  execs=$(grep -o 'exec/s: [0-9]*' "$WORK/$target.log" | tail -1 | grep -o '[0-9]*$' || echo "?")
  added=$(grep -o 'MERGE-OUTER: [0-9]* new files' "$WORK/$target-merge.log" | grep -o '[0-9]*' | head -1 || echo 0)
  local cov
  cov=$(grep -o 'cov: [0-9]*' "$WORK/$target.log" | tail -1 | grep -o '[0-9]*' || echo "?")
  if [ $status -ne 0 ] || [ -n "$(ls -A "$artifacts")" ]; then
    for artifact in "$artifacts"*; do
      [ -e "$artifact" ] && cp "$artifact" "Fuzz/regressions/$target/"
    done
    echo "| $target | $SECONDS_PER_TARGET s | $runs | $execs | $cov | $added | FAILED: $(ls "$artifacts" | tr '\n' ' ')|"
    grep -m1 -B2 -A20 'ERROR: \|fuzz invariant\|Fatal error' "$WORK/$target.log" >&2 || tail -30 "$WORK/$target.log" >&2
    return 1
  fi
  echo "| $target | $SECONDS_PER_TARGET s | $runs | $execs | $cov | $added | none |"
}

echo "| target | time | inputs run | per second | edges covered | added to corpus | failures |"
echo "|---|---|---|---|---|---|---|"
failed=0
pids=()
for target in "${TARGETS[@]}"; do
  fuzz "$target" > "$WORK/$target.row" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$JOBS" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
for target in "${TARGETS[@]}"; do cat "$WORK/$target.row"; done
exit $failed

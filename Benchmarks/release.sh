# Sourced by the benchmark scripts (from the repository's root): the descriptor limit raised to the
# hard one, the release binary built and in $PG, and a work directory in $WORK that is removed, with
# the script's background jobs stopped, on exit.
ulimit -n "$(ulimit -Hn)"
swift build -c release --product pushgate >&2
PG="$(swift build -c release --show-bin-path)/pushgate"
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

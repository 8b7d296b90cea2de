# Shared by the Interop scripts (sourced from the repository root): the pushgate binary, a work
# directory and the gateway's PID cleaned up on exit, free loopback ports, pinned virtualenvs.
# $1: what the caller is, for the skip message.

if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "$1: skipped (python3 with venv and ensurepip is needed: apt-get install python3-venv)"
  exit 0
fi

VENVS="$PWD/.build-interop"
mkdir -p "$VENVS"
swift build --product pushgate >&2 || exit 1
PG="$(swift build --show-bin-path)/pushgate"
WORK=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ensure_venv <requirement>: its virtualenv's directory once the requirement is installed there (made
# the first time; kept in .build-interop/), or nothing when it cannot be installed ($WORK/pip.log says why).
ensure_venv() {
  local venv="$VENVS/${1%%=*}"
  if ! "$venv/bin/pip" show -q "${1%%=*}" >/dev/null 2>&1; then
    python3 -m venv "$venv" >/dev/null 2>&1 && "$venv/bin/pip" install -q "$1" > "$WORK/pip.log" 2>&1
  fi
  "$venv/bin/pip" show -q "${1%%=*}" >/dev/null 2>&1 && echo "$venv"
}

#!/usr/bin/env bash
# The provider API against RFC 9113's and RFC 7541's rules, case by case as h2spec checks a server
# (Interop/http2_conformance.py: its generic, http2 and hpack groups under h2spec's ids), on the h2c port
# and on the TLS port of a `pushgate serve` started for it on loopback. Skipped, not failed, when the
# pinned `hpack` (the Huffman code the cases use) cannot be installed; fails when a case fails. Bounded: each port has 300 s.
#
#   Interop/http2-conformance.sh [id-prefix …]     # e.g. http2/6.9 hpack
set -uo pipefail
cd "$(dirname "$0")/.."
source Interop/common.sh http2-conformance

venv=$(ensure_venv "hpack==4.0.0")
if [ -z "$venv" ]; then
  echo "http2-conformance: skipped (hpack could not be installed: $(tail -1 "$WORK/pip.log" 2>/dev/null | cut -c1-80))"
  exit 0
fi

TLS_PORT=$(free_port); H2C_PORT=$(free_port); DEV_PORT=$(free_port); ADMIN_PORT=$(free_port)
SET=(--set "data_dir=$WORK/data" --set provider.tls.port=$TLS_PORT --set provider.h2c.port=$H2C_PORT
  --set devices.port=$DEV_PORT --set admin.port=$ADMIN_PORT --set log.level=warning)
"$PG" serve "${SET[@]}" 2> "$WORK/serve.log" &
PID=$!
for _ in $(seq 1 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$TLS_PORT) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/$H2C_PORT) 2>/dev/null && break
  kill -0 $PID 2>/dev/null || { tail -15 "$WORK/serve.log" >&2; echo "http2-conformance: the gateway exited" >&2; exit 1; }
  sleep 0.1
done

echo "RFC 9113 / RFC 7541 conformance (h2spec's cases):"
failed=0
timeout 300 "$venv/bin/python" Interop/http2_conformance.py --port "$H2C_PORT" "$@" || failed=1
timeout 300 "$venv/bin/python" Interop/http2_conformance.py --port "$TLS_PORT" --tls --ca "$WORK/data/tls/ca.pem" "$@" \
  || failed=1
kill -0 $PID 2>/dev/null || { tail -15 "$WORK/serve.log" >&2; echo "http2-conformance: the gateway died" >&2; exit 1; }
exit $failed

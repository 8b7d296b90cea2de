#!/usr/bin/env bash
# A provider connection that never reads its answers, sending valid pushes as fast as the gateway takes
# them, for SECONDS: the gateway's resident memory sampled every 5 s, with the output bound as shipped
# (provider.http2.output_limit_bytes=1 MiB) and with it raised to 1 GiB (what the gateway did before the
# bound: it read on and queued every answer), alternated RUNS times in one run of this script.
# Usage: Benchmarks/never-reading.sh [seconds, default 60] [runs, default 1]
# Needs: python3.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_RUN=${1:-60}
RUNS=${2:-1}
PORT=22298
ADMIN=22301

# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh

SETTINGS=(--set "data_dir=$WORK/data" --set event_loops=1 --set provider.tls.enabled=false
  --set provider.h2c.port=$PORT --set provider.rate.device_token.per_second=0
  --set provider.rate.team.per_second=0 --set log.level=warning --set devices.reload_seconds=0
  --set devices.tls.enabled=false --set admin.port=$ADMIN --set store.backend=memory
  --set provider.http2.max_concurrent_streams=1000000 --set provider.http2.stalled_close_seconds=0)
(cd "$WORK" && "$PG" keys generate --team-id TEAM123456 --key-id KEY1234567 --topic com.example.app "${SETTINGS[@]}" >/dev/null)
TOKEN=$("$PG" tokens register --topic com.example.app "${SETTINGS[@]}")
JWT=$("$PG" keys token --key "$WORK/AuthKey_KEY1234567.p8" --team-id TEAM123456 --key-id KEY1234567)

# The client: HTTP/2 frames by hand (HPACK literals), a 4 KiB receive buffer, never a read.
cat > "$WORK/client.py" <<'PY'
import socket, sys, time
port, token, jwt, seconds = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
def integer(value, prefix):
    limit = (1 << prefix) - 1
    if value < limit: return bytes([value])
    out, value = [limit], value - limit
    while value >= 128: out.append(value % 128 + 128); value //= 128
    return bytes(out + [value])
def literal(name, value):
    return b"\x00" + integer(len(name), 7) + name.encode() + integer(len(value), 7) + value.encode()
def frame(kind, flags, stream, payload):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload
block = b"".join(literal(n, v) for n, v in [(":method", "POST"), (":scheme", "http"), (":path", "/3/device/" + token),
    (":authority", "127.0.0.1"), ("authorization", "bearer " + jwt), ("apns-topic", "com.example.app"),
    ("apns-push-type", "alert")])
body = b'{"aps":{"alert":"x"}}'
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); s.connect(("127.0.0.1", port))
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + frame(4, 1, 0, b""))
s.setblocking(False)
end, stream, sent, pending = time.time() + seconds, 1, 0, b""
while time.time() < end:
    if not pending:
        pending = frame(1, 4, stream, block) + frame(0, 1, stream, body); stream += 2; sent += 1
    try:
        pending = pending[s.send(pending):]
    except BlockingIOError:
        time.sleep(0.01)
    except OSError:
        break
print(sent)
PY

measure() { # label, limit -> prints "label | samples… | requests taken"
  local label=$1 limit=$2
  "$PG" serve "${SETTINGS[@]}" --set provider.http2.output_limit_bytes=$limit 2> "$WORK/serve.log" &
  local pid=$!
  wait_ready $pid $ADMIN "$WORK/serve.log"
  local base
  base=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  python3 "$WORK/client.py" $PORT "$TOKEN" "$JWT" "$SECONDS_RUN" > "$WORK/sent.txt" &
  local client=$! samples=() t
  for (( t = 5; t <= SECONDS_RUN; t += 5 )); do
    sleep 5
    samples+=("$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/$pid/status)")
  done
  wait $client || fail "the client failed"
  local sent
  sent=$(cat "$WORK/sent.txt")
  need "requests taken ($label)" "$sent"
  local peak
  peak=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' /proc/$pid/status)
  kill -TERM $pid; wait $pid || true
  echo "| $label | $(awk "BEGIN {printf \"%.1f\", $base / 1024}") | ${samples[*]} | $peak | $sent |"
}

echo
echo "A provider connection that never reads — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(uname -m)"
echo "valid alert pushes as fast as the gateway takes them for ${SECONDS_RUN}s; gateway RSS (MB) at start, every 5 s, and peak"
echo
echo "| output limit | RSS at start | RSS every 5 s | peak | requests taken |"
echo "|---|---|---|---|---|"
for (( run = 1; run <= RUNS; run++ )); do
  measure "1 MiB (shipped)" 1048576
  measure "1 GiB (no bound in practice)" 1073741824
done

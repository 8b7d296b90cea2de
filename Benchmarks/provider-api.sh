#!/usr/bin/env bash
# Provider API throughput and latency, side by side with nghttpd (C, libnghttp2), in one run: Pushgate as
# shipped (SQLite, an fsync before each 200), and a second gateway with `store.backend=memory`, which runs
# every rule but writes nothing (the front door): the gap between them is what committing each
# notification costs on the same core. Each its own process; over h2c, then over TLS.
#
# Each server is pinned to core 0 with one event loop; h2load runs on core 1. The request is the same
# shape for both: POST /3/device/<token> with a ~100-byte silent payload and the APNs headers; Pushgate
# gets a valid provider token and checks everything, nghttpd just answers 200.
#
# Each row is judged by the rule of issue 48 (Benchmarks/README.md, "Goals"), in the same run: the front door
# (the memory store: every rule, nothing written) meets its goal at ≥ 0.5 × nghttpd's requests/s with a
# p99 ≤ 1.5 × nghttpd's; the durable row (SQLite, an fsync before each 200) against the disk: the fsyncs a second this machine's disk gives in the data directory, measured
# here, times the gateway's mean commit batch in the run, or the front door's rate when that is lower —
# it meets its goal at ≥ 0.5 × that ceiling.
#
# Usage: [BEFORE=<another build's pushgate>] Benchmarks/provider-api.sh [seconds per run, default 8]
# BEFORE adds a row for that binary (on its own data, made by it, and its default store), measured
# in the same run against the same nghttpd: a before and after in one table. It must take the settings
# used here (builds since 9936226 do).
# Needs: nghttp2-client (h2load), nghttp2-server (nghttpd), taskset, python3.
set -euo pipefail
if [ -n "${BEFORE:-}" ]; then
  [ -f "$BEFORE" ] && [ -x "$BEFORE" ] || { echo "provider-api.sh: BEFORE is not an executable file: $BEFORE" >&2; exit 1; }
  BEFORE=$(realpath "$BEFORE")
fi
cd "$(dirname "$0")/.."
DURATION=${1:-8}
WARMUP=${WARMUP:-2}
TOKENS=1000
NG_PORT=22199
NH_PORT=22196
NH_TLS=22187
NG_TLS=22186
MEM_PORT=22185
MEM_TLS=22184
SHAPES=("-c 16 -m 32" "-c 8 -m 100")
BEFORE_PORT=22175
BEFORE_TLS=22174

for tool in h2load nghttpd taskset python3; do
  command -v $tool >/dev/null || { echo "missing $tool (apt-get install nghttp2-client nghttp2-server util-linux python3)"; exit 1; }
done

# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh

# Pushgate: a key, $TOKENS device tokens, limits off (this measures the request path, not the limiters).
SETTINGS=(--set "data_dir=$WORK/data" --set event_loops=1 --set provider.tls.port=$NH_TLS
  --set provider.h2c.port=$NH_PORT --set provider.rate.device_token.per_second=0
  --set provider.rate.team.per_second=0 --set log.level=warning --set devices.reload_seconds=0)
provider_fixture $TOKENS
BODY_BYTES=$(wc -c < "$WORK/body.json")

# nghttpd: a docroot with a file per token path, so every POST is answered 200.
mkdir -p "$WORK/docroot/3/device"
while read -r token; do : > "$WORK/docroot/3/device/$token"; done < "$WORK/tokens.txt"

sed "s#^#http://127.0.0.1:$NG_PORT/3/device/#" "$WORK/tokens.txt" > "$WORK/ng-uris.txt"
sed "s#^#http://127.0.0.1:$NH_PORT/3/device/#" "$WORK/tokens.txt" > "$WORK/nh-uris.txt"
sed "s#^#https://127.0.0.1:$NG_TLS/3/device/#" "$WORK/tokens.txt" > "$WORK/ng-tls-uris.txt"
sed "s#^#https://127.0.0.1:$NH_TLS/3/device/#" "$WORK/tokens.txt" > "$WORK/nh-tls-uris.txt"
sed "s#^#http://127.0.0.1:$MEM_PORT/3/device/#" "$WORK/tokens.txt" > "$WORK/mem-uris.txt"
sed "s#^#https://127.0.0.1:$MEM_TLS/3/device/#" "$WORK/tokens.txt" > "$WORK/mem-tls-uris.txt"
# The shipped gateway on the keys and tokens made above; the front door the same in a data directory of its
# own, on the memory store.
cp -r "$WORK/data" "$WORK/data-memory"
SETTINGS_NH=("${SETTINGS[@]}" --set devices.port=22193 --set devices.tls.port=22195 --set admin.port=22194
  --set channels.tls.port=22192 --set channels.h2c.port=22191)
SETTINGS_MEM=("${SETTINGS_NH[@]}" --set "data_dir=$WORK/data-memory" --set store.backend=memory --set provider.h2c.port=$MEM_PORT
  --set provider.tls.port=$MEM_TLS --set devices.port=22183 --set devices.tls.port=22182 --set admin.port=22181
  --set channels.tls.port=22180 --set channels.h2c.port=22179)

# BEFORE's gateway: its own key, tokens and provider token, made by that binary.
BEFORE_PID=
if [ -n "${BEFORE:-}" ]; then
  SETTINGS_BEFORE=(--set "data_dir=$WORK/data-before" --set event_loops=1 --set provider.h2c.port=$BEFORE_PORT
    --set provider.tls.port=$BEFORE_TLS --set provider.rate.device_token.per_second=0
    --set provider.rate.team.per_second=0 --set log.level=warning --set devices.reload_seconds=0
    --set devices.port=22173 --set devices.tls.port=22172 --set admin.port=22171
    --set channels.tls.port=22170 --set channels.h2c.port=22169)
  mkdir -p "$WORK/before"
  (cd "$WORK/before" && "$BEFORE" keys generate --team-id TEAM123456 --key-id KEY1234567 --topic com.example.app \
    "${SETTINGS_BEFORE[@]}" >/dev/null) || fail "BEFORE ($BEFORE) could not make a provider key"
  "$BEFORE" tokens register --topic com.example.app --count $TOKENS "${SETTINGS_BEFORE[@]}" > "$WORK/before/tokens.txt" \
    || fail "BEFORE ($BEFORE) could not register tokens"
  JWT_BEFORE=$("$BEFORE" keys token --key "$WORK/before/AuthKey_KEY1234567.p8" --team-id TEAM123456 --key-id KEY1234567)
  sed "s#^#http://127.0.0.1:$BEFORE_PORT/3/device/#" "$WORK/before/tokens.txt" > "$WORK/before-uris.txt"
  sed "s#^#https://127.0.0.1:$BEFORE_TLS/3/device/#" "$WORK/before/tokens.txt" > "$WORK/before-tls-uris.txt"
  taskset -c 0 "$BEFORE" serve "${SETTINGS_BEFORE[@]}" 2> "$WORK/pushgate-before.log" &
  BEFORE_PID=$!
fi
taskset -c 0 "$PG" serve "${SETTINGS_NH[@]}" 2> "$WORK/pushgate.log" &
NH_PID=$!
taskset -c 0 "$PG" serve "${SETTINGS_MEM[@]}" 2> "$WORK/pushgate-memory.log" &
MEM_PID=$!
taskset -c 0 nghttpd --no-tls -d "$WORK/docroot" -n 1 $NG_PORT 2> "$WORK/nghttpd.log" &
# listening PORT…: until every port accepts (up to 20 s).
listening() {
  local port attempt
  for attempt in $(seq 1 100); do
    [ "$attempt" -eq 1 ] || sleep 0.2
    for port in "$@"; do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null || continue 2; done
    return 0
  done
  return 1
}
listening $NG_PORT $NH_PORT $NH_TLS $MEM_PORT $MEM_TLS || { show_log "$WORK/pushgate.log"; show_log "$WORK/pushgate-memory.log"; show_log "$WORK/nghttpd.log"; fail "pushgate (SQLite or the memory store) or nghttpd did not listen in 20 s"; }
# nghttpd over TLS, on the development certificate the shipped gateway made.
taskset -c 0 nghttpd -d "$WORK/docroot" -n 1 $NG_TLS "$WORK/data/tls/server-key.pem" "$WORK/data/tls/server.pem" \
  2> "$WORK/nghttpd-tls.log" &
listening $NG_TLS || { show_log "$WORK/nghttpd-tls.log"; fail "nghttpd (TLS) did not listen in 20 s"; }
[ -z "$BEFORE_PID" ] || listening $BEFORE_PORT $BEFORE_TLS \
  || { show_log "$WORK/pushgate-before.log"; fail "BEFORE's gateway ($BEFORE) did not listen in 20 s"; }

HEADERS=(-H "authorization: bearer $JWT" -H "apns-topic: com.example.app" -H "apns-push-type: background" -H "apns-priority: 5")
[ -z "$BEFORE_PID" ] || HEADERS_BEFORE=(-H "authorization: bearer $JWT_BEFORE" "${HEADERS[@]:2}")

# shellcheck source=Benchmarks/h2load-run.sh
source Benchmarks/h2load-run.sh

echo
echo "Provider API vs nghttpd — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(uname -m)"
[ -z "$BEFORE_PID" ] || echo "before: $BEFORE"
echo "POST /3/device/<one of $TOKENS tokens>, ${BODY_BYTES}-byte silent payload, ${DURATION}s after ${WARMUP}s warm-up; servers on core 0, h2load on core 1"
# The disk: fdatasync()s a second of a 4 KiB append, in the data directory, for 3 s (what a commit of
# SQLite's write-ahead log pays at least once). No figure, no verdict: the run fails.
DISK_SYNCS=$(python3 - "$WORK/data" <<'PY'
import os, sys, time
path = os.path.join(sys.argv[1], "fsync-probe")
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
block = b"x" * 4096
count, start = 0, time.monotonic()
while time.monotonic() - start < 3:
    os.write(fd, block)
    os.fdatasync(fd)
    count += 1
os.close(fd)
os.unlink(path)
print(f"{count / (time.monotonic() - start):.0f}")
PY
) || fail "could not measure the disk's fdatasync rate"
[ "${DISK_SYNCS:-0}" -gt 0 ] || fail "the disk's fdatasync rate came out as '${DISK_SYNCS:-}'"
# The durable gateway's commits so far (its mean batch over the run is read from the difference).
commits() { # -> "commits changes"
  curl -sf "http://127.0.0.1:22194/v1/counters" | python3 -c \
    'import json,sys; s=json.load(sys.stdin).get("store") or {}; print(s.get("commits", 0), s.get("changes", 0))'
}
# verdict ROW_RPS ROW_P99 NG_RPS NG_P99 CEILING_RPS KIND -> the verdict cell
verdict() {
  python3 - "$@" <<'PY'
import sys
rps, p99, ng_rps, ng_p99, ceiling, kind = sys.argv[1:]
rps, p99, ng_rps, ng_p99, ceiling = map(float, (rps, p99, ng_rps, ng_p99, ceiling))
if kind == "front":
    ok = rps >= 0.5 * ng_rps and p99 <= 1.5 * ng_p99
    print(f"{'meets' if ok else 'MISSES'}: {rps / ng_rps:.2f} × nghttpd (goal ≥ 0.5), p99 {p99 / max(ng_p99, 0.01):.2f} × (goal ≤ 1.5)")
elif kind == "durable":
    ok = rps >= 0.5 * ceiling
    print(f"{'meets' if ok else 'MISSES'}: {rps / ceiling:.2f} × the disk's ceiling of {ceiling:.0f}/s (goal ≥ 0.5)")
else:
    print("—")
PY
}

echo
echo "| shape | transport | server | requests/s | p50 ms | p99 ms | 200s / answered (latency pass) | verdict |"
echo "|---|---|---|---|---|---|---|---|"
for shape in "${SHAPES[@]}"; do
  for transport in h2c tls; do
    suffix=$([ $transport = tls ] && echo "-tls" || true)
    ng=$(run "nghttpd$suffix" "$WORK/ng$suffix-uris.txt" "$shape") || fail "nghttpd ($transport), $shape: no figure"
    read -r commits_before changes_before <<< "$(commits)" || fail "the durable gateway's /v1/counters: no answer"
    nh=$(run "pushgate$suffix" "$WORK/nh$suffix-uris.txt" "$shape") \
      || { show_log "$WORK/pushgate.log"; fail "pushgate (SQLite, $transport), $shape: no figure"; }
    read -r commits_after changes_after <<< "$(commits)" || fail "the durable gateway's /v1/counters: no answer"
    [ "$commits_after" -gt "$commits_before" ] || fail "the durable gateway committed nothing in its run ($transport, $shape)"
    batch=$(( (changes_after - changes_before) / (commits_after - commits_before) ))
    mem=$(run "pushgate-memory$suffix" "$WORK/mem$suffix-uris.txt" "$shape") \
      || { show_log "$WORK/pushgate-memory.log"; fail "pushgate (memory store, $transport), $shape: no figure"; }
    rows=("SQLite $nh" "memory_store $mem")
    if [ -n "$BEFORE_PID" ]; then
      HEADERS_NOW=("${HEADERS[@]}")
      HEADERS=("${HEADERS_BEFORE[@]}")
      bf=$(run "pushgate-before$suffix" "$WORK/before$suffix-uris.txt" "$shape") \
        || { show_log "$WORK/pushgate-before.log"; fail "BEFORE ($transport), $shape: no figure"; }
      HEADERS=("${HEADERS_NOW[@]}")
      rows+=("before $bf")
    fi
    read -r ng_rps ng_p50 ng_p99 ng_ok ng_n <<< "$ng"
    read -r mem_rps _ <<< "$mem"
    # Both passes of h2load (throughput, then latency) ran against the durable gateway: the mean batch
    # is of both; the ceiling is what the disk's fsyncs carry at that batch, or the front door's rate.
    ceiling=$(( DISK_SYNCS * (batch > 0 ? batch : 1) ))
    [ "$ceiling" -le "${mem_rps%.*}" ] || ceiling=${mem_rps%.*}
    echo "| \`$shape\` | $transport | nghttpd | $ng_rps | $ng_p50 | $ng_p99 | $ng_ok / $ng_n | |"
    for row in "${rows[@]}"; do
      read -r label rps p50 p99 ok n <<< "$row"
      kind=other
      [ "$label" = "memory_store" ] && kind=front
      [ "$label" = "SQLite" ] && kind=durable
      label=${label//_/ }
      cell=$(verdict "$rps" "$p99" "$ng_rps" "$ng_p99" "$ceiling" "$kind") || fail "no verdict for $label"
      echo "| \`$shape\` | $transport | pushgate ($label) | $rps | $p50 | $p99 | $ok / $n | $cell |"
      python3 -c "print('| \`$shape\` | $transport | **ratio ($label)** | **%.2f ×** | | | | |' % ($rps / max(1, $ng_rps)))"
    done
    echo "| \`$shape\` | $transport | the disk: $DISK_SYNCS fsyncs/s × mean batch $batch | $ceiling (ceiling) | | | | |"
  done
done
RSS_NH=$(awk '/VmHWM/ {print $2}' /proc/$NH_PID/status 2>/dev/null || echo '?')
RSS_MEM=$(awk '/VmHWM/ {print $2}' /proc/$MEM_PID/status 2>/dev/null || echo '?')
echo
RSS_BEFORE=$([ -z "$BEFORE_PID" ] || echo ", $(awk '/VmHWM/ {print $2}' /proc/$BEFORE_PID/status 2>/dev/null || echo '?') kB (before)")
echo "Pushgate peak RSS: ${RSS_NH} kB (SQLite), ${RSS_MEM} kB (memory store)${RSS_BEFORE}"

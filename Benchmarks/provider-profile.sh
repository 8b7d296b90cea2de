#!/usr/bin/env bash
# Where the provider API's time goes: a perf profile of `pushgate serve` under h2load, grouped by layer.
#
# The gateway runs pinned to core 0 with one event loop (as in provider-api.sh), h2load on core 1 at
# `-c 16 -m 32` with the same POST (a ~100-byte silent push, a valid provider token, one of 1,000
# registered tokens); once the gateway has used half a second of CPU under it, `perf record -g` samples
# it until it has used SECONDS more (its CPU, not the wall clock, so a gateway kept waiting still yields a
# profile; the wall time that took is printed with it).
# Then, for h2c and for TLS, a table of the samples by layer:
#   - "leaf": the layer of the function a sample was taken in (Swift's retain/release, allocation and
#     metadata lookups are their own row there);
#   - "owner": the same samples with the runtime's share charged to the nearest caller of a named layer
#     (what each layer costs, its reference counting included).
# and the top functions. The layers are read from the symbols' module names (NIOHTTP2/NIOHPACK, NIOSSL
# and BoringSSL, NIOCore/NIOPosix, the gateway's own modules, SQLite, the kernel).
#
# Usage: Benchmarks/provider-profile.sh [seconds, default 8] [h2c|tls|both, default both]
# Needs: perf (linux-perf), nghttp2-client (h2load), taskset, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_=${1:-8}
WHICH=${2:-both}
TOKENS=1000
H2C_PORT=22298
TLS_PORT=22297
SHAPE="-c 16 -m 32"
case "$WHICH" in h2c|tls|both) ;; *) echo "provider-profile.sh: the second argument is h2c, tls or both, not '$WHICH'" >&2; exit 1 ;; esac
for tool in perf h2load taskset python3; do
  command -v $tool >/dev/null || { echo "missing $tool (apt-get install linux-perf nghttp2-client util-linux python3)"; exit 1; }
done

# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh

SETTINGS=(--set "data_dir=$WORK/data" --set event_loops=1 --set provider.tls.port=$TLS_PORT
  --set provider.h2c.port=$H2C_PORT --set provider.rate.device_token.per_second=0
  --set provider.rate.team.per_second=0 --set log.level=warning --set devices.reload_seconds=0)
provider_fixture $TOKENS
sed "s#^#http://127.0.0.1:$H2C_PORT/3/device/#" "$WORK/tokens.txt" > "$WORK/h2c-uris.txt"
sed "s#^#https://127.0.0.1:$TLS_PORT/3/device/#" "$WORK/tokens.txt" > "$WORK/tls-uris.txt"

taskset -c 0 "$PG" serve "${SETTINGS[@]}" 2> "$WORK/pushgate.log" &
PG_PID=$!
listening=
for _ in $(seq 1 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$H2C_PORT) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/$TLS_PORT) 2>/dev/null && { listening=1; break; }
  kill -0 $PG_PID 2>/dev/null || break
  sleep 0.2
done
[ -n "$listening" ] || { show_log "$WORK/pushgate.log"; fail "pushgate did not listen in 20 s"; }
HEADERS=(-H "authorization: bearer $JWT" -H "apns-topic: com.example.app" -H "apns-push-type: background" -H "apns-priority: 5")

# cpu_ticks: the gateway's CPU time so far (user and system, all its threads), in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$PG_PID/stat"; }
TICKS=$(getconf CLK_TCK)

# cpu_window TICKS LOAD_PID OUT: returns once the gateway has used TICKS more of CPU, or LOAD_PID has
# ended; writes "<CPU ms> <wall ms> <1 if LOAD_PID ended first>" to OUT. The warm-up, and perf's workload.
cpu_window() {
  local start wall_start ended=0
  start=$(cpu_ticks)
  wall_start=$(date +%s%N)
  until [ $(( $(cpu_ticks) - start )) -ge "$1" ]; do
    kill -0 "$2" 2>/dev/null || { ended=1; break; }
    sleep 0.05
  done
  echo "$(( ($(cpu_ticks) - start) * 1000 / TICKS )) $(( ($(date +%s%N) - wall_start) / 1000000 )) $ended" > "$3"
}
export -f cpu_ticks cpu_window
export PG_PID TICKS

# profile NAME: h2load on core 1 for its 2-s warm-up and 2 × SECONDS + 1 s; once the gateway has used
# half a second of CPU (requests are flowing), perf samples it until it has used SECONDS more of CPU. The
# window is the gateway's CPU, not the wall clock: a gateway kept off its core (the disk, a busy machine)
# would leave a wall-clock window with too few samples to profile. Leaves $WORK/NAME.perf, $WORK/NAME.h2load
# and, in WINDOW, what the window took.
profile() {
  local name=$1 warmup=2 load cpu wall ended
  # shellcheck disable=SC2086
  taskset -c 1 h2load $SHAPE -D $((2 * SECONDS_ + 1)) --warm-up-time $warmup -d "$WORK/body.json" "${HEADERS[@]}" \
    -i "$WORK/$name-uris.txt" > "$WORK/$name.h2load" 2>&1 &
  load=$!
  cpu_window $((TICKS / 2)) $load "$WORK/$name.warm-up"
  read -r _ _ ended < "$WORK/$name.warm-up"
  [ "$ended" = 0 ] || { cat "$WORK/$name.h2load" >&2; fail "h2load ended before the gateway had used half a second of CPU ($name)"; }
  perf record -g -F 999 -p $PG_PID -o "$WORK/$name.perf" -- \
    bash -c "cpu_window $((SECONDS_ * TICKS)) $load $WORK/$name.window" > "$WORK/$name.perf-record.log" 2>&1 \
    || { cat "$WORK/$name.perf-record.log" >&2; fail "perf record failed ($name; perf_event_paranoid: $(cat /proc/sys/kernel/perf_event_paranoid))"; }
  read -r cpu wall ended < "$WORK/$name.window"
  [ "$ended" = 0 ] || fail "h2load ended while perf waited for ${SECONDS_} s of the gateway's CPU: it had ${cpu} ms in ${wall} ms ($name)"
  WINDOW="${cpu} ms of the gateway's CPU in ${wall} ms"
  wait $load || true
  grep -q "succeeded, 0 failed" "$WORK/$name.h2load" || grep -qE "[1-9][0-9]* 2xx" "$WORK/$name.h2load" \
    || { cat "$WORK/$name.h2load" >&2; fail "h2load got no 2xx answers ($name)"; }
}

# layers NAME: the layer tables and top functions of $WORK/NAME.perf.
layers() {
  perf script -i "$WORK/$1.perf" -F ip,sym,dso 2> /dev/null | python3 -c '
import re, sys
from collections import Counter

LAYERS = [  # (layer, pattern over "symbol dso"), first match wins
    ("HTTP/2 framing and HPACK", r"libnghttp2|\$s\d+NIOHTTP2|\$s\d+NIOHPACK|NIOHTTP2|NIOHPACK"),
    ("TLS", r"\$s\d+NIOSSL|BoringSSL|libssl|libcrypto|\bSSL_|CNIOBoringSSL"),
    # SQLite is compiled into the binary: its C functions are the ones there without a Swift or NIO prefix.
    ("store (SQLite and its writer)", r"sqlite3|\$s\d+PushStore|\$s\d+EmbeddedSQLite|^(?!\$s|CNIO|c_nio|swift|_swift)[A-Za-z_]\w* \(\S*pushgate\)"),
    ("our request path", r"\$s\d+(ProviderAPI|ProviderAuth|PushIntake|PushModel|PushPolicy|DeviceHub|PushMetrics|ConnectionLimits|Gateway|Prometheus|CoreMetrics)"),
    ("NIO core and sockets", r"\$s\d+(NIOCore|NIOPosix|NIOConcurrencyHelpers|_NIO\w*)|NIOPosix|NIOCore"),
    ("kernel", r"\[kernel|\[k\]|kallsyms|\[vdso\]"),
    ("Swift runtime (retain/release, allocation, metadata)", r"^swift_|swift::|libswiftCore|libswift_Concurrency|libFoundation|__swift|\$ss|\$sS|__tls_get_addr|\$s\d+Atomics"),
    ("C library (malloc, memcpy)", r"libc\.so|libc-|malloc|free|memcpy|memmove"),
]
RUNTIME = {"Swift runtime (retain/release, allocation, metadata)", "C library (malloc, memcpy)"}

def layer(frame):
    for name, pattern in LAYERS:
        if re.search(pattern, frame):
            return name
    return "other"

leaf, owner, functions = Counter(), Counter(), Counter()
samples, stack = 0, []
def flush():
    global samples
    if not stack:
        return
    samples += 1
    layers = [layer(f) for f in stack]
    leaf[layers[0]] += 1
    owner[next((l for l in layers if l not in RUNTIME and l != "other"), layers[0])] += 1
    functions[stack[0].split(" (")[0][:110]] += 1

for line in sys.stdin:
    line = line.strip()
    if not line:
        flush(); stack = []
        continue
    parts = line.split(None, 1)
    if len(parts) == 2 and re.fullmatch(r"[0-9a-f]+", parts[0]):
        stack.append(parts[1])
flush()
if samples < 100:
    sys.exit(f"only {samples} samples: no profile")
print(f"{samples} samples\n")
print("| layer | leaf | owner |")
print("|---|---|---|")
for name in [n for n, _ in LAYERS] + ["other"]:
    if leaf[name] or owner[name]:
        print(f"| {name} | {100 * leaf[name] / samples:.1f} % | {100 * owner[name] / samples:.1f} % |")
print("\nTop functions (leaf):\n")
for function, count in functions.most_common(15):
    print(f"- {100 * count / samples:.1f} % `{function}`")
'
}

echo "Provider API profile — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores: pushgate on core 0 (one event loop), h2load $SHAPE on core 1, perf record -g -F 999 for ${SECONDS_} s of the gateway's CPU"
for name in h2c tls; do
  [ "$WHICH" = both ] || [ "$WHICH" = "$name" ] || continue
  profile $name
  rate=$(awk '/finished in/ { for (i = 1; i <= NF; i++) if ($i == "req/s,") print $(i - 1) }' "$WORK/$name.h2load")
  need "h2load's rate ($name)" "$rate"
  echo
  echo "### $name: $rate req/s"
  echo
  echo "perf's window: $WINDOW"
  echo
  layers $name || fail "no profile for $name"
done

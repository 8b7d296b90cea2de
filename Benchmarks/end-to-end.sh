#!/usr/bin/env bash
# End to end: N simulated devices (default 10,000) on one gateway, alerting pushes POSTed at a constant
# rate (default 5,000/s, h2load --rps) to their tokens; reports POST latency (h2load) and the gateway's
# accept-to-device-ack latency (the device's ack closes it; loopback both ways).
# Usage: Benchmarks/end-to-end.sh [devices] [pushes per second] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICES=${1:-10000}
RATE=${2:-5000}
SECONDS_=${3:-20}
CLIENTS=10
command -v h2load >/dev/null || { echo "missing h2load (apt-get install nghttp2-client)"; exit 1; }
# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh
SETTINGS=(--set "data_dir=$WORK/data" --set event_loops=1 --set devices.port=22399 --set devices.tls.enabled=false
  --set provider.tls.enabled=false --set provider.h2c.port=22398 --set admin.port=22397 --set log.level=warning
  --set provider.rate.device_token.per_second=0 --set provider.rate.team.per_second=0)
(cd "$WORK" && "$PG" keys generate --team-id TEAM123456 --key-id KEY1234567 "${SETTINGS[@]}" >/dev/null)
JWT=$("$PG" keys token --key "$WORK/AuthKey_KEY1234567.p8" --team-id TEAM123456 --key-id KEY1234567)
taskset -c 0 "$PG" serve "${SETTINGS[@]}" 2> "$WORK/serve.log" &
GW=$!
wait_ready $GW 22397 "$WORK/serve.log"
taskset -c 1 "$PG" simulate --profile default --port 22399 --devices "$DEVICES" --threads 1 --duration $((SECONDS_ + 240)) \
  --data-dir "$WORK/data" --tokens-file "$WORK/tokens.txt" > "$WORK/simulate.log" 2>&1 &
SIM=$!
wait_tokens $SIM "$WORK/tokens.txt" "$WORK/simulate.log"
cut -d' ' -f1 "$WORK/tokens.txt" | sed 's#^#http://127.0.0.1:22398/3/device/#' > "$WORK/uris.txt"
printf '{"aps":{"alert":{"title":"Load","body":"an alerting push"}}}' > "$WORK/alert.json"
taskset -c 1 h2load -c $CLIENTS -m 10 --rps $((RATE / CLIENTS)) -D "$SECONDS_" -d "$WORK/alert.json" \
  -H "authorization: bearer $JWT" -H "apns-topic: com.example.app" -H "apns-push-type: alert" \
  -i "$WORK/uris.txt" --log-file "$WORK/h2load.log" > "$WORK/h2load.out" 2>&1 \
  || { show_log "$WORK/h2load.out"; fail "h2load failed"; }
sleep 2
kill -0 $SIM 2>/dev/null || { show_log "$WORK/simulate.log"; fail "the simulator exited during the run"; }
COUNTERS=$("$PG" lookup counters "${SETTINGS[@]}") || { show_log "$WORK/serve.log"; fail "cannot read the gateway's counters"; }
echo "End to end — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); gateway on core 0, devices and h2load on core 1"
echo
python3 - "$WORK/h2load.log" "$WORK/h2load.out" "$DEVICES" "$RATE" <<PY
import json, re, sys
lat = sorted(int(l.split()[2]) for l in open(sys.argv[1]) if len(l.split()) >= 3)
ok = sum(1 for l in open(sys.argv[1]) if len(l.split()) >= 3 and l.split()[1] == "200")
out = open(sys.argv[2]).read()
rps = re.search(r"finished in .*?, ([\d.]+) req/s", out)
pct = lambda p: lat[min(len(lat) - 1, int(len(lat) * p))] / 1000 if lat else float("nan")
if not lat or not rps:
    sys.exit("end-to-end.sh: h2load answered no request")
c = json.loads('''$COUNTERS''')
e2e = c["acceptToDeviceAckMicroseconds"]
if ok == 0 or e2e["count"] == 0 or c["hub"]["delivered"] == 0:
    sys.exit(f"end-to-end.sh: {ok} pushes answered 200, {e2e['count']} acknowledged by a device: no figure")
print("| devices | target rate | achieved | 200s | POST p50 / p99 ms | accept→device ack p50 / p90 / p99 / max ms | delivered |")
print("|---|---|---|---|---|---|---|")
print(f"| {sys.argv[3]} | {sys.argv[4]}/s | {float(rps.group(1)) if rps else 0:.0f}/s | {ok} | {pct(.5):.2f} / {pct(.99):.2f} | "
      f"{e2e['p50']/1000:.2f} / {e2e['p90']/1000:.2f} / {e2e['p99']/1000:.2f} / {e2e['max']/1000:.2f} (n={e2e['count']}) | {c['hub']['delivered']} |")
PY

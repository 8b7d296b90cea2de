#!/usr/bin/env bash
# A node fleet at the size operators buy it for: `pushgate fleet up --nodes N` (default 7) on one
# PostgreSQL, D simulated devices (default 100,000) spread over the nodes by as many `pushgate simulate`
# processes as the descriptor limit asks (each at most 15,000 devices), 60 s keep-alives. Reports:
#   - the time to connect and install every device, and each node's devices;
#   - memory per connected device per node (RSS after the devices, less RSS when ready);
#   - the fleet's CPU at idle over W seconds (every node together, % of one core);
#   - an alert to every device (one POST each, spread over the nodes' provider ports by h2load): POSTs
#     answered 200, time to the last device's acknowledgement;
#   - a silent push to every device: answered 200, woken on budget, held;
#   - node 1 killed with SIGKILL, then an alert to every device through the others: answered 200, time
#     until every device (node 1's spread over the others by themselves) acknowledged its alert — when
#     the other nodes' device limits leave room for node 1's devices (else it fails at once, saying how
#     many nodes would);
#   - a routed push against a local one, on the nodes left: alerts POSTed to each device's node, and to
#     the next node after it (every push crosses a link), alternated; the gateway's CPU a push of each
#     and their ratio;
#   - the same alert and silent waves on one SQLite node (`pushgate serve`) with the same devices (at most
#     FLEET_PER_SIMULATOR), and the gateway's CPU per push (nodes + database) of each, with their ratio
#     (FLEET_SQLITE=0 skips it).
# Fails (non-zero) if a step fails or prints no figure; an alert wave that falls short first prints, from
# PostgreSQL, the wave's alerts not acknowledged, with their devices' owners, claims and last connections.
# Everything runs on this machine's cores.
# Usage: [POSTGRES_URL=postgres://user:pass@127.0.0.1:5432/db] Benchmarks/fleet.sh [devices] [nodes] [idle seconds]
# Without POSTGRES_URL the fleet starts its own PostgreSQL (Debian's postgresql package).
# FLEET_PER_SIMULATOR: devices per `pushgate simulate` process (15,000; at most what its descriptors allow).
# FLEET_STREAMS: the streams h2load keeps open on each node's connection in a wave (100; the provider API
# takes 1,000, as APNs does): with 100 a wave is bound by a push's latency, with 1,000 by the CPU.
# Needs: nghttp2-client (h2load), python3, curl; psql (postgresql-client) with POSTGRES_URL and for the
# routed step (skipped, saying so, without it).
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICES=${1:-100000}
# 7 nodes: 6 hold 100,000 devices (17,744 each at most, from 20,000 descriptors a process), but
# after one is lost the other 5 hold 88,720 — a fleet is sized to survive the loss of a node.
NODES=${2:-7}
FLEET_NODES=$NODES
IDLE=${3:-60}
PER_SIMULATOR=${FLEET_PER_SIMULATOR:-15000}
for tool in h2load python3 curl; do
  command -v $tool >/dev/null || { echo "fleet.sh: missing $tool (apt-get install nghttp2-client python3 curl)" >&2; exit 1; }
done
# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh
# settings DATA_DIR BASE → SET, every node's settings (node i: h2c BASE + 3i, devices + 1, admin + 2).
settings() {
  SET=(--set "data_dir=$1" --set provider.tls.enabled=false --set devices.tls.enabled=false
    --set "provider.h2c.port=$2" --set "devices.port=$(($2 + 1))" --set "admin.port=$(($2 + 2))"
    --set channels.tls.enabled=false --set channels.h2c.enabled=false
    --set event_loops=1 --set log.level=warning --set log.modules=devices=notice --set devices.keep_alive_seconds=60
    --set devices.enrolments_per_minute_per_address=0 --set provider.rate.device_token.per_second=0
    --set provider.rate.team.per_second=0)
  # FLEET_SET="key=value …": more settings for every node (an experiment's).
  for setting in ${FLEET_SET:-}; do SET+=(--set "$setting"); done
}
DATA="$WORK/data"
BASE=23300
settings "$DATA" "$BASE"
DB_ARGS=()
if [ -n "${POSTGRES_URL:-}" ]; then
  command -v psql >/dev/null || fail "POSTGRES_URL needs psql (apt-get install postgresql-client)"
  DB="pushgate_fleet_bench_$$"
  create_database "$DB"
  DB_ARGS=(--postgres-url "${POSTGRES_URL%/*}/$DB")
fi
FLEET_SET_ARGS=("${SET[@]}")
cleanup() {
  "$PG" fleet down "${FLEET_SET_ARGS[@]}" --grace-seconds 5 >/dev/null 2>&1 || true
  # FLEET_LOGS=dir: the nodes' and simulators' logs are kept there.
  if [ -n "${FLEET_LOGS:-}" ]; then mkdir -p "$FLEET_LOGS"; cp "$DATA"/fleet/*.log "$WORK"/*.log "$FLEET_LOGS"/ 2>/dev/null || true; fi
  kill $(jobs -p) 2>/dev/null || true
  if [ -n "${DB:-}" ]; then drop_database "$DB"; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$DATA"
(cd "$WORK" && "$PG" keys generate --team-id TEAM123456 --key-id KEY1234567 --topic com.example.app "${SET[@]}" >/dev/null)
JWT=$("$PG" keys token --key "$WORK/AuthKey_KEY1234567.p8" --team-id TEAM123456 --key-id KEY1234567)

"$PG" fleet up --nodes "$NODES" "${DB_ARGS[@]}" "${SET[@]}" > "$WORK/up.log" 2>&1 \
  || { show_log "$WORK/up.log"; for f in "$DATA"/fleet/node-*.log; do show_log "$f"; done; fail "fleet up failed"; }
mapfile -t PIDS < <(python3 -c 'import json,sys; print("\n".join(str(n["pid"]) for n in json.load(open(sys.argv[1]))["nodes"]))' "$DATA/fleet/fleet.json")
[ "${#PIDS[@]}" -eq "$NODES" ] || fail "fleet.json lists ${#PIDS[@]} nodes, not $NODES"
admin() { echo $((BASE + 3 * $1 + 2)); }   # node index from 0
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# ticks_with_children PID → its clock ticks and those of its children that have exited (a PostgreSQL
# server's backends and autovacuum workers that ended: their ticks move to it, so a sum over the server's
# processes does not drop when one exits during a wave).
ticks_with_children() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# The fleet's database: its connections' share of PostgreSQL's CPU is told apart from the server's own
# processes' (autovacuum, the checkpointer, the WAL writer) and other databases' connections, so that a
# jump in PostgreSQL's share says whose it is.
FLEET_DB=$(python3 -c 'import json, sys, urllib.parse; print(urllib.parse.urlparse(json.load(open(sys.argv[1]))["postgresURL"]).path.lstrip("/"))' "$DATA/fleet/fleet.json")
[ -n "$FLEET_DB" ] || fail "fleet.json names no database"
# cpu_now → "nodes simulators postgres connections" clock ticks so far (PostgreSQL: every process named
# postgres, with its children that have exited; connections: those of its processes serving the fleet's
# database, now — one that exits takes its ticks out of this share).
cpu_now() {
  local n=0 s=0 q=0 c=0 p t
  for p in "${PIDS[@]}"; do n=$((n + $(ticks "$p"))); done
  for p in "${SIM_PIDS[@]}"; do s=$((s + $(ticks "$p"))); done
  if [ "${COUNT_POSTGRES:-1}" = 1 ]; then
    for p in $(pgrep -x postgres); do
      t=$(ticks_with_children "$p"); q=$((q + t))
      grep -qa -- " $FLEET_DB " "/proc/$p/cmdline" 2>/dev/null && c=$((c + t))
    done
  fi
  echo "$n $s $q $c"
}
# stalls → devices the nodes closed so far for not acknowledging within devices.not_reading_timeout_seconds
# (their logs, at notice level for the device hub).
stalls() { cat "$DATA"/fleet/node-*.log "$WORK"/sqlite-node.log 2>/dev/null | awk '/devices closed for not acknowledging/ { for (i = 1; i <= NF; i++) if ($i ~ /^count=/) s += substr($i, 7) } END { print s + 0 }'; }
# cpu_between "n s q c" "n s q c" [pushes] → where the cores went between two readings, in CPU seconds; with
# a count of pushes, also per push, in microseconds (issue 49: the push's path on PostgreSQL-backed nodes).
cpu_between() {
  awk -v a="$1" -v b="$2" -v hz="$(getconf CLK_TCK)" -v pushes="${3:-0}" 'BEGIN { split(a, x, " "); split(b, y, " ");
    n = (y[1] - x[1]) / hz; s = (y[2] - x[2]) / hz; q = (y[3] - x[3]) / hz; c = (y[4] - x[4]) / hz
    printf "CPU: nodes %.1f s, simulators %.1f s, PostgreSQL %.1f s", n, s, q
    if (q > 0) printf " (the fleet'"'"'s connections %.1f s)", c
    if (pushes > 0) printf " (per push: nodes %.0f µs, PostgreSQL %.0f µs, simulators %.0f µs)", 1e6 * n / pushes, 1e6 * q / pushes, 1e6 * s / pushes }'
}
cpu_since() { cpu_between "$1" "$(cpu_now)" "${2:-0}"; }
# gateway_ticks "n s q" "n s q" → the gateway's clock ticks (nodes and database) between two readings.
gateway_ticks() {
  awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); print (y[1] - x[1]) + (y[3] - x[3]) }'
}
# gateway_per_push "n s q" "n s q" pushes → the gateway's CPU per push (nodes and database), in µs.
gateway_per_push() {
  awk -v t="$(gateway_ticks "$1" "$2")" -v hz="$(getconf CLK_TCK)" -v pushes="$3" 'BEGIN { printf "%.0f", 1e6 * t / hz / pushes }'
}
# The nodes' counters (Benchmarks/fleet-counters.py: one process reads every node, and a wait polls in it).
COUNTERS=(python3 Benchmarks/fleet-counters.py)
ports() { local i; for i in "$@"; do admin "$i"; done; }   # node indexes → their admin ports
counters() { "${COUNTERS[@]}" sum "$(admin "$1")"; }   # node index → "connected acknowledged wokenOnBudget held accepted deviceLimit routedOut routedThroughStore storeCommits storeChanges"
sum_field() { # field (1-10), node indexes… → the sum over those nodes
  local field=$1; shift
  "${COUNTERS[@]}" sum $(ports "$@") | cut -d' ' -f"$field"
}
ALL=$(seq 0 $((NODES - 1)))
declare -a RSS_READY
for i in $ALL; do RSS_READY[$i]=$(rss "${PIDS[$i]}"); done

# The devices: as many simulators as needed, each spreading its devices over every node. Each simulator
# leads a session of its own (setsid), as each node does (`fleet up`): with the kernel's autogroup
# scheduling (sched_autogroup_enabled) CPU is shared between sessions first, and simulators left in this
# script's one session got a sixth of the cores between them, fell seconds behind reading, and the nodes
# closed thousands of them for not acknowledging (Benchmarks/README.md, "the stalls found"). Simulated
# phones stand in for phones with cores of their own.
ENDPOINTS=$(for i in $ALL; do printf '127.0.0.1:%d,' $((BASE + 3 * i + 1)); done); ENDPOINTS=${ENDPOINTS%,}
SIMULATORS=$(( (DEVICES + PER_SIMULATOR - 1) / PER_SIMULATOR ))
SIM_PIDS=()
CPU0=$(cpu_now)
START=$(date +%s.%N)
for s in $(seq 0 $((SIMULATORS - 1))); do
  n=$(( DEVICES / SIMULATORS + (s < DEVICES % SIMULATORS ? 1 : 0) ))
  setsid "$PG" simulate --profile default --endpoints "$ENDPOINTS" --devices "$n" --threads 1 --seed $((s * 1000003 + 1)) \
    --data-dir "$DATA" --apps com.example.app --duration 3600 --connect-timeout 1200 \
    --tokens-file "$WORK/tokens-$s.txt" > "$WORK/simulate-$s.log" 2>&1 &
  SIM_PIDS+=($!)
done
for s in $(seq 0 $((SIMULATORS - 1))); do
  wait_tokens "${SIM_PIDS[$s]}" "$WORK/tokens-$s.txt" "$WORK/simulate-$s.log" 1200
done
END=$(date +%s.%N)
CONNECT_SECONDS=$(awk -v a="$START" -v b="$END" 'BEGIN {printf "%.1f", b - a}')
CONNECT_CPU=$(cpu_since "$CPU0")
cat "$WORK"/tokens-*.txt > "$WORK/tokens.txt"
TOKENS=$(wc -l < "$WORK/tokens.txt")
[ "$TOKENS" -eq "$DEVICES" ] || fail "$TOKENS tokens for $DEVICES devices"
sleep 2   # the last installs' notices reach every node

echo "Node fleet — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores: $NODES nodes, $DEVICES devices by $SIMULATORS simulators, 60 s keep-alives"
echo
echo "| node | devices | RSS ready → with devices | per device |"
echo "|---|---|---|---|"
TOTAL_CONNECTED=0
PER_DEVICE_SUM=0
for i in $ALL; do
  read -r connected _ <<< "$(counters "$i")"; need "node $((i + 1)) devices" "$connected"
  after=$(rss "${PIDS[$i]}"); need "node $((i + 1)) RSS" "$after"
  per=$(awk -v a="$after" -v b="${RSS_READY[$i]}" -v n="$connected" 'BEGIN {printf "%.2f", (a - b) / (n > 0 ? n : 1)}')
  PER_DEVICE_SUM=$(awk -v s="$PER_DEVICE_SUM" -v p="$per" 'BEGIN {print s + p}')
  TOTAL_CONNECTED=$((TOTAL_CONNECTED + connected))
  echo "| node-$((i + 1)) | $connected | $((RSS_READY[$i] / 1024)) → $((after / 1024)) MB | $per KB |"
done
[ "$TOTAL_CONNECTED" -eq "$DEVICES" ] || fail "$TOTAL_CONNECTED of $DEVICES devices connected"
echo
echo "connected and installed: $DEVICES devices in $CONNECT_SECONDS s; memory per device: mean $(awk -v s="$PER_DEVICE_SUM" -v n="$NODES" 'BEGIN {printf "%.2f", s / n}') KB over the nodes (goal ≤ 8 KB); connecting: $CONNECT_CPU"
# Room for a node's loss: each node's device door holds devices.max_connections (by default what its
# 20,000 descriptors allow, 17,744); node 1's devices need room on the others.
LIMIT_ALL=$(sum_field 6 $ALL); LIMIT_SURVIVORS=$(sum_field 6 $(seq 1 $((NODES - 1))))
need "the nodes' device limits" "$LIMIT_ALL"
echo "capacity: $LIMIT_ALL device connections on $NODES nodes, $LIMIT_SURVIVORS without node 1, for $DEVICES devices"

# Idle: the nodes' CPU while the devices keep alive.
T0=0; for i in $ALL; do T0=$((T0 + $(ticks "${PIDS[$i]}"))); done
sleep "$IDLE"
T1=0; for i in $ALL; do T1=$((T1 + $(ticks "${PIDS[$i]}"))); done
HZ=$(getconf CLK_TCK)
echo "idle: the fleet's CPU over ${IDLE} s: $(awk -v t=$((T1 - T0)) -v hz="$HZ" -v s="$IDLE" 'BEGIN {printf "%.1f", 100 * t / hz / s}') % of one core, all $NODES nodes together (goal ≤ 20 %)"

# A push to every device: h2load per node with its share of the tokens; waits for the acknowledgements.
# fan_out KIND FIRST_NODE [PLACEMENT] → "answered200 seconds". PLACEMENT: spread (the tokens dealt out over
# the nodes from FIRST_NODE in turn, the default), owner (each POSTed to the node that runs its device) or
# other (to the next node from FIRST_NODE after it: every push crosses a link); owner and other read
# $WORK/owners.txt (owners).
fan_out() {
  local kind=$1 first=$2 placement=${3:-spread} nodes=() before after target deadline started ok=0
  for i in $ALL; do [ "$i" -ge "$first" ] && nodes+=("$i"); done
  rm -f "$WORK"/uris-*.txt
  awk -v nodes="${nodes[*]}" -v base="$BASE" -v dir="$WORK" -v placement="$placement" '
    BEGIN { count = split(nodes, n, " "); for (k = 1; k <= count; k++) at[n[k]] = k }
    FILENAME != ARGV[ARGC - 1] { owner[$1] = $2; next }
    {
      if (placement == "spread") i = n[(NR - 1) % count + 1]
      else if (!(($1 in owner) && (owner[$1] in at))) { print "fan_out: no running owner for token " $1 > "/dev/stderr"; exit 1 }
      else i = placement == "owner" ? owner[$1] : n[at[owner[$1]] % count + 1]
      print "http://127.0.0.1:" base + 3 * i "/3/device/" $1 > (dir "/uris-" i ".txt")
    }
  ' $([ "$placement" = spread ] || echo "$WORK/owners.txt") "$WORK/tokens.txt" || fail "fan_out $kind: tokens without an owner"
  if [ "$kind" = alert ]; then
    printf '{"aps":{"alert":{"title":"Fleet","body":"to every device"}}}' > "$WORK/body.json"
    local headers=(-H "apns-push-type: alert" -H "apns-priority: 10")
  else
    printf '{"aps":{"content-available":1}}' > "$WORK/body.json"
    local headers=(-H "apns-push-type: background" -H "apns-priority: 5")
  fi
  before=$(sum_field 2 "${nodes[@]}")
  started=$(date +%s.%N)
  local jobs_=() senders=()
  for i in "${nodes[@]}"; do [ -s "$WORK/uris-$i.txt" ] && senders+=("$i"); done
  for i in "${senders[@]}"; do
    local count; count=$(wc -l < "$WORK/uris-$i.txt")
    # One connection per node: h2load gives each client the URI list from its start, so one client is
    # what sends each token exactly once.
    h2load -n "$count" -c 1 -m "${FLEET_STREAMS:-100}" -i "$WORK/uris-$i.txt" -d "$WORK/body.json" \
      -H "authorization: bearer $JWT" -H "apns-topic: com.example.app" "${headers[@]}" > "$WORK/h2load-$i.txt" 2>&1 &
    jobs_+=($!)
  done
  for j in "${jobs_[@]}"; do wait "$j" || true; done
  for i in "${senders[@]}"; do
    local n; n=$(awk '/status codes:/ {print $3}' "$WORK/h2load-$i.txt")
    need "h2load 2xx to node $((i + 1))" "$n"; ok=$((ok + n))
  done
  deadline=$(( $(date +%s) + 300 ))
  if [ "$kind" = alert ]; then
    # Every alert answered 200, acknowledged (as the surviving nodes counted since `before`).
    target=$((before + ok))
    "${COUNTERS[@]}" wait-acknowledged "$target" "$deadline" $(ports "${nodes[@]}") > "$WORK/waited.txt" \
      || { unacknowledged "$started" >&2; fail "$kind to every device: $(( $(cut -d' ' -f2 "$WORK/waited.txt") - before )) of $ok acknowledged in 300 s"; }
  else
    # Every silent push decided (woken or held, by its device's owner), and each woken one acknowledged.
    if ! "${COUNTERS[@]}" wait-decided "$ok" "$W0" "$H0" "$before" "$deadline" $(ports "${nodes[@]}") > "$WORK/waited.txt"; then
      local woken held after
      read -r _ after woken held _ < "$WORK/waited.txt"
      fail "silent to every device: $((woken - W0 + held - H0)) of $ok decided, $((after - before)) of $((woken - W0)) woken acknowledged in 300 s"
    fi
  fi
  echo "$ok $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')"
}

# unacknowledged STARTED → on stderr, the wave's alerts (received since STARTED, epoch seconds) the database
# does not hold acknowledged: how many in each state and rule, and the first 20 with their device's owner,
# when it was last seen and whether its owner's lease is current — a device that never got back in (held),
# a push left undecided (no rule), or a delivery lost between owners (a delivery rule, the device back).
unacknowledged() {
  command -v psql >/dev/null || return 0
  local url; url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["postgresURL"])' "$DATA/fleet/fleet.json") || return 0
  local since; since=$(awk -v s="$1" 'BEGIN {printf "%.0f", s * 1000}')
  echo "--- the wave's alerts not acknowledged in the database (state 0 pending, 2 discarded, 3 no device):"
  psql -X -q "$url" -c "SELECT state, rule, count(*) FROM notifications WHERE received_at >= $since AND push_type = 'alert' AND state <> 1 GROUP BY 1, 2 ORDER BY 3 DESC" \
    -c "SELECT n.apns_id, n.state, n.rule, n.device_id, n.received_at - $since AS received_ms, d.owner,
          d.last_seen_at - $since AS seen_ms, d.claims, (SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint - renewed_at FROM nodes WHERE node_id = d.owner) AS lease_age_ms
        FROM notifications n LEFT JOIN devices d ON d.id = n.device_id
        WHERE n.received_at >= $since AND n.push_type = 'alert' AND n.state <> 1 ORDER BY n.seq LIMIT 20" 2>&1 || true
}

# FLEET_PERF=dir: perf records the nodes, the simulators and PostgreSQL's processes during each wave,
# into dir/<wave>-nodes.data, dir/<wave>-simulators.data and dir/<wave>-postgres.data (read with perf
# report -i); its own cost is in that run's CPU figures, so a profile's run is not a figure's.
perf_start() {
  [ -n "${FLEET_PERF:-}" ] || return 0
  mkdir -p "$FLEET_PERF"
  PERF_PIDS=()
  perf record -F 999 -g -p "$(IFS=,; echo "${PIDS[*]}")" -o "$FLEET_PERF/$1-nodes.data" >/dev/null 2>&1 &
  PERF_PIDS+=($!)
  perf record -F 999 -g -p "$(IFS=,; echo "${SIM_PIDS[*]}")" -o "$FLEET_PERF/$1-simulators.data" >/dev/null 2>&1 &
  PERF_PIDS+=($!)
  local backends; backends=$(pgrep -d, -x postgres || true)
  if [ -n "$backends" ]; then
    perf record -F 999 -g -p "$backends" -o "$FLEET_PERF/$1-postgres.data" >/dev/null 2>&1 &
    PERF_PIDS+=($!)
  fi
  sleep 1
}
perf_stop() {
  [ -n "${FLEET_PERF:-}" ] || return 0
  kill -INT "${PERF_PIDS[@]}" 2>/dev/null || true
  for p in "${PERF_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}

# waves LABEL DEVICES → the alert and the silent wave to every device, each's figures printed; their
# gateway CPU per push (nodes and database, µs) in ALERT_COST and SILENT_COST.
waves() {
  local label=$1 devices=$2 cpu0 cpu1 ok seconds r0 s0
  r0=$(sum_field 7 $ALL); s0=$(sum_field 8 $ALL)
  perf_start "$(echo "$label" | tr -c 'a-zA-Z0-9\n' '-' | tr -s '-')-alert"
  cpu0=$(cpu_now)
  read -r ok seconds <<< "$(fan_out alert 0)"
  cpu1=$(cpu_now)
  perf_stop
  need "the alert's answers ($label)" "$ok"; need "the alert's fan-out ($label)" "$seconds"
  ALERT_COST=$(gateway_per_push "$cpu0" "$cpu1" "$ok")
  echo "$label: an alert to every device: $ok of $devices answered 200, the last acknowledged $seconds s after the first POST (goal < 5 s); $(cpu_between "$cpu0" "$cpu1" "$ok"); devices closed for not acknowledging so far: $(stalls); routed to another node: $(( $(sum_field 7 $ALL) - r0 )), of them through the database (the node link did not take them): $(( $(sum_field 8 $ALL) - s0 ))"
  W0=$(sum_field 3 $ALL); H0=$(sum_field 4 $ALL)
  perf_start "$(echo "$label" | tr -c 'a-zA-Z0-9\n' '-' | tr -s '-')-silent"
  cpu0=$(cpu_now)
  read -r ok seconds <<< "$(fan_out silent 0)"
  cpu1=$(cpu_now)
  perf_stop
  need "the silent push's answers ($label)" "$ok"; need "the silent push's fan-out ($label)" "$seconds"
  SILENT_COST=$(gateway_per_push "$cpu0" "$cpu1" "$ok")
  local w1 h1; w1=$(sum_field 3 $ALL); h1=$(sum_field 4 $ALL)
  echo "$label: a silent push to every device: $ok answered 200 in $seconds s; woken on budget $((w1 - W0)), held $((h1 - H0)); $(cpu_between "$cpu0" "$cpu1" "$ok"); devices closed for not acknowledging so far: $(stalls)"
}
waves "PostgreSQL, $NODES node$([ "$NODES" -gt 1 ] && echo s)" "$DEVICES"
PG_ALERT=$ALERT_COST; PG_SILENT=$SILENT_COST

# Node 1 killed with SIGKILL; its devices move on to node 2 by themselves; an alert to every device
# through the other nodes: every one answered 200 is acknowledged, node 1's devices' too. A fleet of one
# node has no other node to move to: the step is skipped, and says so.
if [ "$NODES" -lt 2 ]; then
  echo "node 1 killed: skipped (one node: no other node for its devices)"
else
  PER_NODE=$((LIMIT_SURVIVORS / (NODES - 1)))
  [ "$LIMIT_SURVIVORS" -ge "$DEVICES" ] || fail "node 1's loss not measured: the other $((NODES - 1)) nodes hold at most $LIMIT_SURVIVORS device connections ($PER_NODE each, devices.max_connections) for $DEVICES devices — $(( (DEVICES + PER_NODE - 1) / PER_NODE + 1 )) nodes survive the loss of one"
  read -r ON_NODE_1 _ <<< "$(counters 0)"; need "node 1's devices" "$ON_NODE_1"
  kill -9 "${PIDS[0]}"
  KILLED_AT=$(date +%s.%N)
  # Beside the alert: when every device is connected to a survivor again (their counters, read every 0.2 s).
  (
    "${COUNTERS[@]}" wait-connected "$DEVICES" "$(awk -v a="$KILLED_AT" 'BEGIN {printf "%.0f", a + 300}')" \
      $(ports $(seq 1 $((NODES - 1)))) >/dev/null \
      && awk -v a="$KILLED_AT" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}' > "$WORK/back.txt"
  ) &
  BACK_PID=$!
  read -r OK SECONDS_ <<< "$(fan_out alert 1)"
  need "the answers after the kill" "$OK"; need "the recovery" "$SECONDS_"
  CAUGHT_UP=$(awk -v a="$KILLED_AT" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  wait "$BACK_PID" || true
  BACK=$(cat "$WORK/back.txt" 2>/dev/null || true)
  need "node 1's devices back on the others" "$BACK"
  echo "node 1 killed (SIGKILL, $ON_NODE_1 devices): every device connected to the others again $BACK s after the kill; an alert to every device through the others, $OK of $DEVICES answered 200, every one acknowledged $CAUGHT_UP s after the kill (goal: every push delivered, within 30 s)"
fi
# A routed push against a local one, in the same fleet (issue 49's goal: ≤ 1.25 ×), on the nodes left after
# the kill (so the kill's figures stay those of a fleet after two waves): an alert to every device POSTed to
# the node that runs it (local), and one POSTed to the next running node after it (routed: each push crosses
# a link to its owner), twice each in the order local, routed, routed, local, so that a drift of the
# machine's speed falls on both; the gateway's CPU a push (nodes + database) of each, and the ratio. Each
# device's node is read from the database first (owners). Needs two nodes left (three in the fleet);
# FLEET_ROUTED=0 skips it.
owners() {
  local url; url=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["postgresURL"])' "$DATA/fleet/fleet.json")
  psql -X -qAt -F ' ' "$url" -c "SELECT t.token, substr(d.owner, 6)::int - 1 FROM tokens t JOIN devices d ON d.id = t.device_id WHERE d.owner ~ '^node-[0-9]+$'" \
    > "$WORK/owners.txt" || fail "cannot read the devices' nodes from the database (psql)"
  [ "$(wc -l < "$WORK/owners.txt")" -ge "$DEVICES" ] || fail "the database names a node for $(wc -l < "$WORK/owners.txt") of $DEVICES devices"
}
if [ "$NODES" -lt 3 ] || [ "${FLEET_ROUTED:-1}" = 0 ]; then
  echo "routed against local: skipped ($([ "$NODES" -lt 3 ] && echo "$NODES node$([ "$NODES" -gt 1 ] && echo s): no link between the nodes left after the kill" || echo "FLEET_ROUTED=0"))"
elif ! command -v psql >/dev/null; then
  echo "routed against local: skipped (no psql to read each device's node: apt-get install postgresql-client)"
else
  owners
  # Clock ticks of the gateway (nodes + PostgreSQL) and pushes, local and routed.
  declare -A TICKS=([owner]=0 [other]=0) PUSHES=([owner]=0 [other]=0)
  for placement in owner other other owner; do
    read -r _ _ _ _ _ _ r0 _ k0 c0 <<< "$("${COUNTERS[@]}" sum $(ports $ALL))"
    cpu0=$(cpu_now)
    read -r ok seconds <<< "$(fan_out alert 1 "$placement")"
    cpu1=$(cpu_now)
    need "the answers ($placement)" "$ok"; need "the fan-out ($placement)" "$seconds"
    cost=$(gateway_per_push "$cpu0" "$cpu1" "$ok")
    TICKS[$placement]=$(( TICKS[$placement] + $(gateway_ticks "$cpu0" "$cpu1") ))
    PUSHES[$placement]=$(( PUSHES[$placement] + ok ))
    read -r _ _ _ _ _ _ r1 _ k1 c1 <<< "$("${COUNTERS[@]}" sum $(ports $ALL))"
    echo "routed against local: an alert to every device POSTed to $([ "$placement" = owner ] && echo "its device's node (local)" || echo "the next node after its device's (routed)"): $ok answered 200, the last acknowledged $seconds s after the first POST; $(cpu_between "$cpu0" "$cpu1" "$ok"); the gateway $cost µs a push; routed to another node: $((r1 - r0)); the nodes' commits: $((k1 - k0)), $(( (c1 - c0) / ((k1 - k0) > 0 ? (k1 - k0) : 1) )) changes each"
  done
  # Under 50 clock ticks (0.5 s) a side, a tick's rounding is 2 % or more of it: too few pushes for a ratio.
  if [ "${TICKS[owner]}" -lt 50 ] || [ "${TICKS[other]}" -lt 50 ]; then
    echo "routed against local: no ratio (the gateway's CPU: ${TICKS[owner]} clock ticks local, ${TICKS[other]} routed; 50 each are needed: more devices)"
  else
    echo "routed against local: $(awk -v r="${TICKS[other]}" -v rn="${PUSHES[other]}" -v l="${TICKS[owner]}" -v ln="${PUSHES[owner]}" 'BEGIN {printf "%.2f", (r / rn) / (l / ln)}') × the gateway's CPU a push (goal ≤ 1.25)"
  fi
fi

for s in $(seq 0 $((SIMULATORS - 1))); do
  kill -0 "${SIM_PIDS[$s]}" 2>/dev/null || { show_log "$WORK/simulate-$s.log"; fail "simulator $s exited during the run"; }
done

# The same waves on one SQLite node (`pushgate serve`, the store's default), with the same devices (as many
# as one simulator runs, if the fleet had more), in the same run: a push's cost on PostgreSQL-backed nodes
# read against it (issue 49's goal: ≤ 2 ×). FLEET_SQLITE=0 skips it.
if [ "${FLEET_SQLITE:-1}" = 0 ]; then
  echo "one SQLite node: skipped (FLEET_SQLITE=0)"
  exit 0
fi
"$PG" fleet down "${FLEET_SET_ARGS[@]}" --grace-seconds 5 >/dev/null 2>&1 || fail "fleet down failed"
for p in "${SIM_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
for p in "${SIM_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
# PostgreSQL's processes are no longer the gateway's (the fleet's backends exiting would count as less).
COUNT_POSTGRES=0
SQLITE_DEVICES=$(( DEVICES < PER_SIMULATOR ? DEVICES : PER_SIMULATOR ))
DATA="$WORK/sqlite"; BASE=23400; mkdir -p "$DATA"
settings "$DATA" "$BASE"
mkdir -p "$WORK/sqlite-key"
(cd "$WORK/sqlite-key" && "$PG" keys generate --team-id TEAM123456 --key-id KEY1234567 --topic com.example.app "${SET[@]}" >/dev/null)
JWT=$("$PG" keys token --key "$WORK/sqlite-key/AuthKey_KEY1234567.p8" --team-id TEAM123456 --key-id KEY1234567)
setsid "$PG" serve "${SET[@]}" > "$WORK/sqlite-node.log" 2>&1 &
PIDS=($!); NODES=1; ALL=0
wait_ready "${PIDS[0]}" "$(admin 0)" "$WORK/sqlite-node.log"
setsid "$PG" simulate --profile default --endpoints "127.0.0.1:$((BASE + 1))" --devices "$SQLITE_DEVICES" --threads 1 --seed 1 \
  --data-dir "$DATA" --apps com.example.app --duration 3600 --connect-timeout 1200 \
  --tokens-file "$WORK/tokens-sqlite.txt" > "$WORK/simulate-sqlite.log" 2>&1 &
SIM_PIDS=($!)
wait_tokens "${SIM_PIDS[0]}" "$WORK/tokens-sqlite.txt" "$WORK/simulate-sqlite.log" 1200
cp "$WORK/tokens-sqlite.txt" "$WORK/tokens.txt"
sleep 2
waves "SQLite, 1 node" "$SQLITE_DEVICES"
echo
echo "| gateway CPU per push (nodes + database) | alert | silent |"
echo "|---|---|---|"
echo "| PostgreSQL, $FLEET_NODES node$([ "$FLEET_NODES" -gt 1 ] && echo s), $DEVICES devices | $PG_ALERT µs | $PG_SILENT µs |"
echo "| SQLite, 1 node, $SQLITE_DEVICES devices | $ALERT_COST µs | $SILENT_COST µs |"
echo "| PostgreSQL ÷ SQLite (goal ≤ 2) | $(awk -v a="$PG_ALERT" -v b="$ALERT_COST" 'BEGIN {printf "%.2f", a / b}') | $(awk -v a="$PG_SILENT" -v b="$SILENT_COST" 'BEGIN {printf "%.2f", a / b}') |"

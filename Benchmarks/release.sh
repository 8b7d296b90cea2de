# Sourced by the benchmark scripts (from the repository's root): the descriptor limit raised to the
# hard one; the binary built and in $PG (release; `BENCH_CONFIGURATION=debug`, as `run-all.sh smoke`
# sets, takes the debug build the tests use); a work directory in $WORK that is removed, with the
# script's background jobs stopped, on exit; and the checks that make a script fail with its reason
# instead of printing a wrong figure.
ulimit -n "$(ulimit -Hn)"
CONFIGURATION=${BENCH_CONFIGURATION:-release}
swift build -c "$CONFIGURATION" --product pushgate >&2
PG="$(swift build -c "$CONFIGURATION" --show-bin-path)/pushgate"
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

# fail MESSAGE…: the script's name and the reason on stderr, exit status 1.
fail() { echo "$(basename "$0"): $*" >&2; exit 1; }

# show_log FILE: its last lines on stderr (what a failed process said).
show_log() { [ -f "$1" ] && { echo "--- last lines of $1:" >&2; tail -n 15 "$1" >&2; }; return 0; }

# wait_ready PID ADMIN_PORT LOG: until the gateway answers /ready with 200 (up to 60 s); fails with its
# log if it exits or does not get ready.
wait_ready() {
  local pid=$1 port=$2 log=$3
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/ready" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { show_log "$log"; fail "the gateway (admin port $port) exited before it was ready"; }
    sleep 0.1
  done
  show_log "$log"; fail "the gateway (admin port $port) was not ready in 60 s"
}

# wait_tokens PID TOKENS LOG [SECONDS]: until the simulator has written its tokens file (every device
# connected and installed its apps; default 180 s); fails with its log if it exits or runs out of time.
wait_tokens() {
  local pid=$1 tokens=$2 log=$3 seconds=${4:-180} start
  start=$(date +%s)
  until [ -s "$tokens" ]; do
    kill -0 "$pid" 2>/dev/null || { show_log "$log"; fail "the simulator exited before every device connected"; }
    [ $(( $(date +%s) - start )) -le "$seconds" ] || { show_log "$log"; fail "the devices did not all connect in $seconds s"; }
    sleep 0.2
  done
}

# need NAME VALUE: fails unless VALUE is a number (a figure the run should have produced).
need() { [[ "$2" =~ ^-?[0-9]+([.][0-9]+)?$ ]] || fail "no figure for $1 (got '${2}')"; }

# announcing_gateway BASE: a gateway for simulated iPhones whose versions are announced through it — its
# devices port BASE-1 (plain), provider API BASE-2 (h2c), admin BASE-3, data in $WORK/data, a provider
# key for every topic in $WORK — started and ready. Sets SETTINGS (its flags, for `pushgate lookup` and
# the like) and ANNOUNCE (what `pushgate simulate` needs to reach it and announce: port, data dir,
# provider, key).
announcing_gateway() {
  local base=$1
  SETTINGS=(--set "data_dir=$WORK/data" --set devices.port=$((base - 1)) --set devices.tls.enabled=false
    --set provider.tls.enabled=false --set provider.h2c.port=$((base - 2)) --set admin.port=$((base - 3))
    --set log.level=warning)
  (cd "$WORK" && "$PG" keys generate --team-id TEAM123456 --key-id KEY1234567 "${SETTINGS[@]}" >/dev/null)
  "$PG" serve "${SETTINGS[@]}" 2> "$WORK/serve.log" &
  wait_ready $! $((base - 3)) "$WORK/serve.log"
  ANNOUNCE=(--port $((base - 1)) --data-dir "$WORK/data" --provider "http://127.0.0.1:$((base - 2))"
    --key "$WORK/AuthKey_KEY1234567.p8" --team-id TEAM123456 --key-id KEY1234567)
}

# create_database NAME: a database for the run on POSTGRES_URL's server (whose role may create them).
create_database() {
  psql -q "$POSTGRES_URL" -c "CREATE DATABASE $1" || fail "cannot create a database at $POSTGRES_URL"
}

# drop_database NAME: the run's database dropped, retried for a few seconds; says so if it stays. FORCE ends
# the run's own connections left behind but refuses while an autovacuum worker (of no role this one may
# signal) is in the database, as one is for a while after a large run; a plain DROP then stops the
# autovacuum workers itself (waiting up to 5 s for them).
drop_database() {
  local attempt
  for attempt in 1 2 3 4 5; do
    sleep 1
    psql -q "$POSTGRES_URL" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" 2>/dev/null && return 0
    psql -q "$POSTGRES_URL" -c "DROP DATABASE IF EXISTS $1" 2>/dev/null && return 0
  done
  echo "$(basename "$0"): the database $1 is left behind after $attempt tries (drop it by hand)" >&2
}

# provider_fixture COUNT: for the provider API's request-path scripts, with the gateway's SETTINGS set: a
# provider key for com.example.app, COUNT device tokens registered (one a line in $WORK/tokens.txt), a
# provider token in JWT, and the ~100-byte silent payload every POST sends in $WORK/body.json.
provider_fixture() {
  (cd "$WORK" && "$PG" keys generate --team-id TEAM123456 --key-id KEY1234567 --topic com.example.app "${SETTINGS[@]}" >/dev/null)
  "$PG" tokens register --topic com.example.app --count "$1" "${SETTINGS[@]}" > "$WORK/tokens.txt"
  JWT=$("$PG" keys token --key "$WORK/AuthKey_KEY1234567.p8" --team-id TEAM123456 --key-id KEY1234567)
  printf '{"aps":{"content-available":1},"job":{"id":"4f6a2b1c","kind":"refresh","since":1800000000}}' > "$WORK/body.json"
}

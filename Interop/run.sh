#!/usr/bin/env bash
# Interoperability with the APNs client libraries teams use: each client in Interop/clients.txt is
# installed (pinned, in its own virtualenv under .build-interop/) and pointed at a `pushgate serve`
# started for it on loopback TLS, then drives the cases in Interop/clients/common.py: an alert and a
# background push by token, BadDeviceToken, 410 Unregistered with its timestamp, certificate auth where
# the client has it, and 200 pushes on one client. Prints a compatibility table (Markdown).
#
#   Interop/run.sh            # every client;   Interop/run.sh aioapns_client.py …  # some
#
# A client that cannot be installed (no network, no python3-venv) is reported as skipped; the script
# fails only when an installed client fails a case. Bounded: each client has 120 s.
set -uo pipefail
cd "$(dirname "$0")/.."
source Interop/common.sh interop

TLS_PORT=$(free_port); H2C_PORT=$(free_port); DEV_PORT=$(free_port); ADMIN_PORT=$(free_port)
TOPIC=com.example.interop TEAM=TEAMINTROP KEY_ID=KEYINTEROP
SET=(--set "data_dir=$WORK/data" --set provider.tls.port=$TLS_PORT --set provider.h2c.port=$H2C_PORT
  --set devices.port=$DEV_PORT --set admin.port=$ADMIN_PORT --set log.level=warning
  --set provider.rate.device_token.per_second=0 --set devices.reload_seconds=1)

(cd "$WORK" && "$PG" keys generate --team-id $TEAM --key-id $KEY_ID --topic $TOPIC --output "$WORK/AuthKey.p8" "${SET[@]}") >/dev/null
"$PG" certs issue --topic $TOPIC --team-id $TEAM --output-directory "$WORK/certs" "${SET[@]}" >/dev/null
cat "$WORK/certs/client.pem" "$WORK/certs/client-key.pem" > "$WORK/certs/combined.pem"
TOKEN=$("$PG" tokens register --topic $TOPIC "${SET[@]}")
GONE=$("$PG" tokens register --topic $TOPIC "${SET[@]}")
"$PG" tokens uninstall "$GONE" "${SET[@]}" >/dev/null
UNKNOWN=$(printf 'f%.0s' $(seq 1 64))

"$PG" serve "${SET[@]}" 2> "$WORK/serve.log" &
PID=$!
for _ in $(seq 1 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$TLS_PORT) 2>/dev/null && break
  sleep 0.1
done

JWT=$("$PG" keys token --key "$WORK/AuthKey.p8" --team-id $TEAM --key-id $KEY_ID)
ARGS=(--jwt "$JWT" --host localhost --port $TLS_PORT --ca "$WORK/data/tls/ca.pem" --key "$WORK/AuthKey.p8" --key-id $KEY_ID
  --team-id $TEAM --topic $TOPIC --token "$TOKEN" --unregistered "$GONE" --unknown "$UNKNOWN"
  --certificate "$WORK/certs/client.pem" --combined "$WORK/certs/combined.pem")

CASES=(alert background bad_device_token unregistered certificate many)
echo "| client | $(IFS='|'; echo "${CASES[*]}" | sed 's/|/ | /g') |"
echo "|---|$(printf -- '---|%.0s' "${CASES[@]}")"
failed=0
while read -r driver requirement; do
  [[ -z "$driver" || "$driver" == \#* ]] && continue
  if [ $# -gt 0 ] && [[ ! " $* " == *" $driver "* ]]; then continue; fi
  python=python3
  name=${driver%_client.py}
  if [ "$requirement" != "-" ]; then
    name=$requirement
    venv=$(ensure_venv "$requirement")
    if [ -z "$venv" ]; then
      echo "| $requirement | skipped: could not be installed ($(tail -1 "$WORK/pip.log" 2>/dev/null | cut -c1-80)) |"
      continue
    fi
    python="$venv/bin/python"
  fi
  line=$(cd Interop/clients && timeout 120 "$python" "$driver" "${ARGS[@]}" 2> "$WORK/$driver.err" | tail -1)
  row=$(python3 - "$line" "${CASES[@]}" <<'PY'
import json, sys
line, cases = sys.argv[1], sys.argv[2:]
try:
    results = json.loads(line)
except ValueError:
    print("crashed: " + " ".join(line.split())[:120]); sys.exit(1)
cells = [results.get(case, "n/a") for case in cases]
print(" | ".join(cell.replace("|", "/") for cell in cells))
sys.exit(1 if any(cell.startswith("fail") for cell in cells) else 0)
PY
) || { failed=1; sed 's/^/    /' "$WORK/$driver.err" | tail -15 >&2; }
  echo "| $name | $row |"
done < Interop/clients.txt

# What the gateway made of it: aapns's background pushes carry an alert (accepted, the mismatch counted).
python3 - "$ADMIN_PORT" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
accepted = sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith("pushgate_accepted_total{"))
mismatches = {line.split('"')[1]: int(float(line.split()[-1])) for line in text.splitlines()
              if line.startswith("pushgate_push_type_mismatches_total{") and float(line.split()[-1]) > 0}
print(f"\ngateway: {int(accepted)} pushes accepted; push type mismatches recorded: {mismatches or 'none'}")
PY
exit $failed

#!/usr/bin/env bash
# The admin API against its OpenAPI document (/openapi.json, Sources/Gateway/AdminAPI/AdminOpenAPI.swift):
# schemathesis (pinned, in .build-interop/) generates requests for every operation and checks every
# answer — status documented, body conforming, no 500, 401 without the token, 405 with Allow for other
# methods. /v1/live (an endless event stream) is left out. Skipped when schemathesis cannot be installed.
# Bounded: at most 60 examples per operation, 300 s in all.
set -uo pipefail
cd "$(dirname "$0")/.."
source Interop/common.sh "admin API check"
REQUIREMENT="schemathesis==4.32.5"
VENV=$(ensure_venv "$REQUIREMENT")
if [ -z "$VENV" ]; then
  echo "admin API check: skipped ($REQUIREMENT could not be installed: $(tail -1 "$WORK/pip.log" | cut -c1-80))"
  exit 0
fi
ADMIN_PORT=$(free_port)
TOKEN=admin-api-check
"$PG" serve --set "data_dir=$WORK/data" --set provider.tls.enabled=false --set provider.h2c.port=$(free_port) \
  --set devices.port=$(free_port) --set admin.port=$ADMIN_PORT --set admin.token=$TOKEN --set log.level=warning \
  2> "$WORK/serve.log" &
PID=$!

timeout 300 "$VENV/bin/st" run "http://127.0.0.1:$ADMIN_PORT/openapi.json" --wait-for-schema 30 \
  -H "Authorization: Bearer $TOKEN" --checks all --exclude-path /v1/live --max-examples 60 --no-color

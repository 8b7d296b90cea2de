#!/usr/bin/env bash
# Starts Debian's PostgreSQL cluster and creates the test role and database (idempotent):
#   postgres://pushgate:pushgate@127.0.0.1:5432/pushgate_test  (the role may create databases: each
#   contract test makes its own). Run as root (or with sudo).
set -euo pipefail
command -v pg_lsclusters >/dev/null || { echo "postgresql is not installed (apt-get install postgresql)"; exit 1; }
read -r version cluster _ <<< "$(pg_lsclusters -h | head -1)"
[ -n "${version:-}" ] || { echo "no PostgreSQL cluster"; exit 1; }
pg_ctlcluster "$version" "$cluster" start 2>/dev/null || pg_ctlcluster "$version" "$cluster" status >/dev/null
as_postgres() { runuser -u postgres -- "$@"; }
for _ in $(seq 1 50); do as_postgres pg_isready -q && break; sleep 0.2; done
as_postgres psql -qc "DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'pushgate') THEN
    CREATE ROLE pushgate LOGIN PASSWORD 'pushgate' CREATEDB;
  END IF; END \$\$;"
as_postgres psql -Atc "SELECT 1 FROM pg_database WHERE datname = 'pushgate_test'" | grep -q 1 \
  || as_postgres createdb -O pushgate pushgate_test
echo "PostgreSQL ready: postgres://pushgate:pushgate@127.0.0.1:5432/pushgate_test"

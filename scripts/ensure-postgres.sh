#!/usr/bin/env bash
# Makes sure a PostgreSQL server is reachable for the test suite and benchmarks.
# If TPCBENCH_TEST_DATABASE_URL points at a reachable server, nothing is done; otherwise
# Debian's cluster is started and a 'tpcbench' role (allowed to create test databases) made.
set -euo pipefail
URL=${TPCBENCH_TEST_DATABASE_URL:-postgres://tpcbench:tpcbench@127.0.0.1:5432/tpcbench}

if pg_isready -q -d "$URL" 2>/dev/null && psql -q "$URL" -c 'select 1' >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-postgres: no PostgreSQL at $URL; start one or set TPCBENCH_TEST_DATABASE_URL" >&2
  exit 1
fi
ver=$(ls /usr/lib/postgresql | sort -V | tail -1)
if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -q "^$ver main$"; then
  pg_createcluster "$ver" main >/dev/null
fi
pg_ctlcluster "$ver" main start 2>/dev/null || true
for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.5; done
pg_isready -q -h 127.0.0.1 -p 5432 || { echo "ensure-postgres: PostgreSQL $ver did not start (see /var/log/postgresql)" >&2; exit 1; }
runuser -u postgres -- psql -q -v ON_ERROR_STOP=1 <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tpcbench') THEN
    CREATE ROLE tpcbench LOGIN PASSWORD 'tpcbench' CREATEDB;
  END IF;
END $$;
SELECT 'CREATE DATABASE tpcbench OWNER tpcbench' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'tpcbench')\gexec
SQL
psql -q "$URL" -c 'select 1' >/dev/null
echo "ensure-postgres: PostgreSQL $ver ready at $URL"

#!/bin/bash
# The entrypoint of localhost/tpc-bench/postgres:15 (images/lab/Dockerfile): the contract of
# docker.io/library/postgres that charts/tpc-bench/templates/database.yaml relies on.
#   POSTGRES_PASSWORD  the superuser's password (required)
#   POSTGRES_USER      the superuser (default postgres)
#   POSTGRES_DB        the database made on first start (default: $POSTGRES_USER)
#   PGDATA             the cluster's directory (default /var/lib/postgresql/data); it may be a
#                      subdirectory of a volume that only its group can write (fsGroup)
#   PGPORT             the port (default 5432), read by postgres and pg_isready alike
#   POSTGRES_INITDB_ARGS  more initdb options (split on blanks)
# First start (no $PGDATA/PG_VERSION): initdb with scram-sha-256 passwords for every TCP
# connection, from any address (trust only on the unix socket in /var/run/postgresql),
# then CREATE DATABASE through a server that listens on that socket alone. Every start:
# $PGDATA made 0700 again (fsGroup makes what it mounts group-writable; postgres refuses
# that), then postgres replaces this script as PID 1 (it handles SIGTERM/SIGINT itself).
# Arguments: none, `postgres [OPTION...]` or only options (-c name=value) start the server;
# any other command is run as it is.
set -euo pipefail

me=postgres-entrypoint
die() {
  echo "$me: $*" >&2
  exit 1
}

if [ "$#" -eq 0 ] || [ "${1:0:1}" = "-" ]; then set -- postgres "$@"; fi
[ "$1" = postgres ] || exec "$@"

[ -n "${POSTGRES_PASSWORD:-}" ] \
  || die "POSTGRES_PASSWORD is not set (the superuser's password, required: every TCP connection must give it)"
[ "$(id -u)" -ne 0 ] || die "run as the postgres user (uid 999), not as root"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"

mkdir -p "$PGDATA" 2>/dev/null \
  || die "cannot create PGDATA $PGDATA: its parent must be writable by uid $(id -u) or gid $(id -g)"
chmod 00700 "$PGDATA" 2>/dev/null \
  || die "PGDATA $PGDATA is not uid $(id -u)'s: use a subdirectory of the volume (e.g. PGDATA=/var/lib/postgresql/data/pgdata)"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  echo "$me: first start: initdb $PGDATA (superuser $user, database $db)" >&2
  read -ra extra <<<"${POSTGRES_INITDB_ARGS:-}"
  initdb --username="$user" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") \
    --auth-local=trust --auth-host=scram-sha-256 "${extra[@]}"
  # initdb's host lines cover loopback only: the other pods connect from their own addresses.
  printf '\n# postgres-entrypoint: TCP from anywhere, with the password\nhost all all all scram-sha-256\n' \
    >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    pg_ctl --wait --silent --options="-c listen_addresses=''" start
    psql --quiet --no-psqlrc --set=ON_ERROR_STOP=1 --username="$user" --dbname=postgres \
      --set=db="$db" <<<'CREATE DATABASE :"db";'
    pg_ctl --wait --silent --mode=fast stop
  fi
  echo "$me: initdb done" >&2
fi
exec "$@"

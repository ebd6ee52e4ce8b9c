#!/usr/bin/env bash
# Starts Mosaic's test PostgreSQL: a private instance of Debian's postgresql package
# (the store's PostgreSQL backend is tested against a real server), its data directory
# and unix socket under $MOSAIC_PG_DIR (default /tmp/mosaic-pg), listening on
# 127.0.0.1 only at $MOSAIC_PG_PORT (default 55432, an uncommon port so it never meets
# a system PostgreSQL). Password (scram-sha-256) auth over 127.0.0.1 for the test role
# "mosaic"; nothing else may connect over TCP. Idempotent: a running instance is reused.
# When ready it writes $MOSAIC_PG_DIR/pg.env:
#
#   MOSAIC_TEST_POSTGRES=postgres://mosaic:<password>@127.0.0.1:55432/postgres?sslmode=disable
#
# internal/store/pgtest reads MOSAIC_TEST_POSTGRES (or that file) and gives each test
# its own fresh database. Stop it with scripts/testpg/down.sh.
#
# initdb and postgres refuse to run as root: as root the instance runs as the
# "postgres" user the Debian package creates.
set -euo pipefail

DIR="${MOSAIC_PG_DIR:-/tmp/mosaic-pg}"
PORT="${MOSAIC_PG_PORT:-55432}"
# A test-only password (the instance listens on loopback only and holds only test
# databases); it exists so the tests exercise real password auth and DSN redaction.
PASS="${MOSAIC_PG_PASSWORD:-mosaic-test-pw}"

BIN=""
for d in /usr/lib/postgresql/*/bin; do
  [ -x "$d/initdb" ] && BIN="$d"
done
if [ -z "$BIN" ]; then
  echo "testpg: PostgreSQL is not installed (apt-get install -y postgresql); no /usr/lib/postgresql/*/bin/initdb" >&2
  exit 1
fi

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

DATA="$DIR/data"
mkdir -p "$DIR"
if [ "$(id -u)" = 0 ]; then chown postgres: "$DIR"; fi
chmod 755 "$DIR" # pg.env is read by tests; the data directory itself is 0700 (initdb)

dsn="postgres://mosaic:${PASS}@127.0.0.1:${PORT}/postgres?sslmode=disable"
write_env() {
  umask 077
  printf 'MOSAIC_TEST_POSTGRES=%s\n' "$dsn" >"$DIR/pg.env.tmp"
  mv "$DIR/pg.env.tmp" "$DIR/pg.env"
  chmod 644 "$DIR/pg.env" # read by test processes of any user on this machine
  echo "testpg: PostgreSQL ready at 127.0.0.1:$PORT ($DIR/pg.env)"
}

if as_owner "$BIN/pg_ctl" status -D "$DATA" >/dev/null 2>&1; then
  write_env
  exit 0
fi

if [ ! -s "$DATA/PG_VERSION" ]; then
  pwfile="$DIR/.pw"
  ( umask 077; printf '%s\n' "$PASS" >"$pwfile" )
  if [ "$(id -u)" = 0 ]; then chown postgres: "$pwfile"; fi
  # C locale: text sorts by bytes, as in SQLite, so both backends order ids alike.
  as_owner "$BIN/initdb" -D "$DATA" -U mosaic --pwfile="$pwfile" -E UTF8 --no-locale \
    --auth-local=trust --auth-host=scram-sha-256 >"$DIR/initdb.log" 2>&1 \
    || { rm -f "$pwfile"; echo "testpg: initdb failed; see $DIR/initdb.log" >&2; tail -20 "$DIR/initdb.log" >&2; exit 1; }
  rm -f "$pwfile"
  # Only loopback over TCP; everything else is rejected.
  cat >"$DATA/pg_hba.conf" <<HBA
# TYPE  DATABASE USER ADDRESS       METHOD
local   all      all                trust
host    all      all  127.0.0.1/32  scram-sha-256
HBA
  cat >>"$DATA/postgresql.conf" <<CONF
# Mosaic test instance (scripts/testpg/up.sh)
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DIR'
max_connections = 200
shared_buffers = 32MB
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
CONF
fi

as_owner "$BIN/pg_ctl" start -D "$DATA" -l "$DIR/postgres.log" -w -t 30 >/dev/null \
  || { echo "testpg: postgres did not start; see $DIR/postgres.log" >&2; tail -20 "$DIR/postgres.log" >&2; exit 1; }
for _ in $(seq 1 50); do
  if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
    write_env
    exit 0
  fi
  sleep 0.2
done
echo "testpg: postgres is not accepting connections on 127.0.0.1:$PORT; see $DIR/postgres.log" >&2
exit 1

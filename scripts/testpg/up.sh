#!/usr/bin/env bash
# Starts Mosaic's test PostgreSQL: a private instance of Debian's postgresql package
# (the store's PostgreSQL backend is tested against a real server), its data directory
# and unix socket under $MOSAIC_PG_DIR (default /tmp/mosaic-pg), listening on
# 127.0.0.1 only at $MOSAIC_PG_PORT (default 55432, an uncommon port so it never meets
# a system PostgreSQL). Password (scram-sha-256) auth over 127.0.0.1 for the test role
# "mosaic"; nothing else may connect over TCP. Its unix socket (mode 0700) admits only
# the instance's owner, by peer authentication. Idempotent: a running instance is
# reused, after its settings (port, socket mode, authentication rules, password) are
# brought to these and a real login is checked. When ready it writes $MOSAIC_PG_DIR/pg.env
# (mode 0600):
#
#   MOSAIC_TEST_POSTGRES=postgres://mosaic:<password>@127.0.0.1:55432/postgres?sslmode=disable
#
# internal/store/pgtest reads MOSAIC_TEST_POSTGRES (or that file) and gives each test
# its own fresh database. Stop it with scripts/testpg/down.sh. With
# MOSAIC_PG_STARTED_FILE set, "started" is written there when this run started the
# instance (scripts/test.sh then stops it at exit, and only then).
#
# initdb and postgres refuse to run as root: as root the instance runs as the
# "postgres" user the Debian package creates.
set -euo pipefail

DIR="${MOSAIC_PG_DIR:-/tmp/mosaic-pg}"
PORT="${MOSAIC_PG_PORT:-55432}"
# A test-only password (the instance listens on loopback only and holds only test
# databases); it exists so the tests exercise real password auth and DSN redaction.
PASS="${MOSAIC_PG_PASSWORD:-mosaic-test-pw}"

die() { echo "testpg: $*" >&2; exit 1; }

case "$DIR" in
  /*) ;;
  *) die "MOSAIC_PG_DIR=$DIR: want an absolute path" ;;
esac
[[ "$DIR" =~ ^/[A-Za-z0-9._/-]+$ ]] || die "MOSAIC_PG_DIR=$DIR: use letters, digits, '.', '_', '-' and '/' only"
[[ "$PORT" =~ ^[0-9]+$ ]] && [ "$PORT" -ge 1024 ] && [ "$PORT" -le 65535 ] || die "MOSAIC_PG_PORT=$PORT: want a port 1024-65535"

BIN=""
for d in /usr/lib/postgresql/*/bin; do
  [ -x "$d/initdb" ] && BIN="$d"
done
[ -n "$BIN" ] || die "PostgreSQL is not installed (apt-get install -y postgresql); no /usr/lib/postgresql/*/bin/initdb"

if [ "$(id -u)" = 0 ]; then OWNER=postgres; else OWNER="$(id -un)"; fi
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
# owned_write FILE: stdin into FILE, written by the instance's owner (mode 0600).
owned_write() { as_owner sh -c 'umask 077; cat >"$1.tmp" && mv "$1.tmp" "$1"' _ "$1"; }

# The directory holds the data, the socket and the password: the owner's alone. A
# pre-existing one must be a real directory of the owner (not a symlink another user
# planted in /tmp, nor someone else's directory).
if [ -L "$DIR" ]; then
  die "$DIR is a symbolic link; remove it or set MOSAIC_PG_DIR to a directory of $OWNER's"
fi
if [ -e "$DIR" ]; then
  [ -d "$DIR" ] || die "$DIR exists and is not a directory; remove it or set MOSAIC_PG_DIR"
  got="$(stat -c %U "$DIR")"
  [ "$got" = "$OWNER" ] || die "$DIR belongs to $got, not $OWNER; remove it or set MOSAIC_PG_DIR to a directory of $OWNER's"
else
  (umask 077; mkdir "$DIR")
  if [ "$(id -u)" = 0 ]; then chown postgres: "$DIR"; fi
fi
chmod 700 "$DIR"
umask 077

DATA="$DIR/data"
# urlenc escapes a URL's user info part (ASCII; every byte but unreserved ones).
urlenc() {
  local s="$1" out="" c i
  for ((i = 0; i < ${#s}; i++)); do
    c="${s:i:1}"
    case "$c" in
      [A-Za-z0-9._~-]) out+="$c" ;;
      *) printf -v c '%%%02X' "'$c"; out+="$c" ;;
    esac
  done
  printf '%s' "$out"
}
dsn="postgres://mosaic:$(urlenc "$PASS")@127.0.0.1:${PORT}/postgres?sslmode=disable"
# Settings applied on every start (the command line overrides postgresql.conf).
OPTS="-p $PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$DIR -c unix_socket_permissions=0700"

write_env() {
  printf 'MOSAIC_TEST_POSTGRES=%s\n' "$dsn" >"$DIR/pg.env.tmp"
  chmod 600 "$DIR/pg.env.tmp"
  mv "$DIR/pg.env.tmp" "$DIR/pg.env"
  echo "testpg: PostgreSQL ready at 127.0.0.1:$PORT ($DIR/pg.env)"
}

# write_auth writes the authentication rules: the socket by peer authentication for
# the owner (as the role mosaic), TCP from 127.0.0.1 by password; nothing else.
write_auth() {
  owned_write "$DATA/pg_ident.conf" <<IDENT
# MAPNAME  SYSTEM-USERNAME  PG-USERNAME
owner      $OWNER           mosaic
IDENT
  owned_write "$DATA/pg_hba.conf" <<HBA
# TYPE  DATABASE USER   ADDRESS       METHOD
local   all      mosaic               peer map=owner
host    all      all    127.0.0.1/32  scram-sha-256
HBA
}

sql() { as_owner "$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$DIR" -p "$PORT" -U mosaic -d postgres "$@"; }

# finish: the password set, a real login over TCP with it, then pg.env.
finish() {
  local ok=""
  for _ in $(seq 1 50); do
    if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then ok=1; break; fi
    sleep 0.2
  done
  [ -n "$ok" ] || die "postgres is not accepting connections on 127.0.0.1:$PORT; see $DIR/postgres.log"
  printf "ALTER ROLE mosaic PASSWORD '%s';\n" "${PASS//\'/\'\'}" | sql -f - \
    || die "cannot set the test password over the socket in $DIR; see $DIR/postgres.log"
  PGPASSWORD="$PASS" PGCONNECT_TIMEOUT=5 "$BIN/psql" -X -q -At \
    "postgres://mosaic@127.0.0.1:${PORT}/postgres?sslmode=disable" -c 'SELECT 1' >/dev/null \
    || die "the test role cannot log in over 127.0.0.1:$PORT with the test password; see $DIR/postgres.log"
  write_env
}

# owner_pid FILE: whether the PID on FILE's first line is a live postgres of this data
# directory (not gone, not a zombie nobody reaped, not a reused PID).
# A postmaster's working directory is its data directory (it chdirs there at start),
# whatever its command line says: `pg_ctl restart -o …` starts one without -D, so the
# command line alone would call a live server stale.
owner_pid() {
  local pid cwd
  pid="$(as_owner sed -n 1p "$1" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/status" ] || return 1
  [ "$(awk '/^State:/{print $2}' "/proc/$pid/status" 2>/dev/null)" != Z ] || return 1
  [ "$(tr -d '\0' <"/proc/$pid/comm" 2>/dev/null)" = postgres ] || return 1
  cwd="$(readlink "/proc/$pid/cwd" 2>/dev/null || as_owner readlink "/proc/$pid/cwd" 2>/dev/null || true)"
  if [ -n "$cwd" ]; then
    [ "$cwd" = "$(readlink -f "$DATA")" ]
    return
  fi
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$DATA"
}

if as_owner "$BIN/pg_ctl" status -D "$DATA" >/dev/null 2>&1 && owner_pid "$DATA/postmaster.pid"; then
  # Running: bring its rules and settings to these (a restart, quick, only when the
  # port or the socket's mode differ: both are fixed at start).
  write_auth
  as_owner "$BIN/pg_ctl" reload -D "$DATA" >/dev/null
  now_port="$(as_owner sed -n 4p "$DATA/postmaster.pid")"
  perms=""
  if [ "$now_port" = "$PORT" ]; then
    perms="$(sql -c 'SHOW unix_socket_permissions' 2>/dev/null || true)"
  fi
  if [ "$now_port" != "$PORT" ] || [ "$perms" != 0700 ]; then
    echo "testpg: restarting the running instance (port $now_port, socket mode ${perms:-unknown}) with port $PORT, socket mode 0700"
    as_owner "$BIN/pg_ctl" restart -D "$DATA" -m fast -w -t 30 -l "$DIR/postgres.log" -o "$OPTS" >/dev/null \
      || die "postgres did not restart; see $DIR/postgres.log"
  fi
  finish
  exit 0
fi

# Not running: a postmaster.pid (or socket lock file) left by a killed server names a
# process that is gone, a zombie, or one that is no postgres of this directory (its
# PID reused): postgres would then refuse to start, so it is removed.
for lock in "$DATA/postmaster.pid" "$DIR/.s.PGSQL.$PORT.lock"; do
  if [ -e "$lock" ] && ! owner_pid "$lock"; then
    echo "testpg: removing the stale $lock (process $(as_owner sed -n 1p "$lock") is not running postgres on $DATA)"
    as_owner rm -f "$lock"
  fi
done

if [ ! -s "$DATA/PG_VERSION" ]; then
  pwfile="$DIR/.pw"
  printf '%s\n' "$PASS" | owned_write "$pwfile"
  # C locale: text sorts by bytes, as in SQLite, so both backends order ids alike.
  as_owner "$BIN/initdb" -D "$DATA" -U mosaic --pwfile="$pwfile" -E UTF8 --no-locale \
    --auth-local=peer --auth-host=scram-sha-256 >"$DIR/initdb.log" 2>&1 \
    || { as_owner rm -f "$pwfile"; echo "testpg: initdb failed; see $DIR/initdb.log" >&2; tail -20 "$DIR/initdb.log" >&2; exit 1; }
  as_owner rm -f "$pwfile"
  as_owner sh -c 'cat >>"$1"' _ "$DATA/postgresql.conf" <<CONF
# Mosaic test instance (scripts/testpg/up.sh; port, addresses and the socket are
# also given on pg_ctl's command line at every start)
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DIR'
unix_socket_permissions = 0700
max_connections = 200
shared_buffers = 32MB
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
CONF
fi
write_auth

as_owner "$BIN/pg_ctl" start -D "$DATA" -l "$DIR/postgres.log" -w -t 30 -o "$OPTS" >/dev/null \
  || { echo "testpg: postgres did not start; see $DIR/postgres.log" >&2; as_owner tail -20 "$DIR/postgres.log" >&2; exit 1; }
if [ -n "${MOSAIC_PG_STARTED_FILE:-}" ]; then echo started >"$MOSAIC_PG_STARTED_FILE"; fi
finish

#!/usr/bin/env bash
# Stops the test PostgreSQL started by scripts/testpg/up.sh. With --purge it also
# removes its data directory ($MOSAIC_PG_DIR, default /tmp/mosaic-pg).
set -euo pipefail
DIR="${MOSAIC_PG_DIR:-/tmp/mosaic-pg}"
BIN=""
for d in /usr/lib/postgresql/*/bin; do
  [ -x "$d/pg_ctl" ] && BIN="$d"
done
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
# A live postmaster of this directory (pg_ctl alone takes an unreaped zombie for one).
live() {
  local pid
  pid="$(as_owner sed -n 1p "$DIR/data/postmaster.pid" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$DIR/data"
}
if [ -n "$BIN" ] && [ -d "$DIR/data" ] && as_owner "$BIN/pg_ctl" status -D "$DIR/data" >/dev/null 2>&1 && live; then
  as_owner "$BIN/pg_ctl" stop -D "$DIR/data" -m fast -w -t 30 >/dev/null
  echo "testpg: stopped"
fi
rm -f "$DIR/pg.env"
if [ "${1:-}" = --purge ]; then
  rm -rf "$DIR"
  echo "testpg: removed $DIR"
fi

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
if [ -n "$BIN" ] && [ -d "$DIR/data" ] && as_owner "$BIN/pg_ctl" status -D "$DIR/data" >/dev/null 2>&1; then
  as_owner "$BIN/pg_ctl" stop -D "$DIR/data" -m fast -w -t 30 >/dev/null
  echo "testpg: stopped"
fi
rm -f "$DIR/pg.env"
if [ "${1:-}" = --purge ]; then
  rm -rf "$DIR"
  echo "testpg: removed $DIR"
fi

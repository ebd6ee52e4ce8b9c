#!/usr/bin/env bash
# Runs every Mosaic test on a fresh Debian machine with Go. It installs what the tests
# need — Debian packages (Redis for the exchange, PostgreSQL for the store's second
# backend, Chromium for the UI, Node.js for the MCP client test, Python for the fake
# Globus endpoint, Slurm + sshd via the test rig) and Go modules — then vets, checks
# formatting, builds the release binary (failing if it is over 40,000,000 bytes) and
# runs `go test ./...`.
#
#   ./scripts/test.sh            everything
#   ./scripts/test.sh -run Demo  extra arguments go to `go test`
#
# Needs root (or passwordless sudo) to install packages and run the Slurm rig. Without
# it the integration tests skip with a message saying how to run them (under CI=true
# they fail instead).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if sudo -n true 2>/dev/null; then SUDO="sudo"; else SUDO="none"; fi
fi

# Debian packages the tests use, by the command that proves each is there (or, for
# PostgreSQL, whose server binaries Debian keeps off PATH in
# /usr/lib/postgresql/<version>/bin, by a path pattern).
have() { case "$1" in /*) compgen -G "$1" >/dev/null ;; *) command -v "$1" >/dev/null 2>&1 ;; esac; }
PG_INITDB='/usr/lib/postgresql/*/bin/initdb'
declare -A NEED=([redis-server]=redis-server [chromium]=chromium [node]=nodejs [npm]=npm [python3]=python3 [ssh]=openssh-client [$PG_INITDB]=postgresql)
missing=()
for cmd in "${!NEED[@]}"; do
  have "$cmd" || missing+=("${NEED[$cmd]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$SUDO" = none ]; then
    echo "== cannot install ${missing[*]} (not root): the tests that need them will skip"
  else
    echo "== installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/mosaic-apt.log 2>&1; then
      $SUDO apt-get update -q >>/tmp/mosaic-apt.log 2>&1 || true
      $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/mosaic-apt.log 2>&1 \
        || { echo "apt-get install failed; see /tmp/mosaic-apt.log"; tail -20 /tmp/mosaic-apt.log; exit 1; }
    fi
  fi
fi

echo "== go modules"
go mod download

echo "== vet and format"
go vet ./...
# go.mod must say what the code imports: direct requirements direct, nothing missing.
if ! tidy=$(go mod tidy -diff 2>&1); then
  echo "go mod tidy would change go.mod/go.sum (run 'go mod tidy'):"; echo "$tidy" | head -40; exit 1
fi
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
# staticcheck, pinned (honnef.co/go/tools v0.8.2 builds with Go 1.26), installed
# into a cache directory so it does not touch the user's GOBIN.
STATICCHECK_BIN="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/mosaic-tools"
if [ ! -x "$STATICCHECK_BIN/staticcheck" ]; then
  GOBIN="$STATICCHECK_BIN" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
"$STATICCHECK_BIN/staticcheck" ./...

echo "== release build (static, stripped; at most 40,000,000 bytes)"
release=$(mktemp -d)
OUT="$release/mosaic" MAX_BYTES=40000000 scripts/build.sh || { rm -rf "$release"; exit 1; }
rm -rf "$release"

# The test PostgreSQL (a private instance on 127.0.0.1:55432, scripts/testpg/up.sh):
# the store's tests run on SQLite and on it.
if have "$PG_INITDB"; then
  echo "== test PostgreSQL"
  scripts/testpg/up.sh
  # shellcheck disable=SC1091
  . "${MOSAIC_PG_DIR:-/tmp/mosaic-pg}/pg.env"
  export MOSAIC_TEST_POSTGRES
else
  echo "== PostgreSQL is not installed: the store's PostgreSQL tests will skip"
fi

if [ "$SUDO" != none ]; then
  echo "== Slurm test rig"
  $SUDO scripts/testrig/up.sh
fi

# Packages whose tests share the Slurm rig (one node per cluster; one test even stops a
# controller) run one at a time after everything else.
RIG_PKGS='/test/e2e|/internal/provider/hpc$|/internal/campaign|/internal/transport/globus'
echo "== tests"
go test -count=1 -timeout 15m "$@" $(go list ./... | grep -v -E "$RIG_PKGS")
echo "== tests on the Slurm rig"
go test -count=1 -timeout 20m -p 1 "$@" $(go list ./... | grep -E "$RIG_PKGS")

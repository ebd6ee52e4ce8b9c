#!/usr/bin/env bash
# Runs every Mosaic test on a fresh Debian machine with Go: installs what the tests need
# (Go modules; Debian packages and the Slurm test rig once later parts need them), then
# vets, builds the static binary and runs `go test ./...`.
#
#   ./scripts/test.sh            everything
#   ./scripts/test.sh -run Demo  extra arguments go to `go test`
set -euo pipefail
cd "$(dirname "$0")/.."

export GOFLAGS="${GOFLAGS:-} -mod=mod"
echo "== go modules"
go mod download

echo "== vet and format"
go vet ./...
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== static build"
CGO_ENABLED=0 go build -o /dev/null ./cmd/mosaic

if [ -x scripts/testrig/up.sh ]; then
  echo "== Slurm test rig"
  scripts/testrig/up.sh
fi

echo "== tests"
go test -count=1 -timeout 15m "$@" ./...

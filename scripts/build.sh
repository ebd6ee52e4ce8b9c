#!/usr/bin/env bash
# Builds the release binary: static (CGO_ENABLED=0), stripped (-s -w), reproducible
# paths (-trimpath), with the version from `git describe` linked in and the commit
# stamped by -buildvcs (this environment may set GOFLAGS=-buildvcs=false).
#
#   ./scripts/build.sh            writes ./mosaic
#   OUT=/usr/local/bin/mosaic ./scripts/build.sh
#   MAX_BYTES=40000000 ./scripts/build.sh   fails if the binary is larger (scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-mosaic}"
VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
VCS=false
git rev-parse --git-dir >/dev/null 2>&1 && VCS=true
CGO_ENABLED=0 go build -trimpath -buildvcs="$VCS" \
  -ldflags "-s -w -X github.com/mosaic-hpc/mosaic/internal/core.Version=$VERSION" \
  -o "$OUT" ./cmd/mosaic
size=$(stat -c %s "$OUT")
echo "built $OUT: mosaic $VERSION, $((size / 1024 / 1024)) MiB ($size bytes)"
if [ -n "${MAX_BYTES:-}" ] && [ "$size" -gt "$MAX_BYTES" ]; then
  echo "the release binary is $size bytes, over the $MAX_BYTES-byte budget (docs/PERFORMANCE.md):" >&2
  echo "find the new weight with: go build -o /tmp/m ./cmd/mosaic && go tool nm -size -sort size /tmp/m | head -40" >&2
  exit 1
fi

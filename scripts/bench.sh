#!/usr/bin/env bash
# Runs Mosaic's headline benchmarks (the numbers in docs/PERFORMANCE.md) and the
# comparison baselines measured on the same machine in the same run.
#   ./scripts/bench.sh            all, 5 runs each (feed the output to benchstat)
#   COUNT=1 ./scripts/bench.sh    one run each
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
run() { echo "\$ go test -run='^\$' -bench='$1' -benchmem -count=$COUNT ${3:-} $2"; go test -run='^$' -bench="$1" -benchmem -count="$COUNT" ${3:-} "$2"; }

run 'Merge1000Partitions' ./internal/federation/
run 'ReplayNASA' ./internal/sim/
run 'Place' ./internal/scheduler/ -cpu=1
run 'Squeue' ./internal/dialect/slurm/
echo "\$ python3 scripts/bench/squeue_parse.py"
python3 scripts/bench/squeue_parse.py
run 'Exchange' ./internal/exchange/
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile /tmp/mosaic-bench-redis.pid >/dev/null
  sleep 0.5
  echo "\$ redis-benchmark -q -n 100000 -t set,get -p $port"
  redis-benchmark -q -n 100000 -t set,get -p "$port" | tr "\r" "\n" | grep "requests per second"
  kill "$(cat /tmp/mosaic-bench-redis.pid)" 2>/dev/null || true
fi
if [ -d internal/replay ]; then run 'Replay' ./internal/replay/; fi

#!/usr/bin/env bash
# scripts/bench/rig-placement.sh — Mosaic against Slurm's own multi-cluster choice on
# the real rig (issue 19, "the same on real Slurm").
#
# Brings the two-cluster Slurm rig up if it is not (scripts/testrig/up.sh), builds the
# mosaic binary and scripts/bench/rigplace, then per seeded stream of GPU jobs (1-4
# GPUs, 5-40 s, Poisson arrivals): (a) sends it through `sbatch -M alpha,beta`, waits
# for the queues to drain, (b) sends the same jobs at the same relative times through
# `mosaic submit` to a `mosaic serve` with both clusters over ssh, and prints mean and
# p95 waits (sacct start − arrival at the submitter, one clock) and their ratio.
#
#   scripts/bench/rig-placement.sh                       one stream, 30 jobs, seed 1
#   scripts/bench/rig-placement.sh --streams 3           seeds 1, 2, 3 and the mean ratios
#   scripts/bench/rig-placement.sh --jobs 20 --gap 4s --seed 7 --tick 2s --out /tmp/rp
#
# All flags go to rigplace (`go run ./scripts/bench/rigplace --help`). A stream of 30
# jobs takes about 4-5 minutes per side. The rig is shared: each side first waits (at
# most --idle-timeout) for its GPUs to be free, and flags other users' GPU jobs that ran
# during a side, since they bias that side's waits.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RIG_ENV=${MOSAIC_RIG_ENV:-/tmp/mosaic-rig/rig.env}

rig_up() {
  [[ -s $RIG_ENV ]] || return 1
  # shellcheck disable=SC1090
  (set -a; . "$RIG_ENV"; SLURM_CONF=$SLURM_CONF_ALPHA sinfo -M alpha,beta -h -o %t >/dev/null 2>&1)
}
if ! rig_up; then
  echo "rig-placement: the Slurm rig is not up; starting it (scripts/testrig/up.sh)" >&2
  if [[ $(id -u) == 0 ]]; then scripts/testrig/up.sh; else sudo scripts/testrig/up.sh; fi
  rig_up || { echo "rig-placement: the rig did not come up; see scripts/testrig/README.md" >&2; exit 1; }
fi

bin=$(mktemp -d "${TMPDIR:-/tmp}/rig-placement-bin.XXXX")
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/mosaic" ./cmd/mosaic
go build -o "$bin/rigplace" ./scripts/bench/rigplace
echo "\$ rigplace --rig-env $RIG_ENV $*   (mosaic $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
"$bin/rigplace" --rig-env "$RIG_ENV" --mosaic "$bin/mosaic" "$@"

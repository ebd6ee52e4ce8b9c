#!/usr/bin/env python3
"""Parse squeue output for 100k jobs the idiomatic Python way, for comparison with
the Go benchmark BenchmarkSqueueParse100k in internal/dialect/slurm/bench_test.go.

The input is generated exactly as the Go benchmark's genQueue does: lines of
JOBID|PARTITION|USER|STATE as printed by `squeue --noheader --all --format=%i|%P|%u|%T`.

    python3 scripts/bench/squeue_parse.py            # 100000 jobs, best of 5
    python3 scripts/bench/squeue_parse.py -n 10000 -r 20
"""
import argparse
import sys
import time
from typing import NamedTuple

PARTS = ["cpu", "gpuA100", "gpuH100,gpuA100", "debug"]
STATES = ["PENDING", "RUNNING", "RUNNING", "COMPLETING", "PENDING", "SUSPENDED"]


class QueueJob(NamedTuple):
    id: str
    partitions: str
    user: str
    state: str


def gen_queue(n: int) -> bytes:
    return "".join(
        f"{1000000 + i}|{PARTS[i % len(PARTS)]}|user{i % 97}|{STATES[i % len(STATES)]}\n" for i in range(n)
    ).encode()


def parse_queue(out: bytes) -> list[QueueJob]:
    jobs = []
    for n, line in enumerate(out.decode().splitlines(), 1):
        if not line:
            continue
        fields = line.split("|")
        if len(fields) != 4 or not fields[0] or not fields[3]:
            raise ValueError(f"squeue line {n}: want JOBID|PARTITION|USER|STATE, got {line[:120]!r}")
        jobs.append(QueueJob(*fields))
    return jobs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=100_000, help="jobs (default 100000)")
    ap.add_argument("-r", type=int, default=5, help="repetitions; the best is reported (default 5)")
    args = ap.parse_args()
    out = gen_queue(args.n)
    best = float("inf")
    for _ in range(args.r):
        t0 = time.perf_counter()
        jobs = parse_queue(out)
        best = min(best, time.perf_counter() - t0)
        assert len(jobs) == args.n
    print(f"python {sys.version.split()[0]}: parsed {args.n} squeue lines ({len(out)} bytes) in {best * 1000:.1f} ms (best of {args.r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

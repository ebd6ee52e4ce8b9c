#!/usr/bin/env python3
"""Per-job look at a rig-placement run: where Mosaic put each job, what the site
estimates (sbatch --test-only, as the ranker saw them) promised, and what happened.

    python3 scripts/bench/rig-placement-estimates.py RUN_DIR SEED [--jobs]

RUN_DIR is rigplace's --out directory: it reads jobs.csv (both sides' measured waits)
and the core's store (mosaic-home/state/mosaic/mosaic.db, opened read-only). Prints, per
seed, the mean of the chosen candidate's estimated wait against the mean observed wait,
how many jobs Mosaic sent to the cluster sbatch -M chose, how many went to the
gpuA100 partition, and how many placements the learned correction of site estimates
touched: in how many it changed some candidate's wait, and in how many the chosen
cluster is not the one the sites' own (uncorrected) estimates put first; --jobs adds
one line per job. Python standard library only.
"""
import csv
import json
import os
import re
import sqlite3
import sys


def seconds(d):
    """A Go duration string ("1m52s", "0s", "250ms") in seconds; None for none."""
    if not d:
        return None
    parts = re.findall(r"([0-9.]+)(ms|h|m|s)", d)
    if not parts or "".join(n + u for n, u in parts) != d:
        raise ValueError("not a Go duration: %r" % d)
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1, "ms": 0.001}[u] for n, u in parts)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    run, seed, per_job = argv[1], argv[2], "--jobs" in argv[3:]
    waits = {}
    with open(os.path.join(run, "jobs.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["seed"] == seed:
                waits[(r["side"], int(r["job"]))] = r
    db = os.path.join(run, "mosaic-home", "state", "mosaic", "mosaic.db")
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    pred = obs = 0.0
    n = same = gpu_part = corrected = flipped = 0
    for name, dec in con.execute(
            "SELECT name, decision FROM tasks WHERE name LIKE ? ORDER BY name", ("%%-s%s-m-%%" % seed,)):
        i = int(name.rsplit("-", 1)[1])
        d = json.loads(dec)
        chosen = [c for c in d["candidates"] if "%s/%s/%s" % (c["system"], c["partition"], c["account"]) == d["chosen"]]
        m, s = waits.get(("mosaic", i)), waits.get(("sbatch", i))
        if not chosen or m is None:
            sys.exit("task %s: no chosen candidate or no measured wait in jobs.csv" % name)
        ch = chosen[0]
        est = seconds(ch.get("est_wait")) or 0.0
        pred += est
        obs += float(m["wait_s"])
        n += 1
        same += bool(s) and s["cluster"] == ch["system"]
        gpu_part += ch["partition"] == "gpuA100"
        feas = [c for c in d["candidates"] if c.get("feasible")]
        corrected += any(c.get("site_wait") is not None for c in feas)
        # The sites' own first choice: least uncorrected wait (site_wait is present only
        # where the correction changed it), ties in the ranker's order.
        raw = min(feas, key=lambda c: (seconds(c.get("site_wait") or c.get("est_wait")) or 0.0, c.get("rank", len(feas))))
        flipped += raw["system"] != ch["system"]
        if per_job:
            ests = " ".join("%s/%s=%s" % (c["system"], c["partition"], c.get("est_wait")) for c in feas)
            print("job %2d  %s GPUs %3ss | sbatch -M: %-5s %4ss | mosaic: %-22s est %5.0fs  waited %4ss | %s" % (
                i, m["gpus"], m["runtime_s"], s["cluster"] if s else "-", s["wait_s"] if s else "-",
                d["chosen"], est, m["wait_s"], ests))
    if n == 0:
        sys.exit("no Mosaic tasks of seed %s in %s" % (seed, db))
    print("seed %s: Mosaic's estimate for its choice %.0fs mean, observed %.0fs mean (observed/estimated %.2f); "
          "same cluster as sbatch -M for %d/%d jobs; gpuA100 partition for %d/%d; "
          "learned correction changed a wait in %d/%d placements and the chosen cluster in %d" % (
              seed, pred / n, obs / n, obs / pred if pred else float("nan"), same, n, gpu_part, n,
              corrected, n, flipped))


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""Time two commands against each other in ABBA order (A B B A, repeated).

The first run after another program is slower on this machine (caches,
frequency): ABBA gives each command the first and the second position
equally often. Prints each command's median, min and max wall time and the
median of the per-round ratios B/A.

usage: scripts/abba.py [--rounds N] [--cwd DIR] [--prep CMD] -- 'CMD A' 'CMD B'
  --rounds N  ABBA rounds (default 10: 20 runs of each)
  --cwd DIR   where both commands run (default: the current directory)
  --prep CMD  a shell command run before every timed run, untimed
              (e.g. `rm -rf .patchgen_cache` for a cold cache)
Both commands run through `sh -c`; their output is discarded; a command that
exits with a status other than 0 or 1 stops the series (exit 1 is a drift or
a finding, which is still a measurement).
"""

import argparse
import statistics
import subprocess
import sys
import time


def run(cmd, cwd, prep):
    if prep:
        subprocess.run(prep, shell=True, cwd=cwd, check=True)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, shell=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = (time.perf_counter() - t0) * 1000.0
    if p.returncode not in (0, 1):
        sys.exit(f"abba: `{cmd}` exited with {p.returncode}")
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--cwd", default=".")
    ap.add_argument("--prep", default=None)
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    ta, tb, ratios = [], [], []
    run(args.a, args.cwd, args.prep)  # warm-up, untimed
    run(args.b, args.cwd, args.prep)
    for _ in range(args.rounds):
        a1 = run(args.a, args.cwd, args.prep)
        b1 = run(args.b, args.cwd, args.prep)
        b2 = run(args.b, args.cwd, args.prep)
        a2 = run(args.a, args.cwd, args.prep)
        ta += [a1, a2]
        tb += [b1, b2]
        ratios.append((b1 + b2) / (a1 + a2))
    for name, cmd, t in (("A", args.a, ta), ("B", args.b, tb)):
        print(f"{name}: median {statistics.median(t):.1f} ms (min {min(t):.1f}, max {max(t):.1f}, n={len(t)})  {cmd}")
    print(f"B/A: median of per-round ratios {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Compare `patchgen bump`'s merges with `git merge-file --diff3` on the same texts.

    patchgen bump ... --dump-merges DIR
    scripts/bump_vs_git.py DIR

For every merge bump ran (DIR/N.base, N.ours, N.theirs: the old target, the
patch dedented and renamed, the new target; N.counts: bump's upstream hunks,
carried, conflicts) this runs `git merge-file -p --diff3` and counts the
upstream hunks git merges cleanly: a conflict-free git merge carries all of
them. It prints, per merge where the two disagree, both counts, and a total:
targets git merges cleanly that bump also merges cleanly, and bump's
conflicts against git's. Exit 1 when git merged a target cleanly that bump
left in conflict.
"""

import glob
import os
import subprocess
import sys


def main():
    d = sys.argv[1]
    clean_git = clean_both = worse = 0
    ours_conf = git_conf = 0
    for counts in sorted(glob.glob(os.path.join(d, "*.counts"))):
        stem = counts[: -len(".counts")]
        hunks, carried, conflicts = map(int, open(counts).read().split())
        r = subprocess.run(
            ["git", "merge-file", "-p", "--diff3", stem + ".ours", stem + ".base", stem + ".theirs"],
            capture_output=True,
        )
        git = r.returncode
        ours_conf += conflicts
        git_conf += git
        target = open(stem + ".target").read()
        if git == 0:
            clean_git += 1
            if conflicts == 0:
                clean_both += 1
            else:
                worse += 1
                print(f"WORSE {os.path.basename(stem)} {target}: git clean, bump {conflicts} conflict(s)")
        elif conflicts != git:
            print(f"{os.path.basename(stem)} {target}: git {git} conflict(s), bump {conflicts}")
    n = len(glob.glob(os.path.join(d, "*.counts")))
    print(f"{n} merge(s); git clean on {clean_git}, bump clean on {clean_both} of those; conflicts: bump {ours_conf}, git {git_conf}")
    sys.exit(1 if worse else 0)


if __name__ == "__main__":
    main()

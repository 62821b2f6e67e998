#!/usr/bin/env bash
# Benchmark: the post-merge hook pull after pull, through real `git merge --ff-only`,
# against PREMERGE=0. This is the path the inventory store serves: each pull's old
# versions are the versions the pull before it read.
#
#   scripts/bench-hook-pulls.sh REPO_GIT_DIR [PULLS] [SIZE] [ROUNDS]
#
# A clone of REPO_GIT_DIR gets premerge's post-merge hook. One sequence resets the
# branch to the commit PULLS x SIZE first-parent commits before the head and removes
# `.git/premerge`, then merges SIZE commits at a time (defaults 10 and 30), waiting for
# the background job after each merge (`premerge status --wait`, untimed). Three
# modes alternate sequence by sequence, ROUNDS times (default 3, after one round
# that warms the caches): PREMERGE=0, the default budget, and everything in the hook
# (PREMERGE_HOOKS_BUDGET_MS=600000). Printed: the median time of merges 2..PULLS (the
# first is cold in every mode), the ratio to PREMERGE=0, and what the store holds at
# the end. PREMERGE_BIN names a binary to measure instead of the release build.
set -euo pipefail

REPO=${1:?usage: scripts/bench-hook-pulls.sh REPO_GIT_DIR [PULLS] [SIZE] [ROUNDS]}
# shellcheck source=scripts/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

python3 - "$BIN" "$REPO" "${2:-10}" "${3:-30}" "${4:-3}" "$WORK" <<'PY'
import os, shutil, sqlite3, statistics, subprocess, sys, time
binary, mirror, pulls, size, rounds, work = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6]), sys.argv[6]
repo = os.path.join(work, "clone")
subprocess.run(["git", "clone", "-q", mirror, repo], check=True)
git = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()
commits = git("rev-list", "--first-parent", f"--max-count={pulls * size + 1}", "HEAD").split()[::-1]
hook = os.path.join(repo, ".git", "hooks", "post-merge")
with open(hook, "w") as f:
    f.write(f'#!/bin/sh\nexec "{binary}" hook post-merge "$@"\n')
os.chmod(hook, 0o755)
modes = [("PREMERGE=0", {"PREMERGE": "0"}), ("default budget", {}),
         ("all in the hook", {"PREMERGE_HOOKS_BUDGET_MS": "600000"})]
state = os.path.join(repo, ".git", "premerge")
def sequence(extra):
    shutil.rmtree(state, ignore_errors=True)
    git("reset", "-q", "--hard", commits[0])
    env = dict(os.environ, **extra)
    spent = 0.0
    for i in range(1, pulls + 1):
        start = time.perf_counter()
        subprocess.run(["git", "merge", "-q", "--ff-only", commits[i * size]], cwd=repo, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elapsed = time.perf_counter() - start
        subprocess.run([binary, "status", "--wait"], cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if i > 1:
            spent += elapsed
    return spent
times = {m: [] for m, _ in modes}
for r in range(rounds + 1):
    for m, extra in modes:
        t = sequence(extra)
        if r:
            times[m].append(t)
db = os.path.join(state, "scan-inventories.sqlite")
held = "none"
if os.path.exists(db):
    c = sqlite3.connect(db)
    held = f"{c.execute('SELECT COUNT(*) FROM inventories').fetchone()[0]} inventories, " \
           f"{c.execute('SELECT COUNT(*) FROM paths').fetchone()[0]} paths"
base = statistics.median(times["PREMERGE=0"])
print(f"{mirror}: {pulls} pulls of {size} commits through the post-merge hook, merges 2..{pulls} timed, "
      f"{rounds} alternating rounds")
for m, _ in modes:
    med = statistics.median(times[m])
    print(f"  {m:<18} {med * 1000:8.1f} ms  {med / base:.2f}x")
print(f"  the store after the last sequence: {held}")
PY

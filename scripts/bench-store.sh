#!/usr/bin/env bash
# Benchmark of the inventory store: a clone scanned pull after pull, as the post-merge
# hook scans each pull, with premerge's caches on (the default) and off
# (PREMERGE_SCAN_CACHE=0).
#
#   scripts/bench-store.sh REPO_GIT_DIR... 
#
# For each repository: its last PULLS x SIZE first-parent commits (defaults 10 and 30)
# are cut into PULLS consecutive ranges, and `premerge scan --no-memory` runs on each in
# order, the state kept from one to the next (removed before the first). The ranges
# never repeat, so the scan cache never answers: what the caches change is the
# inventory store, whose versions stored by one pull are the old versions of the next.
# The two modes alternate, ROUNDS times (default 5). Printed: the median total time of
# pulls 2..PULLS in each mode (the first pull is cold in both), the ratio, and how
# many inventories the store holds at the end. With BASELINE_BIN (another build of
# premerge, such as one without the store), that build runs as a third mode, caches on.
set -euo pipefail

PULLS=${PULLS:-10}
SIZE=${SIZE:-30}
ROUNDS=${ROUNDS:-5}
# shellcheck source=scripts/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

for repo in "$@"; do
  name=$(basename "$repo")
  [ "$name" = repo ] && name=$(basename "$(dirname "$repo")")
  git clone -q "$repo" "$WORK/$name"
  python3 - "$BIN" "$WORK/$name" "$PULLS" "$SIZE" "$ROUNDS" "$name" "${BASELINE_BIN:-}" <<'PY'
import os, shutil, sqlite3, statistics, subprocess, sys, time
binary, cwd, pulls, size, rounds, name = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6]), sys.argv[6]
modes = {"on": (binary, "1"), "off": (binary, "0")}
if sys.argv[7]:
    modes["baseline"] = (sys.argv[7], "1")
commits = subprocess.run(["git", "rev-list", "--first-parent", f"--max-count={pulls * size + 1}", "HEAD"],
                         cwd=cwd, capture_output=True, text=True, check=True).stdout.split()[::-1]
ranges = [(commits[i * size], commits[(i + 1) * size]) for i in range(pulls)]
state = os.path.join(cwd, ".git", "premerge")
def sequence(mode):
    binary, cache = modes[mode]
    shutil.rmtree(state, ignore_errors=True)
    env = dict(os.environ, PREMERGE_SCAN_CACHE=cache)
    spent = 0.0
    for i, (base, head) in enumerate(ranges):
        start = time.perf_counter()
        subprocess.run([binary, "scan", "--no-memory", "--format", "json", "--base", base, "--head", head],
                       cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        if i > 0:
            spent += time.perf_counter() - start
    return spent
changed = sum(len(subprocess.run(["git", "diff", "--name-only", b, h], cwd=cwd, capture_output=True, text=True,
                                 check=True).stdout.split()) for b, h in ranges[1:])
for mode in modes:
    sequence(mode)  # warm-up
times = {mode: [] for mode in modes}
for _ in range(rounds):
    for mode in modes:
        times[mode].append(sequence(mode))
sequence("on")
db = os.path.join(state, "scan-inventories.sqlite")
rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM inventories").fetchone()[0] if os.path.exists(db) else 0
print(f"{name}: {pulls} pulls of {size} commits, pulls 2..{pulls} change {changed} files; "
      f"inventories stored at the end: {rows}")
for mode in modes:
    ratio = statistics.median(a / b for a, b in zip(times[mode], times["off"]))
    print(f"  {mode}: median {statistics.median(times[mode])*1000:.0f} ms, {ratio:.2f}x of off "
          f"(median of {rounds} alternating rounds)")
PY
done

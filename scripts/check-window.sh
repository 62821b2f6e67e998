#!/usr/bin/env bash
# Exactness check of the scan's change window on a real history: for each of the last
# N commits of a repository (default 200), `premerge scan --no-memory` of that commit
# against its first parent, with the window (the default) and without it
# (PREMERGE_SCAN_WINDOW=0), must give the same findings. The notes may differ in one
# way only: a file whose untouched part tree-sitter cannot parse is "not scanned" as a
# whole, and scanned through its window.
#
# A third mode, "stored", scans with the caches on and the clone's premerge state kept
# from one commit to the next, oldest first: each commit's old versions are then often
# the versions the scan before it stored in the inventory store, and its findings must
# still be the whole files' (the same one difference allowed).
#
#   scripts/check-window.sh REPO_GIT_DIR [N]
#
# Prints how many commits were compared, which differed in findings (none may), which
# lost a parse-failed note, and the time each mode took in total.
set -euo pipefail

REPO=${1:?usage: scripts/check-window.sh REPO_GIT_DIR [N]}
N=${2:-200}
# shellcheck source=scripts/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

git clone -q "$REPO" "$WORK/repo"
cd "$WORK/repo"
python3 - "$BIN" "$N" <<'PY'
import json, os, subprocess, sys, time
binary, n = sys.argv[1], int(sys.argv[2])
commits = subprocess.run(["git", "rev-list", "--first-parent", "--no-merges", f"--max-count={n}", "HEAD"],
                         capture_output=True, text=True, check=True).stdout.split()
commits.reverse()
spent = {"window": 0.0, "whole": 0.0, "stored": 0.0}
compared, differed, rescued = 0, [], []
for c in commits:
    if subprocess.run(["git", "rev-parse", "-q", "--verify", f"{c}~1"], capture_output=True).returncode:
        continue
    out = {}
    for mode, value, cache in (("window", "1", "0"), ("whole", "0", "0"), ("stored", "1", "1")):
        env = dict(os.environ, PREMERGE_SCAN_WINDOW=value, PREMERGE_SCAN_CACHE=cache)
        start = time.perf_counter()
        r = subprocess.run([binary, "scan", "--no-memory", "--format", "json", "--base", f"{c}~1", "--head", c],
                           capture_output=True, env=env)
        spent[mode] += time.perf_counter() - start
        out[mode] = (r.returncode, r.stdout)
    compared += 1
    fcode, fout = out["whole"]
    for mode in ("window", "stored"):
        wcode, wout = out[mode]
        if not (wout and fout):  # an error (exit 2): both modes must fail alike
            if out[mode] != out["whole"]:
                differed.append(f"{c}({mode})")
            continue
        w, f = json.loads(wout), json.loads(fout)
        extra = [n for n in w["notes"] if n not in f["notes"]]
        dropped = [n for n in f["notes"] if n not in w["notes"]]
        if wcode != fcode or w["findings"] != f["findings"] or extra or any(n["kind"] != "parse-failed" for n in dropped):
            differed.append(f"{c}({mode})")
        elif dropped and mode == "window":
            rescued.append(c)
store = os.path.join(".git", "premerge", "scan-inventories.sqlite")
rows = 0
if os.path.exists(store):
    import sqlite3
    rows = sqlite3.connect(store).execute("SELECT COUNT(*) FROM inventories").fetchone()[0]
print(f"compared {compared} commits; findings or notes differed: {len(differed)} {' '.join(differed)}")
print(f"files scanned through the window that whole-file parsing refused: {len(rescued)} commits {' '.join(rescued)}")
print(f"inventories in the store at the end of the stored mode: {rows}")
print(f"time: window {spent['window']:.2f} s, whole files {spent['whole']:.2f} s, stored {spent['stored']:.2f} s")
sys.exit(1 if differed else 0)
PY

#!/usr/bin/env bash
# Benchmark: `premerge scan --no-memory` against `git diff -p -M` of the same range.
#
#   scripts/bench-scan.sh [N_FILES_PER_LANGUAGE] [REAL_REPO_GIT_DIR REAL_BASE_REV]
#
# 1. A synthetic change: N Rust and N TypeScript files (default 2000 each), every file
#    widened (a field type, an optional property) with a check removed, in one commit.
# 2. Optionally, the history of a real repository: REAL_BASE_REV..HEAD of a clone.
# git and premerge run alternately, RUNS times each (default 9, after one warm-up of
# each), so that a noisy neighbour slows both alike; the script prints the median wall
# time of each (a monotonic clock, to the millisecond), the median of the per-pair
# ratios, and the peak resident memory of one more run (GNU time's %M).
set -euo pipefail

N=${1:-2000}
RUNS=${RUNS:-9}
REAL=${2:-}
REAL_BASE=${3:-}
# shellcheck source=scripts/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

python3 - "$WORK/syn" "$N" <<'PY'
import os, subprocess, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(root)
git = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, stdout=subprocess.DEVNULL)
git("init", "-q", "-b", "main")
def rust(i, widened):
    ty = "u64" if widened else "u8"
    check = "" if widened else "    assert!(r >= 0.0 && r <= 1.0);\n"
    body = "".join(f"pub fn helper_{k}(x: u32) -> u32 {{\n    x.wrapping_mul({k}) + {i}\n}}\n\n" for k in range(20))
    return (f"//! Module {i}.\n\npub struct Query{i} {{\n    pub limit: {ty},\n    pub name: String,\n}}\n\n"
            f"pub fn set_ratio_{i}(r: f64) -> f64 {{\n{check}    r\n}}\n\n{body}")
def ts(i, widened):
    opt = "?" if widened else ""
    body = "".join(f"export function helper{k}(x: number): number {{\n  return x * {k} + {i};\n}}\n\n" for k in range(20))
    return (f"export interface User{i} {{\n  id{opt}: string;\n  kind: 'admin' | 'user';\n}}\n\n{body}")
for widened in (False, True):
    for i in range(n):
        d = os.path.join(root, "src", f"m{i // 100}")
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, f"q{i}.rs"), "w").write(rust(i, widened))
        open(os.path.join(d, f"u{i}.ts"), "w").write(ts(i, widened))
    git("add", "-A")
    git("commit", "-q", "-m", "widen" if widened else "base")
PY

# compare NAME DIR GIT_ARGS... -- PREMERGE_ARGS...: alternate runs, medians, ratio, peak RSS.
compare() {
  local name=$1 dir=$2; shift 2
  python3 - "$name" "$dir" "$RUNS" "$@" <<'PY'
import statistics, subprocess, sys, time
name, cwd, runs, rest = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
cut = rest.index("--")
cmds = {"git": rest[:cut], "premerge": rest[cut + 1:]}
def run(argv):
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start
def peak_kib(argv):
    r = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, check=False)
    return int(r.stderr.strip().splitlines()[-1])
for argv in cmds.values():
    run(argv)  # warm-up: page cache, first-run effects
times = {"git": [], "premerge": []}
for _ in range(runs):
    for tool, argv in cmds.items():
        times[tool].append(run(argv))
med = {t: statistics.median(v) for t, v in times.items()}
ratio = statistics.median(p / g for g, p in zip(times["git"], times["premerge"]))
for tool in cmds:
    print(f"{name} {tool}: median {med[tool]*1000:.0f} ms (min {min(times[tool])*1000:.0f}, max {max(times[tool])*1000:.0f}), "
          f"peak {peak_kib(cmds[tool])} KiB")
print(f"{name} ratio premerge/git: {ratio:.2f}x (median of {runs} alternating pairs)")
PY
}

SCAN=("$BIN" scan --no-memory --format json)
echo "== synthetic: $N Rust + $N TypeScript files changed in one commit =="
compare syn "$WORK/syn" git diff -p -M HEAD~1 HEAD -- "${SCAN[@]}" --base HEAD~1
echo "findings: $(cd "$WORK/syn" && "${SCAN[@]}" --base HEAD~1 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["findings"]))')"

if [ -n "$REAL" ]; then
  echo "== real history: $REAL ($REAL_BASE..HEAD) =="
  git clone -q "$REAL" "$WORK/real"
  (cd "$WORK/real" && echo "changed files: $(git diff --name-only "$REAL_BASE" HEAD | wc -l)")
  compare real "$WORK/real" git diff -p -M "$REAL_BASE" HEAD -- "${SCAN[@]}" --base "$REAL_BASE"
fi

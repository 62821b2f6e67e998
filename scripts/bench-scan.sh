#!/usr/bin/env bash
# Benchmark: `premerge scan --no-memory` against `git diff -p -M` of the same range.
#
#   scripts/bench-scan.sh [N_FILES] [REPO_GIT_DIR:BASE_REV ...]
#
# 1. A synthetic change: N files (default 3000: half Rust, half TypeScript) in one
#    commit that edits every declaration of every file (each struct field and
#    interface property widened, each helper's signature and body changed), so the
#    change window has nothing to leave out.
# 2. Each REPO:BASE: BASE..HEAD of a clone of that repository.
# git and premerge run alternately, RUNS times each (default 9, after one warm-up of
# each), so that a noisy neighbour slows both alike. premerge runs cold: its state
# (`.git/premerge`, the scan cache with it) is removed before every run, as on the
# first scan of a pull; the warm figure (state kept: the range's answers come from the
# scan cache) is measured beside it. The script prints the median wall
# time of each (a monotonic clock, to the millisecond), the median of the per-pair
# ratios, and the peak resident memory of one more run (GNU time's %M).
set -euo pipefail

N=${1:-3000}
shift || true
RUNS=${RUNS:-9}
# shellcheck source=scripts/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

python3 - "$WORK/syn" "$N" <<'PY'
import os, subprocess, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(root)
git = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, stdout=subprocess.DEVNULL)
git("init", "-q", "-b", "main")
def rust(i, widened):
    ty, h = ("u64", "u64") if widened else ("u8", "u32")
    check = "" if widened else "    assert!(r >= 0.0 && r <= 1.0);\n"
    body = "".join(f"pub fn helper_{k}(x: {h}) -> {h} {{\n    x.wrapping_mul({k + (7 if widened else 0)}) + {i}\n}}\n\n" for k in range(20))
    return (f"//! Module {i}.\n\npub struct Query{i} {{\n    pub limit: {ty},\n    pub name: String,\n}}\n\n"
            f"pub fn set_ratio_{i}(r: f64) -> f64 {{\n{check}    r\n}}\n\n{body}")
def ts(i, widened):
    opt = "?" if widened else ""
    body = "".join(f"export function helper{k}(x: number{' | null' if widened else ''}): number {{\n  return (x ?? 0) * {k + (7 if widened else 0)} + {i};\n}}\n\n" for k in range(20))
    return (f"export interface User{i} {{\n  id{opt}: string;\n  kind: 'admin' | 'user';\n}}\n\n{body}")
for widened in (False, True):
    for i in range(n // 2):
        d = os.path.join(root, "src", f"m{i // 100}")
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, f"q{i}.rs"), "w").write(rust(i, widened))
        open(os.path.join(d, f"u{i}.ts"), "w").write(ts(i, widened))
    git("add", "-A")
    git("commit", "-q", "-m", "widen" if widened else "base")
PY

# compare NAME DIR GIT_ARGS... -- PREMERGE_ARGS...: alternate runs, medians, ratios, peak RSS.
compare() {
  local name=$1 dir=$2; shift 2
  python3 - "$name" "$dir" "$RUNS" "$@" <<'PY'
import os, shutil, statistics, subprocess, sys, time
name, cwd, runs, rest = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
cut = rest.index("--")
cmds = {"git": rest[:cut], "premerge cold": rest[cut + 1:], "premerge warm": rest[cut + 1:]}
state = os.path.join(cwd, ".git", "premerge")
def run(tool):
    if tool == "premerge cold":
        shutil.rmtree(state, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(cmds[tool], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start
def peak_kib(tool):
    if tool == "premerge cold":
        shutil.rmtree(state, ignore_errors=True)
    r = subprocess.run(["/usr/bin/time", "-f", "%M", *cmds[tool]], cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, check=False)
    return int(r.stderr.strip().splitlines()[-1])
for tool in cmds:
    run(tool)  # warm-up: page cache, first-run effects
times = {t: [] for t in cmds}
for _ in range(runs):
    for tool in cmds:
        times[tool].append(run(tool))
for tool in cmds:
    med = statistics.median(times[tool])
    print(f"{name} {tool}: median {med*1000:.0f} ms (min {min(times[tool])*1000:.0f}, max {max(times[tool])*1000:.0f}), "
          f"peak {peak_kib(tool) // 1024} MiB")
for tool in ("premerge cold", "premerge warm"):
    ratio = statistics.median(p / g for g, p in zip(times["git"], times[tool]))
    print(f"{name} ratio {tool}/git: {ratio:.2f}x (median of {runs} alternating triples)")
PY
}

SCAN=("$BIN" scan --no-memory --format json)
echo "== synthetic: $N files (half Rust, half TypeScript), every declaration edited, one commit =="
compare syn "$WORK/syn" git diff -p -M HEAD~1 HEAD -- "${SCAN[@]}" --base HEAD~1
echo "findings: $(cd "$WORK/syn" && "${SCAN[@]}" --base HEAD~1 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["findings"]))')"

for spec in "$@"; do
  repo=${spec%:*} base=${spec##*:}
  name=$(basename "$repo")
  [ "$name" = repo ] && name=$(basename "$(dirname "$repo")")
  echo "== real history: $name ($base..HEAD) =="
  git clone -q "$repo" "$WORK/$name"
  (cd "$WORK/$name" && echo "changed files: $(git diff --name-only "$base" HEAD | wc -l)")
  compare "$name" "$WORK/$name" git diff -p -M "$base" HEAD -- "${SCAN[@]}" --base "$base"
done

#!/usr/bin/env bash
# Benchmark: `premerge scan --no-memory` against `git diff -p -M` of the same range.
#
#   scripts/bench-scan.sh [N_FILES_PER_LANGUAGE] [REAL_REPO_GIT_DIR REAL_BASE_REV]
#
# 1. A synthetic change: N Rust and N TypeScript files (default 2000 each), every file
#    widened (a field type, an optional property) with a check removed, in one commit.
# 2. Optionally, the history of a real repository: REAL_BASE_REV..HEAD of a clone.
# Each command runs 3 times (after one warm-up); the script prints the median wall
# time and the peak resident memory (GNU time's %M) of each, and the ratio.
set -euo pipefail

N=${1:-2000}
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

measure() { # name, dir, command...
  local name=$1 dir=$2; shift 2
  (cd "$dir" && "$@" >/dev/null 2>&1) || true # warm-up (page cache)
  local runs=()
  for _ in 1 2 3; do
    runs+=("$(cd "$dir" && /usr/bin/time -f '%e %M' "$@" 2>&1 >/dev/null | tail -n1)")
  done
  printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p | {
    read -r secs kib
    echo "$name: median ${secs}s, peak ${kib} KiB"
    echo "$secs" >"$WORK/$name.secs"
  }
}

ratio() { python3 -c "import sys; a,b=(float(open(p).read()) for p in sys.argv[1:]); print(f'ratio premerge/git: {a/b:.2f}x' if b else 'ratio: git took 0.00s')" "$WORK/$1.secs" "$WORK/$2.secs"; }

echo "== synthetic: $N Rust + $N TypeScript files changed in one commit =="
measure git-syn "$WORK/syn" git diff -p -M HEAD~1 HEAD
measure premerge-syn "$WORK/syn" "$BIN" scan --no-memory --format json --base HEAD~1
echo "findings: $(cd "$WORK/syn" && "$BIN" scan --no-memory --format json --base HEAD~1 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["findings"]))')"
ratio premerge-syn git-syn

if [ -n "$REAL" ]; then
  echo "== real history: $REAL ($REAL_BASE..HEAD) =="
  git clone -q "$REAL" "$WORK/real"
  (cd "$WORK/real" && echo "changed files: $(git diff --name-only "$REAL_BASE" HEAD | wc -l)")
  measure git-real "$WORK/real" git diff -p -M "$REAL_BASE" HEAD
  measure premerge-real "$WORK/real" "$BIN" scan --no-memory --format json --base "$REAL_BASE"
  ratio premerge-real git-real
fi

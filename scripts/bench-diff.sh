#!/usr/bin/env bash
# Benchmark: `premerge diff` against `git diff --numstat -M` on the same large range,
# in one run. Usage: scripts/bench-diff.sh [FILES] [RUNS]
# Builds a synthetic repository with git fast-import: FILES files of 40 lines in the
# base commit; the head commit modifies a quarter, renames 5%, adds 5% and deletes
# 2.5% of them. Prints the median wall time of each command and the ratio.
set -euo pipefail
files=${1:-20000}
runs=${2:-7}
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$here/target}/release/premerge"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null LC_ALL=C
git init -q -b main "$work/repo"
python3 - "$files" > "$work/stream" <<'PY'
import sys
n = int(sys.argv[1])
out = sys.stdout
def blob(text):
    data = text.encode()
    out.write(f"data {len(data)}\n"); out.flush()
    sys.stdout.buffer.write(data); out.write("\n")
def body(i, gen):
    return "".join(f"fn f{i}_{k}() -> u32 {{ {k * (gen + 1)} }}\n" for k in range(40))
def commit(ref, mark, msg, parent, ops):
    out.write(f"commit {ref}\nmark :{mark}\ncommitter Bench <b@example.invalid> 1767225600 +0000\n")
    out.write(f"data {len(msg)}\n{msg}\n")
    if parent: out.write(f"from :{parent}\n")
    for op in ops: op()
def m(path, text):
    def f():
        out.write(f"M 100644 inline {path}\n"); blob(text)
    return f
def d(path):
    return lambda: out.write(f"D {path}\n")
commit("refs/heads/main", 1, "base", None, [m(f"src/m{i % 100}/f{i}.rs", body(i, 0)) for i in range(n)])
ops = []
for i in range(n):
    p = f"src/m{i % 100}/f{i}.rs"
    if i % 4 == 0: ops.append(m(p, body(i, 1)))
    elif i % 20 == 1: ops += [d(p), m(f"src/moved/f{i}.rs", body(i, 0))]
    elif i % 40 == 3: ops.append(d(p))
for i in range(n // 20): ops.append(m(f"src/new/n{i}.rs", body(n + i, 0)))
commit("refs/heads/main", 2, "change", 1, ops)
PY
git -C "$work/repo" fast-import --quiet < "$work/stream"
cd "$work/repo"
base=$(git rev-parse main~1); head=$(git rev-parse main)
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_cmd() {
  for _ in $(seq "$runs"); do
    s=$(date +%s%N); "$@" > /dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 ))
  done | median
}
changed=$(git diff --numstat -M "$base" "$head" | wc -l)
g=$(time_cmd git diff --numstat -M "$base" "$head")
p=$(time_cmd "$bin" diff --format json --base "$base" --head "$head")
pt=$(time_cmd "$bin" diff --base "$base" --head "$head")
echo "files in base: $files; changed paths: $changed; runs: $runs (median ms)"
echo "git diff --numstat -M:          ${g} ms"
echo "premerge diff --format json:    ${p} ms"
echo "premerge diff (text):           ${pt} ms"
awk -v g="$g" -v p="$p" 'BEGIN { printf "ratio premerge/git: %.2fx\n", p / g }'

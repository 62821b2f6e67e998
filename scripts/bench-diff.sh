#!/usr/bin/env bash
# Benchmark: `premerge diff` against `git diff --numstat -M` on the same large range,
# in one run. Usage: scripts/bench-diff.sh [FILES] [RUNS] [typical|renames]
# Builds a synthetic repository with git fast-import: FILES files of 40 lines in the
# base commit. The head commit of the `typical` scenario modifies 10% of them and
# renames, adds and deletes 0.5% each; the `renames` scenario modifies 25%, renames 5%
# (exactly), adds 5% and deletes 2.5%, which makes inexact rename detection compare
# every deleted file with every added one. Prints the median wall time and the median
# CPU time (user + system) of each command, and the ratios.
set -euo pipefail
files=${1:-20000}
runs=${2:-7}
scenario=${3:-typical}
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$here/target}/release/premerge"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null LC_ALL=C
git init -q -b main "$work/repo"
python3 - "$files" "$scenario" > "$work/stream" <<'PY'
import sys
n = int(sys.argv[1])
heavy = sys.argv[2] == "renames"
mod_every, ren_every, del_every, add_div = (4, 20, 40, 20) if heavy else (10, 200, 200, 200)
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
    if i % mod_every == 0: ops.append(m(p, body(i, 1)))
    elif i % ren_every == 1: ops += [d(p), m(f"src/moved/f{i}.rs", body(i, 0))]
    elif i % del_every == 3: ops.append(d(p))
for i in range(n // add_div): ops.append(m(f"src/new/n{i}.rs", body(n + i, 0)))
commit("refs/heads/main", 2, "change", 1, ops)
PY
git -C "$work/repo" fast-import --quiet < "$work/stream"
cd "$work/repo"
base=$(git rev-parse main~1); head=$(git rev-parse main)
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# One line per run: wall ms and CPU ms (user + system), from /usr/bin/time or bash's times.
time_cmd() {
  for _ in $(seq "$runs"); do
    s=$(date +%s%N)
    cpu=$( { /usr/bin/env TIMEFORMAT='%U %S' bash -c 'time "$@" > /dev/null' _ "$@" ; } 2>&1 | awk '{printf "%d", ($1 + $2) * 1000}')
    e=$(date +%s%N)
    echo "$(( (e - s) / 1000000 )) $cpu"
  done > "$work/t"
  echo "$(cut -d' ' -f1 "$work/t" | median) $(cut -d' ' -f2 "$work/t" | median)"
}
changed=$(git diff --numstat -M "$base" "$head" | wc -l)
read -r gw gc < <(time_cmd git diff --numstat -M "$base" "$head")
read -r pw pc < <(time_cmd "$bin" diff --format json --base "$base" --head "$head")
echo "scenario: $scenario; files in base: $files; changed paths: $changed; runs: $runs (medians)"
printf '%-32s %8s %8s\n' command "wall ms" "cpu ms"
printf '%-32s %8s %8s\n' "git diff --numstat -M" "$gw" "$gc"
printf '%-32s %8s %8s\n' "premerge diff --format json" "$pw" "$pc"
awk -v gw="$gw" -v pw="$pw" -v gc="$gc" -v pc="$pc" 'BEGIN { printf "ratio premerge/git: %.2fx wall, %.2fx cpu\n", pw / gw, pc / gc }'

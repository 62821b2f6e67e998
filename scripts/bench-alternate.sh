#!/usr/bin/env bash
# Alternating A/B of whole commands in one repository, for comparisons finer than the
# machine's noise between runs: every round runs each command once, in turn, so a
# busy neighbour slows all of them alike.
#
#   scripts/bench-alternate.sh DIR ROUNDS LABEL=COMMAND...
#
# e.g. scripts/bench-alternate.sh /tmp/syn 15 "git=git diff -p -M HEAD~1 HEAD" \
#        "before=/tmp/premerge-before scan --no-memory --base HEAD~1" \
#        "after=target/release/premerge scan --no-memory --base HEAD~1"
#
# A COMMAND may start with VAR=value words (set in its environment). premerge's state
# (DIR/.git/premerge) is removed before every run, so each scan is cold. After one
# warm-up of each, prints for each command the median wall time and CPU time (user +
# system of the process and its children, from wait4) over ROUNDS rounds, and in
# brackets the median of the per-round ratios to the first command.
set -euo pipefail
DIR=${1:?usage: scripts/bench-alternate.sh DIR ROUNDS LABEL=COMMAND...}
ROUNDS=${2:?usage: scripts/bench-alternate.sh DIR ROUNDS LABEL=COMMAND...}
shift 2
python3 - "$DIR" "$ROUNDS" "$@" <<'PY'
import os, shutil, statistics, subprocess, sys, time
cwd, rounds = sys.argv[1], int(sys.argv[2])
modes = [m.split("=", 1) for m in sys.argv[3:]]
state = os.path.join(cwd, ".git", "premerge")
def run(spec):
    shutil.rmtree(state, ignore_errors=True)
    env, words = dict(os.environ), spec.split()
    while "=" in words[0]:
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    start = time.perf_counter()
    p = subprocess.Popen(words, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(p.pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime
wall = {label: [] for label, _ in modes}
cpu = {label: [] for label, _ in modes}
for _, spec in modes:
    run(spec)
for _ in range(rounds):
    for label, spec in modes:
        w, c = run(spec)
        wall[label].append(w)
        cpu[label].append(c)
first = modes[0][0]
ratio = lambda xs, ys: statistics.median(a / b for a, b in zip(xs, ys))
for label, _ in modes:
    print(f"{label}: wall {statistics.median(wall[label]) * 1000:.0f} ms ({ratio(wall[label], wall[first]):.2f}x), "
          f"cpu {statistics.median(cpu[label]) * 1000:.0f} ms ({ratio(cpu[label], cpu[first]):.2f}x)")
PY

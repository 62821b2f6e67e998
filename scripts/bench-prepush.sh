#!/usr/bin/env bash
# Benchmark: the whole `premerge hook pre-push` (diff, widening scan, guard-memory
# write) on a small push (one commit, five changed source files), side by side with
# the no-op pre-push hooks of pre-commit, lefthook and prek (installed from PyPI into
# a throwaway virtualenv).
#
#   scripts/bench-prepush.sh [RUNS]
#
# Each tool runs in its own copy of the same repository through the hook git would
# run (.git/hooks/pre-push) with git's pre-push stdin. premerge is timed twice: with
# its state directory removed before every run (the first push ever: the database is
# created) and with the database kept and only the memories deleted (untimed) before
# every run (steady state); every timed run writes its ten memories. The hooks run
# alternately, round by round.
set -euo pipefail

RUNS=${1:-30}
# shellcheck source=scripts/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

python3 -m venv "$WORK/venv"
INSTALLED=()
for pkg in pre-commit lefthook prek; do
  if "$WORK/venv/bin/pip" install -q "$pkg" >/dev/null 2>&1; then
    INSTALLED+=("$pkg")
  else
    echo "could not install $pkg from PyPI: skipped"
  fi
done
export PATH="$WORK/venv/bin:$PATH"

# The pushed repository: five Rust files, one commit widening a field and dropping a
# check in each.
mkdir "$WORK/base" && cd "$WORK/base"
git init -q -b main
for i in 1 2 3 4 5; do
  mkdir -p src
  printf 'pub struct Query%s {\n    pub limit: u8,\n}\n\npub fn set_ratio_%s(r: f64) -> f64 {\n    assert!(r >= 0.0 && r <= 1.0);\n    r\n}\n' "$i" "$i" >"src/m$i.rs"
done
# A no-op hook for each framework: one local hook running `true` (prek refuses a
# configuration with no hook at all, so pre-commit and prek get the same one).
cat >.pre-commit-config.yaml <<'YAML'
repos:
  - repo: local
    hooks:
      - id: noop
        name: noop
        entry: "true"
        language: system
        pass_filenames: false
        always_run: true
        stages: [pre-push]
YAML
cat >lefthook.yml <<'YAML'
pre-push:
  commands:
    noop:
      run: "true"
YAML
git add -A && git commit -q -m base
for i in 1 2 3 4 5; do
  printf 'pub struct Query%s {\n    pub limit: u64,\n}\n\npub fn set_ratio_%s(r: f64) -> f64 {\n    r\n}\n' "$i" "$i" >"src/m$i.rs"
done
git commit -q -am widen
BASE=$(git rev-parse HEAD~1)
HEAD=$(git rev-parse HEAD)
printf 'refs/heads/main %s refs/heads/main %s\n' "$HEAD" "$BASE" >"$WORK/stdin"

setup() { # tool
  cp -r "$WORK/base" "$WORK/$1"
  cd "$WORK/$1"
  case $1 in
    premerge) printf '#!/bin/sh\nexec "%s" hook pre-push "$@"\n' "$BIN" >.git/hooks/pre-push && chmod +x .git/hooks/pre-push ;;
    pre-commit) pre-commit install -t pre-push >/dev/null ;;
    prek) prek install -t pre-push >/dev/null ;;
    lefthook) lefthook install >/dev/null 2>&1 ;;
  esac
  cd "$WORK"
}

TOOLS=(premerge "${INSTALLED[@]}")
for t in "${TOOLS[@]}"; do setup "$t"; done
echo "premerge's own output on this push:"
(cd "$WORK/premerge" && .git/hooks/pre-push origin file:///dev/null <"$WORK/stdin")
(cd "$WORK/premerge" && "$BIN" status --wait >/dev/null)
rm -rf "$WORK/premerge/.git/premerge"

python3 - "$WORK" "$RUNS" "$BIN" "${TOOLS[@]}" <<'PY'
import os, shutil, sqlite3, statistics, subprocess, sys, time
work, runs, binary, tools = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
stdin = open(os.path.join(work, "stdin"), "rb").read()

def forget_memories(repo):
    # Steady state: the store exists (an earlier push created it); only this push's
    # memories are removed, so the timed run writes them again.
    db = sqlite3.connect(os.path.join(repo, ".git", "premerge", "premerge.db"))
    db.execute("DELETE FROM memories"); db.execute("DELETE FROM memories_fts"); db.commit(); db.close()

rows = []
for t in tools:
    rows += [("premerge (first push: store created)", t, "fresh"), ("premerge (store exists)", t, "existing")] if t == "premerge" else [(f"{t} (no-op hook)", t, None)]
# Side by side: every round runs each hook once, so a noisy neighbour slows all alike.
times = {name: [] for name, _, _ in rows}
failed = set()
deferred = {}
for i in range(runs + 2):
    for name, t, mode in rows:
        if name in failed:
            continue
        repo = os.path.join(work, t)
        if mode == "fresh":
            shutil.rmtree(os.path.join(repo, ".git", "premerge"), ignore_errors=True)
        elif mode == "existing" and os.path.exists(os.path.join(repo, ".git", "premerge", "premerge.db")):
            forget_memories(repo)
        start = time.perf_counter()
        p = subprocess.run([".git/hooks/pre-push", "origin", "file:///dev/null"], cwd=repo, input=stdin,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        elapsed = (time.perf_counter() - start) * 1000
        if p.returncode != 0:
            print(f"{name}: hook exited {p.returncode}"); failed.add(name); continue
        if t == "premerge":
            # Untimed: a run whose signals overran hooks.budget_ms left a background
            # job; let it finish before the next run, and count the run.
            if b"signals continue in the background" in p.stdout and i >= 2:
                deferred[name] = deferred.get(name, 0) + 1
            subprocess.run([binary, "status", "--wait"], cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if i >= 2:
            times[name].append(elapsed)
print(f"{'hook':<38} {'median ms':>10} {'min ms':>8}  ({runs} runs, 2 warm-ups, alternating)")
for name, _, _ in rows:
    if times[name]:
        note = f"  ({deferred[name]} run(s) over the budget: signals deferred)" if name in deferred else ""
        print(f"{name:<38} {statistics.median(times[name]):>10.1f} {min(times[name]):>8.1f}{note}")
PY

#!/usr/bin/env bash
# Benchmark: the hooks on clones of real repositories, side by side with PREMERGE=0.
#
#   scripts/bench-hooks.sh [RUNS]
#
# - post-merge: `git merge --ff-only` of the 300 first-parent commits before the
#   default branch's head, in clones of ripgrep and trpc;
# - pre-push: `git push` of the 132 first-parent commits before tauri's head to a
#   local bare repository that has the commit before them.
#
# Each scenario alternates three modes run by run (A, B, C, A, B, C...), so a noisy
# neighbour slows all alike: `PREMERGE=0` (git alone), the default budget
# (hooks.budget_ms), and everything in the hook (PREMERGE_HOOKS_BUDGET_MS=600000,
# what the hooks did before the budget). Between timed runs, untimed: the branch (or
# the remote) is reset, `premerge status --wait` lets a background job finish (its
# time is printed apart: it is work the user does not wait for), and the guard
# memories are deleted so every run writes them again.
#
# ONLY=ripgrep|trpc|tauri runs one scenario. MIRRORS names the directory of bare mirrors (`<owner>+<name>/repo`, default
# /work/.mirror); PREMERGE_BIN a binary to measure instead of the release build.
set -euo pipefail

RUNS=${1:-11}
# shellcheck source=scripts/bench-common.sh
. "$(dirname "$0")/bench-common.sh"
MIRRORS=${MIRRORS:-/work/.mirror}

python3 - "$WORK" "$RUNS" "$BIN" "$MIRRORS" <<'PY'
import os, sqlite3, statistics, subprocess, sys, time
work, runs, binary, mirrors = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
MODES = [("PREMERGE=0", {"PREMERGE": "0"}), ("premerge, default budget", {}),
         ("premerge, all in the hook", {"PREMERGE_HOOKS_BUDGET_MS": "600000"})]

def git(cwd, *args, env=None, check=True):
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=check, capture_output=True, text=True).stdout.strip()

def clone(name, checkout=True):
    src = os.path.join(mirrors, name, "repo")
    dst = os.path.join(work, name)
    # A push reads objects only; the mirrors may lack some large blobs of old trees.
    subprocess.run(["git", "clone", "-q", *([] if checkout else ["--no-checkout"]), src, dst], check=True)
    return dst

def hook(repo, name):
    p = os.path.join(repo, ".git", "hooks", name)
    with open(p, "w") as f:
        f.write(f'#!/bin/sh\nexec "{binary}" hook {name} "$@"\n')
    os.chmod(p, 0o755)

def settle(repo):
    # Let a background job finish before the next timed run, and time it.
    start = time.perf_counter()
    subprocess.run([binary, "status", "--wait"], cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000

def forget(repo):
    db = os.path.join(repo, ".git", "premerge", "premerge.db")
    if os.path.exists(db):
        c = sqlite3.connect(db); c.execute("DELETE FROM memories"); c.execute("DELETE FROM memories_fts"); c.commit(); c.close()

def measure(title, repo, reset, timed):
    times = {m: [] for m, _ in MODES}
    job = []
    for i in range(runs + 1):  # the first round warms the caches and is not counted
        for mode, extra in MODES:
            env = dict(os.environ, **extra)
            reset(repo)
            forget(repo)
            start = time.perf_counter()
            p = subprocess.run(timed, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            elapsed = (time.perf_counter() - start) * 1000
            if p.returncode != 0:
                sys.exit(f"{title}: {mode}: {' '.join(timed)} exited {p.returncode}")
            waited = settle(repo)
            if i > 0:
                times[mode].append(elapsed)
                if mode == MODES[1][0]:
                    job.append(waited)
    base = statistics.median(times[MODES[0][0]])
    print(f"\n{title}  ({runs} runs each, alternating)")
    print(f"  {'mode':<28} {'median ms':>10} {'min ms':>8} {'ratio':>7}")
    for mode, _ in MODES:
        med = statistics.median(times[mode])
        print(f"  {mode:<28} {med:>10.1f} {min(times[mode]):>8.1f} {med / base:>6.2f}x")
    print(f"  background job after the default-budget run (status --wait), median {statistics.median(job):.0f} ms")

def components(title, repo, base, target, pre_push):
    # Where the time of the all-in-the-hook mode goes: each part as its own command
    # on the same range (median of RUNS), memories never written.
    rng = ["--base", base, "--head", target]
    parts = [("process start (premerge --version)", [binary, "--version"]),
             ("full diff with patches (premerge diff)", [binary, "diff", *rng, "--format", "json"]),
             ("diff without patches + widening scan (scan --no-memory)", [binary, "scan", *rng, "--no-memory", "--format", "json"])]
    if pre_push:
        parts.append(("diff with patches + copy detector (premerge seams)", [binary, "seams", *rng]))
    print(f"  where the time goes, {title}:")
    for label, cmd in parts:
        t = []
        for i in range(runs + 1):
            start = time.perf_counter()
            subprocess.run(cmd, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            if i > 0:
                t.append((time.perf_counter() - start) * 1000)
        print(f"    {label:<58} {statistics.median(t):>8.1f} ms")

def merge_bench(name, commits):
    repo = clone(name)
    hook(repo, "post-merge")
    target = git(repo, "rev-parse", "HEAD")
    base = git(repo, "rev-parse", f"HEAD~{commits}")
    count = git(repo, "rev-list", "--count", f"{base}..{target}")
    files = len(git(repo, "diff", "--name-only", base, target).splitlines())
    def reset(r):
        git(r, "reset", "-q", "--hard", base)
    title = f"post-merge: git merge --ff-only, {name} HEAD~{commits}..HEAD ({count} commits, {files} files)"
    measure(title, repo, reset, ["git", "merge", "-q", "--ff-only", target])
    components(name, repo, base, target, False)

def push_bench(name, commits):
    repo = clone(name, checkout=False)
    hook(repo, "pre-push")
    target = git(repo, "rev-parse", "HEAD")
    base = git(repo, "rev-parse", f"HEAD~{commits}")
    count = git(repo, "rev-list", "--count", f"{base}..{target}")
    files = len(git(repo, "diff", "--name-only", base, target).splitlines())
    remote = os.path.join(work, name + "-remote.git")
    subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
    # The remote borrows the mirror's objects (some old large blobs of the mirrors are
    # absent, so a full first push could not pack them) and has `main` at the base.
    with open(os.path.join(remote, "objects", "info", "alternates"), "w") as f:
        f.write(os.path.join(mirrors, name, "repo", "objects") + "\n")
    git(remote, "update-ref", "refs/heads/main", base)
    git(repo, "remote", "add", "bench", remote)
    git(repo, "fetch", "-q", "bench")
    def reset(r):
        git(r, "push", "-q", "--no-verify", "-f", "bench", f"{base}:refs/heads/main")
    title = f"pre-push: git push, {name} HEAD~{commits}..HEAD ({count} commits, {files} files)"
    measure(title, repo, reset, ["git", "push", "-q", "bench", f"{target}:refs/heads/main"])
    components(name, repo, base, target, True)

only = os.environ.get("ONLY", "")
if only in ("", "ripgrep"):
    merge_bench("BurntSushi+ripgrep", 300)
if only in ("", "trpc"):
    merge_bench("trpc+trpc", 300)
if only in ("", "tauri"):
    push_bench("tauri-apps+tauri", 132)
PY

#!/usr/bin/env bash
# Stop gate benchmark: `premerge gate evaluate` end to end (process start to exit)
# with the built-in authority, on a repository with a long history.
#
#   benches/gate.sh [COMMITS] [RUNS]      (defaults: 5000 commits, 50 runs)
#   PREMERGE_BIN=path/to/premerge benches/gate.sh   (skip the release build)
#
# The repository is made with `git fast-import`: the plan file docs/plans/work.md
# is introduced by commit 10 and never changed again, so every evaluation walks the
# plan's whole first-parent history to find its introducing commit (the worst case);
# a session starts 5 commits before HEAD. Each run uses a new session id and a
# context-preservation stop reason, so every run takes the full path: evidence,
# verdict, post-verifier, continue counter, event insert, block answer.
set -euo pipefail
commits=${1:-5000}
runs=${2:-50}
here=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$here/target}
# PREMERGE_BIN: measure an existing binary instead of building the release one.
if [ -n "${PREMERGE_BIN:-}" ]; then
  bin=$PREMERGE_BIN
else
  cargo build --release --quiet --manifest-path "$here/Cargo.toml"
  bin=$target/release/premerge
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
repo=$tmp/repo
git init -q -b main "$repo"
# The default mode is shadow (decide and log, never block): the benchmark measures blocking.
git -C "$repo" config premerge.gate.mode enforce
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
{
  for i in $(seq 1 "$commits"); do
    echo "commit refs/heads/main"
    echo "committer Bench <bench@example.invalid> $((1700000000 + i)) +0000"
    echo "data <<EOM"
    echo "change $i"
    echo "EOM"
    echo "M 100644 inline src/file$((i % 50)).txt"
    echo "data <<EOM"
    echo "content $i"
    echo "EOM"
    if [ "$i" -eq 10 ]; then
      echo "M 100644 inline docs/plans/work.md"
      echo "data <<EOM"
      printf '# Plan\n- [x] one\n- [ ] two\n- [ ] three\n'
      echo "EOM"
    fi
  done
} | git -C "$repo" fast-import --quiet
git -C "$repo" checkout -q main
start=$(git -C "$repo" rev-parse HEAD~5)
git -C "$repo" checkout -q "$start"
for i in $(seq 1 "$runs"); do
  echo "{\"session_id\":\"bench-$i\",\"source\":\"startup\"}" | (cd "$repo" && "$bin" gate session-start)
done
git -C "$repo" checkout -q main
times=()
for i in $(seq 1 "$runs"); do
  payload="{\"session_id\":\"bench-$i\",\"hook_event_name\":\"Stop\",\"stop_hook_active\":false,\"last_assistant_message\":\"Stopping here to preserve context.\"}"
  t0=$(date +%s%N)
  out=$(cd "$repo" && printf '%s' "$payload" | "$bin" gate evaluate)
  t1=$(date +%s%N)
  [ -n "$out" ] || { echo "run $i was not blocked: the benchmark did not take the full path" >&2; exit 1; }
  times+=($(((t1 - t0) / 1000)))
done
# The floor on this machine right now: process start and exit alone.
base=()
for i in $(seq 1 "$runs"); do
  t0=$(date +%s%N); "$bin" --version >/dev/null; t1=$(date +%s%N)
  base+=($(((t1 - t0) / 1000)))
done
bp50=$(printf '%s\n' "${base[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")
echo "baseline \`premerge --version\`: p50 $((bp50 / 1000)).$(((bp50 % 1000) / 100)) ms; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
p50=$(echo "$sorted" | sed -n "$(((runs + 1) / 2))p")
p90=$(echo "$sorted" | sed -n "$(((runs * 9 + 9) / 10))p")
max=$(echo "$sorted" | tail -1)
echo "gate evaluate, built-in authority, $commits commits, $runs runs: p50 $((p50 / 1000)).$(((p50 % 1000) / 100)) ms, p90 $((p90 / 1000)).$(((p90 % 1000) / 100)) ms, max $((max / 1000)).$(((max % 1000) / 100)) ms"
inproc=$(cd "$repo" && "$bin" gate log --tail "$runs" --format json | sed 's/.*"latency_ms":\([0-9]*\).*/\1/' | sort -n | sed -n "$(((runs + 1) / 2))p")
echo "first run (cold: walks the plan's whole history and checks ancestry, then cached): $((times[0] / 1000)).$(((times[0] % 1000) / 100)) ms"
echo "in-process latency recorded by the gate (latency_ms): p50 $inproc ms"
(cd "$repo" && "$bin" gate log --tail 1)

#!/bin/sh
# A/B of `premerge plan` path resolution: OLD and NEW premerge binaries, alternating,
# on 100,000 reviewer findings over 20,000 files that exist in a scratch repository.
# Usage: benches/plan_paths.sh OLD_BINARY NEW_BINARY [RUNS]
set -eu
old=$1 new=$2 runs=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo"
git -C "$work/repo" init -q
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
n, files = 100_000, 20_000
for f in range(files):
    d = f"{work}/repo/src/m{f // 100}"
    os.makedirs(d, exist_ok=True)
    open(f"{d}/f{f}.rs", "w").close()
rows = [{"file": f"src/m{(i * 7919) % files // 100}/f{(i * 7919) % files}.rs",
         "line": i // files + 1, "summary": f"finding {i % 7} in file",
         "severity": "blocker" if i % 5 else "suggestion"} for i in range(n)]
json.dump(rows, open(f"{work}/findings.json", "w"))
PY
i=0
while [ "$i" -lt "$runs" ]; do
  for b in old new; do
    bin=$old; [ "$b" = new ] && bin=$new
    s=$(date +%s%N)
    (cd "$work/repo" && GIT_CONFIG_GLOBAL=/dev/null "$bin" plan --attempt 1 --findings "$work/findings.json" \
      --run-dir "$work/run-$b" >/dev/null)
    e=$(date +%s%N)
    echo "$b $(( (e - s) / 1000000 )) ms"
  done
  i=$((i + 1))
done

#!/usr/bin/env bash
# A synthetic change for the scan's speed and memory (issue #30 part 5), the same
# bytes and commit ids on every run:
#
#   scripts/bench-synthetic.sh DIR [N_FILES]
#
# makes DIR a git repository of two commits on `main`. The base has N_FILES files
# (default 3000), half Rust and half TypeScript, each with 12 declarations (Rust
# structs, TypeScript interfaces) of three fields and a doc comment. The head commit
# edits every file: a third of them (every third of each language) widen one field of
# every declaration (a Rust `u8` to `u64`, a TypeScript property made optional), 12
# findings a file; the rest carry two comment edits, which no rule reads. With 3000
# files: 1000 widened files and 12,000 findings.
#
# Then, for example:
#   scripts/bench-alternate.sh DIR 9 "git=git diff -p -M HEAD~1 HEAD" \
#     "premerge=target/release/premerge scan --no-memory --format json --base HEAD~1"
set -euo pipefail
DIR=${1:?usage: scripts/bench-synthetic.sh DIR [N_FILES]}
N=${2:-3000}
[ -e "$DIR" ] && { echo "bench-synthetic: $DIR exists" >&2; exit 2; }
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null LC_ALL=C TZ=UTC
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
git init -q -b main "$DIR"
# One fast-import stream: both commits, every blob inline, fixed dates.
python3 - "$N" <<'PY' | git -C "$DIR" fast-import --quiet
import sys
n = int(sys.argv[1])
out = sys.stdout.buffer
DECLS = 12

def rust(i, head):
    widen = head and (i // 2) % 3 == 0
    parts = [f"//! Module {i}: records of the synthetic service.\n\n"]
    for d in range(DECLS):
        note = "Updated" if head and not widen and d in (2, 9) else "A"
        parts.append(
            f"/// {note} record {d} of module {i}.\n"
            f"pub struct Record{i}_{d} {{\n"
            f"    pub limit: {'u64' if widen else 'u8'},\n"
            f"    pub name: String,\n"
            f"    pub weight: f32,\n"
            f"}}\n\n")
    return "".join(parts)

def ts(i, head):
    widen = head and (i // 2) % 3 == 0
    parts = [f"// Module {i}: records of the synthetic service.\n\n"]
    for d in range(DECLS):
        note = "Updated" if head and not widen and d in (2, 9) else "A"
        parts.append(
            f"/** {note} record {d} of module {i}. */\n"
            f"export interface Record{i}_{d} {{\n"
            f"  id{'?' if widen else ''}: string;\n"
            f"  kind: 'admin' | 'user';\n"
            f"  weight: number;\n"
            f"}}\n\n")
    return "".join(parts)

def commit(mark, msg, when, parent, head):
    out.write(f"commit refs/heads/main\nmark :{mark}\n"
              f"author bench <bench@example.invalid> {when} +0000\n"
              f"committer bench <bench@example.invalid> {when} +0000\n"
              f"data {len(msg)}\n{msg}\n".encode())
    if parent:
        out.write(f"from :{parent}\n".encode())
    # File i: Rust for even i, TypeScript for odd i, 100 files a directory.
    for i in range(n):
        path = f"src/m{i // 100}/{'r' if i % 2 == 0 else 't'}{i}.{'rs' if i % 2 == 0 else 'ts'}"
        data = (rust if i % 2 == 0 else ts)(i, head).encode()
        out.write(f"M 100644 inline {path}\ndata {len(data)}\n".encode())
        out.write(data + b"\n")

commit(1, "base", 1767225600, None, False)
commit(2, "widen a third, comments elsewhere", 1767225660, 1, True)
PY
git -C "$DIR" reset -q --hard main

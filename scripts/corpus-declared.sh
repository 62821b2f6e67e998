#!/usr/bin/env bash
# Recall and precision of `premerge scan` on the labelled declared-constraints corpus
# (issue #30 part 4; the method is in docs/scan.md, "Declared constraints: the
# labelled corpus").
#
#   scripts/corpus-declared.sh PREMERGE_BINARY MIRROR_DIR
#
# MIRROR_DIR holds one git directory per repository of corpus/declared/repos.tsv, at
# MIRROR_DIR/<owner>+<name>/repo (the layout `fetch` leaves under /work/.mirror); a
# plain clone at MIRROR_DIR/<owner>+<name> works too. Each repository is cloned once
# (`--shared --no-checkout`) into a scratch directory, so the mirrors are never
# written. Every labelled commit C is scanned against its first parent:
#
#   premerge scan --base C~1 --head C --no-memory --format json   (PREMERGE_SCAN_CACHE=0)
#
# and its findings are matched to the labels of corpus/declared/labels.tsv (given by
# reading each diff, before any scan):
# - a loosening is found when a finding of the same commit, in the same path, either
#   names the field (the last segment of the finding's symbol, split at `.` and `/`
#   and unquoted, equals the last segment of the label's field, case-insensitively) or
#   lies on a changed line of that path (either side of the diff) whose text contains
#   that last segment;
# - a finding matching no label is false (every finding on a commit labelled `none`
#   is false), unless corpus/declared/adjudicated.tsv, the reading of the diff where
#   such a finding pointed (done after a scan, and marked so), holds a loosening it
#   matches the same way: it is then counted apart, as "true after the scan". Those
#   later labels never count as loosenings for recall.
# Prints recall and precision per language, per family and overall (precision both
# with the first labels alone and with the later reading), then every miss, every
# finding judged true after the scan and every false finding, one line each, in byte
# order. Findings are attributed to a language by their file's extension and to a
# family by the label they match (a false finding by its rule's name, "other" when the
# name says nothing). A commit whose objects the snapshot lacks (git cannot diff it)
# is skipped and named.
#
# CORPUS_FINDINGS_OUT=FILE also writes every finding as one tab-separated line;
# CORPUS_LABELS=FILE and CORPUS_ADJUDICATED=FILE read other files of the same columns.
# Needs git and python3. Exit status: 0 when every scan ran (skips aside), 1 otherwise.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: scripts/corpus-declared.sh PREMERGE_BINARY MIRROR_DIR" >&2
    exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
MIRRORS=$(cd "$2" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
export PREMERGE_SCAN_CACHE=0 PREMERGE_INVARIANT_MEMORY=0

python3 - "$BIN" "$MIRRORS" "$WORK" "${CORPUS_LABELS:-$ROOT/corpus/declared/labels.tsv}" \
    "${CORPUS_ADJUDICATED:-$ROOT/corpus/declared/adjudicated.tsv}" <<'PY'
import collections, json, os, re, subprocess, sys

binary, mirrors, work, labels_path, adjudicated_path = sys.argv[1:6]
EXT_LANG = {".py": "python", ".ts": "typescript", ".tsx": "typescript", ".js": "typescript",
            ".mts": "typescript", ".go": "go", ".rs": "rust", ".prisma": "prisma", ".sql": "sql"}
# A false finding has no label to give it a family; its rule's name usually says it.
# Checked in order, so the more specific names come first.
RULE_FAMILY = [("class-validator", "class-validator"), ("zod", "zod"), ("yup", "yup"),
               ("valibot", "valibot"), ("pydantic", "pydantic"),
               ("django-migration", "django-migration"), ("django", "django-field"),
               ("alembic", "alembic"), ("sqlalchemy", "sqlalchemy"),
               ("marshmallow", "marshmallow"), ("attrs", "attrs"), ("prisma", "prisma"),
               ("openapi", "openapi"), ("schema-", "openapi"), ("serde", "serde"), ("validator", "validator-crate"),
               ("go-tag", "go-tag"), ("ozzo", "ozzo"), ("sql-", "sql"),
               ("early-return", "early-return")]

def rule_family(rule):
    for needle, fam in RULE_FAMILY:
        if needle in rule:
            return fam
    return "other"

def lang_of(path):
    return EXT_LANG.get(os.path.splitext(path)[1], "other")

def last(s):
    # The last segment of a dotted symbol or a JSON pointer, unquoted:
    # `Form.name`, `#/definitions/Req/properties/name`, `users."users_email_key"`.
    return re.split(r"[./]", s)[-1].strip().strip('"`[]').lower()

def read_labels(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            rows.append(dict(zip(header, line.rstrip("\n").split("\t"))))
    return rows

labels = read_labels(labels_path)
# Labels given after a scan, by reading the diff where a finding pointed that the
# first reading had not labelled: they can turn a finding true, never add a
# loosening to the recall count (they exist only where a finding was).
adjudicated = [r for r in (read_labels(adjudicated_path) if os.path.exists(adjudicated_path) else [])
               if r["family"] != "none"]
by_commit = collections.defaultdict(list)
for row in labels:
    by_commit[(row["repo"], row["commit"])].append(row)

env = dict(os.environ)
failures, findings, skipped, skipped_ids = [], [], [], set()
for repo in sorted({r for r, _ in by_commit}, key=lambda s: s.encode()):
    src = os.path.join(mirrors, repo.replace("/", "+"), "repo")
    if not os.path.isdir(src):
        src = os.path.join(mirrors, repo.replace("/", "+"))
    dst = os.path.join(work, repo.replace("/", "+"))
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", src, dst], check=True, env=env)
    commits = sorted(c for r, c in by_commit if r == repo)
    for c in commits:
        # A snapshot may lack some objects (the store leaves out files of 4 MiB and
        # more); a commit git itself cannot diff is skipped and named, as the sweep does.
        # `-p`, not `--quiet`: the quiet form compares ids and never reads a blob.
        q = subprocess.run(["git", "diff", "-p", "-M", "--no-ext-diff", "--no-textconv", c + "~1", c],
                           cwd=dst, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        if q.returncode != 0:
            skipped.append("%s %s" % (repo, c[:12]))
            skipped_ids.add((repo, c))
            continue
        r = subprocess.run([binary, "scan", "--base", c + "~1", "--head", c, "--no-memory", "--format", "json"],
                           cwd=dst, capture_output=True, text=True, env=env)
        if r.returncode != 0 or "panicked" in r.stderr:
            last_line = r.stderr.strip().splitlines()[-1][:160] if r.stderr.strip() else ""
            failures.append("%s %s: exit %d %s" % (repo, c[:12], r.returncode, last_line))
            continue
        out = json.loads(r.stdout)
        # Changed lines of each path, both sides, with their text (for the line match).
        diff = subprocess.run(["git", "diff", "-U0", "--no-color", "--no-ext-diff", c + "~1", c],
                              cwd=dst, capture_output=True, text=True, errors="replace", env=env).stdout
        changed = collections.defaultdict(list)  # path -> [(line, text)]
        # File headers come between `diff --git` and the first hunk; a removed SQL
        # comment (`--- x`) inside a hunk is a changed line, not a header.
        path, old_no, new_no, in_header = None, 0, 0, False
        for d in diff.splitlines():
            if d.startswith("diff --git "):
                in_header = True
            elif in_header and d.startswith("+++ "):
                path = d[6:] if d.startswith("+++ b/") else path
            elif in_header and d.startswith("--- "):
                path = d[6:] if d.startswith("--- a/") else path
            elif in_header and not d.startswith("@@"):
                continue
            elif d.startswith("@@"):
                in_header = False
                m = re.match(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", d)
                old_no, new_no = int(m.group(1)), int(m.group(2))
            elif d.startswith("+") and path:
                changed[path].append((new_no, d[1:].lower())); new_no += 1
            elif d.startswith("-") and path:
                changed[path].append((old_no, d[1:].lower())); old_no += 1
        for fd in out.get("findings", []):
            findings.append((repo, c, fd, changed))

found = set()  # ids of labels found
rows_out = []
true_f, late_f, false_f = [], [], []
for repo, c, fd, changed in findings:
    path, sym, line = fd.get("file", ""), fd.get("symbol", ""), fd.get("line", 0)
    def matches(lab):
        if lab["repo"] != repo or lab["commit"] != c or lab["family"] == "none" or lab["path"] != path:
            return False
        field = last(lab["field"])
        return last(sym) == field or any(n == line and field in t for n, t in changed.get(path, []))
    matched = [i for i, lab in enumerate(labels) if matches(lab)]
    late = [lab for lab in adjudicated if matches(lab)]
    rec = (repo, c, path, line, fd.get("rule", ""), sym)
    if matched:
        found.update(matched)
        true_f.append((rec, labels[matched[0]]["family"]))
        verdict = "true"
    elif late:
        late_f.append((rec, late[0]["family"]))
        verdict = "true-adjudicated"
    else:
        false_f.append((rec, rule_family(fd.get("rule", ""))))
        verdict = "false"
    rows_out.append("\t".join([repo, c, path, str(line), fd.get("rule", ""), sym, verdict]))

# Loosenings of a skipped commit are neither found nor missed.
pos = [i for i, lab in enumerate(labels)
       if lab["family"] != "none" and (lab["repo"], lab["commit"]) not in skipped_ids]
def table(title, key_label, key_true, key_false):
    groups = sorted({key_label(labels[i]) for i in pos} | {key_true(t) for t in true_f + late_f} |
                    {key_false(f) for f in false_f}, key=lambda s: s.encode())
    # precision counts only the labels given before the scan as true; the last
    # column also counts the findings the later reading judged true.
    print("| %s | loosenings | found | recall | findings | true | true after the scan | false | precision | precision with the later reading |" % title)
    print("|---|---|---|---|---|---|---|---|---|---|")
    tot = [0, 0, 0, 0, 0]
    for g in groups + ["all"]:
        if g == "all":
            n, k, t, lt, fl = tot
        else:
            n = sum(1 for i in pos if key_label(labels[i]) == g)
            k = sum(1 for i in pos if key_label(labels[i]) == g and i in found)
            t = sum(1 for x in true_f if key_true(x) == g)
            lt = sum(1 for x in late_f if key_true(x) == g)
            fl = sum(1 for x in false_f if key_false(x) == g)
            tot = [tot[0] + n, tot[1] + k, tot[2] + t, tot[3] + lt, tot[4] + fl]
        pct = lambda a, b: "%d%%" % round(100 * a / b) if b else "-"
        print("| %s | %d | %d | %s | %d | %d | %d | %d | %s | %s |"
              % (g, n, k, pct(k, n), t + lt + fl, t, lt, fl, pct(t, t + lt + fl), pct(t + lt, t + lt + fl)))
    print()

ncommits = len(by_commit)
npos = len({(labels[i]["repo"], labels[i]["commit"]) for i in pos})
print("corpus: %d labelled commits (%d with a loosening, %d without) in %d repositories; %d loosenings"
      % (ncommits, npos, ncommits - npos, len({r for r, _ in by_commit}), len(pos)))
print("scanned: %d commits, %d skipped (objects missing from the snapshot)" % (ncommits - len(skipped_ids), len(skipped_ids)))
print()
table("language", lambda l: l["language"], lambda x: lang_of(x[0][2]), lambda x: lang_of(x[0][2]))
table("family", lambda l: l["family"], lambda x: x[1], lambda x: x[1])
print("misses:")
for line in sorted(("miss %s %s %s %s (%s): %s" % (labels[i]["repo"], labels[i]["commit"][:12], labels[i]["path"],
                    labels[i]["field"], labels[i]["family"], labels[i]["reason"]) for i in pos if i not in found),
                   key=lambda s: s.encode()):
    print(line)
print("findings judged true after the scan:")
for line in sorted(("late %s %s %s:%d %s %s" % (r[0], r[1][:12], r[2], r[3], r[4], r[5]) for r, _ in late_f),
                   key=lambda s: s.encode()):
    print(line)
print("false findings:")
for line in sorted(("false %s %s %s:%d %s %s" % (r[0], r[1][:12], r[2], r[3], r[4], r[5]) for r, _ in false_f),
                   key=lambda s: s.encode()):
    print(line)
for line in skipped:
    print("skipped (objects missing from the snapshot) " + line)
for line in failures:
    print("failed " + line)
if os.environ.get("CORPUS_FINDINGS_OUT"):
    with open(os.environ["CORPUS_FINDINGS_OUT"], "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in sorted(rows_out, key=lambda s: s.encode())))
sys.exit(1 if failures else 0)
PY

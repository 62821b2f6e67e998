//! premerge beside other hook managers, as pure decisions on text.
//!
//! What belongs here: the snippets `premerge install --print-config` prints (fitted
//! to the configuration already in the repository, so that appending them with `>>`
//! gives a file the manager reads), telling whether a manager's configuration already
//! runs premerge for a hook (so premerge is never run twice), and the marked block
//! premerge adds to, and removes from, `lefthook-local.yml`. Reading and writing the
//! files stays in `commands::install`.

use super::{Hook, Manager};

/// The configuration files of pre-commit and prek (prek reads pre-commit's), in the
/// order they look for them.
pub(crate) const PRE_COMMIT_CONFIGS: &[&str] = &[".pre-commit-config.yaml", ".pre-commit-config.yml"];

/// lefthook's configuration files at the top of the working tree (main, then local:
/// lefthook merges `lefthook-local` over the main file).
pub(crate) const LEFTHOOK_CONFIGS: &[&str] = &[
    "lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yml",
    ".lefthook.yaml",
    "lefthook-local.yml",
    "lefthook-local.yaml",
    ".lefthook-local.yml",
    ".lefthook-local.yaml",
];

/// The local lefthook file premerge adds itself to: lefthook merges it into the main
/// configuration, it is each developer's own (like premerge's install), and a later
/// `lefthook install` keeps it.
pub(crate) const LEFTHOOK_LOCAL: &str = "lefthook-local.yml";

/// First and last line of the block premerge adds to [`LEFTHOOK_LOCAL`].
pub(crate) const BLOCK_BEGIN: &str = "# >>> premerge (premerge install added this; premerge uninstall removes it)";
pub(crate) const BLOCK_END: &str = "# <<< premerge";

/// Whether a manager's configuration text runs premerge for `hook`: a line that is
/// not a comment names `premerge hook <hook>` (lefthook, husky, a local pre-commit
/// entry) or the hook id `premerge-<hook>` (pre-commit and prek entries, including
/// those that name the premerge repository).
pub(crate) fn runs_premerge(text: &str, hook: Hook) -> bool {
    let call = format!("premerge hook {hook}");
    let id = format!("premerge-{hook}");
    text.lines().map(str::trim_start).filter(|l| !l.starts_with('#')).any(|l| l.contains(&call) || l.contains(&id))
}

/// What `--print-config` prints, and a warning for stderr when pasting it needs care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    pub text: String,
    pub warning: Option<String>,
}

// pre-commit and prek read the pre-push ref lines themselves and hand their hooks the
// pushed range in PRE_COMMIT_* variables (one ref per push), so the entry rebuilds the
// ref line premerge reads. For a new branch whose history the remote lacks, pre-commit
// sets neither FROM_REF nor TO_REF and prek sets only TO_REF: the local ref is resolved
// and the remote side is the zero id (a new branch, as in git's own ref lines).
// `verbose: true` makes both show premerge's output when it passes; without it they
// print it only for a failing hook.
const PRE_COMMIT_ENTRY: &str = r#"- repo: local
  hooks:
    - id: premerge-pre-push
      name: premerge (pre-push)
      language: system
      entry: sh -c 'to=${PRE_COMMIT_TO_REF:-$(git rev-parse "$PRE_COMMIT_LOCAL_BRANCH")}; printf "%s %s %s %s\n" "$PRE_COMMIT_LOCAL_BRANCH" "$to" "$PRE_COMMIT_REMOTE_BRANCH" "${PRE_COMMIT_FROM_REF:-0000000000000000000000000000000000000000}" | premerge hook pre-push "$PRE_COMMIT_REMOTE_NAME" "$PRE_COMMIT_REMOTE_URL"'
      stages: [pre-push]
      pass_filenames: false
      always_run: true
      verbose: true
    - id: premerge-post-merge
      name: premerge (post-merge)
      language: system
      entry: sh -c 'premerge hook post-merge "${PRE_COMMIT_IS_SQUASH_MERGE:-0}"'
      stages: [post-merge]
      pass_filenames: false
      always_run: true
      verbose: true
"#;

/// The indentation of the items of the top-level `repos:` sequence, and whether
/// `repos:` is the last top-level key (so text appended at the end lands in it).
fn repos_layout(text: &str) -> Option<(usize, bool)> {
    let mut in_repos = false;
    let mut indent = None;
    let mut repos_last = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let depth = line.len() - trimmed.len();
        if depth == 0 && !trimmed.starts_with('-') {
            in_repos = trimmed.starts_with("repos:");
            // `repos: []` (a flow list) takes no block items after it.
            let inline =
                trimmed.strip_prefix("repos:").map(str::trim).is_some_and(|v| !v.is_empty() && !v.starts_with('#'));
            repos_last = in_repos && !inline;
            continue;
        }
        if in_repos && indent.is_none() && trimmed.starts_with('-') {
            indent = Some(depth);
        }
    }
    if !text.lines().any(|l| l.starts_with("repos:")) {
        return None;
    }
    Some((indent.unwrap_or(2), repos_last))
}

/// The pre-commit / prek snippet for a repository whose `.pre-commit-config.yaml`
/// holds `existing` (`None`: there is none). With a `repos:` key, just the
/// `- repo: local` entry, indented like the entries already there, so
/// `>> .pre-commit-config.yaml` appends it to that list; without one, a whole file.
pub(crate) fn pre_commit_snippet(manager: Manager, existing: Option<&str>) -> Snippet {
    let install = format!("{} install -t pre-push -t post-merge", manager.name());
    let layout = existing.and_then(repos_layout);
    let Some((indent, repos_last)) = layout else {
        let mut text =
            format!("# .pre-commit-config.yaml: run premerge from {} (then: {install})\nrepos:\n", manager.name());
        text.push_str(&indent_lines(PRE_COMMIT_ENTRY, 2));
        return Snippet { text, warning: None };
    };
    let pad = " ".repeat(indent);
    // The leading newline ends a last line that lacks one; a blank line is harmless.
    let mut text = format!("\n{pad}# premerge, run by {} (then: {install})\n", manager.name());
    text.push_str(&indent_lines(PRE_COMMIT_ENTRY, indent));
    let warning = (!repos_last).then(|| {
        "the repos: list of .pre-commit-config.yaml is not the last key (or is written inline): paste this entry under repos: by hand (appended at the end it would not land in the list)".to_string()
    });
    Snippet { text, warning }
}

fn indent_lines(text: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    text.lines().map(|l| if l.is_empty() { "\n".to_string() } else { format!("{pad}{l}\n") }).collect()
}

/// The hook definitions lefthook needs for `hooks`: `use_stdin` hands git's ref lines
/// to premerge (lefthook reads them once and gives every `use_stdin` command the same
/// bytes, so a command of the user's can read them too).
fn lefthook_hooks(hooks: &[Hook]) -> String {
    let mut out = String::new();
    for hook in hooks {
        match hook {
            Hook::PrePush => out.push_str(
                "pre-push:\n  commands:\n    premerge:\n      run: premerge hook pre-push {1} {2}\n      use_stdin: true\n",
            ),
            Hook::PostMerge => {
                out.push_str("post-merge:\n  commands:\n    premerge:\n      run: premerge hook post-merge {1}\n")
            }
        }
    }
    out
}

/// The lefthook snippet. lefthook merges `lefthook-local.yml` into `lefthook.yml`, so a
/// file that already has `pre-push:` or `post-merge:` keys keeps them when premerge's
/// go into the local file.
pub(crate) fn lefthook_snippet(main_config: Option<&str>) -> Snippet {
    let mut text = String::from(
        "# lefthook: add to lefthook.yml, or append to lefthook-local.yml (lefthook merges it\n# into lefthook.yml); then: lefthook install\n",
    );
    text.push_str(&lefthook_hooks(&[Hook::PrePush, Hook::PostMerge]));
    let warning = main_config.filter(|t| has_top_level_key(t, "pre-push") || has_top_level_key(t, "post-merge")).map(|_| {
        "lefthook.yml already has a pre-push: or post-merge: key: append this to lefthook-local.yml instead (a second key of the same name is an error)".to_string()
    });
    Snippet { text, warning }
}

// husky runs `.husky/pre-push` with `sh -e`, with git's ref lines on stdin. The block
// reads them once into a file, feeds premerge from it, and points the script's stdin
// at the same bytes again, so lines below it read what git sent. Lines above it run
// before it: when one of them read the ref lines itself, premerge is told instead of
// silently seeing nothing.
const HUSKY_PRE_PUSH: &str = r#"# >>> premerge: git's ref lines, read once, go to premerge and to every line below
premerge_refs=$(mktemp "${TMPDIR:-/tmp}/premerge-refs.XXXXXX")
cat >"$premerge_refs"
[ -s "$premerge_refs" ] || echo "premerge: no ref lines left on stdin (a line above this block read them): move this block to the top of $0" >&2
premerge hook pre-push "$@" <"$premerge_refs" || { premerge_status=$?; rm -f "$premerge_refs"; exit "$premerge_status"; }
exec <"$premerge_refs"
rm -f "$premerge_refs"
# <<< premerge
"#;

const HUSKY_POST_MERGE: &str = "# >>> premerge\npremerge hook post-merge \"$@\"\n# <<< premerge\n";

/// The husky snippet for both hooks, as `--print-config husky` prints it.
pub fn husky_snippet() -> Snippet {
    let text = format!(
        "# husky (v9): add to .husky/pre-push (first or last; first when a line of yours reads stdin too)\n{HUSKY_PRE_PUSH}# and to .husky/post-merge\n{HUSKY_POST_MERGE}"
    );
    Snippet { text, warning: None }
}

/// Whether YAML text has `key:` at the top level (column 0).
fn has_top_level_key(text: &str, key: &str) -> bool {
    text.lines().any(|l| l.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with(':')))
}

/// `lefthook-local.yml` with premerge's block for `hooks` added, or `None` when the
/// file already defines one of those hooks (a second key of the same name would be
/// an error; the user merges it by hand). `existing` is `None` when there is no file.
pub(crate) fn lefthook_local_with_block(existing: Option<&str>, hooks: &[Hook]) -> Option<String> {
    let existing = existing.unwrap_or("");
    // A block premerge added before is rewritten to cover its hooks and the new ones.
    let (current, mut hooks) = match (existing.find(BLOCK_BEGIN), without_block(existing)) {
        (Some(start), Some(rest)) => {
            let block = &existing[start..existing.len() - (rest.len() - start)];
            let mut all: Vec<Hook> = [Hook::PrePush, Hook::PostMerge]
                .into_iter()
                .filter(|h| hooks.contains(h) || runs_premerge(block, *h))
                .collect();
            all.dedup();
            (rest, all)
        }
        _ => (existing.to_string(), hooks.to_vec()),
    };
    hooks.sort();
    if hooks.iter().any(|h| has_top_level_key(&current, h.name())) {
        return None;
    }
    let mut out = current;
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(BLOCK_BEGIN);
    out.push('\n');
    out.push_str(&lefthook_hooks(&hooks));
    out.push_str(BLOCK_END);
    out.push('\n');
    Some(out)
}

/// `text` without premerge's marked block; `None` when there is none.
pub(crate) fn without_block(text: &str) -> Option<String> {
    let start = text.find(BLOCK_BEGIN)?;
    let end_rel = text[start..].find(BLOCK_END)?;
    let mut end = start + end_rel + BLOCK_END.len();
    if text[end..].starts_with('\n') {
        end += 1;
    }
    Some(format!("{}{}", &text[..start], &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> serde_json::Value {
        serde_norway::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn pre_commit_entry_appends_under_either_indentation() {
        for (style, user) in [
            (
                "indented",
                "repos:\n  - repo: https://example.invalid/hooks\n    rev: v1\n    hooks:\n      - id: mine\n",
            ),
            ("flush", "repos:\n-   repo: https://example.invalid/hooks\n    rev: v1\n    hooks:\n    -   id: mine\n"),
            ("no final newline", "repos:\n  - repo: local\n    hooks:\n      - id: mine\n        entry: x"),
        ] {
            let s = pre_commit_snippet(Manager::PreCommit, Some(user));
            assert_eq!(s.warning, None, "{style}");
            assert!(!s.text.contains("repos:"), "{style}: no second repos: key");
            let y = yaml(&format!("{user}{}", s.text));
            let repos = y["repos"].as_array().unwrap();
            assert_eq!(repos.len(), 2, "{style}: the user's entry is kept");
            assert_eq!(repos[1]["repo"], "local");
            for h in repos[1]["hooks"].as_array().unwrap() {
                assert_eq!(h["verbose"], true, "{style}");
                assert_eq!(h["always_run"], true);
                assert_eq!(h["pass_filenames"], false);
            }
            assert_eq!(repos[1]["hooks"][0]["stages"][0], "pre-push");
            assert_eq!(repos[1]["hooks"][1]["stages"][0], "post-merge");
        }
    }

    #[test]
    fn pre_commit_snippet_without_a_config_is_a_whole_file() {
        for existing in [None, Some("# nothing yet\n")] {
            let s = pre_commit_snippet(Manager::Prek, existing);
            assert!(s.text.contains("prek install -t pre-push -t post-merge"));
            assert_eq!(yaml(&s.text)["repos"][0]["hooks"][0]["id"], "premerge-pre-push");
        }
    }

    #[test]
    fn pre_commit_snippet_warns_when_repos_is_not_last() {
        let s = pre_commit_snippet(
            Manager::PreCommit,
            Some("repos:\n  - repo: local\n    hooks: []\nci:\n  autofix: true\n"),
        );
        assert!(s.warning.unwrap().contains("by hand"));
        let s = pre_commit_snippet(Manager::PreCommit, Some("repos: []\n"));
        assert!(s.warning.is_some(), "a flow list takes no appended items");
    }

    #[test]
    fn a_configuration_runs_premerge_when_a_live_line_names_it() {
        assert!(runs_premerge(
            "pre-push:\n  commands:\n    p:\n      run: premerge hook pre-push {1} {2}\n",
            Hook::PrePush
        ));
        assert!(!runs_premerge("pre-push:\n  commands:\n    p:\n      run: premerge hook pre-push\n", Hook::PostMerge));
        assert!(runs_premerge("    - id: premerge-pre-push\n", Hook::PrePush));
        assert!(!runs_premerge("# premerge hook pre-push \"$@\"\nnpm test\n", Hook::PrePush), "a comment runs nothing");
        assert!(runs_premerge(HUSKY_PRE_PUSH, Hook::PrePush));
        assert!(runs_premerge(HUSKY_POST_MERGE, Hook::PostMerge));
    }

    #[test]
    fn lefthook_local_block_adds_and_removes_exactly() {
        let mine = "# my overrides\nskip_output:\n  - meta\n";
        let with = lefthook_local_with_block(Some(mine), &[Hook::PrePush]).unwrap();
        let y = yaml(&with);
        assert_eq!(y["pre-push"]["commands"]["premerge"]["use_stdin"], true);
        assert!(y.get("post-merge").is_none());
        assert_eq!(without_block(&with).unwrap(), mine);
        assert_eq!(without_block(mine), None);
        assert_eq!(lefthook_local_with_block(Some("pre-push:\n  commands: {}\n"), &[Hook::PrePush]), None);
        let both = lefthook_local_with_block(Some(&with), &[Hook::PostMerge]).unwrap();
        assert_eq!(both.matches(BLOCK_BEGIN).count(), 1, "one block, grown:\n{both}");
        let y = yaml(&both);
        assert_eq!(y["pre-push"]["commands"]["premerge"]["use_stdin"], true);
        assert_eq!(y["post-merge"]["commands"]["premerge"]["run"], "premerge hook post-merge {1}");
        assert_eq!(without_block(&both).unwrap(), mine);
        let fresh = lefthook_local_with_block(None, &[Hook::PrePush, Hook::PostMerge]).unwrap();
        assert_eq!(without_block(&fresh).unwrap(), "");
        assert!(runs_premerge(&fresh, Hook::PostMerge));
    }

    #[test]
    fn lefthook_snippet_is_yaml_and_warns_about_a_second_key() {
        let s = lefthook_snippet(None);
        assert_eq!(yaml(&s.text)["pre-push"]["commands"]["premerge"]["use_stdin"], true);
        assert!(lefthook_snippet(Some("pre-push:\n  commands: {}\n")).warning.is_some());
        assert!(lefthook_snippet(Some("# pre-push:\n")).warning.is_none());
    }
}

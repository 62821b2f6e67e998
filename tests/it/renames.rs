//! Rename pairing: `premerge diff` pairs added and deleted files as `git diff -M`
//! does (exact renames, then by file name, then by similarity, within
//! `diff.renameLimit`), between commits and in the index.

use std::collections::BTreeSet;
use std::fs;

use crate::common::TestRepo;

/// Forty distinct lines of a file named `tag`; lines in `changed` are rewritten.
fn body(tag: &str, changed: &[usize]) -> String {
    (0..40)
        .map(|i| {
            if changed.contains(&i) {
                format!("let rewritten_{tag}_{i} = {i} * 7;\n")
            } else {
                format!("fn item_{tag}_{i}() -> u32 {{ {} }}\n", i * 31 + tag.len())
            }
        })
        .collect()
}

/// The (old path, new path) renames of `premerge diff --format json ARGS`.
fn premerge_pairs(r: &TestRepo, args: &[&str]) -> BTreeSet<(String, String)> {
    let mut a = vec!["diff", "--format", "json"];
    a.extend_from_slice(args);
    let v = r.premerge(&a).expect_code(0).json();
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "renamed")
        .map(|f| (f["old_path"].as_str().unwrap().to_string(), f["path"].as_str().unwrap().to_string()))
        .collect()
}

/// The renames `git diff -M --raw -z ARGS` reports.
fn git_pairs(r: &TestRepo, args: &[&str]) -> BTreeSet<(String, String)> {
    let mut a = vec!["diff", "-M", "--raw", "-z", "--no-abbrev"];
    a.extend_from_slice(args);
    let out = r.git_cmd(&a).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut fields = text.split('\0');
    let mut pairs = BTreeSet::new();
    while let Some(meta) = fields.next().filter(|m| !m.is_empty()) {
        let status = meta.rsplit(' ').next().unwrap();
        let first = fields.next().unwrap().to_string();
        if status.starts_with('R') || status.starts_with('C') {
            pairs.insert((first, fields.next().unwrap().to_string()));
        }
    }
    pairs
}

fn pair(old: &str, new: &str) -> (String, String) {
    (old.to_string(), new.to_string())
}

/// The base of the rename cases: files to move, edit, and a file to keep editing.
fn base_repo() -> TestRepo {
    let r = TestRepo::new();
    for (path, tag) in [
        ("exact/moved.rs", "exact"),
        ("similar/old_name.rs", "similar"),
        ("conf/config.rs", "config"),
        ("low/c.rs", "low"),
        ("keep.rs", "keep"),
        ("gone.rs", "gone"),
    ] {
        r.write(path, body(tag, &[]));
    }
    r.commit_all("base");
    r
}

/// Exact, similar, moved under the same file name (where another added file is more
/// similar), below the similarity threshold; a modified, an added and a deleted file.
fn rename_cases(r: &TestRepo) {
    fs::remove_dir_all(r.root.join("exact")).unwrap();
    r.write("elsewhere/moved.rs", body("exact", &[]));
    fs::remove_dir_all(r.root.join("similar")).unwrap();
    r.write("similar2/new_name.rs", body("similar", &[3, 17, 30]));
    fs::remove_dir_all(r.root.join("conf")).unwrap();
    // Same file name, 20% rewritten; another name, 5% rewritten: git pairs the name.
    r.write("settings/config.rs", body("config", &[0, 5, 10, 15, 20, 25, 30, 35]));
    r.write("settings/other.rs", body("config", &[3, 17]));
    fs::remove_dir_all(r.root.join("low")).unwrap();
    let most: Vec<usize> = (0..40).filter(|i| i % 10 < 7).collect();
    r.write("low2/d.rs", body("low", &most));
    r.write("keep.rs", body("keep", &[1]));
    fs::remove_file(r.root.join("gone.rs")).unwrap();
    r.write("fresh.rs", body("fresh", &[]));
}

#[test]
fn renames_between_commits_are_the_pairs_git_reports() {
    let r = base_repo();
    let base = r.git(&["rev-parse", "HEAD"]);
    rename_cases(&r);
    let head = r.commit_all("move things");
    let ours = premerge_pairs(&r, &["--base", &base, "--head", &head]);
    let git = git_pairs(&r, &[&base, &head]);
    assert_eq!(ours, git);
    // What git reports here, so that the comparison above is about every kind.
    let expected: BTreeSet<_> = [
        pair("exact/moved.rs", "elsewhere/moved.rs"),
        pair("similar/old_name.rs", "similar2/new_name.rs"),
        pair("conf/config.rs", "settings/config.rs"),
    ]
    .into();
    assert_eq!(git, expected, "git's own pairing changed: revisit the cases");
}

#[test]
fn staged_renames_are_the_pairs_git_reports() {
    let r = base_repo();
    rename_cases(&r);
    r.git(&["add", "-A"]);
    let ours = premerge_pairs(&r, &["--staged"]);
    assert_eq!(ours, git_pairs(&r, &["--cached"]));
    assert!(ours.contains(&pair("conf/config.rs", "settings/config.rs")), "{ours:?}");
    assert_eq!(ours.len(), 3, "{ours:?}");
}

/// More inexact candidates than `diff.renameLimit` allows: git skips its similarity
/// pass (and says so on stderr), premerge still answers, with git's exact pairs only.
#[test]
fn a_change_over_the_rename_limit_still_answers_with_exact_pairs() {
    let r = TestRepo::new();
    for i in 0..4 {
        r.write(&format!("old/f{i}.rs"), body(&format!("f{i}"), &[]));
    }
    r.write("old/same.rs", body("same", &[]));
    r.commit_all("base");
    let base = r.git(&["rev-parse", "HEAD"]);
    fs::remove_dir_all(r.root.join("old")).unwrap();
    for i in 0..4 {
        r.write(&format!("new/g{i}.rs"), body(&format!("f{i}"), &[2]));
    }
    r.write("new/same.rs", body("same", &[]));
    let head = r.commit_all("move all");
    // Within the limit every file pairs.
    assert_eq!(premerge_pairs(&r, &["--base", &base, "--head", &head]).len(), 5);
    r.git(&["config", "diff.renameLimit", "2"]);
    let ours = premerge_pairs(&r, &["--base", &base, "--head", &head]);
    assert_eq!(ours, git_pairs(&r, &[&base, &head]));
    assert_eq!(ours, [pair("old/same.rs", "new/same.rs")].into());
}

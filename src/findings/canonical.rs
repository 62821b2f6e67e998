//! The one repository-relative name of each finding's path, shared by `premerge plan`
//! and `premerge review`: resolved against the working tree so that one real file has
//! one name (and so one owner in the waves), or dropped with a reason.

use std::fs;
use std::path::{Component, Path};

use super::Finding;
use crate::waves;

/// The one repository-relative name of a finding's path: resolved as the kernel would
/// (`.` and empty components skipped, `..` taken after the symbolic links before it),
/// every existing prefix replaced by its real path, and the result required to lie
/// inside the repository. `src//a.rs`, `src/../src/a.rs` and `innerlink/a.rs` (a link
/// to `inner/`) all become `src/a.rs` or `inner/a.rs`, so one real file has one owner;
/// `etclink/passwd` (a link to `/etc`) is `outside_repo`. A path that does not exist
/// yet keeps its remaining components as written.
pub(crate) fn canonical_rel(root_canon: &Path, rel: &str) -> Result<String, &'static str> {
    if rel.is_empty() {
        return Err("empty_path");
    }
    if rel.chars().any(char::is_control) {
        return Err("control_character");
    }
    let mut cur = root_canon.to_path_buf();
    let mut exists = true;
    for comp in rel.split('/') {
        match comp {
            "" | "." => continue,
            ".." => {
                if !cur.pop() {
                    return Err("outside_repo");
                }
                // Back on a real directory (`missing/..`): resolve links again from here.
                exists = exists || cur.is_dir();
            }
            c => {
                cur.push(c);
                if exists {
                    // One lstat per component; only a link is resolved (the prefix is
                    // already real, so a plain directory or file needs nothing more).
                    match fs::symlink_metadata(&cur) {
                        Ok(m) if m.file_type().is_symlink() => match fs::canonicalize(&cur) {
                            Ok(real) => cur = real,
                            // A dangling link: the rest is as written.
                            Err(_) => exists = false,
                        },
                        Ok(_) => {}
                        // A missing component: the rest is as written.
                        Err(_) => exists = false,
                    }
                }
            }
        }
    }
    let inside = cur.strip_prefix(root_canon).map_err(|_| "outside_repo")?;
    let mut parts = Vec::new();
    for c in inside.components() {
        match c {
            Component::Normal(n) => parts.push(n.to_str().ok_or("non_utf8_path")?),
            _ => return Err("outside_repo"),
        }
    }
    if parts.is_empty() {
        return Err("empty_path");
    }
    let out = parts.join("/");
    match waves::lexical_problem(&out) {
        Some(why) => Err(why),
        None => Ok(out),
    }
}

/// [`canonical_rel`] over every finding: the kept ones with their canonical paths, and
/// the dropped ones with their reasons.
pub(crate) fn canonicalise_findings(
    root_canon: &Path,
    findings: Vec<Finding>,
) -> (Vec<Finding>, Vec<waves::DroppedFinding>) {
    let mut kept = Vec::with_capacity(findings.len());
    let mut dropped = Vec::new();
    // Many findings name one file: resolve each spelling once (a few syscalls each).
    let mut resolved: std::collections::HashMap<String, Result<String, &'static str>> =
        std::collections::HashMap::new();
    for mut f in findings {
        let canon = resolved.entry(f.file.clone()).or_insert_with(|| canonical_rel(root_canon, &f.file)).clone();
        match canon {
            Ok(p) => {
                f.file = p;
                kept.push(f);
            }
            Err(reason) => dropped.push(waves::DroppedFinding {
                detail: format!("finding {}: file `{}`: {reason}", f.index, f.file.escape_debug()),
                index: f.index,
                reason: reason.to_string(),
            }),
        }
    }
    (kept, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_rel_gives_one_name_per_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(root.join("inner")).unwrap();
        fs::create_dir_all(root.join("src")).unwrap();
        fs::write(root.join("inner/z.rs"), "z").unwrap();
        fs::write(root.join("src/a.rs"), "a").unwrap();
        std::os::unix::fs::symlink("inner", root.join("innerlink")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etclink")).unwrap();
        for (raw, want) in [
            ("inner/z.rs", Ok("inner/z.rs")),
            ("innerlink/z.rs", Ok("inner/z.rs")),
            ("src//a.rs", Ok("src/a.rs")),
            ("./src/./a.rs", Ok("src/a.rs")),
            ("src/../src/a.rs", Ok("src/a.rs")),
            ("missing/../innerlink/z.rs", Ok("inner/z.rs")),
            ("src/new.rs", Ok("src/new.rs")),
            ("etclink/passwd", Err("outside_repo")),
            ("../x", Err("outside_repo")),
            ("src/..", Err("empty_path")),
            (".git/config", Err("git_internal")),
            ("a\nb", Err("control_character")),
        ] {
            assert_eq!(canonical_rel(&root, raw).as_deref().map_err(|e| *e), want, "{raw}");
        }
    }
}

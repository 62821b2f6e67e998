//! The environment is read in one place: `src/env.rs` takes the snapshot, everything
//! else asks it. A new `std::env::var` elsewhere would make what premerge saw depend
//! on when it looked, and hide a variable from the tests that set them.

use std::path::{Path, PathBuf};

/// Whether `text` reads an environment variable from the process (the environment
/// given to a child process is not a read).
fn reads_env(text: &str) -> bool {
    text.contains("env::var") || text.contains("env::{")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_check_tells_a_read_from_other_uses_of_std_env() {
    assert!(reads_env("let v = std::env::var(\"PREMERGE\");"));
    assert!(reads_env("std::env::var_os(\"HOME\")"));
    assert!(reads_env("for (k, v) in std::env::vars() {}"));
    assert!(reads_env("use std::env::{var_os, current_dir};"));
    assert!(!reads_env("let cwd = std::env::current_dir()?; let exe = std::env::current_exe()?;"));
    assert!(!reads_env("cmd.env(\"GIT_DIR\", dir); cmd.env_remove(\"GIT_INDEX_FILE\");"));
}

#[test]
fn only_the_snapshot_module_reads_the_environment() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "found only {} source files under {}", files.len(), src.display());
    let snapshot = src.join("env.rs");
    assert!(files.contains(&snapshot), "src/env.rs is missing");
    let mut readers: Vec<String> = files
        .iter()
        .filter(|p| **p != snapshot)
        .filter(|p| reads_env(&std::fs::read_to_string(p).unwrap()))
        .map(|p| p.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    readers.sort();
    assert!(
        readers.is_empty(),
        "read the environment outside src/env.rs (use ctx.env or crate::env::process()): {readers:?}"
    );
}

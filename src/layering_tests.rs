//! The layers, checked on the source: a command file imports no other command, SQL
//! (statements and the SQLite crate) stays in `src/store/`, and only `src/env.rs`
//! reads the environment.

use std::collections::BTreeSet;
use std::path::Path;

/// Command-to-command imports allowed, as `(file, command it names)`: none. Code two
/// commands share lives in a domain or store module (or `src/cli.rs` for argument
/// types); a new pair fails the test.
const KNOWN: &[(&str, &str)] = &[];

fn src() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))
}

/// The command modules: the `pub mod x;` lines of `commands/mod.rs`.
fn command_modules() -> BTreeSet<String> {
    let text = std::fs::read_to_string(src().join("commands/mod.rs")).unwrap();
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("pub(crate) mod "))?
                .strip_suffix(';')
                .map(str::to_string)
        })
        .collect()
}

/// Every `(module, rest)` that `text` names as `super::<module>` or
/// `crate::commands::<module>`, also inside `super::{a::X, b}` groups.
fn named_modules(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let code: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    for prefix in ["super::", "crate::commands::"] {
        for (i, _) in code.match_indices(prefix) {
            let rest = &code[i + prefix.len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .map(|p| p.trim().split("::").next().unwrap_or(""))
                    .collect(),
                None => vec![rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("")],
            };
            out.extend(names.into_iter().filter(|n| modules.contains(*n)).map(str::to_string));
        }
    }
    out
}

#[test]
fn no_command_file_names_another_command_beyond_the_known_list() {
    let modules = command_modules();
    assert!(modules.contains("plan") && modules.contains("hook"), "{modules:?}");
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(src().join("commands")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name == "mod.rs" || !name.ends_with(".rs") {
            continue;
        }
        let own = name.trim_end_matches(".rs");
        let text = std::fs::read_to_string(&path).unwrap();
        for m in named_modules(&text, &modules) {
            // `super::x` inside a file's own `mod tests` names the file itself.
            if m != own {
                found.insert((name.clone(), m));
            }
        }
    }
    let known: BTreeSet<(String, String)> = KNOWN.iter().map(|(f, m)| (f.to_string(), m.to_string())).collect();
    let new: Vec<_> = found.difference(&known).collect();
    assert!(
        new.is_empty(),
        "command files import other commands (move the shared code to a domain or store module): {new:?}"
    );
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(gone.is_empty(), "these imports are gone: delete them from KNOWN: {gone:?}");
}

#[test]
fn the_import_scanner_sees_plain_grouped_and_crate_paths() {
    let modules: BTreeSet<String> = ["plan", "diff", "hook"].iter().map(|s| s.to_string()).collect();
    let text = "use super::{Ctx, diff::Format};\nlet x = super::plan::read();\n// super::hook::x\nuse crate::commands::hook::Y;";
    let got: Vec<String> = named_modules(text, &modules).into_iter().collect();
    assert_eq!(got, ["diff", "hook", "plan"]);
    assert!(named_modules("use super::Ctx; super::load_config(&r);", &modules).is_empty());
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `text` holds a string literal that opens with an SQL statement.
fn has_sql_statement(text: &str) -> bool {
    ["CREATE ", "SELECT ", "INSERT ", "UPDATE ", "DELETE FROM "]
        .iter()
        .any(|kw| text.match_indices(kw).any(|(i, _)| text[..i].trim_end_matches([' ', '\n']).ends_with('"')))
}

#[test]
fn sql_and_the_sqlite_crate_stay_in_the_store() {
    let mut files = Vec::new();
    rust_files(src(), &mut files);
    let mut offenders = Vec::new();
    for path in files {
        let rel = path.strip_prefix(src()).unwrap().to_string_lossy().into_owned();
        // The store owns the tables; the widening scan reads SQL migrations as its
        // subject (their text is data there, never run); this file names the words.
        if rel.starts_with("store/") || rel.starts_with("widen/") || rel == "layering_tests.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("rusqlite") || has_sql_statement(&text) {
            offenders.push(rel);
        }
    }
    assert!(offenders.is_empty(), "SQL or rusqlite outside src/store/: {offenders:?}");
    assert!(has_sql_statement("conn.execute(\"INSERT INTO t VALUES (1)\")"));
    assert!(has_sql_statement("query(\n  \"SELECT x FROM t\")"));
    assert!(!has_sql_statement("// SELECT the first row"));
}

/// Whether `text` reads an environment variable from the process (the environment
/// given to a child process is not a read).
fn reads_env(text: &str) -> bool {
    text.contains("env::var") || text.contains("env::{")
}

/// The environment is read in one place: `src/env.rs` takes the snapshot, everything
/// else asks it. A new `std::env::var` elsewhere would make what premerge saw depend
/// on when it looked, and hide a variable from the tests that set them.
#[test]
fn only_the_snapshot_module_reads_the_environment() {
    let mut files = Vec::new();
    rust_files(src(), &mut files);
    assert!(files.len() > 20, "found only {} source files under {}", files.len(), src().display());
    assert!(files.contains(&src().join("env.rs")), "src/env.rs is missing");
    let mut readers: Vec<String> = files
        .iter()
        .map(|p| p.strip_prefix(src()).unwrap().to_string_lossy().into_owned())
        // This file names the calls it looks for.
        .filter(|rel| rel != "env.rs" && rel != "layering_tests.rs")
        .filter(|rel| reads_env(&std::fs::read_to_string(src().join(rel)).unwrap()))
        .collect();
    readers.sort();
    assert!(
        readers.is_empty(),
        "read the environment outside src/env.rs (use ctx.env or crate::env::process()): {readers:?}"
    );
    assert!(reads_env("let v = std::env::var(\"PREMERGE\");"));
    assert!(reads_env("std::env::var_os(\"HOME\")"));
    assert!(reads_env("for (k, v) in std::env::vars() {}"));
    assert!(reads_env("use std::env::{var_os, current_dir};"));
    assert!(!reads_env("let cwd = std::env::current_dir()?; let exe = std::env::current_exe()?;"));
    assert!(!reads_env("cmd.env(\"GIT_DIR\", dir); cmd.env_remove(\"GIT_INDEX_FILE\");"));
}

/// The widening scan's files stay small enough to read: none over 1,000 lines (a
/// detector's rules, walk and tests go in files of their own).
#[test]
fn no_widening_scan_file_is_over_a_thousand_lines() {
    let mut files = Vec::new();
    rust_files(&src().join("widen"), &mut files);
    assert!(files.len() > 20, "the scan's files were not found: {files:?}");
    let long: Vec<(String, usize)> = files
        .iter()
        .map(|p| (p.strip_prefix(src()).unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(p).unwrap()))
        .map(|(rel, text)| (rel, text.lines().count()))
        .filter(|(_, lines)| *lines > 1000)
        .collect();
    assert!(long.is_empty(), "files in src/widen/ over 1,000 lines: {long:?}");
}

/// Issue 28: the command context and the configuration loaders live below the commands
/// (`src/context.rs`); no module under `src/` but `commands/`, `cli.rs`, `main.rs` (and
/// this test) names `crate::commands`, so the hooks, the scan, the stripes and the gate
/// never depend on a command.
#[test]
fn only_the_command_layer_names_crate_commands() {
    let mut files = Vec::new();
    rust_files(src(), &mut files);
    let mut offenders = Vec::new();
    for path in files {
        let rel = path.strip_prefix(src()).unwrap().to_string_lossy().replace('\\', "/");
        if rel.starts_with("commands/") || ["cli.rs", "main.rs", "layering_tests.rs"].contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
        if code.iter().any(|l| l.contains("crate::commands")) {
            offenders.push(rel);
        }
    }
    assert!(offenders.is_empty(), "modules below the commands name crate::commands: {offenders:?}");
}

//! What the tests of the window share: corpora of real source, the edits made to them,
//! and the check that a detector finds the same with and without the window.

use std::path::{Path, PathBuf};

use crate::widen::{DetectError, RawFinding};

/// Every file under `dir` (recursively) whose name ends with one of `exts`, by path.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, exts, out);
        } else if exts.iter().any(|e| path.to_string_lossy().ends_with(e)) {
            out.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// Real source in `exts` from the given folders of this repository.
pub(crate) fn corpus(dirs: &[&str], exts: &[&str]) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for d in dirs {
        files(&root.join(d), exts, &mut out);
    }
    assert!(!out.is_empty(), "no {exts:?} files under {dirs:?}");
    out
}

/// New versions of `text`, each with one edit: a line deleted (every `step`-th
/// line), two lines half the file apart deleted, or one occurrence of `from`
/// replaced by `to` (three of each at most).
pub(crate) fn edits(text: &str, replacements: &[(&str, &str)], budget: usize) -> Vec<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = Vec::new();
    let step = (lines.len() / budget.max(1)).max(1);
    for skip in (step / 2..lines.len()).step_by(step) {
        out.push(lines.iter().enumerate().filter(|(i, _)| *i != skip).map(|(_, l)| *l).collect());
    }
    // Two lines deleted half a file apart: the edits a range of several commits
    // makes, which the window leaves the declarations between out of.
    let half = lines.len() / 2;
    for first in (step / 2..half).step_by(step * 4) {
        let second = first + half;
        out.push(lines.iter().enumerate().filter(|(i, _)| *i != first && *i != second).map(|(_, l)| *l).collect());
    }
    for (from, to) in replacements {
        // Up to three occurrences, spread over the file.
        let hits: Vec<usize> = text.match_indices(from).map(|(at, _)| at).collect();
        for at in hits.iter().copied().step_by((hits.len() / 3).max(1)).take(3) {
            out.push(format!("{}{to}{}", &text[..at], &text[at + from.len()..]));
        }
    }
    out
}

/// Requires two ways of computing one answer to agree: equal values, or an error
/// both ways (the same message when `same_error`).
pub(crate) fn assert_same<T: PartialEq + std::fmt::Debug>(
    name: &str,
    a: &Result<T, DetectError>,
    b: &Result<T, DetectError>,
    same_error: bool,
) {
    match (a, b) {
        (Ok(x), Ok(y)) => assert!(x == y, "{name}: {x:?}\n  differs from\n{y:?}"),
        (Err(x), Err(y)) => assert!(!same_error || x.0 == y.0, "{name}: {} against {}", x.0, y.0),
        _ => panic!("{name}: {a:?} against {b:?}"),
    }
}

type DetectWith = dyn Fn(&str, &str, bool) -> Result<Vec<RawFinding>, DetectError> + Sync;

/// Whether the syntax error a whole-file parse met lies in a text that the window
/// or body elision may leave out of its parse: a function body without triggers,
/// or one the other version shares. Such a file is scanned without that text where
/// the whole file is refused: the one difference allowed between the two.
pub(crate) fn error_left_out(err: &DetectError, e: &super::super::elide::Elision, before: &str, after: &str) -> bool {
    use super::super::elide;
    let old = err.0.starts_with("old");
    let src = if old { before } else { after };
    let Some(line) = err.0.rsplit("line ").next().and_then(|l| l.trim_end_matches(')').parse::<usize>().ok()) else {
        return false;
    };
    let mut left =
        elide::within(e, src, &[std::ops::Range { start: 0, end: src.len() }]).map(|l| l.inside).unwrap_or_default();
    if let Some((o, n)) = elide::find(e, before, after, Some(&Default::default()), false) {
        left.extend(if old { o.inside } else { n.inside });
    }
    let line_of = |at: usize| src[..at].matches('\n').count() + 1;
    left.iter().any(|r| (line_of(r.start)..=line_of(r.end)).contains(&line))
}

/// Runs `detect` on each pair `(name, before, after)` with and without the window
/// and requires the same answer (the same findings, or an error both ways).
/// `windowed` tells whether the detector takes the window for a pair. Returns how
/// many pairs it took and how many findings those gave, so that a caller can require
/// that the comparison exercised the window.
pub(crate) fn same_with_and_without(
    pairs: &[(String, String, String)],
    detect: &DetectWith,
    windowed: &(dyn Fn(&str, &str) -> bool + Sync),
    elision: Option<&super::super::elide::Elision>,
) -> (usize, usize) {
    use rayon::prelude::*;
    pairs
        .par_iter()
        .map(|(name, before, after)| {
            let whole = detect(before, after, false);
            let window = detect(before, after, true);
            match (&whole, &window, elision) {
                (Err(e), Ok(_), Some(elision)) if error_left_out(e, elision, before, after) => {}
                _ => assert_same(&format!("{name}, whole files against the window"), &whole, &window, false),
            }
            match window {
                Ok(found) if !before.is_empty() && windowed(before, after) => (1, found.len()),
                _ => (0, 0),
            }
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

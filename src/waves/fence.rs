//! The commit fence: the allowed set derived from a wave plan alone, and the comparison
//! of changed paths against it by byte order (never the locale).
//!
//! The plan is parsed strictly: anything short of a complete, well-formed plan for the
//! named attempt is an error, and the command layer turns every error into a refusal
//! (the fence fails closed).

use std::collections::HashSet;

use super::{SCHEMA_VERSION, WavePlan};

/// Why a plan cannot be trusted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    /// Not JSON, truncated, or a field of the wrong type.
    #[error("not a valid wave plan: {0}")]
    Malformed(String),
    /// A plan written by another schema version.
    #[error("schema_version {0} is not {SCHEMA_VERSION}")]
    Version(u32),
    /// The plan names another attempt than the one asked for.
    #[error("plan is for attempt {found}, not {wanted}")]
    Attempt { found: u32, wanted: u32 },
    /// A structural rule of the plan is broken.
    #[error("{0}")]
    Invalid(String),
}

/// Parse and validate `fix-waves-NN.json` for `attempt`.
pub fn parse_plan(text: &str, attempt: u32) -> Result<WavePlan, PlanError> {
    let plan: WavePlan = serde_json::from_str(text).map_err(|e| PlanError::Malformed(e.to_string()))?;
    if plan.schema_version != SCHEMA_VERSION {
        return Err(PlanError::Version(plan.schema_version));
    }
    if plan.attempt != attempt {
        return Err(PlanError::Attempt { found: plan.attempt, wanted: attempt });
    }
    if plan.max_per_wave == 0 {
        return Err(PlanError::Invalid("max_per_wave must be at least 1".into()));
    }
    let mut files = HashSet::new();
    let mut owners = HashSet::new();
    for (i, wave) in plan.waves.iter().enumerate() {
        if wave.is_empty() || wave.len() > plan.max_per_wave {
            return Err(PlanError::Invalid(format!(
                "wave {} has {} files (allowed 1..={})",
                i + 1,
                wave.len(),
                plan.max_per_wave
            )));
        }
        for e in wave {
            if let Some(why) = super::lexical_problem(&e.file) {
                return Err(PlanError::Invalid(format!("file {:?}: {why}", e.file)));
            }
            if e.owner.is_empty() {
                return Err(PlanError::Invalid(format!("file {:?}: empty owner", e.file)));
            }
            if !files.insert(e.file.as_str()) {
                return Err(PlanError::Invalid(format!("file {:?} appears more than once", e.file)));
            }
            if !owners.insert(e.owner.as_str()) {
                return Err(PlanError::Invalid(format!("owner {:?} owns more than one file", e.owner)));
            }
        }
    }
    Ok(plan)
}

/// The allowed set of a plan (every file of every wave), or of one owner when given;
/// byte-sorted. `None` when the owner is not in the plan.
pub fn allowed(plan: &WavePlan, owner: Option<&str>) -> Option<Vec<String>> {
    let mut v: Vec<String> =
        plan.entries().filter(|(_, e)| owner.is_none_or(|o| e.owner == o)).map(|(_, e)| e.file.clone()).collect();
    if owner.is_some() && v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    Some(v)
}

/// The changed paths outside the allowed set, byte-sorted and deduplicated.
///
/// Compared as the exact bytes git stores: a name that is not UTF-8 (`w\xff.rs`) can
/// never equal a plan entry, since a plan is JSON text, so it is always a stray and
/// the fence refuses it rather than letting a lossy reading (`w\u{fffd}.rs`) match.
pub fn strays(changed: &[Vec<u8>], allowed: &[String]) -> Vec<Vec<u8>> {
    let set: HashSet<&[u8]> = allowed.iter().map(|s| s.as_bytes()).collect();
    let mut v: Vec<Vec<u8>> = changed.iter().filter(|c| !set.contains(c.as_slice())).cloned().collect();
    v.sort();
    v.dedup();
    v
}

/// A changed path as the fence prints it: [`display_path`] for UTF-8 names, git-style
/// octal escapes for the bytes of one that is not (never a lossy reading).
pub(crate) fn display_path_bytes(p: &[u8]) -> String {
    match std::str::from_utf8(p) {
        Ok(s) => display_path(s),
        Err(_) => crate::diff::quote_path_bytes(p),
    }
}

/// A path as printed by the fence: as is when plain, else quoted with escapes so a
/// newline or an escape sequence in a name cannot forge another line of output.
pub fn display_path(p: &str) -> String {
    if p.chars().any(|c| c.is_control() || c == '"' || c == '\\') {
        format!("\"{}\"", p.escape_debug())
    } else {
        p.to_string()
    }
}

/// One line when some strays are not UTF-8: no wave plan (JSON text) can name them,
/// so the fence can only refuse them; renaming the file is the way through.
pub(crate) fn unrepresentable_note(
    out: &mut dyn std::io::Write,
    prefix: &str,
    stray: &[Vec<u8>],
) -> std::io::Result<()> {
    let n = stray.iter().filter(|p| std::str::from_utf8(p).is_err()).count();
    if n > 0 {
        writeln!(
            out,
            "{prefix}: {n} path(s) are not UTF-8 and no wave plan can name them: rename them to UTF-8 names"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waves::{WaveEntry, WavePlan};

    fn plan(files: &[&[&str]]) -> WavePlan {
        WavePlan {
            schema_version: 1,
            attempt: 1,
            max_per_wave: 8,
            waves: files
                .iter()
                .enumerate()
                .map(|(w, fs)| {
                    fs.iter()
                        .enumerate()
                        .map(|(s, f)| WaveEntry {
                            file: f.to_string(),
                            owner: crate::waves::owner_id(w + 1, s + 1),
                            findings: vec![],
                        })
                        .collect()
                })
                .collect(),
        }
    }

    #[test]
    fn strict_parse() {
        let good = serde_json::to_string(&plan(&[&["b", "a"], &["c"]])).unwrap();
        assert!(parse_plan(&good, 1).is_ok());
        assert!(matches!(parse_plan(&good, 2), Err(PlanError::Attempt { .. })));
        assert!(matches!(parse_plan(&good[..good.len() - 3], 1), Err(PlanError::Malformed(_))));
        let dup = serde_json::to_string(&plan(&[&["a"], &["a"]])).unwrap();
        assert!(matches!(parse_plan(&dup, 1), Err(PlanError::Invalid(_))));
        let bad = serde_json::to_string(&plan(&[&["../a"]])).unwrap();
        assert!(matches!(parse_plan(&bad, 1), Err(PlanError::Invalid(_))));
        assert!(matches!(
            parse_plan(r#"{"schema_version":1,"attempt":1,"waves":[]}"#, 1),
            Err(PlanError::Malformed(_))
        ));
    }

    #[test]
    fn allowed_and_strays_by_bytes() {
        let p = plan(&[&["b", "a"], &["Z", "é"]]);
        assert_eq!(allowed(&p, None).unwrap(), ["Z", "a", "b", "é"]);
        assert_eq!(allowed(&p, Some("w01-02")).unwrap(), ["a"]);
        assert_eq!(allowed(&p, Some("nobody")), None);
        let changed: Vec<Vec<u8>> = ["é", "e", "a", "Å", "e"].iter().map(|s| s.as_bytes().to_vec()).collect();
        assert_eq!(strays(&changed, &allowed(&p, None).unwrap()), [b"e".to_vec(), "Å".as_bytes().to_vec()]);
        assert_eq!(display_path("a\nb"), "\"a\\nb\"");
    }

    #[test]
    fn non_utf8_names_never_match_their_lossy_reading() {
        let lossy = String::from_utf8_lossy(b"w\xff.rs").into_owned();
        let p = plan(&[&[lossy.as_str()]]);
        let set = allowed(&p, None).unwrap();
        let changed = vec![b"w\xff.rs".to_vec(), b"w\xfe.rs".to_vec(), lossy.as_bytes().to_vec()];
        assert_eq!(strays(&changed, &set), [b"w\xfe.rs".to_vec(), b"w\xff.rs".to_vec()]);
        assert_eq!(display_path_bytes(b"w\xff.rs"), "\"w\\377.rs\"");
        assert_eq!(display_path_bytes(b"w\xfe.rs"), "\"w\\376.rs\"");
        assert_eq!(display_path_bytes("é.rs".as_bytes()), "é.rs");
    }
}

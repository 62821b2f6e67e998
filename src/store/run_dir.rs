//! The pipeline run directory: the artefacts the fixer-wave commands share
//! (`fix-waves-NN.json`, `classified-NN.json`, `blocked-on-NN.json`), their paths and
//! their readers. Every read goes through `src/input.rs` (regular files only, under
//! the limit of [`Kind::Artefact`] or [`Kind::BlockedOn`]).

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

use crate::input::{self, InputError, Kind};
use crate::waves::{self, ClassifiedFinding, Counts};

/// `classified-NN.json`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Classified {
    #[schemars(range(min = 1))]
    pub attempt: u32,
    /// Suggestions of earlier attempts (1..N-1) that this attempt's findings do not
    /// repeat: a suggestion is never fixed by the loop, so it must not be lost.
    #[serde(default)]
    pub carried_suggestions: Vec<waves::CarriedSuggestion>,
    pub carry: CarryInfo,
    pub counts: Counts,
    /// Findings of the input left out, each with its reason (`counts.findings_dropped`).
    #[serde(default)]
    pub dropped_findings: Vec<waves::DroppedFinding>,
    pub findings: Vec<ClassifiedFinding>,
    #[schemars(extend("const" = 1))]
    pub schema_version: u32,
    /// The findings document's shape: `lens`, `reviewer` or `sarif`.
    #[schemars(extend("enum" = ["lens", "reviewer", "sarif"]))]
    pub shape: String,
}

/// What carry read, under `carry` in `classified-NN.json`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct CarryInfo {
    /// Most rows admitted: min(MAX_BLOCKED_ON, max_per_wave).
    pub cap: usize,
    pub enabled: bool,
    /// Whether that file existed.
    pub present: bool,
    /// The one file carry reads (`blocked-on-<N-1>.json`), when enabled.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub source: Option<String>,
}

/// A path premerge names itself (the run directory, its artefacts) as UTF-8: it is
/// written into JSON, events and messages as a string. A path that is not UTF-8 is
/// refused here, at the edge, naming it (`what` says which path it is).
pub(crate) fn utf8_path(path: PathBuf, what: &str) -> Result<Utf8PathBuf> {
    Utf8PathBuf::from_path_buf(path).map_err(|p| {
        crate::error::input_error(format!("{what} {}", p.display()), "not UTF-8; premerge names it in JSON")
    })
}

/// Path of an attempt's artefact: `<run dir>/<stem>-NN.json`.
pub fn artefact(run_dir: &Utf8Path, stem: &str, attempt: u32) -> Utf8PathBuf {
    run_dir.join(format!("{stem}-{}.json", super::nn(attempt)))
}

/// Read and validate `fix-waves-NN.json`. Every failure is an error: the fence turns
/// it into a refusal.
pub(crate) fn read_plan(run_dir: &Utf8Path, attempt: u32) -> Result<waves::WavePlan> {
    let path = artefact(run_dir, "fix-waves", attempt);
    let text =
        input::read_text(path.as_std_path(), Kind::Artefact).map_err(|e| anyhow!("cannot read the wave plan: {e}"))?;
    waves::fence::parse_plan(&text, attempt).map_err(|e| anyhow!("{path}: {e}"))
}

/// Read `classified-NN.json`.
pub(crate) fn read_classified(run_dir: &Utf8Path, attempt: u32) -> Result<Classified> {
    let path = artefact(run_dir, "classified", attempt);
    let text = input::read_text(path.as_std_path(), Kind::Artefact)?;
    let c: Classified = serde_json::from_str(&text).map_err(|e| anyhow!("{path}: not a classified artefact: {e}"))?;
    if c.schema_version != waves::SCHEMA_VERSION || c.attempt != attempt {
        bail!("{path}: schema_version/attempt are not {}/{attempt}", waves::SCHEMA_VERSION);
    }
    Ok(c)
}

/// Read `blocked-on-NN.json` as text; a missing file is `None`. Larger than the
/// limit of [`Kind::BlockedOn`], or not a regular file, is an error naming the file.
pub(crate) fn read_blocked_on(path: &Path) -> Result<Option<String>, InputError> {
    input::read_text_if_present(path, Kind::BlockedOn)
}

/// Directory (inside a run directory) where `plan --attempt 1` moves what an earlier
/// loop left there, one dated subdirectory per loop it supersedes.
pub(crate) const PREVIOUS_LOOPS_DIR: &str = "previous-loops";
/// Stems of the artefacts that belong to one loop: its plans, classified findings and
/// blocked-on rows. Nothing else in a run directory is moved (events, proposals).
pub(crate) const LOOP_ARTEFACT_STEMS: &[&str] = &["fix-waves", "classified", "blocked-on"];
/// Most dated subdirectories tried for one set-aside: one a second is the usual rate;
/// loops opened many times within one second get a numbered suffix, up to this bound.
const MAX_SET_ASIDE_TRIES: u32 = 1000;

/// Whether `name` is an attempt's artefact of a loop (`<stem>-NN.json`, NN digits).
fn is_loop_artefact(name: &str) -> bool {
    LOOP_ARTEFACT_STEMS.iter().any(|stem| {
        name.strip_prefix(stem)
            .and_then(|r| r.strip_prefix('-'))
            .and_then(|r| r.strip_suffix(".json"))
            .is_some_and(|nn| nn.len() >= 2 && nn.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Move the artefacts an earlier loop left in `run_dir` into
/// `<run_dir>/previous-loops/<UTC time>[-k]/`, so that a new loop's fence, carry and
/// converge never read them. Returns that directory and how many moved, `None` when
/// there was nothing to move. The caller holds the run directory's lock.
pub(crate) fn set_aside_artefacts(run_dir: &Path) -> Result<Option<(PathBuf, usize)>> {
    let entries = match std::fs::read_dir(run_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("{}: cannot list: {e}", run_dir.display()),
    };
    let mut names: Vec<std::ffi::OsString> = Vec::new();
    for e in entries {
        let e = e.map_err(|e| anyhow!("{}: cannot list: {e}", run_dir.display()))?;
        let name = e.file_name();
        if name.to_str().is_some_and(is_loop_artefact) {
            names.push(name);
        }
    }
    if names.is_empty() {
        return Ok(None);
    }
    names.sort();
    let stamp = super::now()
        .format(time::macros::format_description!("[year][month][day]T[hour][minute][second]Z"))
        .map_err(|e| anyhow!("cannot format the time: {e}"))?;
    let parent = run_dir.join(PREVIOUS_LOOPS_DIR);
    super::ensure_real_dir(&parent)?;
    let mut dest = None;
    for k in 1..=MAX_SET_ASIDE_TRIES {
        let d = if k == 1 { parent.join(&stamp) } else { parent.join(format!("{stamp}-{k}")) };
        match std::fs::create_dir(&d) {
            Ok(()) => {
                dest = Some(d);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => bail!("{}: cannot create: {e}", d.display()),
        }
    }
    let Some(dest) = dest else { bail!("{}: no free name after {MAX_SET_ASIDE_TRIES} tries", parent.display()) };
    for name in &names {
        let (from, to) = (run_dir.join(name), dest.join(name));
        std::fs::rename(&from, &to).map_err(|e| anyhow!("{}: cannot move to {}: {e}", from.display(), to.display()))?;
    }
    Ok(Some((dest, names.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_on_fifo_or_directory_is_refused_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(tmp.path()).unwrap();
        let fifo = artefact(dir, "blocked-on", 1);
        let c = std::ffi::CString::new(fifo.as_str()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Without the regular-file check this would block until a writer came.
        let e = read_blocked_on(fifo.as_std_path()).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
        let sub = artefact(dir, "blocked-on", 2);
        std::fs::create_dir(&sub).unwrap();
        assert!(read_blocked_on(sub.as_std_path()).unwrap_err().to_string().contains("a directory"));
        assert_eq!(read_blocked_on(artefact(dir, "blocked-on", 3).as_std_path()).unwrap(), None);
    }

    #[test]
    fn an_oversized_blocked_on_file_or_plan_is_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(tmp.path()).unwrap();
        let big = artefact(dir, "blocked-on", 1);
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(Kind::BlockedOn.default_limit() + 1).unwrap();
        let e = read_blocked_on(big.as_std_path()).unwrap_err().to_string();
        assert!(e.contains("blocked-on-01.json") && e.contains("larger than"), "{e}");
        let plan = artefact(dir, "fix-waves", 1);
        std::fs::File::create(&plan).unwrap().set_len(Kind::Artefact.default_limit() + 1).unwrap();
        let e = read_plan(dir, 1).unwrap_err().to_string();
        assert!(e.contains("fix-waves-01.json") && e.contains("larger than"), "{e}");
        let e = read_classified(dir, 1).unwrap_err().to_string();
        assert!(e.contains("classified-01.json") && e.contains("no such file"), "{e}");
    }

    #[test]
    fn set_aside_moves_only_a_loops_artefacts_into_a_new_dated_directory_each_time() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        assert_eq!(set_aside_artefacts(d).unwrap(), None);
        for n in ["fix-waves-01.json", "classified-02.json", "blocked-on-01.json", "events.jsonl", "fix-waves-x.json"] {
            std::fs::write(d.join(n), n).unwrap();
        }
        let (first, moved) = set_aside_artefacts(d).unwrap().unwrap();
        assert_eq!(moved, 3);
        assert!(first.join("blocked-on-01.json").is_file() && !d.join("blocked-on-01.json").exists());
        assert!(d.join("events.jsonl").is_file() && d.join("fix-waves-x.json").is_file());
        std::fs::write(d.join("fix-waves-01.json"), "again").unwrap();
        let (second, moved) = set_aside_artefacts(d).unwrap().unwrap();
        assert_eq!(moved, 1);
        assert_ne!(first, second, "a second set-aside never mixes with the first");
    }

    #[test]
    fn a_run_directory_that_is_not_utf8_is_refused_by_name() {
        use std::os::unix::ffi::OsStrExt;
        let p = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/run-\xff"));
        let e = utf8_path(p, "run directory").unwrap_err().to_string();
        assert_eq!(e, "run directory /tmp/run-\u{fffd}: not UTF-8; premerge names it in JSON");
        assert_eq!(utf8_path(PathBuf::from("/tmp/run"), "run directory").unwrap(), Utf8Path::new("/tmp/run"));
    }
}

//! The copy detector run over a diff: read the new side of every file the diff adds
//! lines to and find blocks copied into several files (`super::clones`). Shared by
//! `premerge seams` and the pre-push stage (`crate::hook::stages`).

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use super::clones::{self, CloneCluster, SourceFile, Thresholds};
use crate::config::Config;
use crate::diff::{Diff, EntryKind, Status};
use crate::git::Repo;

/// Files larger than this are not read: generated or vendored code, whose copies are
/// not a reviewer's concern, and whose size would dominate the detector's time.
pub(crate) const MAX_FILE_BYTES: usize = 1024 * 1024;

/// What the detector found in one diff.
pub struct Report {
    pub clusters: Vec<CloneCluster>,
    pub thresholds: Thresholds,
    pub files_scanned: usize,
    /// Files not read, counted by reason.
    pub skipped: BTreeMap<&'static str, usize>,
}

pub(crate) fn thresholds(config: &Config, min_files: Option<u64>, min_tokens: Option<u64>) -> Result<Thresholds> {
    let f = min_files.unwrap_or(config.clones.min_files);
    let t = min_tokens.unwrap_or(config.clones.min_tokens);
    if f < 2 {
        bail!("clones.min_files: must be at least 2 (a copy needs two places), got {f}");
    }
    if t < 1 {
        bail!("clones.min_tokens: must be at least 1, got {t}");
    }
    Ok(Thresholds { min_files: f as usize, min_tokens: t as usize })
}

/// Read the new side of every file the diff adds lines to and run the detector.
pub fn detect(repo: &Repo, diff: &Diff, t: Thresholds) -> Result<Report> {
    let mut skipped: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut files = Vec::new();
    for f in &diff.files {
        let added: Vec<u32> = f.hunks.iter().flat_map(|h| h.added.iter().copied()).collect();
        if added.is_empty() || f.status == Status::Deleted {
            continue;
        }
        if f.binary || f.new_kind != EntryKind::File {
            *skipped.entry("not_text").or_default() += 1;
            continue;
        }
        let bytes = match &f.new_oid {
            Some(oid) => repo.blob(oid)?,
            // A working-tree file: a FIFO or a device is skipped, never read or waited on.
            None => match crate::input::read_file(
                &repo.require_workdir()?.join(&f.path),
                crate::input::Kind::Source,
                MAX_FILE_BYTES as u64,
            ) {
                Ok(b) => b,
                Err(crate::input::InputError::NotRegular { .. }) => {
                    *skipped.entry("not_regular").or_default() += 1;
                    continue;
                }
                Err(crate::input::InputError::TooLarge { .. }) => {
                    *skipped.entry("too_large").or_default() += 1;
                    continue;
                }
                Err(e) => return Err(e.into()),
            },
        };
        if bytes.len() > MAX_FILE_BYTES {
            *skipped.entry("too_large").or_default() += 1;
            continue;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            *skipped.entry("not_utf8").or_default() += 1;
            continue;
        };
        files.push(SourceFile { path: f.path.clone(), text, added });
    }
    let clusters = clones::detect(&files, t);
    Ok(Report { clusters, thresholds: t, files_scanned: files.len(), skipped })
}

/// The text report of `premerge seams` and the pre-push stage.
pub(crate) fn text_report(r: &Report) -> String {
    let mut s = format!(
        "{} cluster(s) of code copied into {} or more files ({} file(s) scanned, blocks of {}+ tokens)\n",
        r.clusters.len(),
        r.thresholds.min_files,
        r.files_scanned,
        r.thresholds.min_tokens
    );
    for (i, c) in r.clusters.iter().enumerate() {
        s.push_str(&format!("copy {}: {} files\n", i + 1, c.files.len()));
        for b in &c.blocks {
            s.push_str(&format!("  {}:{}-{} ({} tokens)\n", b.file, b.start_line, b.end_line, b.tokens));
        }
    }
    for (why, n) in &r.skipped {
        s.push_str(&format!("skipped {n} file(s): {why}\n"));
    }
    s
}

//! The proposal store: `<root>/{open,applied,rejected}/<stripe with / as +>-<YYYYMMDDTHHMMSSZ>[-N].md`
//! (names written before `+` have `--` and are still read, confirmed by their front matter).
//!
//! Writing a new proposal (never replacing a file), finding a stripe's open proposal,
//! listing, resolving an id, and moving an open proposal to `applied/` or
//! `rejected/` with its event. Proposal files are read back through `src/input.rs`
//! (regular files only, under the artefact limit). Writers of one root take the
//! store's lock on `<root>/open/` ([`store::RunLock::acquire_dir`]), which leaves no
//! lock file in the proposal tree. The pure side (ids, documents) is `crate::stripe`.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use serde::Serialize;

use crate::config::Config;
use crate::error::input_error;
use crate::git::Repo;
use crate::input::{self, InputError, Kind};
use crate::store;
use crate::stripe::StripeId;
use crate::stripe::proposal as doc;

/// The three proposal folders, in listing order.
pub(crate) const STATES: [&str; 3] = ["open", "applied", "rejected"];

/// How long a writer waits for another writer of the same proposal root: writing
/// one proposal takes milliseconds, so waiting as long as a run-directory lock is ample.
pub(crate) const ROOT_LOCK_WAIT: Duration = store::LOCK_WAIT;

/// The configured proposal root: `proposal.root`, relative to the repository root.
pub(crate) fn default_root(repo: &Repo, cfg: &Config) -> Result<PathBuf> {
    crate::store::contain::config_root(
        repo,
        cfg,
        "proposal.root",
        cfg.proposal.root.as_str(),
        "git config premerge.proposal.root, or --root",
    )
}

/// Refuse a root that exists but is not a directory; create `<root>/open/`.
pub(crate) fn ensure_root(root: &Path) -> Result<PathBuf> {
    check_root(root)?;
    let open = root.join("open");
    fs::create_dir_all(&open).with_context(|| format!("{}: cannot create", open.display()))?;
    Ok(open)
}

/// Refuse a proposal root that exists but is not a directory (exit 2).
pub(crate) fn check_root(root: &Path) -> Result<()> {
    if root.exists() && !root.is_dir() {
        return Err(input_error(root.display(), "proposal root is not a directory"));
    }
    Ok(())
}

/// Whether the file `name` is a proposal of the stripe whose file stem is `stem`: it
/// starts with `<stem>-` and ends with `.md` (matched by the stripe prefix only, whatever
/// the suffix: a premerge timestamp or a hand-written `<stripe>-handwritten.md`).
pub(crate) fn names_stripe(name: &str, stem: &str) -> bool {
    name.ends_with(".md")
        && !name.starts_with('.')
        && name.strip_prefix(stem).is_some_and(|rest| rest.starts_with('-'))
        && doc::parse_file_name(name).is_none_or(|n| n.stem == stem)
}

/// The open proposal of `stripe` under `root`, if any: a file in `<root>/open/` whose
/// name starts with the stripe. Only a matching name is opened, to confirm its front
/// matter (a scope `a--b` and a scope `a/b` share a file-name prefix); a match whose
/// front matter does not parse still counts, because its name says it is that stripe.
pub fn find_open(root: &Path, stripe: &StripeId) -> Result<Option<PathBuf>> {
    let dir = root.join("open");
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow!("{}: cannot read: {e}", dir.display())),
    };
    let mut found: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("{}: cannot read", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !stripe.names_file(name) {
            continue;
        }
        let path = entry.path();
        let same = match read_proposal(&path).ok().and_then(|t| doc::parse_front_matter(&t).ok()) {
            Some(fm) => fm.stripe == *stripe,
            None => true,
        };
        if same {
            found.push(path);
        }
    }
    found.sort();
    Ok(found.into_iter().next())
}

/// Write `bytes` as a new proposal in `<root>/open/` without ever replacing a file:
/// a temporary file is linked into place only when the name is free in every folder.
pub fn write_new(root: &Path, stripe: &StripeId, timestamp: &str, bytes: &[u8]) -> Result<PathBuf> {
    let open = root.join("open");
    // Leftovers of an emit killed between create and rename (docs/reliability.md).
    store::remove_stale_temporaries(&open);
    let mut tmp = tempfile::Builder::new()
        .prefix(store::TMP_PREFIX)
        // A proposal is for reviewers: 0644 like every artefact (umask permitting).
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(store::MODE_SHARED))
        .tempfile_in(&open)
        .with_context(|| format!("{}: cannot create a temporary file", open.display()))?;
    tmp.write_all(bytes).with_context(|| format!("{}: write failed", open.display()))?;
    tmp.as_file().sync_all().with_context(|| format!("{}: fsync failed", open.display()))?;
    // Same-second proposals of one stripe get -2, -3, ...; names stay unique across
    // open/applied/rejected so a move never overwrites a resolved proposal.
    const MAX_SEQ: u32 = 1000;
    for seq in 1..=MAX_SEQ {
        let name = doc::file_name(stripe, timestamp, seq);
        if STATES.iter().any(|s| root.join(s).join(&name).exists()) {
            continue;
        }
        let target = open.join(&name);
        match tmp.persist_noclobber(&target) {
            Ok(_) => {
                if let Ok(d) = File::open(&open) {
                    // Durability of the rename only; a refusal costs nothing but that.
                    let _ = d.sync_all();
                }
                return Ok(target);
            }
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => tmp = e.file,
            Err(e) => return Err(anyhow!("{}: cannot write: {}", target.display(), e.error)),
        }
    }
    bail!("{}: more than {MAX_SEQ} proposals of {stripe} in one second", open.display())
}

/// One readable proposal on disk.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Listed {
    pub status: &'static str,
    pub stripe: String,
    pub created: String,
    pub age_seconds: Option<i64>,
    pub path: String,
}

/// A proposal file that could not be read back.
#[derive(Debug, Clone, Serialize)]
pub struct Unparseable {
    pub path: String,
    pub reason: String,
}

/// What is on disk under a proposal root.
#[derive(Debug, Clone, Default)]
pub(crate) struct RootScan {
    /// Readable proposals: open, then applied, then rejected, by file name.
    pub listed: Vec<Listed>,
    /// `*.md` files that could not be read back (reported, skipped).
    pub unparseable: Vec<Unparseable>,
    /// `*.md` files per folder, readable or not: the totals match the disk.
    pub totals: BTreeMap<&'static str, usize>,
}

/// Every `*.md` file of the three folders.
pub(crate) fn scan_root(root: &Path) -> Result<RootScan> {
    check_root(root)?;
    let now = store::now();
    let (mut listed, mut bad, mut totals) = (Vec::new(), Vec::new(), BTreeMap::new());
    for status in STATES {
        let dir = root.join(status);
        let mut names: Vec<String> = match fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.ends_with(".md") && !n.starts_with('.'))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(anyhow!("{}: cannot read: {e}", dir.display())),
        };
        names.sort();
        totals.insert(status, names.len());
        for name in names {
            let path = dir.join(&name);
            let shown = path.display().to_string();
            let named = doc::parse_file_name(&name).is_some();
            let text = match read_proposal(&path) {
                Ok(t) => t,
                Err(e) => {
                    bad.push(Unparseable { path: shown, reason: format!("cannot read: {e}") });
                    continue;
                }
            };
            match doc::parse_front_matter(&text) {
                // A hand-named file counts when its name starts with its own stripe.
                Ok(fm) if !named && !fm.stripe.names_file(&name) => bad.push(Unparseable {
                    path: shown,
                    reason: format!("file name does not start with its stripe `{}-`", fm.stripe.file_stem()),
                }),
                Err(_) if !named => bad.push(Unparseable {
                    path: shown,
                    reason: "file name is not <stripe>-<YYYYMMDDTHHMMSSZ>.md".into(),
                }),
                Ok(fm) => listed.push(Listed {
                    status,
                    stripe: fm.stripe.to_string(),
                    age_seconds: doc::age_seconds(&fm.created, now),
                    created: fm.created,
                    path: shown,
                }),
                Err(e) => bad.push(Unparseable { path: shown, reason: e.to_string() }),
            }
        }
    }
    Ok(RootScan { listed, unparseable: bad, totals })
}

/// Find the proposal files `id` names among `states`: a stripe id matches every
/// proposal of that stripe, a file name matches that file.
pub(crate) fn resolve(root: &Path, id: &str, states: &[&'static str]) -> Result<Vec<(&'static str, PathBuf)>> {
    check_root(root)?;
    let stripe = match StripeId::parse(id) {
        Ok(s) => Some(s),
        Err(stripe_err) => {
            let name = if id.ends_with(".md") { id.to_string() } else { format!("{id}.md") };
            if id.contains('/') || doc::parse_file_name(&name).is_none() {
                return Err(input_error(
                    format!("`{id}`"),
                    format!("neither a stripe id nor a proposal file name ({stripe_err})"),
                ));
            }
            let mut out = Vec::new();
            for s in states {
                let p = root.join(s).join(&name);
                if p.is_file() {
                    out.push((*s, p));
                }
            }
            return Ok(out);
        }
    };
    let stripe = stripe.expect("set above");
    let mut out = Vec::new();
    for s in states {
        let dir = root.join(s);
        let Ok(rd) = fs::read_dir(&dir) else { continue };
        // A name match is confirmed by the front matter where it parses: a legacy name
        // of the scope `a/b` (`a--b:...`) is also a name the scope `a--b` could have.
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| stripe.names_file(n))
            .filter(|n| {
                read_proposal(&dir.join(n))
                    .ok()
                    .and_then(|t| doc::parse_front_matter(&t).ok())
                    .is_none_or(|fm| fm.stripe == stripe)
            })
            .collect();
        names.sort();
        out.extend(names.into_iter().map(|n| (*s, dir.join(n))));
    }
    Ok(out)
}

pub(crate) fn one_open(root: &Path, id: &str) -> Result<PathBuf> {
    let mut found = resolve(root, id, &["open"])?;
    match found.len() {
        0 => Err(input_error(format!("`{id}`"), format!("no open proposal under {}", root.join("open").display()))),
        1 => Ok(found.remove(0).1),
        _ => Err(input_error(
            format!("`{id}`"),
            format!(
                "names {} open proposals; give a file name: {}",
                found.len(),
                found.iter().map(|(_, p)| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// Move an open proposal to `state`, optionally rewriting it first; returns the new path.
pub(crate) fn resolve_open(
    root: &Path,
    events_dir: &Path,
    id: &str,
    state: &str,
    reason: Option<&str>,
) -> Result<(String, PathBuf)> {
    check_root(root)?;
    let open_dir = root.join("open");
    if !open_dir.is_dir() {
        return Err(input_error(format!("`{id}`"), format!("no open proposal under {}", open_dir.display())));
    }
    let _lock = store::RunLock::acquire_dir(&open_dir, "proposal lock", ROOT_LOCK_WAIT)?;
    let from = one_open(root, id)?;
    let text = read_proposal(&from)?;
    let stripe = doc::parse_front_matter(&text)
        .map(|fm| fm.stripe.to_string())
        .map_err(|e| input_error(from.display(), format!("unparseable proposal: {e}")))?;
    let dest_dir = root.join(state);
    fs::create_dir_all(&dest_dir).with_context(|| format!("{}: cannot create", dest_dir.display()))?;
    let to = dest_dir.join(from.file_name().expect("a resolved file has a name"));
    if to.exists() {
        bail!("{}: already exists; refusing to overwrite it", to.display());
    }
    if let Some(reason) = reason {
        store::atomic_write(&from, doc::append_rejection(&text, reason).as_bytes())?;
    }
    fs::rename(&from, &to).with_context(|| format!("{}: cannot move to {}", from.display(), to.display()))?;
    let (from_s, to_s, reason) =
        (from.display().to_string(), to.display().to_string(), reason.map(|r| r.trim().to_string()));
    let ev = match state {
        "applied" => {
            crate::events::Event::ProposalApplied { stripe: stripe.clone(), from: from_s, proposal_path: to_s, reason }
        }
        _ => {
            crate::events::Event::ProposalRejected { stripe: stripe.clone(), from: from_s, proposal_path: to_s, reason }
        }
    };
    store::append_event(events_dir, &ev)?;
    Ok((stripe, to))
}

/// Read a proposal file back: a regular file under the artefact limit, as UTF-8.
pub(crate) fn read_proposal(path: &Path) -> Result<String, InputError> {
    input::read_text(path, Kind::Artefact)
}

/// One open proposal with the halts recorded against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PendingHalt {
    pub stripe: String,
    /// The open proposal.
    pub proposal: PathBuf,
    pub halts: usize,
    /// `ts` of the newest halt.
    pub last: String,
    /// Workflow ids the halts stopped, sorted, deduplicated.
    pub workflows: Vec<String>,
}

/// Every pending halt recorded in `events` whose proposal is still open under `root`.
pub(crate) fn pending_halts(root: &Path, events: &[serde_json::Value]) -> Vec<PendingHalt> {
    let mut by_file: BTreeMap<String, PendingHalt> = BTreeMap::new();
    for ev in events {
        // A shadow-mode halt was decided and logged but never meant to stop anything.
        if ev.get("kind").and_then(serde_json::Value::as_str) != Some("stripe_repeat_halt")
            || ev.get("mode").and_then(serde_json::Value::as_str) == Some("shadow")
        {
            continue;
        }
        let (Some(stripe), Some(existing)) = (
            ev.get("stripe").and_then(serde_json::Value::as_str),
            ev.get("existing_proposal_path").and_then(serde_json::Value::as_str),
        ) else {
            continue;
        };
        let Some(name) = Path::new(existing).file_name().and_then(|n| n.to_str()) else { continue };
        // The proposal is looked up under this root, or where the halt recorded it (the
        // proposals of premerge's own signals live under the run directory).
        let recorded = Path::new(existing);
        let open = if root.join("open").join(name).is_file() {
            root.join("open").join(name)
        } else if recorded.is_absolute()
            && recorded.parent().and_then(Path::file_name).is_some_and(|d| d == "open")
            && recorded.is_file()
        {
            recorded.to_path_buf()
        } else {
            continue;
        };
        let entry = by_file.entry(name.to_string()).or_insert_with(|| PendingHalt {
            stripe: stripe.to_string(),
            proposal: open,
            halts: 0,
            last: String::new(),
            workflows: Vec::new(),
        });
        entry.halts += 1;
        if let Some(ts) = ev.get("ts").and_then(serde_json::Value::as_str)
            && ts > entry.last.as_str()
        {
            entry.last = ts.to_string();
        }
        if let Some(w) = ev.get("halted_workflow_id").and_then(serde_json::Value::as_str) {
            entry.workflows.push(w.to_string());
        }
    }
    let mut out: Vec<PendingHalt> = by_file.into_values().collect();
    for p in &mut out {
        p.workflows.sort();
        p.workflows.dedup();
    }
    out.sort_by(|a, b| (&a.stripe, &a.proposal).cmp(&(&b.stripe, &b.proposal)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proposal_that_is_a_fifo_is_listed_as_unreadable_and_show_refuses_it() {
        let d = tempfile::tempdir().unwrap();
        let open = d.path().join("open");
        fs::create_dir_all(&open).unwrap();
        let name = "premerge-fence_violation-0123abcd-20260102T030405Z.md";
        let c = std::ffi::CString::new(open.join(name).to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Reading it without the regular-file check would block for ever.
        let e = read_proposal(&open.join(name)).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
        // Listing skips non-files; an open-stripe check that matches it by name still
        // counts it (its name says it is that stripe) without reading it.
        let scan = scan_root(d.path()).unwrap();
        assert!(scan.listed.is_empty());
    }

    #[test]
    fn the_proposal_lock_is_exclusive_and_names_the_directory() {
        let d = tempfile::tempdir().unwrap();
        let held = store::RunLock::acquire_dir(d.path(), "proposal lock", ROOT_LOCK_WAIT).unwrap();
        let e = store::RunLock::acquire_dir(d.path(), "proposal lock", Duration::from_millis(30)).unwrap_err();
        assert!(e.to_string().contains("another premerge process holds the proposal lock"), "{e}");
        drop(held);
        store::RunLock::acquire_dir(d.path(), "proposal lock", Duration::from_millis(30)).unwrap();
        // No lock file is left in the proposal tree.
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0);
    }
}

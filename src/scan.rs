//! The widening scan run over a diff: read both versions of each changed file, run the
//! engine of `crate::widen`, write guard memories and record repeats as stripes. Shared
//! by `premerge scan`, the hooks' stage (`crate::hook::stages`) and the demo.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context as _, Result};
use serde_json::{Value, json};

use crate::config::Config;
use crate::context::Ctx;
use crate::diff::{Diff, EntryKind};
use crate::git::Repo;
use crate::input::InputError;
use crate::memory;
use crate::store::memory_db as db;
use crate::store::{inventories::Inventories, scan_cache};
use crate::widen::Language;
use crate::widen::engine::{self, Caches, FileInput, Finding, Findings, Ids, Note, NoteKind, Policy};
use crate::widen::migrations::{self, History};

/// What writing guard memories did.
#[derive(Debug, Default)]
pub struct MemoryOutcome {
    pub written: usize,
    pub duplicates: usize,
    /// External-backend failures (each also recorded on the memory and as an event).
    pub warnings: Vec<String>,
    /// Evidence rows of `(file, symbol)`s written this cycle that already had a memory
    /// from an earlier cycle: the same invariant widened again (`scan:widening_repeat`).
    pub repeated: Vec<Value>,
}

/// How a scan should treat memories.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScanOptions {
    pub issue: Option<u64>,
    /// Write guard memories (still subject to `memory.enabled`).
    pub memory: bool,
    /// Also send new memories to `memory.backend_command` (the demo never does).
    pub backend: bool,
}

/// A finished scan.
#[derive(Default)]
pub struct Outcome {
    /// In report order, read back a batch at a time ([`Findings`]).
    pub findings: Findings,
    pub notes: Vec<Note>,
    pub memory: MemoryOutcome,
    /// The scan cache, being written while the findings are reported.
    pub cache_write: CacheWrite,
}

/// The scan cache and the inventory store written on their own thread (the fsync and
/// the encoding of a large change's findings take as long as printing them), joined
/// when this is dropped, so that the process never exits in the middle of the write. A
/// thread that cannot be started means the caches are not written: they are helpers,
/// never needed.
#[derive(Debug, Default)]
pub struct CacheWrite(Option<std::thread::JoinHandle<()>>);

impl CacheWrite {
    fn start(cache: scan_cache::ScanCache, inventories: Option<Inventories>) -> CacheWrite {
        let spawned = std::thread::Builder::new().name("scan-cache".into()).spawn(move || {
            let _ = cache.save();
            if let Some(inventories) = inventories {
                let _ = inventories.save();
            }
        });
        CacheWrite(spawned.ok())
    }
}

impl Drop for CacheWrite {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

/// Build the engine policy from the configuration (and `PREMERGE_SCAN_WINDOW=0`, which
/// parses every changed file whole).
pub fn policy(config: &Config) -> Result<Policy> {
    let mut policy =
        Policy::new(config.scan.max_file_bytes, config.scan.include_tests, &config.scan.ignore, &config.scan.severity)?;
    policy.window = crate::env::process().var_os("PREMERGE_SCAN_WINDOW").is_none_or(|v| v != "0");
    Ok(policy)
}

/// How many changed files are read and scanned at a time: their texts are dropped
/// before the next part is read, so a scan holds a part's texts and the findings, not
/// the whole change (a change of 15,000 files held 45 MiB of texts, issue 30 part 5).
/// 256 files keep both cores busy for the whole part (a part scans in about 40 ms) and
/// bound the texts held to a few MiB for ordinary source files; the worst case, every
/// version near `scan.max_file_bytes`, is 512 versions of it.
const SCAN_PART_FILES: usize = 256;

/// Where one version of a changed file comes from.
#[derive(Clone, Copy)]
enum Source<'d> {
    Absent,
    /// A blob, by id.
    Blob(&'d str),
    /// The working tree, which is not hashed: the file itself.
    Worktree(&'d str),
}

/// A changed file the scan looks at, before it is read.
#[derive(Clone, Copy)]
struct Wanted<'d> {
    path: &'d str,
    before: Source<'d>,
    after: Source<'d>,
}

impl<'d> Wanted<'d> {
    /// How the caches know the file: the scan cache's key (the path and both blob
    /// ids) and each version's blob id (`None` when a version comes from the working
    /// tree, which has no id).
    fn ids(&self) -> Ids {
        let oid = |s: &Source| match s {
            Source::Blob(oid) => Some(oid.to_string()),
            _ => None,
        };
        let pair = match (&self.before, &self.after) {
            (Source::Absent, Source::Blob(n)) => Some(scan_cache::key(self.path, None, n)),
            (Source::Blob(o), Source::Blob(n)) => Some(scan_cache::key(self.path, Some(o), n)),
            _ => None,
        };
        Ids { pair, old: oid(&self.before), new: oid(&self.after) }
    }

    /// The same file with its new version only (the passes after the scan read the
    /// old one only where they need it).
    fn new_only(self) -> Wanted<'d> {
        Wanted { before: Source::Absent, ..self }
    }
}

/// Every changed file the scan can look at, in the diff's order. Files of no
/// supported language, submodules and symlinks are not read at all.
fn wanted<'d>(diff: &'d Diff, policy: &Policy) -> Vec<Wanted<'d>> {
    let mut out = Vec::new();
    for f in &diff.files {
        if Language::for_path(&f.path).is_none() || f.is_submodule() || policy.ignore.is_match(&f.path) {
            continue;
        }
        let before = match (&f.old_oid, f.old_kind) {
            (Some(oid), EntryKind::File) => Source::Blob(oid),
            _ => Source::Absent,
        };
        let after = match (&f.new_oid, f.new_kind) {
            (_, EntryKind::Absent | EntryKind::Symlink | EntryKind::Submodule) => Source::Absent,
            (Some(oid), _) => Source::Blob(oid),
            (None, _) => Source::Worktree(&f.path),
        };
        if f.old_kind == EntryKind::Symlink && matches!(after, Source::Absent) {
            continue;
        }
        out.push(Wanted { path: &f.path, before, after });
    }
    out
}

/// Read both versions of some changed files (one batch of blobs), in their order,
/// with the caches' ids of each.
/// A working-tree file that is not a regular file (a FIFO, a device) or is over
/// `scan.max_file_bytes` is not read: it is skipped with a note (checked with `fstat`
/// on the opened file before a byte is read, so it never hangs or blocks a hook).
#[allow(clippy::type_complexity)]
fn read(repo: &Repo, part: &[Wanted], policy: &Policy) -> Result<(Vec<FileInput>, Vec<Ids>, Vec<Note>)> {
    let mut oids: Vec<&str> = Vec::new();
    for w in part {
        for side in [w.before, w.after] {
            if let Source::Blob(oid) = side {
                oids.push(oid);
            }
        }
    }
    let mut blobs = repo.blobs(&oids).context("reading the changed files")?.into_iter();
    let mut root = None;
    // The inner `Err` is why a version is skipped. Blobs are taken in the order their
    // ids were listed above, each version once.
    let mut version = |path: &str, side: &str, src: Source| -> Result<Result<Option<Vec<u8>>, String>> {
        Ok(Ok(match src {
            Source::Absent => None,
            Source::Blob(_) => Some(blobs.next().with_context(|| format!("{path}: {side} version not read"))?),
            Source::Worktree(p) => {
                let root = match &root {
                    Some(r) => r,
                    None => root.insert(repo.require_workdir()?),
                };
                match crate::input::read_file(&root.join(p), crate::input::Kind::Source, policy.max_file_bytes) {
                    Ok(bytes) => Some(bytes),
                    Err(InputError::NotRegular { what, .. }) => {
                        return Ok(Err(format!("{side} version is not a regular file ({what})")));
                    }
                    Err(InputError::TooLarge { limit, .. }) => {
                        return Ok(Err(format!("{side} version is over scan.max_file_bytes ({limit})")));
                    }
                    Err(e) => return Err(anyhow::Error::new(e).context(format!("{p}: cannot read"))),
                }
            }
        }))
    };
    let mut out = Vec::with_capacity(part.len());
    let mut keys = Vec::with_capacity(part.len());
    let mut notes = Vec::new();
    for w in part {
        let skip = |reason| Note { file: w.path.to_string(), kind: NoteKind::Skipped, reason };
        // Both versions are taken before either is judged, so that the blobs stay in
        // step with the files.
        let (before, after) = (version(w.path, "old", w.before)?, version(w.path, "new", w.after)?);
        let (before, after) = match (before, after) {
            (Ok(b), Ok(a)) => (b, a),
            (Err(why), _) | (_, Err(why)) => {
                notes.push(skip(why));
                continue;
            }
        };
        keys.push(w.ids());
        out.push(FileInput { path: w.path.to_string(), before, after });
    }
    Ok((out, keys, notes))
}

/// Scan a diff and (unless told not to) write guard memories for what it found.
/// The changed files are read and scanned [`SCAN_PART_FILES`] at a time, and the
/// findings kept as compact records, spilled to a temporary file past a few MiB
/// ([`Findings`]), so the scan's peak memory is a part's texts and the diff, whatever
/// the number of findings; the passes that need texts again (checks moved to another file, links
/// across layers) read them again, and only when a finding asks for them.
pub(crate) fn scan_diff(repo: &Repo, config: &Config, diff: &Diff, opts: ScanOptions) -> Result<Outcome> {
    let policy = policy(config)?;
    let wanted = wanted(diff, &policy);
    let (history, mut history_notes) = migration_history(repo, diff, &wanted, &policy)?;
    // The cache is a helper of a signal: whatever is wrong with it, the scan goes on.
    let parse = policy.parse();
    let mut cache_write = CacheWrite::default();
    let state = &repo.state_dir().path;
    let cache = scan_cache::ScanCache::open(state, parse.window, parse.skip_tests);
    let inventories = cache.as_ref().and_then(|_| Inventories::open(state));
    let no_cache = engine::NoCache;
    let caches = Caches {
        findings: cache.as_ref().map_or(&no_cache as &dyn engine::FindingsCache, |c| c as _),
        inventories: inventories.as_ref().map(|i| i as &dyn engine::InventoryCache),
    };
    let mut partial = engine::Partial::default();
    for part in wanted.chunks(SCAN_PART_FILES) {
        let (files, keys, read_notes) = read(repo, part, &policy)?;
        history_notes.extend(read_notes);
        let keys: &[Ids] = if cache.is_some() { &keys } else { &[] };
        partial.add(&files, keys, &policy, &history, caches);
    }
    let moved = match partial.moved_checks() {
        Some(mut moved) => {
            moved_checks(repo, &wanted, &policy, &mut moved)?;
            Some(moved)
        }
        None => None,
    };
    let (mut findings, mut notes, _) = partial.finish_streamed(moved.as_ref());
    if let Some(cache) = cache {
        cache_write = CacheWrite::start(cache, inventories);
    }
    // Across layers (issue 30 part 3): only a finding of a linkable rule costs a look
    // at the other layers; a scan without one reads nothing more.
    // Opt-in (`PREMERGE_SCAN_LAYERS=1`): reading the head revision's declarations costs
    // a scan that has a linkable finding about 0.4 s on trpc (docs/scan.md, "Across
    // layers"), more than a scan may add unasked.
    let layers_on = crate::env::process().var_os("PREMERGE_SCAN_LAYERS").is_some_and(|v| v == "1");
    // Opt-in, and reads every finding into memory (the links need them all).
    let all = if layers_on { Some(findings.to_indexed()?) } else { None };
    if let Some((indices, mut all)) = all
        && all.iter().any(|f| crate::widen::layers::linkable(&f.rule))
    {
        let changed: Vec<Wanted> =
            wanted.iter().filter(|w| crate::widen::layers::wanted(w.path)).map(|w| w.new_only()).collect();
        let (files, _, _) = read(repo, &changed, &policy)?;
        history_notes.extend(link_layers(repo, diff, &files, &mut all));
        for (index, f) in indices.into_iter().zip(all) {
            findings.set_linked(index, f.linked);
        }
    }
    if !history_notes.is_empty() {
        notes.extend(history_notes);
        notes.sort_by(|a, b| {
            a.file.as_bytes().cmp(b.file.as_bytes()).then(a.kind.cmp(&b.kind)).then(a.reason.cmp(&b.reason))
        });
    }
    let mut mem = MemoryOutcome::default();
    if opts.memory && config.memory.enabled && !findings.is_empty() {
        // The index and the working tree have no commit of their own: their cycle is
        // the commit they sit on.
        let cycle = match (&diff.head, opts.issue) {
            (Some(_), _) | (None, Some(_)) => memory::cycle(opts.issue, diff.head.as_deref()),
            (None, None) => format!("worktree-{}", repo.head_oid().unwrap_or_else(|| "unborn".into())),
        };
        // A store that cannot be written (a damaged `premerge.db`, a full disk) costs
        // the memories, said in one warning, never the findings (issue 27, D3).
        // Every finding in memory: the memories group them by file and symbol.
        let written =
            findings.to_vec().and_then(|all| write_memories(repo, config, &all, opts, &cycle, diff.head.as_deref()));
        mem = written.unwrap_or_else(|e| MemoryOutcome {
            warnings: vec![format!(
                "guard memories not written: {e:#} (signal only: the findings stand; \
                     PREMERGE_INVARIANT_MEMORY=0 skips the memories)"
            )],
            ..MemoryOutcome::default()
        });
    }
    Ok(Outcome { findings, notes, memory: mem, cache_write })
}

/// The pass over the whole change for removed checks moved into another file
/// ([`engine::MovedChecks`]): every file the scan looked at is read again, a part at a
/// time, its new version first and its old one only where the new one holds a check.
/// What cannot be read now was noted by the scan already: it is left out.
fn moved_checks(repo: &Repo, wanted: &[Wanted], policy: &Policy, moved: &mut engine::MovedChecks) -> Result<()> {
    use rayon::prelude::*;
    for part in wanted.chunks(SCAN_PART_FILES) {
        let new_only: Vec<Wanted> = part.iter().map(|w| w.new_only()).collect();
        let (files, _, _) = read(repo, &new_only, policy)?;
        let new: Vec<_> = files.par_iter().map(|f| moved.found(f.after.as_deref())).collect();
        // The files whose new version holds a check, and their old versions.
        let holds: BTreeSet<&str> =
            files.iter().zip(&new).filter(|(_, n)| !n.is_empty()).map(|(f, _)| f.path.as_str()).collect();
        let holding: Vec<Wanted> =
            part.iter().filter(|w| holds.contains(w.path)).map(|w| Wanted { after: Source::Absent, ..*w }).collect();
        let (old_files, _, _) = read(repo, &holding, policy)?;
        let old: BTreeMap<&str, _> =
            old_files.iter().map(|f| (f.path.as_str(), moved.found(f.before.as_deref()))).collect();
        for (f, new) in files.iter().zip(new) {
            let none = BTreeSet::new();
            moved.added(&f.path, new, old.get(f.path.as_str()).unwrap_or(&none));
        }
    }
    Ok(())
}

/// Link each linkable finding to the other layers' declarations of its field
/// ([`crate::widen::layers`]), read at the head revision (the change's own new
/// versions laid over it, so `--staged` and the working tree see what they scan),
/// within the caps of `widen::layers`. Only files that mention one of the findings'
/// field names (ASCII case aside) are parsed; every migration is (a later one may
/// alter or drop the table). What the caps leave out, or a head that cannot be
/// listed, is one note; the findings stand either way.
fn link_layers(repo: &Repo, diff: &Diff, files: &[FileInput], findings: &mut [Finding]) -> Vec<Note> {
    use crate::widen::layers;
    let names: Vec<String> = layers::field_names(findings).into_iter().collect();
    let Ok(mentions) = aho_corasick::AhoCorasick::builder().ascii_case_insensitive(true).build(&names) else {
        return Vec::new();
    };
    let first = findings.first().map(|f| f.file.clone()).unwrap_or_default();
    let note = |reason: String| Note { file: first.clone(), kind: NoteKind::Skipped, reason };
    let changed: BTreeMap<&str, &FileInput> = files.iter().map(|f| (f.path.as_str(), f)).collect();
    let touched: BTreeSet<String> = diff.touched_paths().into_iter().collect();
    let head = diff.head.clone().or_else(|| repo.head_oid());
    let listed = match head.as_deref().map(|h| repo.tree_files(h, "", layers::MAX_TREE_DEPTH)) {
        Some(Ok(l)) => l,
        Some(Err(e)) => return vec![note(format!("across layers: the head revision not listed: {e}"))],
        None => Vec::new(),
    };
    let (mut oids, mut paths, mut left_out, mut bytes) = (Vec::new(), Vec::new(), 0usize, 0u64);
    for f in listed.iter().filter(|f| !touched.contains(&f.path) && layers::wanted(&f.path)) {
        // A file over the per-file cap is generated (a bundle, a dump): left out
        // without a note, as documented; the note is for what the totals leave out.
        let Some(size) = f.bytes.filter(|&b| b <= layers::MAX_INDEX_FILE_BYTES) else {
            continue;
        };
        if oids.len() >= layers::MAX_INDEX_FILES || bytes + size > layers::MAX_INDEX_BYTES {
            left_out += 1;
            continue;
        }
        bytes += size;
        oids.push(f.oid.as_str());
        paths.push(f.path.as_str());
    }
    let blobs = match repo.blobs(&oids) {
        Ok(b) => b,
        Err(e) => return vec![note(format!("across layers: the head revision not read: {e}"))],
    };
    let is_sql = |p: &str| p.to_ascii_lowercase().ends_with(".sql");
    let mut texts: Vec<(String, String)> = paths
        .into_iter()
        .zip(blobs)
        .filter_map(|(p, b)| Some((p.to_string(), String::from_utf8(b).ok()?)))
        .filter(|(p, t)| is_sql(p) || mentions.is_match(t.as_str()))
        .collect();
    for (path, f) in &changed {
        if let Some(text) = f.after.as_deref().and_then(|b| std::str::from_utf8(b).ok())
            && layers::wanted(path)
        {
            texts.push((path.to_string(), text.to_string()));
        }
    }
    texts.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let index = layers::Index::build(&texts);
    layers::link(findings, &index);
    if left_out == 0 {
        return Vec::new();
    }
    vec![note(format!(
        "across layers: {left_out} file(s) of the head revision not read for the links (past {} files or {} \
         bytes in all)",
        layers::MAX_INDEX_FILES,
        layers::MAX_INDEX_BYTES
    ))]
}

/// The earlier migrations of every migration sequence the change adds to or edits,
/// read at the base revision (the change's own new versions laid over them), within
/// the caps of `widen::migrations`. What is left out is counted in one note; an
/// unreadable history is a note too, and the scan goes on without it.
/// The change's own migrations are read here, ahead of the scan (a change holds few).
fn migration_history(repo: &Repo, diff: &Diff, wanted: &[Wanted], policy: &Policy) -> Result<(History, Vec<Note>)> {
    let ours: Vec<Wanted> = wanted
        .iter()
        .filter(|w| migrations::slot(w.path).is_some() && !matches!(w.after, Source::Absent))
        .map(|w| w.new_only())
        .collect();
    if ours.is_empty() || diff.base.is_none() {
        return Ok((History::default(), Vec::new()));
    }
    // What cannot be read is noted by the scan's own read.
    let (files, _, _) = read(repo, &ours, policy)?;
    Ok(history_of(repo, diff, &files))
}

fn history_of(repo: &Repo, diff: &Diff, files: &[FileInput]) -> (History, Vec<Note>) {
    let sets: BTreeSet<String> =
        files.iter().filter(|f| f.after.is_some()).filter_map(|f| migrations::slot(&f.path)).map(|s| s.set).collect();
    let (Some(base), Some(first)) = (diff.base.as_deref(), sets.first()) else {
        return (History::default(), Vec::new());
    };
    let note = |reason: String| Note { file: first.clone(), kind: NoteKind::Skipped, reason };
    let touched: BTreeSet<String> = diff.touched_paths().into_iter().collect();
    let mut candidates = Vec::new();
    let mut oids = BTreeMap::new();
    let mut dropped: BTreeMap<&str, usize> = BTreeMap::new();
    for set in &sets {
        // Two levels: diesel and Prisma keep each migration in its own directory.
        let listed = match repo.tree_files(base, set, 2) {
            Ok(l) => l,
            Err(e) => return (History::default(), vec![note(format!("migration history not read: {e}"))]),
        };
        for f in listed.into_iter().filter(|f| !touched.contains(&f.path) && migrations::slot(&f.path).is_some()) {
            match f.bytes {
                Some(bytes) => {
                    candidates.push(migrations::Candidate { path: f.path.clone(), bytes });
                    oids.insert(f.path, f.oid);
                }
                None => *dropped.entry("not-in-local-objects").or_default() += 1,
            }
        }
    }
    let selection = migrations::select(candidates);
    dropped.extend(selection.dropped);
    let wanted: Vec<&str> = selection.read.iter().filter_map(|p| oids.get(p).map(String::as_str)).collect();
    let blobs = match repo.blobs(&wanted) {
        Ok(b) => b,
        Err(e) => return (History::default(), vec![note(format!("migration history not read: {e}"))]),
    };
    let mut texts = Vec::with_capacity(blobs.len() + files.len());
    for (path, blob) in selection.read.into_iter().zip(blobs) {
        match String::from_utf8(blob) {
            Ok(text) => texts.push((path, text)),
            Err(_) => *dropped.entry("not-utf-8").or_default() += 1,
        }
    }
    let in_sets = |p: &str| migrations::slot(p).is_some_and(|s| sets.contains(&s.set));
    for f in files.iter().filter(|f| in_sets(&f.path)) {
        if let Some(text) = f.after.as_deref().and_then(|b| std::str::from_utf8(b).ok()) {
            texts.push((f.path.clone(), text.to_string()));
        }
    }
    let mut notes = Vec::new();
    if !dropped.is_empty() {
        let total: usize = dropped.values().sum();
        let why: Vec<String> = dropped.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        notes.push(note(format!("migration history: {total} earlier files not replayed ({})", why.join(", "))));
    }
    (History::new(texts), notes)
}

fn write_memories(
    repo: &Repo,
    config: &Config,
    findings: &[Finding],
    opts: ScanOptions,
    cycle: &str,
    commit: Option<&str>,
) -> Result<MemoryOutcome> {
    let state = repo.state_dir();
    let mut conn = state.open_db()?;
    let mut out = MemoryOutcome::default();
    let backend = &config.memory.backend_command;
    let timeout = Duration::from_millis(config.memory.backend_timeout_ms);
    let mut planned = memory::plan(findings, cycle, opts.issue, commit);
    // One memory for each site another layer still holds (issue 30 part 3).
    planned.extend(memory::plan_linked(findings, cycle, opts.issue, commit));
    let writes = db::insert_all(&mut conn, &planned, &crate::store::now_rfc3339())?;
    // The memories are committed: an event log that cannot take their lines (a FIFO, a
    // full disk) is one warning, never "not written" for rows that were.
    let mut log_failed: Option<String> = None;
    let mut log = |ev: &crate::events::Event| {
        if let Err(e) = crate::store::append_event(&state.path, ev) {
            log_failed.get_or_insert_with(|| format!("event log: {e:#} (the memories are stored)"));
        }
    };
    for (m, write) in planned.iter().zip(writes) {
        let event = |id: i64| crate::events::GuardMemory {
            id,
            cycle: m.cycle.clone(),
            file: m.file.clone(),
            symbol: m.symbol.clone(),
            rule: m.rule.clone(),
            error: None,
        };
        match write {
            db::Write::Duplicate(id) => {
                out.duplicates += 1;
                log(&crate::events::Event::GuardMemoryDuplicateSkipped(event(id)));
            }
            db::Write::Written(id) => {
                out.written += 1;
                log(&crate::events::Event::GuardMemoryWritten(event(id)));
                let earlier = db::earlier_cycles(&conn, &m.file, &m.symbol, &m.cycle)?;
                if earlier > 0 {
                    out.repeated.push(json!({
                        "id": format!("memory-{id}"), "file": m.file, "symbol": m.symbol, "rule": m.rule,
                    }));
                }
                if opts.backend && !backend.is_empty() {
                    let meta = crate::canonical::to_compact(&m.metadata)?;
                    let values = BTreeMap::from([("text", m.content.clone()), ("metadata", meta)]);
                    let argv = crate::exec::render(backend, &values);
                    match crate::exec::run(&argv, b"", timeout) {
                        Ok(_) => db::set_backend(&conn, id, "sent")?,
                        Err(e) => {
                            let why = e.to_string();
                            db::set_backend(&conn, id, &format!("failed: {why}"))?;
                            let ev = crate::events::GuardMemory { error: Some(why.clone()), ..event(id) };
                            log(&crate::events::Event::GuardMemoryBackendFailed(ev));
                            out.warnings.push(format!(
                                "memory backend failed for {} `{}`: {why} (kept in the embedded store)",
                                m.file, m.symbol
                            ));
                        }
                    }
                }
            }
        }
    }
    out.warnings.extend(log_failed);
    Ok(out)
}

/// The same `(file, symbol)` widened again in a later cycle is a stripe
/// (`scan`, `widening_repeat`). The scan is a signal: the outcome (a proposal, or a
/// halt recorded for `premerge drain`) is reported on stderr and never changes the exit.
pub(crate) fn record_repeats(ctx: &mut Ctx, repo: &Repo, config: &Config, out: &Outcome) {
    if out.memory.repeated.is_empty() {
        return;
    }
    let run_dir = repo.state_dir().run_dir(None);
    if let Some(o) = crate::stripe::emit::emit_own_signal(
        ctx,
        repo,
        config,
        &run_dir,
        "scan",
        "widening_repeat",
        &out.memory.repeated,
    ) {
        let line = crate::canonical::to_compact(&o.to_json()).unwrap_or_default();
        let _ = writeln!(ctx.stderr, "premerge: scan: widened again in a later cycle: stripe {line}");
    }
}

/// Notes and backend failures go to stderr as warnings.
pub(crate) fn report_notes(ctx: &mut Ctx, out: &Outcome) {
    for n in &out.notes {
        match n.kind {
            NoteKind::Skipped => ctx.warn(format!("scan: {}: skipped: {}", n.file, n.reason)),
            NoteKind::ParseFailed => ctx.warn(format!("scan: {}: not scanned: {}", n.file, n.reason)),
        }
    }
    for w in &out.memory.warnings {
        ctx.warn(w);
    }
}

//! The scan cache: what the widening scan's detectors found in a changed file, by the
//! path and the blob ids of its two versions, so that a range scanned before (the
//! pre-push scan and then `premerge scan` of the same commits, a hook run again after a
//! refused push, a background scan finishing what the hook started) is not parsed again.
//!
//! One file, `<state>/scan-cache`, read once at the start of a scan and, when the scan
//! added or used entries, written back atomically ([`super::atomic_write`]) at its end.
//! Its first line names the format and the rule set that produced the entries, the
//! newest generation and how many damaged entries readers have dropped so far; every
//! other line is one entry, `KEY GENERATION SUM FINDINGS-JSON`, where `SUM` is the
//! first 8 bytes (16 hex digits) of the SHA-256 of `KEY FINDINGS-JSON`. The sum is
//! checked when an entry is used, so a flipped bit or an edit that keeps the line
//! valid (emptied findings, shifted lines) is a miss, scanned again, not a wrong
//! answer (issue 27, D14); each damaged entry is counted in the header, and
//! `premerge status` shows the count. The cache is a signal's helper, so it never
//! fails a scan: an unreadable, oversized, foreign or torn file is an empty cache, a
//! damaged line a miss, a failed write a cache that was not updated.
//!
//! Bounded: at most [`MAX_ENTRIES`] entries, the least recently used ones (by the
//! generation of the last scan that stored or read them) evicted first; an entry larger
//! than [`MAX_ENTRY_BYTES`] is not stored. The rule set is the rule catalogue plus the
//! build of premerge (the executable's size and modification time): a new build may
//! judge a file differently, so its scans start from an empty cache.
//! `PREMERGE_SCAN_CACHE=0` switches the cache off (nothing read, nothing written).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use crate::widen::engine::FindingsCache;
use crate::widen::{RawFinding, RuleId};

/// File name of the cache inside the state directory.
pub(crate) const CACHE_FILE: &str = "scan-cache";

/// Most entries kept. A pull that changes a few thousand files fits several times
/// over; an entry without findings is about 80 bytes, so the file stays a few MiB and
/// reading it costs milliseconds.
pub(crate) const MAX_ENTRIES: usize = 20_000;

/// Largest entry stored (its findings as JSON): a file with this many findings is
/// rare, and one such file must not crowd out thousands of ordinary ones.
pub(crate) const MAX_ENTRY_BYTES: usize = 64 * 1024;

/// Largest cache file read: [`MAX_ENTRIES`] entries of ordinary size are far below it;
/// a larger file is not one premerge wrote, and is ignored (then replaced). A save
/// never writes more (it evicts as for [`MAX_ENTRIES`]), so that a scan of a very
/// large change does not write a file the next scan would throw away whole.
pub(crate) const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// Most bytes of entries one scan adds, held in memory until the cache is written: a
/// change of 60,000 files with four findings each would otherwise hold 40 MiB of
/// encoded findings to the end of the scan (issue 30 part 5: the peak memory must not
/// grow with the change). Half of [`MAX_FILE_BYTES`], so that this scan's entries
/// leave room for the older ones that stay. Past it, the entries first in byte order
/// of their keys are kept, whatever order the scan's threads stored them in.
pub(crate) const MAX_ADDED_BYTES: usize = 16 * 1024 * 1024;

/// The bytes of an entry's line besides its key, sum and findings: the generation
/// (at most 20 digits), three spaces and the newline.
const LINE_OVERHEAD: usize = 24;

/// The first word of the header line; the second is the format's version.
const MAGIC: &str = "premerge-scan-cache";
/// 2: a sum per entry and the damaged count in the header (1 had neither; its files
/// are read as foreign, an empty cache, once).
const FORMAT: u32 = 2;

/// Hex digits of an entry's sum: 8 bytes of SHA-256, as the inventory store keeps.
/// A random edit passes with odds of 2^-64.
const SUM_HEX: usize = 16;

/// The identity of the rules that produced the findings: the format, premerge's
/// version, whether the change window is on (it can scan a file whose untouched part
/// does not parse) and whether test code was left out (its findings are then
/// missing), every rule id, and the executable's size and modification time (a rebuild
/// may change what a rule reports without renaming it). `None` when the executable
/// cannot be examined: then nothing is cached, rather than risk serving findings of
/// another build.
pub(crate) fn ruleset(window: bool, skip_tests: bool) -> Option<String> {
    let exe = std::env::current_exe().ok()?.metadata().ok()?;
    let modified = exe.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    let mut h = Sha256::new();
    h.update(format!("{MAGIC} {FORMAT} {} window={window}", env!("CARGO_PKG_VERSION")));
    // Added to the line only when on, so that caches written before stay valid.
    h.update(if skip_tests { " skip_tests\n" } else { "\n" });
    for r in RuleId::ALL {
        h.update(r.as_str());
        h.update(b"\n");
    }
    h.update(format!("{} {}.{:09}\n", exe.len(), modified.as_secs(), modified.subsec_nanos()));
    Some(hex(&h.finalize()[..16]))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache key of one file's pair of versions: its language's detector sees the
/// path (a grammar is chosen by extension) and both texts, named by their blob ids.
pub(crate) fn key(path: &str, old_oid: Option<&str>, new_oid: &str) -> String {
    let mut h = Sha256::new();
    h.update(path.as_bytes());
    h.update(b"\0");
    h.update(old_oid.unwrap_or("-").as_bytes());
    h.update(b"\0");
    h.update(new_oid.as_bytes());
    hex(&h.finalize()[..20])
}

/// The sum of an entry: see the module comment.
fn sum(key: &str, findings: &str) -> String {
    let mut h = Sha256::new();
    h.update(key.as_bytes());
    h.update(b" ");
    h.update(findings.as_bytes());
    hex(&h.finalize()[..SUM_HEX / 2])
}

fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// One entry as read: the generation that last used it, its sum and its findings,
/// still as text (checked and decoded on a hit only, so a scan pays for the entries
/// it uses, not for the whole file).
struct Stored {
    generation: u64,
    sum: String,
    findings: String,
}

#[derive(Default)]
struct State {
    stored: BTreeMap<String, Stored>,
    /// Keys read this scan.
    hits: BTreeSet<String>,
    /// Entries stored this scan: key -> (sum, findings).
    added: BTreeMap<String, (String, String)>,
    /// The bytes of `added`'s lines, at most [`MAX_ADDED_BYTES`].
    added_bytes: usize,
    /// The first key left out for [`MAX_ADDED_BYTES`]: no key from it on is stored,
    /// so the entries kept are the same whatever order they came in (those before it
    /// in byte order, as many as fit).
    added_from: Option<String>,
    /// Entries found damaged this scan (at reading, or at use).
    damaged: u64,
}

/// The cache of one scan; see the module comment.
pub(crate) struct ScanCache {
    path: PathBuf,
    ruleset: String,
    /// The newest generation in the file read (0 for none).
    generation: u64,
    /// Damaged entries earlier scans dropped (the header's count).
    damaged_before: u64,
    state: Mutex<State>,
}

impl ScanCache {
    /// The cache of the state directory `dir`; `None` when switched off or when the
    /// rule set cannot be named. Never fails: anything wrong with the file is an empty
    /// cache.
    /// `window` is whether the scan uses the change window and `skip_tests` whether it
    /// leaves test code out (the findings of each mode are kept apart).
    pub(crate) fn open(dir: &Path, window: bool, skip_tests: bool) -> Option<ScanCache> {
        if crate::env::process().var_os("PREMERGE_SCAN_CACHE").is_some_and(|v| v == "0") {
            return None;
        }
        Some(ScanCache::open_with(dir, ruleset(window, skip_tests)?))
    }

    /// [`ScanCache::open`] with a given rule set.
    pub(crate) fn open_with(dir: &Path, ruleset: String) -> ScanCache {
        let path = dir.join(CACHE_FILE);
        let mut cache =
            ScanCache { path, ruleset, generation: 0, damaged_before: 0, state: Mutex::new(State::default()) };
        if let Some(text) = read_regular(&cache.path) {
            cache.load(&text);
        }
        cache
    }

    fn load(&mut self, text: &str) {
        let mut lines = text.split('\n');
        let header: Vec<&str> = lines.next().unwrap_or("").split(' ').collect();
        let format = FORMAT.to_string();
        let [magic, format_read, ruleset, generation, damaged] = header.as_slice() else { return };
        if *magic != MAGIC || *format_read != format || *ruleset != self.ruleset {
            return;
        }
        let (Ok(generation), Ok(damaged)) = (generation.parse::<u64>(), damaged.parse::<u64>()) else { return };
        self.generation = generation;
        self.damaged_before = damaged;
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        for line in lines.filter(|l| !l.is_empty()) {
            match parse_line(line, generation) {
                Some((key, stored)) => {
                    state.stored.insert(key.to_string(), stored);
                }
                None => state.damaged += 1,
            }
        }
    }

    /// Damaged entries counted so far: the file's count plus this scan's.
    pub(crate) fn damaged(&self) -> u64 {
        self.damaged_before.saturating_add(self.state.lock().unwrap_or_else(|e| e.into_inner()).damaged)
    }

    /// How many entries the cache holds (read and added).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.stored.len() + s.added.keys().filter(|k| !s.stored.contains_key(*k)).count()
    }

    /// Whether the cache holds no entry.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Write the cache back when this scan added entries or used entries of an older
    /// generation: the entries of the file plus this scan's, the least recently used
    /// dropped beyond [`MAX_ENTRIES`]. Best effort: the error is returned for the
    /// caller to ignore (or report), never to fail the scan on.
    pub(crate) fn save(&self) -> anyhow::Result<bool> {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let stale_hit = s.hits.iter().any(|k| s.stored.get(k).is_some_and(|e| e.generation < self.generation));
        // Damage found is written too: the damaged lines go, and their count stays.
        if s.added.is_empty() && !stale_hit && s.damaged == 0 {
            return Ok(false);
        }
        let now = self.generation + 1;
        let mut all: BTreeMap<&str, (u64, &str, &str)> = BTreeMap::new();
        for (k, e) in &s.stored {
            let g = if s.hits.contains(k) { now } else { e.generation };
            all.insert(k, (g, &e.sum, &e.findings));
        }
        for (k, (sum, f)) in &s.added {
            all.insert(k, (now, sum, f));
        }
        let damaged = self.damaged_before.saturating_add(s.damaged);
        let header = format!("{MAGIC} {FORMAT} {} {now} {damaged}\n", self.ruleset);
        let total: usize = all.iter().map(|(k, (_, sum, f))| line_bytes(k, sum, f)).sum();
        let room = (MAX_FILE_BYTES as usize).saturating_sub(header.len());
        if all.len() > MAX_ENTRIES || total > room {
            // Newest generation first; among equals, byte order of the key: the first
            // MAX_ENTRIES that fit in MAX_FILE_BYTES are kept.
            let mut order: Vec<(&str, u64, usize)> =
                all.iter().map(|(k, (g, sum, f))| (*k, *g, line_bytes(k, sum, f))).collect();
            order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let mut used = 0usize;
            let keep = order
                .iter()
                .take(MAX_ENTRIES)
                .take_while(|(_, _, bytes)| {
                    used += bytes;
                    used <= room
                })
                .count();
            for (k, _, _) in order.drain(keep..) {
                all.remove(k);
            }
        }
        let mut out = header;
        out.reserve(all.iter().map(|(k, (_, _, f))| k.len() + f.len() + 24 + SUM_HEX).sum());
        for (k, (g, sum, f)) in all {
            use std::fmt::Write as _;
            let _ = writeln!(out, "{k} {g} {sum} {f}");
        }
        super::atomic_write_private(&self.path, out.as_bytes())?;
        Ok(true)
    }
}

impl FindingsCache for ScanCache {
    fn get(&self, key: &str) -> Option<Vec<RawFinding>> {
        let (text, want) = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let found = match s.added.get(key) {
                // Computed by this process: nothing to check.
                Some((_, f)) => (f.clone(), None),
                None => s.stored.get(key).map(|e| (e.findings.clone(), Some(e.sum.clone())))?,
            };
            s.hits.insert(key.to_string());
            found
        };
        let decoded = match want {
            Some(want) if sum(key, &text) != want => None,
            _ => decode(&text),
        };
        if decoded.is_none() {
            // A damaged entry: a miss, counted, and not kept.
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.hits.remove(key);
            s.stored.remove(key);
            s.damaged += 1;
        }
        decoded
    }

    fn put(&self, key: &str, findings: &[RawFinding]) {
        let text = encode(findings);
        if text.len() <= MAX_ENTRY_BYTES {
            let sum = sum(key, &text);
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if s.added_from.as_deref().is_some_and(|from| key >= from) {
                return;
            }
            let bytes = line_bytes(key, &sum, &text);
            if let Some((old_sum, old)) = s.added.insert(key.to_string(), (sum, text)) {
                s.added_bytes -= line_bytes(key, &old_sum, &old);
            }
            s.added_bytes += bytes;
            // Over the budget: the last keys go, and none after them is taken again.
            while s.added_bytes > MAX_ADDED_BYTES {
                let Some((last, (sum, text))) = s.added.pop_last() else { break };
                s.added_bytes -= line_bytes(&last, &sum, &text);
                s.added_from = Some(last);
            }
        }
    }
}

/// The bytes an entry takes in the file (at most; the generation is counted at its
/// widest).
fn line_bytes(key: &str, sum: &str, findings: &str) -> usize {
    key.len() + sum.len() + findings.len() + LINE_OVERHEAD
}

/// One entry line, `KEY GENERATION SUM FINDINGS`, as stored (its sum not yet
/// checked); `None` when the line is not one premerge writes, or names a generation
/// after the file's own (`newest`).
fn parse_line(line: &str, newest: u64) -> Option<(&str, Stored)> {
    let mut parts = line.splitn(4, ' ');
    let (key, generation, sum, findings) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if !is_lower_hex(key, 40) || !is_lower_hex(sum, SUM_HEX) {
        return None;
    }
    let generation = generation.parse::<u64>().ok().filter(|g| *g <= newest)?;
    Some((key, Stored { generation, sum: sum.to_string(), findings: findings.to_string() }))
}

/// What a cache file holds, as `premerge status` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Health {
    /// Entries whose sum matches and whose findings decode.
    pub entries: u64,
    /// Damaged entries: dropped by earlier scans (the header's count) plus the lines
    /// that are damaged now.
    pub damaged: u64,
}

/// Check every entry of the cache file in `dir` (missing, unreadable or foreign: `None`).
/// For `premerge status`, which may take the time a scan would not.
pub(crate) fn health(dir: &Path) -> Option<Health> {
    inspect(&read_regular(&dir.join(CACHE_FILE))?)
}

/// [`health`] of a cache file's text, whatever its rule set: every line read and
/// checked the way a scan reads and uses it. Public for the fuzz target
/// (`tests/it/fuzz.rs`), which feeds it arbitrary text.
pub fn inspect(text: &str) -> Option<Health> {
    let header: Vec<&str> = text.split('\n').next().unwrap_or("").split(' ').collect();
    let [magic, format, ruleset, _, _] = header.as_slice() else { return None };
    if *magic != MAGIC || *format != FORMAT.to_string() {
        return None;
    }
    let mut cache = ScanCache {
        path: PathBuf::new(),
        ruleset: ruleset.to_string(),
        generation: 0,
        damaged_before: 0,
        state: Mutex::new(State::default()),
    };
    cache.load(text);
    let keys: Vec<String> = cache.state.get_mut().unwrap_or_else(|e| e.into_inner()).stored.keys().cloned().collect();
    let entries = keys.iter().filter(|k| cache.get(k).is_some()).count() as u64;
    Some(Health { entries, damaged: cache.damaged() })
}

/// Only a regular file of at most [`MAX_FILE_BYTES`], as UTF-8.
fn read_regular(path: &Path) -> Option<String> {
    // A symlink is not a file premerge wrote; the rest is the bounded reader's (regular
    // file checked on the open descriptor, so a FIFO swapped in cannot hang a hook).
    if std::fs::symlink_metadata(path).ok()?.file_type().is_symlink() {
        return None;
    }
    let bytes = crate::input::read_file(path, crate::input::Kind::Artefact, MAX_FILE_BYTES).ok()?;
    String::from_utf8(bytes).ok()
}

/// Findings as one line of JSON: `[[line, rule, symbol, before, after, in_test], ...]`.
fn encode(findings: &[RawFinding]) -> String {
    let rows: Vec<_> =
        findings.iter().map(|f| (f.line, f.rule.as_str(), &f.symbol, &f.before, &f.after, f.in_test)).collect();
    // serde_json escapes every control character, so the line holds no newline.
    serde_json::to_string(&rows).expect("tuples of strings, numbers and booleans serialize")
}

/// [`encode`]'s inverse; `None` for anything else (an unknown rule id included).
fn decode(text: &str) -> Option<Vec<RawFinding>> {
    let rows: Vec<(u32, String, String, String, String, bool)> = serde_json::from_str(text).ok()?;
    rows.into_iter()
        .map(|(line, rule, symbol, before, after, in_test)| {
            Some(RawFinding { line, rule: RuleId::parse(&rule)?, symbol, before, after, in_test })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(symbol: &str) -> RawFinding {
        RawFinding {
            line: 3,
            rule: RuleId::RustIntegerWidened,
            symbol: symbol.to_string(),
            before: "limit: u8".to_string(),
            after: "limit: u64 \n\"quoted\"".to_string(),
            in_test: false,
        }
    }

    #[test]
    fn entries_survive_a_save_and_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let k = key("src/a.rs", Some("1111"), "2222");
        let c = ScanCache::open_with(dir.path(), "r1".into());
        assert_eq!(c.get(&k), None);
        c.put(&k, &[finding("Query.limit")]);
        c.put(&key("src/b.rs", None, "3333"), &[]);
        assert!(c.save().unwrap());
        let c = ScanCache::open_with(dir.path(), "r1".into());
        assert_eq!(c.get(&k), Some(vec![finding("Query.limit")]));
        assert_eq!(c.get(&key("src/b.rs", None, "3333")), Some(vec![]));
        // Only hits of the newest generation: nothing to write.
        assert!(!c.save().unwrap());
        // Another rule set reads nothing.
        assert!(ScanCache::open_with(dir.path(), "r2".into()).is_empty());
    }

    #[test]
    fn keys_tell_paths_and_versions_apart() {
        let a = key("src/a.rs", Some("1"), "2");
        for other in [key("src/b.rs", Some("1"), "2"), key("src/a.rs", None, "2"), key("src/a.rs", Some("2"), "1")] {
            assert_ne!(a, other);
        }
    }

    #[test]
    fn damaged_entries_and_files_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let (good, bad_rule, bad_json) = (key("a.rs", None, "1"), key("b.rs", None, "1"), key("c.rs", None, "1"));
        let c = ScanCache::open_with(dir.path(), "r".into());
        c.put(&good, &[finding("A.x")]);
        c.save().unwrap();
        let path = dir.path().join(CACHE_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap();
        let line = |k: &str, g: u64, f: &str| format!("{k} {g} {} {f}\n", sum(k, f));
        text.push_str(&line(&bad_rule, 1, "[[1,\"no-such-rule\",\"s\",\"b\",\"a\",false]]"));
        text.push_str(&line(&bad_json, 1, "[[1,"));
        text.push_str("not a line at all\n");
        text.push_str(&line(&key("d.rs", None, "1"), 99, "[]"));
        std::fs::write(&path, &text).unwrap();
        let c = ScanCache::open_with(dir.path(), "r".into());
        assert_eq!(c.damaged(), 2, "a line without four fields and one from a future generation");
        assert_eq!(c.get(&good), Some(vec![finding("A.x")]));
        assert_eq!(c.get(&bad_rule), None);
        assert_eq!(c.get(&bad_json), None);
        assert_eq!(c.damaged(), 4, "and two that do not decode, found when used");
        // Garbage, a foreign header, a directory in its place: an empty cache.
        for junk in [&b"\xff\xfe garbage"[..], b"premerge-scan-cache 9 r 1\n", b""] {
            std::fs::write(&path, junk).unwrap();
            assert!(ScanCache::open_with(dir.path(), "r".into()).is_empty());
        }
        // Oversized (sparse, so the test writes nothing), or a symlink to a real
        // cache: not read.
        std::fs::write(&path, b"").unwrap();
        std::fs::File::options().write(true).open(&path).unwrap().set_len(MAX_FILE_BYTES + 1).unwrap();
        assert!(ScanCache::open_with(dir.path(), "r".into()).is_empty());
        let elsewhere = tempfile::tempdir().unwrap();
        let real = ScanCache::open_with(elsewhere.path(), "r".into());
        real.put(&good, &[finding("A.x")]);
        real.save().unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join(CACHE_FILE), &path).unwrap();
        assert!(ScanCache::open_with(dir.path(), "r".into()).is_empty());
        std::fs::remove_file(&path).unwrap();
        // A FIFO is refused on the open descriptor, without waiting for a writer.
        let fifo = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(ScanCache::open_with(dir.path(), "r".into()).is_empty());
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let c = ScanCache::open_with(dir.path(), "r".into());
        assert!(c.is_empty());
        c.put(&good, &[]);
        assert!(c.save().is_err(), "the write fails; the caller goes on");
    }

    /// Regression (issue 27, D14): a flipped bit, or an edit that keeps the line
    /// valid (findings emptied, a line number shifted), was served as the file's
    /// findings. The entry's sum makes each a miss, counted and kept in the header.
    #[test]
    fn an_entry_changed_on_disk_is_a_counted_miss() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CACHE_FILE);
        let keys: Vec<String> = (0..4).map(|i| key(&format!("f{i}.rs"), None, "1")).collect();
        let c = ScanCache::open_with(dir.path(), "r".into());
        for k in &keys {
            c.put(k, &[finding("Query.limit")]);
        }
        c.save().unwrap();
        assert_eq!(health(dir.path()), Some(Health { entries: 4, damaged: 0 }));
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        // 1: findings emptied (D14's sed); 2: the line number shifted; 3: one bit
        // flipped inside a text, still valid JSON and a known rule.
        lines[1] = lines[1].split_once(" [[").unwrap().0.to_string() + " []";
        lines[2] = lines[2].replacen("[[3,", "[[4,", 1);
        let flipped: String = lines[3].replacen("limit: u8", "limit: u9", 1);
        assert_ne!(flipped, lines[3]);
        lines[3] = flipped;
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        assert_eq!(health(dir.path()), Some(Health { entries: 1, damaged: 3 }));
        let c = ScanCache::open_with(dir.path(), "r".into());
        let served: Vec<_> = keys.iter().map(|k| c.get(k)).collect();
        let by_line = |l: &str| keys.iter().position(|k| l.starts_with(k.as_str())).unwrap();
        for (i, l) in lines.iter().enumerate().skip(1) {
            let want = if i == 4 { Some(vec![finding("Query.limit")]) } else { None };
            assert_eq!(served[by_line(l)], want, "line {i}: {l}");
        }
        assert_eq!(c.damaged(), 3);
        // The scan stores what it found again; the count stays in the file.
        for k in &keys {
            c.put(k, &[finding("Query.limit")]);
        }
        assert!(c.save().unwrap());
        assert_eq!(health(dir.path()), Some(Health { entries: 4, damaged: 3 }));
        // Damage found alone is written too (the line goes, the count stays).
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("[[3,", "[[5,", 1)).unwrap();
        let c = ScanCache::open_with(dir.path(), "r".into());
        assert_eq!(keys.iter().filter(|k| c.get(k).is_none()).count(), 1);
        assert!(c.save().unwrap());
        assert_eq!(health(dir.path()), Some(Health { entries: 3, damaged: 4 }));
    }

    /// Issue 30 part 5: a scan of a very large change holds at most
    /// MAX_ADDED_BYTES of new entries, the same ones whatever order its threads
    /// stored them in (the first keys in byte order), and never writes a file larger
    /// than the next scan reads: a second such scan evicts the older entries instead.
    #[test]
    fn a_large_scan_keeps_a_bounded_deterministic_share_and_a_readable_file() {
        // About 60 KiB an entry: 300 of them pass the budget.
        let entry =
            |i: usize| (key(&format!("f{i}.rs"), None, "1"), vec![finding(&format!("{i}{}", "x".repeat(60_000)))]);
        let entries: Vec<(String, Vec<RawFinding>)> = (0..300).map(entry).collect();
        let saved = |order: &mut dyn Iterator<Item = &(String, Vec<RawFinding>)>| {
            let dir = tempfile::tempdir().unwrap();
            let c = ScanCache::open_with(dir.path(), "r".into());
            for (k, f) in order {
                c.put(k, f);
            }
            let held = c.state.lock().unwrap().added_bytes;
            assert!(held <= MAX_ADDED_BYTES, "{held}");
            c.save().unwrap();
            let bytes = std::fs::read(dir.path().join(CACHE_FILE)).unwrap();
            (dir, bytes)
        };
        let (dir, forward) = saved(&mut entries.iter());
        let (_other, backward) = saved(&mut entries.iter().rev());
        assert!(forward == backward, "the same entries kept whatever the order");
        let mut sorted: Vec<&String> = entries.iter().map(|(k, _)| k).collect();
        sorted.sort();
        let c = ScanCache::open_with(dir.path(), "r".into());
        let kept = sorted.iter().take_while(|k| c.get(k).is_some()).count();
        assert!(kept > 200 && kept < 300, "{kept}");
        assert!(sorted[kept..].iter().all(|k| c.get(k).is_none()), "a prefix in key order is kept");
        // Two more large scans: the file stays readable (under MAX_FILE_BYTES), each
        // scan's entries kept and the oldest evicted to make room.
        for scan in [300..600, 600..900] {
            let newer: Vec<(String, Vec<RawFinding>)> = scan.map(entry).collect();
            let c = ScanCache::open_with(dir.path(), "r".into());
            for (k, f) in &newer {
                c.put(k, f);
            }
            c.save().unwrap();
            let len = std::fs::metadata(dir.path().join(CACHE_FILE)).unwrap().len();
            assert!(len <= MAX_FILE_BYTES, "{len}");
            let c = ScanCache::open_with(dir.path(), "r".into());
            assert!(newer.iter().filter(|(k, _)| c.get(k).is_some()).count() > 200, "the newest entries read back");
        }
        let c = ScanCache::open_with(dir.path(), "r".into());
        // The two newer scans fill all but the slack of their budgets (under an entry
        // each): at most that much of the first scan's is left.
        let left = sorted.iter().filter(|k| c.get(k).is_some()).count();
        assert!(left <= 2, "the first scan's entries evicted to fit: {left} left of {kept}");
    }

    #[test]
    fn the_least_recently_used_entries_are_evicted() {
        let dir = tempfile::tempdir().unwrap();
        let open = || ScanCache::open_with(dir.path(), "r".into());
        let keys: Vec<String> = (0..MAX_ENTRIES + 10).map(|i| key(&format!("f{i}.rs"), None, "1")).collect();
        let c = open();
        for k in &keys[..MAX_ENTRIES] {
            c.put(k, &[]);
        }
        c.save().unwrap();
        // A later scan uses the first ten and adds ten more: ten unused entries of the
        // oldest generation go (among equals, the last in byte order of the key).
        let c = open();
        for k in &keys[..10] {
            assert_eq!(c.get(k), Some(vec![]));
        }
        for k in &keys[MAX_ENTRIES..] {
            c.put(k, &[]);
        }
        c.save().unwrap();
        let c = open();
        assert_eq!(c.len(), MAX_ENTRIES);
        for k in keys[..10].iter().chain(&keys[MAX_ENTRIES..]) {
            assert!(c.get(k).is_some(), "kept: used or added by the newest scan");
        }
        let mut old: Vec<&String> = keys[10..MAX_ENTRIES].iter().collect();
        old.sort();
        let cut = old.len() - 10;
        for k in &old[cut..] {
            assert_eq!(c.get(k), None, "evicted");
        }
        assert!(c.get(old[cut - 1]).is_some());
        // An oversized entry is not stored.
        let c = open();
        let big = finding(&"x".repeat(MAX_ENTRY_BYTES));
        c.put(&key("big.rs", None, "1"), &[big]);
        assert_eq!(c.get(&key("big.rs", None, "1")), None);
    }
}

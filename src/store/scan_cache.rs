//! The scan cache: what the widening scan's detectors found in a changed file, by the
//! path and the blob ids of its two versions, so that a range scanned before (the
//! pre-push scan and then `premerge scan` of the same commits, a hook run again after a
//! refused push, a background scan finishing what the hook started) is not parsed again.
//!
//! One file, `<state>/scan-cache`, read once at the start of a scan and, when the scan
//! added or used entries, written back atomically ([`super::atomic_write`]) at its end.
//! Its first line names the format and the rule set that produced the entries; every
//! other line is one entry, `KEY GENERATION FINDINGS-JSON`. The cache is a signal's
//! helper, so it never fails a scan: an unreadable, oversized, foreign or torn file is
//! an empty cache, a damaged line a miss, a failed write a cache that was not updated.
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
/// a larger file is not one premerge wrote, and is ignored (then replaced).
pub(crate) const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// The first word of the header line; the second is the format's version.
const MAGIC: &str = "premerge-scan-cache";
const FORMAT: u32 = 1;

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

/// One entry as read: the generation that last used it and its findings, still as text
/// (decoded on a hit only).
struct Stored {
    generation: u64,
    findings: String,
}

#[derive(Default)]
struct State {
    stored: BTreeMap<String, Stored>,
    /// Keys read this scan.
    hits: BTreeSet<String>,
    /// Entries stored this scan.
    added: BTreeMap<String, String>,
}

/// The cache of one scan; see the module comment.
pub(crate) struct ScanCache {
    path: PathBuf,
    ruleset: String,
    /// The newest generation in the file read (0 for none).
    generation: u64,
    state: Mutex<State>,
    /// Entries dropped as damaged while reading (a count for tests and diagnostics).
    pub damaged: usize,
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
        let mut cache = ScanCache { path, ruleset, generation: 0, state: Mutex::new(State::default()), damaged: 0 };
        if let Some(text) = read_regular(&cache.path) {
            cache.load(&text);
        }
        cache
    }

    fn load(&mut self, text: &str) {
        let mut lines = text.split('\n');
        let header: Vec<&str> = lines.next().unwrap_or("").split(' ').collect();
        let format = FORMAT.to_string();
        let [magic, format_read, ruleset, generation] = header.as_slice() else { return };
        if *magic != MAGIC || *format_read != format || *ruleset != self.ruleset {
            return;
        }
        let Ok(generation) = generation.parse::<u64>() else { return };
        self.generation = generation;
        let stored = &mut self.state.get_mut().unwrap_or_else(|e| e.into_inner()).stored;
        for line in lines.filter(|l| !l.is_empty()) {
            let mut parts = line.splitn(3, ' ');
            let (Some(key), Some(generation), Some(findings)) = (parts.next(), parts.next(), parts.next()) else {
                self.damaged += 1;
                continue;
            };
            let key_ok = key.len() == 40 && key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            match generation.parse::<u64>() {
                Ok(g) if key_ok && g <= self.generation => {
                    stored.insert(key.to_string(), Stored { generation: g, findings: findings.to_string() });
                }
                _ => self.damaged += 1,
            }
        }
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
        if s.added.is_empty() && !stale_hit {
            return Ok(false);
        }
        let now = self.generation + 1;
        let mut all: BTreeMap<&str, (u64, &str)> = BTreeMap::new();
        for (k, e) in &s.stored {
            let g = if s.hits.contains(k) { now } else { e.generation };
            all.insert(k, (g, &e.findings));
        }
        for (k, f) in &s.added {
            all.insert(k, (now, f));
        }
        if all.len() > MAX_ENTRIES {
            // Newest generation first; among equals, byte order of the key.
            let mut order: Vec<(&str, u64)> = all.iter().map(|(k, (g, _))| (*k, *g)).collect();
            order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            for (k, _) in order.drain(MAX_ENTRIES..) {
                all.remove(k);
            }
        }
        let mut out = format!("{MAGIC} {FORMAT} {} {now}\n", self.ruleset);
        out.reserve(all.iter().map(|(k, (_, f))| k.len() + f.len() + 24).sum());
        for (k, (g, f)) in all {
            use std::fmt::Write as _;
            let _ = writeln!(out, "{k} {g} {f}");
        }
        super::atomic_write_private(&self.path, out.as_bytes())?;
        Ok(true)
    }
}

impl FindingsCache for ScanCache {
    fn get(&self, key: &str) -> Option<Vec<RawFinding>> {
        let text = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let text = s.added.get(key).or_else(|| s.stored.get(key).map(|e| &e.findings))?.clone();
            s.hits.insert(key.to_string());
            text
        };
        let decoded = decode(&text);
        if decoded.is_none() {
            // A damaged entry: a miss, and not kept.
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.hits.remove(key);
            s.stored.remove(key);
        }
        decoded
    }

    fn put(&self, key: &str, findings: &[RawFinding]) {
        let text = encode(findings);
        if text.len() <= MAX_ENTRY_BYTES {
            self.state.lock().unwrap_or_else(|e| e.into_inner()).added.insert(key.to_string(), text);
        }
    }
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
        text.push_str(&format!("{bad_rule} 1 [[1,\"no-such-rule\",\"s\",\"b\",\"a\",false]]\n"));
        text.push_str(&format!("{bad_json} 1 [[1,\n"));
        text.push_str("not a line at all\n");
        text.push_str(&format!("{} 99 []\n", key("d.rs", None, "1")));
        std::fs::write(&path, &text).unwrap();
        let c = ScanCache::open_with(dir.path(), "r".into());
        assert_eq!(c.damaged, 2, "a line without three fields and one from a future generation");
        assert_eq!(c.get(&good), Some(vec![finding("A.x")]));
        assert_eq!(c.get(&bad_rule), None);
        assert_eq!(c.get(&bad_json), None);
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

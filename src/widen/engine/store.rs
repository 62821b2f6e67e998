//! The findings of a scan as compact records, kept in the order the files were scanned
//! and read back in report order a batch at a time: what lets `premerge scan` hold a
//! change of any size in bounded memory (issue 30 part 5, "peak memory under 200 MiB
//! whatever the size of the change").
//!
//! A finding is stored as its line, rule, severity and three texts (symbol, before,
//! after); its file is named once for all of that file's findings, and its message is
//! rendered from the catalogue when it is read back (the message was most of a stored
//! finding's bytes). Past [`SPILL_BYTES`] of records, they are written to an unlinked
//! temporary file and read back from it; a temporary file that cannot be made or
//! written keeps the records in memory (the scan is a signal: never failed for that).
//!
//! Report order is path, line, rule and symbol, byte order. The records of one file
//! come sorted from the engine, so sorting the files by path (a stable sort) gives the
//! report order; the findings of a path that came more than once are merged by a
//! stable sort of those alone, which is what one stable sort of everything gives.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;

use rayon::prelude::*;

use super::{Finding, finding_order};
use crate::widen::layers::Linked;
use crate::widen::{Language, RuleId, Severity, catalogue};

/// Bytes of records held in memory before they go to the temporary file: a few
/// hundred thousand findings' worth would otherwise stay to the end of the scan (a
/// record is about 60 bytes for the synthetic change's findings). 4 MiB is a
/// negligible share of the 200 MiB bound and few enough writes (one per 4 MiB).
const SPILL_BYTES: usize = 4 << 20;

/// A finding without its file and message, as the engine hands it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub line: u32,
    pub rule: RuleId,
    pub severity: Severity,
    pub symbol: String,
    pub before: String,
    pub after: String,
}

/// The findings of one file, one after the other in the records.
#[derive(Debug)]
struct Group {
    path: Box<str>,
    language: Language,
    /// Byte offset of the first record (in the temporary file and then the memory,
    /// as if one sequence).
    start: u64,
    /// Byte offset past the last record.
    end: u64,
    /// Index of the first record among all.
    first: u64,
}

/// Records read back failed (the temporary file): the scan's output cannot be
/// completed.
#[derive(Debug, thiserror::Error)]
#[error("the scan's findings could not be read back from their temporary file: {0}")]
pub(crate) struct ReadBack(#[from] std::io::Error);

/// The findings of a scan; see the module comment.
#[derive(Debug)]
pub struct Findings {
    /// [`SPILL_BYTES`] but in tests.
    spill_at: usize,
    groups: Vec<Group>,
    /// Records not spilled yet.
    memory: Vec<u8>,
    /// The temporary file and how many bytes of records it holds; `None` until the
    /// first spill (and for good after a spill failed).
    spill: Option<std::fs::File>,
    spilled: u64,
    /// A spill failed: everything stays in memory from then on.
    no_spill: bool,
    records: u64,
    /// Records left out of the report (checks moved into another file).
    dropped: BTreeSet<u64>,
    /// The other layers' sites of some records ([`crate::widen::layers`]).
    linked: BTreeMap<u64, Vec<Linked>>,
}

impl Default for Findings {
    fn default() -> Findings {
        Findings::spilling_at(SPILL_BYTES)
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    // A text is at most a file's size (`scan.max_file_bytes`, far below 4 GiB).
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn severity_byte(s: Severity) -> u8 {
    match s {
        Severity::Low => 0,
        Severity::Medium => 1,
        Severity::High => 2,
    }
}

fn severity_of(b: u8) -> Severity {
    match b {
        0 => Severity::Low,
        1 => Severity::Medium,
        _ => Severity::High,
    }
}

#[allow(clippy::too_many_arguments)]
fn decode_one(
    path: &str,
    language: Language,
    line: u32,
    rule: RuleId,
    severity: Severity,
    symbol: &str,
    before: &str,
    after: &str,
) -> Finding {
    Finding {
        rule: rule.as_str().to_string(),
        language,
        file: path.to_string(),
        message: catalogue::render_message(rule.def(), symbol, before, after),
        symbol: symbol.to_string(),
        line,
        before: before.to_string(),
        after: after.to_string(),
        severity,
        linked: Vec::new(),
    }
}

/// One record's fields, borrowed from the bytes read back.
struct Record<'b> {
    line: u32,
    rule: RuleId,
    severity: Severity,
    texts: [&'b str; 3],
}

/// The next record of `bytes` from `*at`; `None` when the bytes are not records this
/// module wrote (a temporary file changed under the scan).
fn next_record<'b>(bytes: &'b [u8], at: &mut usize) -> Option<Record<'b>> {
    let take = |at: &mut usize, n: usize| -> Option<&'b [u8]> {
        let s = bytes.get(*at..*at + n)?;
        *at += n;
        Some(s)
    };
    let line = u32::from_le_bytes(take(at, 4)?.try_into().ok()?);
    let rule = *RuleId::ALL.get(usize::from(u16::from_le_bytes(take(at, 2)?.try_into().ok()?)))?;
    let severity = severity_of(take(at, 1)?[0]);
    let mut texts = [""; 3];
    for t in &mut texts {
        let n = u32::from_le_bytes(take(at, 4)?.try_into().ok()?) as usize;
        *t = std::str::from_utf8(take(at, n)?).ok()?;
    }
    Some(Record { line, rule, severity, texts })
}

impl Findings {
    /// An empty store that spills past `bytes` of records held.
    fn spilling_at(bytes: usize) -> Findings {
        Findings {
            spill_at: bytes,
            groups: Vec::new(),
            memory: Vec::new(),
            spill: None,
            spilled: 0,
            no_spill: false,
            records: 0,
            dropped: BTreeSet::new(),
            linked: BTreeMap::new(),
        }
    }

    /// Add the findings of one file (in report order among themselves), returning the
    /// index of its first record.
    pub(crate) fn push_file(&mut self, path: &str, language: Language, found: &[Found]) -> u64 {
        let first = self.records;
        if found.is_empty() {
            return first;
        }
        let start = self.spilled + self.memory.len() as u64;
        for f in found {
            self.memory.extend_from_slice(&f.line.to_le_bytes());
            // The rule's place in the catalogue (fewer than 65,536 rules).
            self.memory.extend_from_slice(&(f.rule as u16).to_le_bytes());
            self.memory.push(severity_byte(f.severity));
            for s in [&f.symbol, &f.before, &f.after] {
                put_str(&mut self.memory, s);
            }
        }
        self.records += found.len() as u64;
        let end = self.spilled + self.memory.len() as u64;
        self.groups.push(Group { path: path.into(), language, start, end, first });
        if self.memory.len() >= self.spill_at && !self.no_spill {
            self.spill_memory();
        }
        first
    }

    fn spill_memory(&mut self) {
        if self.spill.is_none() {
            match tempfile::tempfile() {
                Ok(f) => self.spill = Some(f),
                Err(_) => {
                    self.no_spill = true;
                    return;
                }
            }
        }
        let Some(file) = self.spill.as_mut() else { return };
        // Written at the file's end, where the last spill left it; a failed write keeps
        // these records in memory, and every later one too (what was written before
        // stays valid: `spilled` counts only what was).
        if file.write_all(&self.memory).is_ok() {
            self.spilled += self.memory.len() as u64;
            self.memory = Vec::new();
        } else {
            self.no_spill = true;
        }
    }

    /// Leave record `index` out of the report.
    pub(crate) fn drop_record(&mut self, index: u64) {
        self.dropped.insert(index);
    }

    /// How many findings the report holds.
    pub fn len(&self) -> usize {
        (self.records as usize).saturating_sub(self.dropped.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of records `start..end` (offsets over the spilled and the held records).
    fn bytes(&self, start: u64, end: u64) -> Result<std::borrow::Cow<'_, [u8]>, ReadBack> {
        if start >= self.spilled {
            let (a, b) = ((start - self.spilled) as usize, (end - self.spilled) as usize);
            return Ok(std::borrow::Cow::Borrowed(&self.memory[a..b]));
        }
        let mut out = vec![0u8; (end - start) as usize];
        let from_file = (self.spilled.min(end) - start) as usize;
        if let Some(file) = &self.spill {
            use std::os::unix::fs::FileExt as _;
            file.read_exact_at(&mut out[..from_file], start)?;
        }
        if end > self.spilled {
            out[from_file..].copy_from_slice(&self.memory[..(end - self.spilled) as usize]);
        }
        Ok(std::borrow::Cow::Owned(out))
    }

    /// The findings of some groups (`groups`, indices, all of one path when more than
    /// one), in report order, as `(record index, finding)`, the dropped ones left out.
    fn read_groups(&self, groups: &[usize], out: &mut Vec<(u64, Finding)>) -> Result<(), ReadBack> {
        let from = out.len();
        for &g in groups {
            let group = &self.groups[g];
            let bytes = self.bytes(group.start, group.end)?;
            let mut at = 0usize;
            let mut index = group.first;
            while at < bytes.len() {
                let Some(r) = next_record(&bytes, &mut at) else {
                    return Err(ReadBack(std::io::Error::new(std::io::ErrorKind::InvalidData, "a damaged record")));
                };
                if !self.dropped.contains(&index) {
                    let [symbol, before, after] = r.texts;
                    let mut f =
                        decode_one(&group.path, group.language, r.line, r.rule, r.severity, symbol, before, after);
                    if let Some(linked) = self.linked.get(&index) {
                        f.linked = linked.clone();
                    }
                    out.push((index, f));
                }
                index += 1;
            }
        }
        if groups.len() > 1 {
            out[from..].sort_by(|a, b| finding_order(&a.1, &b.1));
        }
        Ok(())
    }

    /// The groups in report order, those of one path together.
    fn order(&self) -> Vec<Vec<usize>> {
        let mut idx: Vec<usize> = (0..self.groups.len()).collect();
        // Stable: the groups of one path stay in the order they came in.
        idx.sort_by(|a, b| self.groups[*a].path.as_bytes().cmp(self.groups[*b].path.as_bytes()));
        let mut out: Vec<Vec<usize>> = Vec::new();
        for i in idx {
            match out.last_mut() {
                Some(last) if self.groups[last[0]].path == self.groups[i].path => last.push(i),
                _ => out.push(vec![i]),
            }
        }
        out
    }

    /// Every finding in report order, `batch` (at least) at a time, each with its
    /// record index (`indices[i]` is `findings[i]`'s): the batch's messages are
    /// rendered in parallel.
    pub(crate) fn each_batch_indexed(
        &self,
        batch: usize,
        mut f: impl FnMut(&[u64], &[Finding]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        type Sink<'s> = &'s mut dyn FnMut(&[u64], &[Finding]) -> anyhow::Result<()>;
        let flush = |pending: &mut Vec<&[usize]>, f: Sink| -> anyhow::Result<()> {
            let parts: Vec<Vec<(u64, Finding)>> = pending
                .par_iter()
                .map(|groups| {
                    let mut out = Vec::new();
                    self.read_groups(groups, &mut out).map(|_| out)
                })
                .collect::<Result<_, ReadBack>>()?;
            pending.clear();
            let (indices, findings): (Vec<u64>, Vec<Finding>) = parts.into_iter().flatten().unzip();
            if findings.is_empty() { Ok(()) } else { f(&indices, &findings) }
        };
        let order = self.order();
        let mut pending: Vec<&[usize]> = Vec::new();
        let mut count = 0u64;
        for groups in &order {
            pending.push(groups);
            count += groups.iter().map(|&g| self.group_len(g)).sum::<u64>();
            if count >= batch as u64 {
                flush(&mut pending, &mut f)?;
                count = 0;
            }
        }
        flush(&mut pending, &mut f)
    }

    /// Records of group `g` (dropped ones included).
    fn group_len(&self, g: usize) -> u64 {
        let next = self.groups.get(g + 1).map_or(self.records, |n| n.first);
        next - self.groups[g].first
    }

    /// Every finding in report order, `batch` (at least) at a time.
    pub fn each_batch(&self, batch: usize, mut f: impl FnMut(&[Finding]) -> anyhow::Result<()>) -> anyhow::Result<()> {
        self.each_batch_indexed(batch, |_, findings| f(findings))
    }

    /// The first `n` findings in report order.
    pub fn head(&self, n: usize) -> anyhow::Result<Vec<Finding>> {
        let mut out = Vec::with_capacity(n);
        for groups in self.order() {
            if out.len() >= n {
                break;
            }
            let mut part = Vec::new();
            self.read_groups(&groups, &mut part)?;
            out.extend(part.into_iter().map(|(_, f)| f));
        }
        out.truncate(n);
        Ok(out)
    }

    /// Every finding, in report order, in memory (for the consumers that need them
    /// all at once: the guard memories, SARIF, the links across layers).
    pub fn to_vec(&self) -> anyhow::Result<Vec<Finding>> {
        Ok(self.to_indexed()?.1)
    }

    /// [`Findings::to_vec`] with each finding's record index.
    pub(crate) fn to_indexed(&self) -> anyhow::Result<(Vec<u64>, Vec<Finding>)> {
        let (mut indices, mut all) = (Vec::new(), Vec::with_capacity(self.len()));
        self.each_batch_indexed(usize::MAX, |i, part| {
            indices.extend_from_slice(i);
            all.extend_from_slice(part);
            Ok(())
        })?;
        Ok((indices, all))
    }

    /// Set the other layers' sites of record `index`.
    pub(crate) fn set_linked(&mut self, index: u64, linked: Vec<Linked>) {
        if linked.is_empty() {
            self.linked.remove(&index);
        } else {
            self.linked.insert(index, linked);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(line: u32, symbol: &str, before: &str) -> Found {
        Found {
            line,
            rule: RuleId::ALL[usize::from(line as u16) % RuleId::ALL.len()],
            severity: [Severity::Low, Severity::Medium, Severity::High][line as usize % 3],
            symbol: symbol.to_string(),
            before: before.to_string(),
            after: format!("{before} \u{e9}"),
        }
    }

    /// Files in any order, one path twice, records spilled to the temporary file or
    /// held, some dropped and some linked: read back in any batches, the findings are
    /// what one stable sort of them all in report order gives, messages rendered.
    #[test]
    fn read_back_in_report_order_whatever_the_order_and_the_spills() {
        let files: Vec<(&str, Vec<Found>)> = vec![
            ("src/b.rs", vec![found(2, "B.x", "x: u8"), found(9, "B.y", "y: u8")]),
            ("src/a.rs", vec![found(1, "A", ""), found(1, "A", ""), found(40, "A.z", "z")]),
            ("src/c.ts", vec![]),
            ("src/b.rs", vec![found(3, "B.w", "w: u8"), found(9, "B.a", "a")]),
            ("src/a-b.rs", (0..50).map(|i| found(i, &format!("S{i}"), "long enough text to spill")).collect()),
        ];
        for spill_at in [0, 1, 200, usize::MAX] {
            let mut store = Findings::spilling_at(spill_at);
            let mut all = Vec::new();
            for (path, found) in &files {
                let first = store.push_file(path, Language::Rust, found);
                for (i, f) in found.iter().enumerate() {
                    let finding =
                        decode_one(path, Language::Rust, f.line, f.rule, f.severity, &f.symbol, &f.before, &f.after);
                    all.push((first + i as u64, finding));
                }
            }
            assert_eq!(store.len(), 57);
            assert_eq!(spill_at == usize::MAX, store.spill.is_none(), "spilled at {spill_at}");
            store.drop_record(0);
            store.drop_record(56);
            let linked = Linked {
                constraint: "VARCHAR(3)".into(),
                layer: crate::widen::layers::Layer::Sql,
                line: 4,
                path: "m.sql".into(),
                symbol: "t.c".into(),
            };
            store.set_linked(3, vec![linked.clone()]);
            all.retain(|(i, _)| *i != 0 && *i != 56);
            all.iter_mut().filter(|(i, _)| *i == 3).for_each(|(_, f)| f.linked = vec![linked.clone()]);
            all.sort_by(|a, b| finding_order(&a.1, &b.1));
            assert_eq!(store.len(), 55);
            let expected: Vec<Finding> = all.iter().map(|(_, f)| f.clone()).collect();
            assert!(expected.iter().all(|f| !f.message.is_empty()));
            assert_eq!(expected[0].file, "src/a-b.rs");
            assert_eq!(expected.iter().filter(|f| f.file == "src/b.rs").map(|f| f.line).collect::<Vec<_>>(), [3, 9, 9]);
            for batch in [1, 2, 7, 1000] {
                let mut got = Vec::new();
                store
                    .each_batch(batch, |part| {
                        got.extend_from_slice(part);
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(got, expected, "spill at {spill_at}, batch {batch}");
            }
            assert_eq!(store.to_vec().unwrap(), expected);
            assert_eq!(store.head(3).unwrap(), expected[..3]);
            assert_eq!(store.head(100).unwrap(), expected);
            let (indices, findings) = store.to_indexed().unwrap();
            assert_eq!(findings, expected);
            assert_eq!(indices, all.iter().map(|(i, _)| *i).collect::<Vec<_>>());
        }
    }
}

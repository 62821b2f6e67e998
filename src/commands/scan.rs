//! `premerge scan`: the widening scan of a range, and the guard memories it writes.
//!
//! A signal: it never blocks. The command exits 0 whatever it finds; in the hooks a
//! scan error is a warning (`crate::hook::stages::widening_scan`). The scan itself is
//! [`crate::scan`].

use std::io::Write;

use anyhow::Result;
use clap::Args as ClapArgs;
use serde_json::{Value, json};

use super::Ctx;
use crate::cli::{FindingsFormat, Format, RangeArgs};
use crate::diff::Diff;
use crate::error::{CmdResult, Exit};
use crate::input::push_escaped;
use crate::memory::listing::Query;
use crate::scan::{Outcome, ScanOptions, record_repeats, report_notes, scan_diff};
use crate::widen::engine::Finding;

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[command(flatten)]
    pub range: RangeArgs,
    /// The issue this change belongs to: the guard-memory cycle and the number named in
    /// each memory. Without it the cycle is the head commit.
    #[arg(long, value_name = "N")]
    pub issue: Option<u64>,
    /// Report findings without writing guard memories.
    #[arg(long)]
    pub no_memory: bool,
    /// Output format (sarif: code scanning; github: workflow-command annotations).
    #[arg(long, value_enum, default_value_t)]
    pub format: FindingsFormat,
    /// Print the rule catalogue as Markdown (the content of docs/rules.md) and exit.
    #[arg(long, conflicts_with_all = ["issue", "no_memory"])]
    pub rules_doc: bool,
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    if args.rules_doc {
        ctx.stdout.write_all(crate::report::rules::rules_doc().as_bytes())?;
        return Ok(Exit::Ok);
    }
    let repo = ctx.repo()?;
    let config = super::load_config(&repo)?;
    // The scan reads whole files: hunks would be computed for nothing.
    let diff = args.range.diff_with(&repo, crate::git::Detail::Files)?;
    if !config.scan.enabled {
        ctx.warn("the widening scan is off (scan.enabled = false / PREMERGE_WIDENING_SCAN=0): nothing scanned");
        return print(ctx, &args, &diff, &Outcome::default());
    }
    let opts = ScanOptions { issue: args.issue, memory: !args.no_memory, backend: true };
    let mut out = scan_diff(&repo, &config, &diff, opts)?;
    report_notes(ctx, &out);
    record_repeats(ctx, &repo, &config, &out);
    let printed = print(ctx, &args, &diff, &out);
    // The process ends after this command: the findings are left to the exit rather
    // than freed one string at a time (a large change has tens of thousands, and
    // freeing them took 13-20 ms on the main thread, after everything else). The scan
    // cache's writer is still joined when `out` drops.
    std::mem::forget(std::mem::take(&mut out.findings));
    printed
}

/// Findings handed over a batch at a time, in report order, to the sink given: the
/// scan's [`crate::widen::engine::Findings`], or a list in tests.
type Batches<'a> = &'a dyn Fn(Sink) -> Result<()>;

/// What takes a batch of findings.
type Sink<'a> = &'a mut dyn FnMut(&[Finding]) -> Result<()>;

fn print(ctx: &mut Ctx, args: &Args, diff: &Diff, out: &Outcome) -> CmdResult {
    if let Some(target) = args.format.report() {
        let mut w = std::io::BufWriter::new(&mut *ctx.stdout);
        // SARIF and annotations are built whole: every finding in memory.
        crate::report::write(&mut w, target, &crate::report::from_scan(&out.findings.to_vec()?))?;
        w.flush()?;
        return Ok(Exit::Ok);
    }
    match args.format {
        FindingsFormat::Json => {
            let doc = json!({
                "schema_version": 1,
                "base": diff.base,
                "head": diff.head,
                "memories_written": out.memory.written,
                "memories_skipped_duplicate": out.memory.duplicates,
                "notes": out.notes,
            });
            let mut w = std::io::BufWriter::new(&mut *ctx.stdout);
            write_json_with_findings(&mut w, &doc, &|sink| out.findings.each_batch(FINDINGS_PER_BATCH, sink))?;
            w.flush()?;
        }
        _ => write_text(ctx.stdout, out)?,
    }
    Ok(Exit::Ok)
}

/// `doc` (an object) with `"findings"` added, as one line of canonical JSON (sorted
/// keys, compact, `\n`), byte for byte what `canonical::to_line` gives for the whole
/// document, but written one finding at a time: a scan of tens of thousands of
/// findings never holds the document as one JSON tree (that tree, twice over, was
/// most of a large scan's peak memory).
fn write_json_with_findings(w: &mut dyn Write, doc: &Value, findings: Batches) -> Result<()> {
    let Value::Object(fields) = doc else { anyhow::bail!("scan output: not an object") };
    let mut keys: Vec<&str> = fields.keys().map(String::as_str).chain(["findings"]).collect();
    keys.sort_unstable();
    w.write_all(b"{")?;
    for (i, key) in keys.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        w.write_all(serde_json::to_string(key)?.as_bytes())?;
        w.write_all(b":")?;
        if *key == "findings" {
            w.write_all(b"[")?;
            let mut first = true;
            findings(&mut |part| write_findings(w, part, FINDINGS_PER_BATCH, &mut first))?;
            w.write_all(b"]")?;
        } else {
            w.write_all(crate::canonical::to_compact(&fields[*key])?.as_bytes())?;
        }
    }
    w.write_all(b"}\n")?;
    Ok(())
}

/// How many findings are rendered at once, on the scan's threads.
const FINDINGS_PER_BATCH: usize = 4096;

/// The findings, comma-separated, each as [`canonical::to_compact`] gives it (a
/// [`Finding`]'s fields are in byte order): rendered `batch` at a time in parallel (a
/// large change has tens of thousands), written in order. `first`: no finding was
/// written before these (no comma before the first).
///
/// [`canonical::to_compact`]: crate::canonical::to_compact
fn write_findings(w: &mut dyn Write, findings: &[Finding], batch: usize, first: &mut bool) -> Result<()> {
    use rayon::prelude::*;
    for chunk in findings.chunks(batch) {
        let rendered: Vec<Vec<u8>> = chunk
            .par_chunks(batch.div_ceil(rayon::current_num_threads()).max(1))
            .map(|part| {
                let mut out = Vec::with_capacity(part.len() * 256);
                for f in part {
                    out.push(b',');
                    serde_json::to_writer(&mut out, f)?;
                }
                Ok(out)
            })
            .collect::<serde_json::Result<_>>()?;
        for part in rendered.iter().filter(|p| !p.is_empty()) {
            // Each part starts with a comma, but for the very first.
            w.write_all(if *first { &part[1..] } else { part })?;
            *first = false;
        }
    }
    Ok(())
}

/// The changed tokens of `before` -> `after`, git word-diff style: `u[-8-]{+64+}`.
/// Runs of deleted or inserted tokens are marked once.
pub(crate) fn inline_diff(before: &str, after: &str) -> String {
    use similar::{ChangeTag, TextDiff};
    let d = TextDiff::configure().algorithm(similar::Algorithm::Myers).diff_words(before, after);
    let mut s = String::with_capacity(before.len() + after.len() + 8);
    let mut open: Option<ChangeTag> = None;
    let close = |s: &mut String, tag: Option<ChangeTag>| match tag {
        Some(ChangeTag::Delete) => s.push_str("-]"),
        Some(ChangeTag::Insert) => s.push_str("+}"),
        _ => {}
    };
    for c in d.iter_all_changes() {
        let tag = c.tag();
        if open != Some(tag) {
            close(&mut s, open);
            match tag {
                ChangeTag::Delete => s.push_str("[-"),
                ChangeTag::Insert => s.push_str("{+"),
                ChangeTag::Equal => {}
            }
            open = Some(tag);
        }
        s.push_str(c.value());
    }
    close(&mut s, open);
    s
}

fn write_text(w: &mut dyn Write, out: &Outcome) -> Result<()> {
    let files =
        write_text_findings(w, &|sink: Sink| out.findings.each_batch(FINDINGS_PER_BATCH, sink), FINDINGS_PER_BATCH)?;
    if !out.findings.is_empty() {
        writeln!(w)?;
    }
    writeln!(
        w,
        "{} finding(s) in {} file(s); {} guard memory(ies) written, {} already recorded",
        out.findings.len(),
        files,
        out.memory.written,
        out.memory.duplicates
    )?;
    Ok(())
}

/// The findings as text, each file named before its first (a file's findings are
/// consecutive); returns how many files were named. Rendered `batch` at a time on the
/// scan's threads and written a part at a time: a large change has tens of thousands
/// of findings, five lines each, and a write per line was most of the time the scan
/// spent printing.
fn write_text_findings(w: &mut dyn Write, findings: Batches, batch: usize) -> Result<usize> {
    let mut last: Option<String> = None;
    let mut files = 0;
    findings(&mut |part| {
        files += write_text_part(w, part, batch, last.as_deref())?;
        if let Some(f) = part.last() {
            last = Some(f.file.clone());
        }
        Ok(())
    })?;
    Ok(files)
}

/// [`write_text_findings`] of some findings after `last` (the file of the finding
/// written before them); returns how many files it named.
fn write_text_part(w: &mut dyn Write, findings: &[Finding], batch: usize, last: Option<&str>) -> Result<usize> {
    use rayon::prelude::*;
    let previous = |i: usize| if i == 0 { last } else { Some(findings[i - 1].file.as_str()) };
    let files = (0..findings.len()).filter(|&i| previous(i) != Some(findings[i].file.as_str())).count();
    let per = batch.div_ceil(rayon::current_num_threads()).max(1);
    for (c, chunk) in findings.chunks(batch).enumerate() {
        let rendered: Vec<String> = chunk
            .par_chunks(per)
            .enumerate()
            .map(|(j, part)| {
                let mut s = String::with_capacity(part.len() * 256);
                for (k, f) in part.iter().enumerate() {
                    text_finding(&mut s, f, previous(c * batch + j * per + k));
                }
                s
            })
            .collect();
        for part in &rendered {
            w.write_all(part.as_bytes())?;
        }
    }
    Ok(files)
}

/// One finding as text, after its file's name when `previous` (the finding before it)
/// is in another file.
fn text_finding(s: &mut String, f: &Finding, previous: Option<&str>) {
    use std::fmt::Write as _;
    if previous != Some(f.file.as_str()) {
        if previous.is_some() {
            s.push('\n');
        }
        s.push_str(&crate::diff::quote_path(&f.file));
        s.push('\n');
    }
    // Text from the repository is shown with its control and bidi characters escaped.
    let _ = write!(s, "  line {}: {} [{}] ", f.line, f.rule, f.severity.as_str());
    push_escaped(s, &f.symbol);
    s.push_str("\n    - ");
    push_escaped(s, if f.before.is_empty() { "(nothing)" } else { &f.before });
    s.push_str("\n    + ");
    push_escaped(s, if f.after.is_empty() { "(removed)" } else { &f.after });
    if !f.before.is_empty() && !f.after.is_empty() {
        s.push_str("\n    ~ ");
        push_escaped(s, &inline_diff(&f.before, &f.after));
    }
    s.push_str("\n    ");
    push_escaped(s, &f.message);
    s.push('\n');
    // Across layers: each other declaration of the field still holding the old constraint.
    for l in &f.linked {
        s.push_str("    still held at ");
        push_escaped(s, &format!("{}:{} {}", crate::diff::quote_path(&l.path), l.line, crate::report::linked_site(l)));
        s.push('\n');
    }
}

/// The demo: scan the change under review, then read the memories back.
pub(crate) fn demo_stage(d: &mut super::DemoRun) -> Result<()> {
    d.say("$ premerge scan --base HEAD~1 --issue 4")?;
    let out = d.with_ctx(b"", |c| {
        let repo = c.repo()?;
        let config = super::load_config(&repo)?;
        let range = RangeArgs { base: Some("HEAD~1".into()), ..Default::default() };
        let diff = range.diff(&repo)?;
        // The demo keeps to the embedded store: no external backend from a user's config.
        let out = scan_diff(&repo, &config, &diff, ScanOptions { issue: Some(4), memory: true, backend: false })?;
        write_text(c.stdout, &out)?;
        Ok(out)
    })?;
    if out.memory.written > 0 {
        d.say("\n$ premerge memory search --file src/query.rs")?;
        d.with_ctx(b"", |c| {
            let files = ["src/query.rs".to_string()];
            let memories =
                crate::memory::listing::read(&c.repo()?.state_dir(), Query::Search { words: None, files: &files })?;
            crate::memory::listing::print(c.stdout, &memories, Format::Text)
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::inline_diff;

    /// The streamed document is byte for byte the canonical line of the whole one.
    #[test]
    fn findings_are_streamed_as_the_canonical_document() {
        use crate::widen::{Language, Severity};
        let finding = |file: &str, symbol: &str| super::Finding {
            rule: "rust-integer-widened".into(),
            language: Language::Rust,
            file: file.into(),
            symbol: symbol.into(),
            line: 3,
            before: "limit: u8 \"q\" \u{e9}".into(),
            after: "limit: u64\n".into(),
            message: "m".into(),
            severity: Severity::Medium,
            linked: Vec::new(),
        };
        for findings in [vec![], vec![finding("a.rs", "A.b")], vec![finding("a.rs", "A.b"), finding("b/ü.rs", "x")]] {
            let rest = serde_json::json!({"schema_version": 1, "base": "b", "head": null, "notes": [{"file": "z"}],
                                          "memories_written": 0, "memories_skipped_duplicate": 0});
            let mut whole = rest.clone();
            whole["findings"] = serde_json::to_value(&findings).unwrap();
            let mut out = Vec::new();
            super::write_json_with_findings(&mut out, &rest, &|sink| sink(&findings)).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), crate::canonical::to_line(&whole).unwrap());
        }
        // Across batches and the parts of a batch, the same list in the same order.
        let many: Vec<super::Finding> = (0..23).map(|i| finding(&format!("f{i:02}.rs"), &format!("s{i}"))).collect();
        let expected = crate::canonical::to_compact(&many).unwrap();
        for batch in [1, 2, 5, 23, 100] {
            let mut out = vec![b'['];
            super::write_findings(&mut out, &many, batch, &mut true).unwrap();
            out.push(b']');
            assert_eq!(String::from_utf8(out).unwrap(), expected, "batch {batch}");
        }
    }

    /// Text is one finding after another whatever the batches: each file named once,
    /// a blank line between files, repository text escaped.
    #[test]
    fn text_findings_are_the_same_in_any_batches() {
        use crate::widen::{Language, Severity};
        let finding = |file: &str, symbol: &str, before: &str| super::Finding {
            rule: "rust-integer-widened".into(),
            language: Language::Rust,
            file: file.into(),
            symbol: symbol.into(),
            line: 3,
            before: before.into(),
            after: "limit: u64".into(),
            message: "m\u{202e}".into(),
            severity: Severity::Medium,
            linked: Vec::new(),
        };
        let three = [finding("a.rs", "A\u{1b}b", "limit: u8"), finding("a.rs", "B", ""), finding("b c.rs", "C", "x")];
        let mut out = Vec::new();
        assert_eq!(super::write_text_findings(&mut out, &|sink| sink(&three), 4096).unwrap(), 2);
        let expected = "a.rs\n\
            \x20 line 3: rust-integer-widened [medium] A\\u{1b}b\n    - limit: u8\n    + limit: u64\n\
            \x20   ~ limit: [-u8-]{+u64+}\n    m\\u{202e}\n\
            \x20 line 3: rust-integer-widened [medium] B\n    - (nothing)\n    + limit: u64\n    m\\u{202e}\n\
            \nb c.rs\n\
            \x20 line 3: rust-integer-widened [medium] C\n    - x\n    + limit: u64\n    ~ [-x-]{+limit: u64+}\n    m\\u{202e}\n";
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        // Files changing inside parts, at their edges and at a batch's edge.
        let many: Vec<super::Finding> =
            (0..41).map(|i| finding(&format!("f{}.rs", i * i / 50), &format!("s{i}"), "limit: u8")).collect();
        let mut whole = Vec::new();
        let files = super::write_text_findings(&mut whole, &|sink| sink(&many), 1000).unwrap();
        assert_eq!(files, 28);
        assert_eq!(String::from_utf8_lossy(&whole).lines().filter(|l| l.ends_with(".rs")).count(), files);
        for batch in [1, 2, 3, 7, 40, 41] {
            let mut out = Vec::new();
            assert_eq!(super::write_text_findings(&mut out, &|sink| sink(&many), batch).unwrap(), files);
            assert_eq!(out, whole, "batch {batch}");
            // Handed over in pieces (as the scan's store does), the same text.
            let mut out = Vec::new();
            let pieces = |sink: &mut dyn FnMut(&[super::Finding]) -> anyhow::Result<()>| {
                many.chunks(batch).try_for_each(&mut *sink)
            };
            assert_eq!(super::write_text_findings(&mut out, &pieces, batch).unwrap(), files);
            assert_eq!(out, whole, "pieces of {batch}");
        }
    }

    #[test]
    fn inline_diff_marks_changed_tokens() {
        assert_eq!(inline_diff("limit: u8", "limit: u64"), "limit: [-u8-]{+u64+}");
        assert_eq!(inline_diff("a: String", "a: Option<String>"), "a: [-String-]{+Option<String>+}");
        assert_eq!(inline_diff("x", "x"), "x");
        assert_eq!(inline_diff("a b c", "a"), "a[- b c-]");
        assert_eq!(inline_diff("", "u64"), "{+u64+}");
        assert_eq!(inline_diff("f(a, b)", "f(b)"), "[-f(a, b)-]{+f(b)+}");
        // Text that looks like a mark is the text's own.
        assert_eq!(inline_diff("x -][- y", "x -][- z"), "x -][- [-y-]{+z+}");
    }
}

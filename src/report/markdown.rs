//! Markdown for pull-request comments: the escaping of agent-written text, and the
//! reviewer's comment of one fix attempt (`premerge show attempt N --format markdown`).
//!
//! Everything an agent or a reviewer wrote (reasons, summaries, paths, owners) goes
//! through [`text`] or [`code`] before it reaches Markdown: no raw HTML tag, no link,
//! no image, no autolink, no mention, no table break. What premerge itself writes
//! (headings, counts, its own words) is the only Markdown in the output.

use std::collections::BTreeMap;

use crate::input::is_bidi_control;

/// The first line of every attempt comment: a pipeline finds the comment it posted
/// before by this line and edits it in place instead of adding another. Agent text can
/// never produce it (`<` is always escaped).
pub const ATTEMPT_MARKER: &str = "<!-- premerge:attempt-comment -->";

/// The most a comment may hold, in bytes: GitHub refuses a comment body longer than
/// 65,536 characters, and a character is at least one byte, so a body within this many
/// bytes is always accepted.
pub const MAX_COMMENT_BYTES: usize = 65_536;

/// Room kept for the truncation note at the end of a cut comment (the note is about
/// 250 bytes; the rest is margin).
const NOTE_RESERVE: usize = 512;

/// Characters of one piece of agent text shown in a cell; the rest is cut with `…`.
/// Long enough for any honest reason (a sentence or two), short enough that one
/// hostile row cannot fill the comment by itself.
pub const MAX_CELL_CHARS: usize = 500;

/// Zero-width joiner: put inside `://`, `www.` and after `@`, it stops GitHub from
/// turning a URL, an e-mail address or a mention in agent text into a link or a ping,
/// while the reader still sees the same characters.
const ZWJ: char = '\u{200d}';

/// ASCII punctuation that means something to Markdown (emphasis, links, images, code,
/// headings, tables, strikethrough, math): written with a backslash before it.
const BACKSLASHED: &[char] = &['\\', '`', '*', '_', '[', ']', '(', ')', '!', '#', '|', '~', '{', '}', '$', '^'];

fn push_visible_escape(out: &mut String, c: char) {
    use std::fmt::Write as _;
    let _ = write!(out, "\\u{{{:x}}}", c as u32);
}

/// `s` cut to [`MAX_CELL_CHARS`] characters.
fn capped(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(MAX_CELL_CHARS) {
        Some((at, _)) => format!("{}…", &s[..at]).into(),
        None => s.into(),
    }
}

/// Agent-written text as inline Markdown that renders as exactly that text: one line
/// (whitespace runs as one space), at most [`MAX_CELL_CHARS`] characters, HTML's `<`,
/// `>` and `&` as entities, Markdown's punctuation backslashed, URLs, `www.`, e-mail
/// addresses and mentions broken with a zero-width joiner, and control and bidi
/// characters shown as `\u{..}` escapes.
pub fn text(s: &str) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let s = capped(&one_line);
    let mut out = String::with_capacity(s.len() + 16);
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            ':' if chars.get(i + 1) == Some(&'/') && chars.get(i + 2) == Some(&'/') => {
                out.push(':');
                out.push(ZWJ);
            }
            '.' if i >= 3 && chars[i - 3..i].iter().collect::<String>().eq_ignore_ascii_case("www") => {
                out.push(ZWJ);
                out.push('.');
            }
            '@' => {
                out.push('@');
                out.push(ZWJ);
            }
            c if BACKSLASHED.contains(&c) => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() || is_bidi_control(c) => push_visible_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// A name (a path, a decision, a drop reason) as an inline code span, safe in a table cell:
/// a fence of backticks longer than any run inside, `|` as `\|` (GFM splits cells
/// before it reads code), control and bidi characters as `\u{..}` escapes, one line.
/// Inside a code span nothing is a link, a tag or emphasis.
pub fn code(s: &str) -> String {
    let s = capped(s);
    let mut inner = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => inner.push_str("\\|"),
            c if c.is_control() || is_bidi_control(c) => push_visible_escape(&mut inner, c),
            c => inner.push(c),
        }
    }
    let mut longest = 0;
    let mut run = 0;
    for c in inner.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    // A space on each side when the text starts or ends with a backtick or a space
    // (CommonMark strips exactly one from each side).
    let pad = if inner.starts_with(['`', ' ']) || inner.ends_with(['`', ' ']) || inner.is_empty() { " " } else { "" };
    format!("{fence}{pad}{inner}{pad}{fence}")
}

/// One row of the waves table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaveRow {
    pub wave: usize,
    pub owner: String,
    pub file: String,
    pub findings: usize,
    pub carried: usize,
}

/// One carried row: a fixer of `from` reported it needs `file` changed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarriedRow {
    pub file: String,
    pub from: String,
    pub reason: String,
}

/// What the fence recorded for the attempt, when it recorded anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceResult {
    /// Which check: `fence check` or `pre-push` (the hook).
    pub source: String,
    /// The hook's `shadow` or `enforce`; `None` for `fence check`, which always decides.
    pub mode: Option<String>,
    pub refused: bool,
    pub strays: Vec<String>,
}

/// One attempt, as the comment shows it; gathered from the run directory by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptView {
    pub attempt: u32,
    /// `classified-NN.json`'s counts: total, blocker, suggestion, carried.
    pub totals: [usize; 4],
    /// The wave plan's rows; `Err` with the reason when there is no readable plan.
    pub waves: Result<Vec<WaveRow>, String>,
    pub wave_count: usize,
    pub carried: Vec<CarriedRow>,
    /// Blocked-on rows dropped, by reason.
    pub blocked_on_dropped: BTreeMap<String, usize>,
    /// Findings of the input dropped, by reason.
    pub findings_dropped: BTreeMap<String, usize>,
    /// The last fence result recorded for the attempt.
    pub fence: Option<FenceResult>,
    /// The last converge decision recorded for the attempt.
    pub converge: Option<String>,
}

impl Default for AttemptView {
    fn default() -> Self {
        AttemptView {
            attempt: 1,
            totals: [0; 4],
            waves: Ok(Vec::new()),
            wave_count: 0,
            carried: Vec::new(),
            blocked_on_dropped: BTreeMap::new(),
            findings_dropped: BTreeMap::new(),
            fence: None,
            converge: None,
        }
    }
}

/// The comment of one attempt: the marker line, a summary, the waves, the carried rows
/// with their reasons, the drops by reason, the fence's result and the converge
/// decision; cut at a line to at most [`MAX_COMMENT_BYTES`] with a note saying so.
pub fn attempt_comment(v: &AttemptView) -> String {
    let nn = crate::store::nn(v.attempt);
    let mut lines: Vec<String> =
        vec![ATTEMPT_MARKER.to_string(), format!("### premerge: fix attempt {nn}"), String::new()];
    let [total, blocker, suggestion, carried] = v.totals;
    lines.push(format!(
        "- **Findings**: {total} ({blocker} blocker, {suggestion} suggestion, {carried} carried from the previous attempt)"
    ));
    lines.push(format!(
        "- **Fence**: {}",
        match &v.fence {
            None => "not run (no fence result is recorded for this attempt)".to_string(),
            Some(f) => {
                let how = match &f.mode {
                    Some(m) => format!("{}, {}", code(&f.source), code(m)),
                    None => code(&f.source),
                };
                if f.refused {
                    format!("refused, {} stray path(s) ({how})", f.strays.len())
                } else if f.strays.is_empty() {
                    format!("ok ({how})")
                } else {
                    format!("{} stray path(s), not refused ({how})", f.strays.len())
                }
            }
        }
    ));
    lines.push(format!(
        "- **Converge**: {}",
        v.converge.as_deref().map(code).unwrap_or_else(|| "not recorded (premerge converge has not run)".into())
    ));
    lines.push(String::new());
    match &v.waves {
        Ok(rows) => {
            lines.push(format!("#### Waves: {} file(s) in {} wave(s)", rows.len(), v.wave_count));
            lines.push(String::new());
            lines.push("| wave | owner | file | findings | carried |".into());
            lines.push("|---:|---|---|---:|---:|".into());
            for r in rows {
                lines.push(format!(
                    "| {} | {} | {} | {} | {} |",
                    r.wave,
                    text(&r.owner),
                    code(&r.file),
                    r.findings,
                    r.carried
                ));
            }
        }
        Err(why) => {
            lines.push("#### Waves".into());
            lines.push(String::new());
            lines.push(format!("No readable wave plan: the fence allows nothing. {}", text(why)));
        }
    }
    lines.push(String::new());
    lines.push(format!("#### Carried rows: {}", v.carried.len()));
    if !v.carried.is_empty() {
        lines.push(String::new());
        lines.push("| file | carried from | reason (the fixer's words) |".into());
        lines.push("|---|---|---|".into());
        for c in &v.carried {
            lines.push(format!("| {} | {} | {} |", code(&c.file), code(&c.from), text(&c.reason)));
        }
    }
    for (title, drops) in
        [("Blocked-on rows dropped", &v.blocked_on_dropped), ("Findings dropped", &v.findings_dropped)]
    {
        lines.push(String::new());
        let n: usize = drops.values().sum();
        lines.push(format!("#### {title}: {n}"));
        if !drops.is_empty() {
            lines.push(String::new());
            lines.push("| reason | rows |".into());
            lines.push("|---|---:|".into());
            for (reason, n) in drops {
                lines.push(format!("| {} | {n} |", code(reason)));
            }
        }
    }
    if let Some(f) = v.fence.as_ref().filter(|f| !f.strays.is_empty()) {
        lines.push(String::new());
        lines.push("#### Stray paths".into());
        lines.push(String::new());
        for s in &f.strays {
            lines.push(format!("- {}", code(s)));
        }
    }
    fit(&lines, v.attempt)
}

/// The lines joined, cut at a line so the whole stays within [`MAX_COMMENT_BYTES`],
/// with a note saying how much was left out.
fn fit(lines: &[String], attempt: u32) -> String {
    let whole: usize = lines.iter().map(|l| l.len() + 1).sum();
    if whole <= MAX_COMMENT_BYTES {
        let mut out = lines.join("\n");
        out.push('\n');
        return out;
    }
    let mut out = String::with_capacity(MAX_COMMENT_BYTES);
    let mut shown = 0;
    for l in lines {
        if out.len() + l.len() + 1 > MAX_COMMENT_BYTES - NOTE_RESERVE {
            break;
        }
        out.push_str(l);
        out.push('\n');
        shown += 1;
    }
    out.push_str(&format!(
        "\n_Truncated: {shown} of {} lines shown (a comment holds at most {MAX_COMMENT_BYTES} characters); \
         `premerge show attempt {attempt}` on the run directory prints the whole attempt._\n",
        lines.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_has_no_tag_link_image_or_mention() {
        let t = text(
            "see <img src=https://evil.example/p.png> [approve](https://evil.example) ![x](y) @admin www.x.io *b* `c` | d",
        );
        for raw in ["<img", "](", "![", "https://", "www.", "@admin", "*b*", "`c`", " | "] {
            assert!(!t.contains(raw), "{raw} in {t}");
        }
        assert!(t.contains("&lt;img src=https:\u{200d}//evil.example/p.png&gt;"), "{t}");
        assert_eq!(text("a\n\n b\u{1b}[2J"), "a b\\u{1b}\\[2J");
    }

    #[test]
    fn code_spans_hold_any_name() {
        assert_eq!(code("src/a.rs"), "`src/a.rs`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a|b\u{202e}"), "`a\\|b\\u{202e}`");
    }

    #[test]
    fn a_long_comment_is_cut_at_a_line_with_a_note() {
        let rows: Vec<CarriedRow> = (0..2000)
            .map(|i| CarriedRow { file: format!("f{i}.rs"), from: "a.rs".into(), reason: "r".repeat(400) })
            .collect();
        let v = AttemptView { attempt: 2, carried: rows, waves: Ok(Vec::new()), ..Default::default() };
        let c = attempt_comment(&v);
        assert!(c.len() <= MAX_COMMENT_BYTES, "{}", c.len());
        assert!(c.starts_with(&format!("{ATTEMPT_MARKER}\n")));
        assert!(c.contains("_Truncated: "), "{}", &c[c.len() - 300..]);
        assert!(c.ends_with("prints the whole attempt._\n"));
    }
}

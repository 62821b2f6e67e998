//! Marker blocks in agent instruction files (`AGENTS.md`, `CLAUDE.md`).
//!
//! Each block sits between `<!-- PREMERGE:<ID> -->` and `<!-- /PREMERGE:<ID> -->`
//! inside a named section. Detection is by the exact start-marker text, so running
//! the migration again never adds a second copy; a pins file names blocks the
//! migration must leave alone. Pure text in, text out.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// The agent instruction files premerge retrofits, at the repository root.
pub const FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];
/// Where pins live, relative to the repository root.
pub const PINS_PATH: &str = ".premerge/pins.json";

/// One block premerge maintains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The `<ID>` of its markers.
    pub id: &'static str,
    /// Title of the section it belongs in (matched case-insensitively, any level).
    pub section: &'static str,
    /// The text between the markers.
    pub body: &'static str,
}

/// Every block, in the order they are applied.
pub const BLOCKS: &[Block] = &[
    Block {
        id: "GUARD-MEMORY-SEARCH",
        section: "Before analysing a file",
        body: "Before an explore or fixer agent analyses a file, it runs \
`premerge memory search --file <path>` and reads the guard memories printed: each one \
records an invariant that an earlier change removed or widened in that file, and a fix \
must not undo or repeat it silently.",
    },
    Block {
        id: "NO-HALFWAY-STOP",
        section: "Anti-patterns",
        body: "Stopping halfway. A durable plan file and recent commits mean the work \
continues; context running low is not a reason to stop. Commit what is done, bring the \
plan up to date, and carry on until the plan is finished or a real blocker is named.",
    },
];

pub fn start_marker(id: &str) -> String {
    format!("<!-- PREMERGE:{id} -->")
}

pub fn end_marker(id: &str) -> String {
    format!("<!-- /PREMERGE:{id} -->")
}

/// The whole block, markers included, ending in a newline.
pub fn block_text(b: &Block) -> String {
    format!("{}\n{}\n{}\n", start_marker(b.id), b.body, end_marker(b.id))
}

/// SHA-256 (lowercase hex) of [`block_text`]: what a pin records.
pub fn content_hash(b: &Block) -> String {
    let digest = Sha256::digest(block_text(b).as_bytes());
    digest.iter().map(|x| format!("{x:02x}")).collect()
}

/// How many times the start marker of `id` occurs.
pub fn count(text: &str, id: &str) -> usize {
    text.matches(&start_marker(id)).count()
}

/// What [`inject`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Injected {
    /// The start marker is already there: nothing changed.
    AlreadyPresent,
    /// Inserted at the end of the existing section.
    IntoSection,
    /// The section was missing: appended at the end of the file with the block.
    AppendedSection,
}

/// Byte offset and level of each ATX heading line, outside fenced code blocks.
fn headings(text: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut fence: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim_end_matches(['\n', '\r']);
        let trimmed = t.trim_start();
        if let Some(f) = fence {
            if trimmed.starts_with(f) {
                fence = None;
            }
        } else if trimmed.starts_with("```") {
            fence = Some("```");
        } else if trimmed.starts_with("~~~") {
            fence = Some("~~~");
        } else if t.starts_with('#') {
            let level = t.chars().take_while(|c| *c == '#').count();
            let rest = &t[level..];
            if level <= 6 && (rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
                let title = rest.trim().trim_end_matches('#').trim().to_string();
                out.push((offset, level, title));
            }
        }
        offset += line.len();
    }
    out
}

/// Insert block `b` into its section of `text` (or append the section), unless its
/// start marker is already present.
pub fn inject(text: &str, b: &Block) -> (String, Injected) {
    if text.contains(&start_marker(b.id)) {
        return (text.to_string(), Injected::AlreadyPresent);
    }
    let hs = headings(text);
    let found = hs.iter().position(|(_, _, title)| title.eq_ignore_ascii_case(b.section));
    let Some(i) = found else {
        let mut out = text.to_string();
        if !out.is_empty() {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            if !out.ends_with("\n\n") {
                out.push('\n');
            }
        }
        out.push_str(&format!("## {}\n\n", b.section));
        out.push_str(&block_text(b));
        return (out, Injected::AppendedSection);
    };
    let level = hs[i].1;
    let next = hs[i + 1..].iter().find(|(_, l, _)| *l <= level).map(|(off, _, _)| *off);
    let mut out = String::with_capacity(text.len() + 512);
    match next {
        Some(off) => {
            let before = &text[..off];
            out.push_str(before);
            if !before.ends_with("\n\n") {
                out.push('\n');
            }
            out.push_str(&block_text(b));
            out.push('\n');
            out.push_str(&text[off..]);
        }
        None => {
            out.push_str(text);
            if !out.ends_with('\n') {
                out.push('\n');
            }
            if !out.ends_with("\n\n") {
                out.push('\n');
            }
            out.push_str(&block_text(b));
        }
    }
    (out, Injected::IntoSection)
}

/// Remove every complete block `id` (start marker line through end marker line) and
/// the one blank line that separated it. Returns the text and how many were removed;
/// a start marker without its end marker is left as it is.
pub fn remove(text: &str, id: &str) -> (String, usize) {
    let start = start_marker(id);
    let end = end_marker(id);
    let mut out = text.to_string();
    let mut removed = 0;
    let mut from = 0;
    while let Some(rel) = out[from..].find(&start) {
        let s_at = from + rel;
        let line_start = out[..s_at].rfind('\n').map_or(0, |p| p + 1);
        let Some(e_rel) = out[s_at..].find(&end) else { break };
        let e_at = s_at + e_rel + end.len();
        let mut line_end = out[e_at..].find('\n').map_or(out.len(), |p| e_at + p + 1);
        let mut cut_start = line_start;
        if out[line_end..].starts_with('\n') {
            line_end += 1;
        } else if out[..cut_start].ends_with("\n\n") {
            cut_start -= 1;
        }
        out.replace_range(cut_start..line_end, "");
        removed += 1;
        from = cut_start;
    }
    (out, removed)
}

/// One pin: the block the user has taken over, and when.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct Pin {
    #[serde(rename = "contentHash", default)]
    pub content_hash: String,
    #[serde(rename = "pinnedAt", default)]
    pub pinned_at: String,
}

/// Parse `.premerge/pins.json`: `{"<ID>": {"contentHash": "...", "pinnedAt": "..."}}`.
/// The error is a one-line reason; the caller treats the pins as empty.
pub fn parse_pins(text: &str) -> Result<BTreeMap<String, Pin>, String> {
    serde_json::from_str::<BTreeMap<String, Pin>>(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEM: Block = BLOCKS[0];
    const STOP: Block = BLOCKS[1];

    #[test]
    fn injects_inside_the_named_section_before_the_next_heading_of_its_level() {
        let text = "# Agents\n\n## Anti-patterns\n\n- no apologies\n\n### Detail\n\nx\n\n## Tools\n\nt\n";
        let (out, how) = inject(text, &STOP);
        assert_eq!(how, Injected::IntoSection);
        let block_at = out.find(&start_marker(STOP.id)).unwrap();
        assert!(out.find("### Detail").unwrap() < block_at, "a deeper heading stays inside the section");
        assert!(block_at < out.find("## Tools").unwrap());
        assert!(out.contains("x\n\n<!-- PREMERGE:NO-HALFWAY-STOP -->\n"));
        assert!(out.contains("<!-- /PREMERGE:NO-HALFWAY-STOP -->\n\n## Tools\n"));
        let (again, how) = inject(&out, &STOP);
        assert_eq!((again.as_str(), how), (out.as_str(), Injected::AlreadyPresent));
        assert_eq!(count(&again, STOP.id), 1);
        assert_eq!(remove(&out, STOP.id), (text.to_string(), 1), "removal restores the bytes");
    }

    #[test]
    fn appends_the_section_when_missing() {
        let text = "# Agents\n\nBe kind.";
        let (out, how) = inject(text, &MEM);
        assert_eq!(how, Injected::AppendedSection);
        assert!(out.starts_with(
            "# Agents\n\nBe kind.\n\n## Before analysing a file\n\n<!-- PREMERGE:GUARD-MEMORY-SEARCH -->\n"
        ));
        assert!(out.ends_with("<!-- /PREMERGE:GUARD-MEMORY-SEARCH -->\n"));
        let (empty, _) = inject("", &MEM);
        assert!(empty.starts_with("## Before analysing a file\n\n"));
    }

    #[test]
    fn section_at_end_of_file() {
        let text = "## anti-patterns\n- one\n";
        let (out, how) = inject(text, &STOP);
        assert_eq!(how, Injected::IntoSection);
        assert!(out.starts_with("## anti-patterns\n- one\n\n<!-- PREMERGE:NO-HALFWAY-STOP -->\n"));
        assert_eq!(remove(&out, STOP.id), (text.to_string(), 1));
    }

    #[test]
    fn headings_in_code_fences_do_not_count() {
        let text = "```\n## Anti-patterns\n```\n";
        assert_eq!(inject(text, &STOP).1, Injected::AppendedSection);
    }

    #[test]
    fn remove_takes_every_copy_and_leaves_a_torn_block() {
        let two = format!("a\n\n{}\n{}", block_text(&MEM), block_text(&MEM));
        let (out, n) = remove(&two, MEM.id);
        assert_eq!((out.as_str(), n), ("a\n", 2));
        let torn = format!("a\n{}\n", start_marker(MEM.id));
        assert_eq!(remove(&torn, MEM.id), (torn.clone(), 0));
    }

    #[test]
    fn pins_parse_and_reject_malformed() {
        let p =
            parse_pins(r#"{"NO-HALFWAY-STOP": {"contentHash": "ab", "pinnedAt": "2026-01-01T00:00:00Z"}}"#).unwrap();
        assert_eq!(p["NO-HALFWAY-STOP"].content_hash, "ab");
        assert!(parse_pins("{not json").is_err());
        assert!(parse_pins(r#"["NO-HALFWAY-STOP"]"#).is_err());
        assert!(parse_pins(r#"{"X": 3}"#).is_err());
    }

    #[test]
    fn content_hash_is_stable_hex() {
        let h = content_hash(&MEM);
        assert_eq!(h.len(), 64);
        assert!(h.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }
}

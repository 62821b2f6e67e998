//! Marker blocks in agent instruction files (`AGENTS.md`, `CLAUDE.md`).
//!
//! Each block sits between `<!-- PREMERGE:<ID> -->` and `<!-- /PREMERGE:<ID> -->`
//! inside a named section. Detection is by the exact start-marker text, so running
//! the migration again never adds a second copy; a pins file names blocks the
//! migration must leave alone. Pure text in, text out, except [`write_through`]:
//! the one writer of agent-facing files (agent docs, `.claude/settings.json`), which
//! follows symlinks and keeps the file's mode.
//!
//! Blocks are written with the file's own line ending (CRLF files stay CRLF), and a
//! section premerge appended is removed with its last block, so an uninstall gives
//! back the file's bytes.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow};

/// The agent instruction files premerge retrofits, at the repository root.
pub(crate) const FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];
/// Where pins live, relative to the repository root.
pub(crate) const PINS_PATH: &str = ".premerge/pins.json";

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
pub(crate) const BLOCKS: &[Block] = &[
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

/// Ends the heading of a section premerge created, so an uninstall removes that
/// section (once empty) and never a section the user wrote. Hidden when rendered.
pub(crate) const CREATED_MARK: &str = "<!-- premerge -->";

/// The heading line of a section premerge creates (LF).
fn created_heading(section: &str) -> String {
    format!("## {section} {CREATED_MARK}\n")
}

pub(crate) fn start_marker(id: &str) -> String {
    format!("<!-- PREMERGE:{id} -->")
}

pub(crate) fn end_marker(id: &str) -> String {
    format!("<!-- /PREMERGE:{id} -->")
}

/// The whole block, markers included, ending in a newline.
pub(crate) fn block_text(b: &Block) -> String {
    format!("{}\n{}\n{}\n", start_marker(b.id), b.body, end_marker(b.id))
}

/// The line ending of a text: CRLF when its first line ends so, else LF.
pub(crate) fn line_ending(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// `s` (written with LF) in line ending `eol`.
fn with_eol(s: &str, eol: &str) -> String {
    if eol == "\n" { s.to_string() } else { s.replace('\n', eol) }
}

/// SHA-256 (lowercase hex) of [`block_text`]: what a pin records.
#[cfg(test)]
pub(crate) fn content_hash(b: &Block) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(block_text(b).as_bytes());
    digest.iter().map(|x| format!("{x:02x}")).collect()
}

/// How many times the start marker of `id` occurs.
pub fn count(text: &str, id: &str) -> usize {
    text.matches(&start_marker(id)).count()
}

/// What [`inject`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Injected {
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
                let rest = rest.trim();
                let rest = rest.strip_suffix(CREATED_MARK).unwrap_or(rest);
                let title = rest.trim().trim_end_matches('#').trim().to_string();
                out.push((offset, level, title));
            }
        }
        offset += line.len();
    }
    out
}

/// Insert block `b` into its section of `text` (or append the section), unless its
/// start marker is already present. What is inserted uses the text's line ending, and
/// is exactly what [`remove_block`] takes out again: inside a section, the block and
/// the line ending after it; at the end of the file, a blank line and the block; a new
/// section, a blank line, its marked heading, a blank line and the block.
pub(crate) fn inject(text: &str, b: &Block) -> (String, Injected) {
    if text.contains(&start_marker(b.id)) {
        return (text.to_string(), Injected::AlreadyPresent);
    }
    let eol = line_ending(text);
    let nl = |s: &str| with_eol(s, eol);
    let block = nl(&block_text(b));
    // At the end of the file: a final newline if it lacks one (the one byte an
    // uninstall cannot know was missing), then a blank line.
    let at_end = |out: &mut String| {
        if !out.is_empty() {
            if !out.ends_with('\n') {
                out.push_str(eol);
            }
            out.push_str(eol);
        }
    };
    let hs = headings(text);
    let found = hs.iter().position(|(_, _, title)| title.eq_ignore_ascii_case(b.section));
    let Some(i) = found else {
        let mut out = text.to_string();
        at_end(&mut out);
        out.push_str(&nl(&created_heading(b.section)));
        out.push_str(eol);
        out.push_str(&block);
        return (out, Injected::AppendedSection);
    };
    let level = hs[i].1;
    let next = hs[i + 1..].iter().find(|(_, l, _)| *l <= level).map(|(off, _, _)| *off);
    let mut out = String::with_capacity(text.len() + 512);
    match next {
        Some(off) => {
            out.push_str(&text[..off]);
            out.push_str(&block);
            out.push_str(eol);
            out.push_str(&text[off..]);
        }
        None => {
            out.push_str(text);
            at_end(&mut out);
            out.push_str(&block);
        }
    }
    (out, Injected::IntoSection)
}

/// Remove every complete block `id` (start marker line through end marker line) and
/// the one blank line that separated it; then, when block `b`'s section is left with
/// nothing but blank lines and is exactly the section [`inject`] appends
/// (`## <section>` at the end of the file), that section and the blank line before
/// it go too. Returns the text and how many blocks were removed; a start marker
/// without its end marker is left as it is.
pub(crate) fn remove_block(text: &str, b: &Block) -> (String, usize) {
    let (mut out, n) = remove(text, b.id);
    if n == 0 {
        return (out, 0);
    }
    let eol = line_ending(text);
    let heading = with_eol(&created_heading(b.section), eol);
    let found = if out.starts_with(&heading) { Some(0) } else { out.find(&format!("\n{heading}")).map(|i| i + 1) };
    let Some(h) = found else { return (out, n) };
    let body_start = h + heading.len();
    let body_end = out[body_start..].find("\n#").map_or(out.len(), |i| body_start + i + 1);
    if !out[body_start..body_end].chars().all(|c| c == '\n' || c == '\r') {
        return (out, n);
    }
    if body_end < out.len() {
        // Another section follows: the heading and its blank lines go.
        out.replace_range(h..body_end, "");
    } else {
        let blank = format!("{eol}{eol}");
        let cut = if out[..h].ends_with(&blank) { h - eol.len() } else { h };
        out.truncate(cut);
    }
    (out, n)
}

/// Remove every complete block `id` (start marker line through end marker line) and
/// the one blank line that separated it. Returns the text and how many were removed;
/// a start marker without its end marker is left as it is.
pub fn remove(text: &str, id: &str) -> (String, usize) {
    let start = start_marker(id);
    let end = end_marker(id);
    let eol = line_ending(text);
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
        let blank = format!("{eol}{eol}");
        if out[line_end..].starts_with(eol) {
            line_end += eol.len();
        } else if out[..cut_start].ends_with(&blank) {
            cut_start -= eol.len();
        }
        out.replace_range(cut_start..line_end, "");
        removed += 1;
        from = cut_start;
    }
    (out, removed)
}

/// Write `bytes` to the file `path` names, through any symlinks: the link stays a
/// link and its target is replaced atomically (temporary file in the target's
/// directory, fsync, rename), keeping the target's mode (`new_mode` for a new file).
pub(crate) fn write_through(path: &Path, bytes: &[u8], new_mode: u32) -> Result<()> {
    let target = crate::store::contain::resolve(path)?;
    let mode = fs::metadata(&target).map(|m| m.permissions().mode() & 0o7777).unwrap_or(new_mode);
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create directory", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".premerge-tmp-")
        .tempfile_in(&dir)
        .with_context(|| format!("{}: not writable", dir.display()))?;
    tmp.write_all(bytes).with_context(|| format!("{}: write failed", target.display()))?;
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(mode))
        .with_context(|| format!("{}: cannot set file mode", target.display()))?;
    tmp.as_file().sync_all().with_context(|| format!("{}: fsync failed", target.display()))?;
    tmp.persist(&target).map_err(|e| anyhow!("{}: rename into place failed: {}", target.display(), e.error))?;
    if let Ok(d) = fs::File::open(&dir) {
        // Durability of the rename only; a refusal costs nothing else.
        let _ = d.sync_all();
    }
    Ok(())
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
            "# Agents\n\nBe kind.\n\n## Before analysing a file <!-- premerge -->\n\n<!-- PREMERGE:GUARD-MEMORY-SEARCH -->\n"
        ));
        assert!(out.ends_with("<!-- /PREMERGE:GUARD-MEMORY-SEARCH -->\n"));
        let (empty, _) = inject("", &MEM);
        assert!(empty.starts_with("## Before analysing a file <!-- premerge -->\n\n"));
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
    fn crlf_files_get_crlf_blocks_and_uninstall_restores_them() {
        let text = "# Agents\r\n\r\n## Anti-patterns\r\n\r\n- one\r\n\r\n## Tools\r\n\r\nt\r\n";
        let (out, _) = inject(text, &STOP);
        let (out, _) = inject(&out, &MEM);
        assert!(!out.replace("\r\n", "").contains('\n'), "every line ends CRLF: {out:?}");
        let (back, _) = remove_block(&out, &MEM);
        let (back, _) = remove_block(&back, &STOP);
        assert_eq!(back, text);
    }

    #[test]
    fn uninstall_removes_the_sections_it_created_byte_for_byte() {
        for text in ["# Agents\n\nBe kind.\n", "", "# A\n\n## Tools\n\nx\n\n", "# A\r\n\r\nB\r\n"] {
            let mut out = text.to_string();
            for b in BLOCKS {
                out = inject(&out, b).0;
            }
            assert!(out.contains("## Anti-patterns") && out.contains("## Before analysing a file"));
            for b in BLOCKS.iter().rev() {
                out = remove_block(&out, b).0;
            }
            assert_eq!(out, text, "restored byte for byte");
        }
        // A section the user wrote stays, even when premerge's block was its only content.
        for mine in ["# A\n\n## Anti-patterns\n", "# A\n## Anti-patterns\n## Tools\nx\n", "x\n\n## Anti-patterns\n\n\n"]
        {
            let (out, how) = inject(mine, &STOP);
            assert_eq!(how, Injected::IntoSection);
            assert_eq!(remove_block(&out, &STOP).0, mine);
        }
        // Removing in install order works too, and a second install finds the marked section.
        let mut out = "A\n".to_string();
        for b in BLOCKS {
            out = inject(&out, b).0;
        }
        assert!(out.contains("## Anti-patterns <!-- premerge -->"), "{out}");
        let (again, how) = inject(&out, &STOP);
        assert_eq!((again.as_str(), how), (out.as_str(), Injected::AlreadyPresent));
        for b in BLOCKS {
            out = remove_block(&out, b).0;
        }
        assert_eq!(out, "A\n");
    }

    #[test]
    fn writes_go_through_symlinks_and_keep_the_mode() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("dotfiles/settings.json");
        fs::create_dir_all(real.parent().unwrap()).unwrap();
        fs::write(&real, "{}").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        let link = d.path().join("settings.json");
        std::os::unix::fs::symlink("dotfiles/settings.json", &link).unwrap();
        write_through(&link, b"{\"a\":1}", 0o644).unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "{\"a\":1}");
        assert_eq!(fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o640);
        let new = d.path().join("new.json");
        write_through(&new, b"x", 0o644).unwrap();
        assert_eq!(fs::metadata(&new).unwrap().permissions().mode() & 0o777, 0o644);
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

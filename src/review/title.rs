//! Title normalisation: two findings that say the same thing about different files
//! must get the same title, so the file-specific parts of a title are removed.
//!
//! What is removed: paths, file names with an extension, `path:line:col`, line and
//! column numbers, back-quoted or quoted identifiers, numbers, hex, UUIDs, and the
//! words that only introduce such a location (`in src/a.rs`, `at line 4`,
//! `(src/c.rs:88)`, `for foo.ts`). What remains is lowercased, with punctuation and
//! whitespace collapsed to single spaces.

/// Words that only introduce a location when the next word is file-specific.
const LOCATION_WORDS: &[&str] =
    &["at", "col", "column", "columns", "file", "files", "for", "from", "in", "line", "lines", "ln", "of", "on", "to"];

/// Normalise a finding title. A title that is nothing but file-specific tokens keeps
/// its lowercased, collapsed form, so it never clusters with unrelated findings.
pub fn normalise(title: &str) -> String {
    let lower = title.to_lowercase();
    let unquoted = strip_quoted(&lower);
    let words: Vec<&str> = unquoted.split_whitespace().collect();
    let mut keep: Vec<bool> = words.iter().map(|w| !is_file_specific(w)).collect();
    // Backwards, so chains like `in file src/a.rs` and `at line 4` fall together.
    for i in (0..words.len()).rev() {
        let next_dropped = i + 1 < words.len() && !keep[i + 1];
        if keep[i] && next_dropped && LOCATION_WORDS.contains(&core(words[i])) {
            keep[i] = false;
        }
    }
    let kept: Vec<&str> = words.iter().zip(&keep).filter(|(_, k)| **k).map(|(w, _)| *w).collect();
    let out = collapse(&kept.join(" "));
    if out.is_empty() { collapse(&lower) } else { out }
}

/// Replace back-quoted and double-quoted spans, and single-quoted spans that open at
/// a word boundary (so `doesn't` survives), with a placeholder word that counts as
/// file-specific.
fn strip_quoted(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let opens = match c {
            '`' | '"' | '\u{201c}' => true,
            '\'' | '\u{2018}' => i == 0 || !chars[i - 1].is_alphanumeric(),
            _ => false,
        };
        if opens {
            let close = match c {
                '\u{201c}' => '\u{201d}',
                '\u{2018}' => '\u{2019}',
                other => other,
            };
            if let Some(len) = chars[i + 1..].iter().position(|&x| x == close) {
                out.push_str(" \u{0}q ");
                i += len + 2;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// A word without the punctuation around it.
fn core(w: &str) -> &str {
    w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\u{0}' && c != '/' && c != '\\' && c != '_')
}

fn is_file_specific(word: &str) -> bool {
    let w = core(word);
    if w.is_empty() {
        // Pure punctuation: keep (collapsed away later), never an anchor for a location word.
        return false;
    }
    if w.contains('\u{0}') || w.contains('/') || w.contains('\\') {
        return true;
    }
    // `name.ext`, `name.ext:12`, `name.ext:12:4`, `#12`, `l12`, `12`, `0x1f`, hex, uuid.
    let head = w.split(':').next().unwrap_or(w);
    let rest_numeric = w.split(':').skip(1).all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if w.contains(':') && rest_numeric {
        return true;
    }
    if looks_like_file_name(head) || is_number(head) || is_hex(head) || is_uuid(head) {
        return true;
    }
    false
}

fn looks_like_file_name(w: &str) -> bool {
    match w.rsplit_once('.') {
        Some((name, ext)) => {
            !name.is_empty()
                && (1..=6).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        }
        None => false,
    }
}

fn is_number(w: &str) -> bool {
    let w = w.strip_prefix('#').unwrap_or(w);
    // `l12` (a line reference as GitHub writes it) counts too.
    let w = w.strip_prefix('l').filter(|r| !r.is_empty()).unwrap_or(w);
    !w.is_empty()
        && w.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',')
        && w.chars().any(|c| c.is_ascii_digit())
}

fn is_hex(w: &str) -> bool {
    if let Some(h) = w.strip_prefix("0x") {
        return !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit());
    }
    w.len() >= 7 && w.chars().all(|c| c.is_ascii_hexdigit()) && w.chars().any(|c| c.is_ascii_digit())
}

fn is_uuid(w: &str) -> bool {
    let parts: Vec<&str> = w.split('-').collect();
    parts.len() == 5
        && parts.iter().zip([8, 4, 4, 4, 12]).all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Punctuation becomes space; runs of space become one.
fn collapse(s: &str) -> String {
    let spaced: String = s.chars().map(|c| if c.is_alphanumeric() { c } else { ' ' }).collect();
    spaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::normalise;

    #[test]
    fn location_forms_fall_away() {
        let want = "duplicated sql filter builder";
        for t in [
            "Duplicated SQL filter builder in src/a.rs",
            "duplicated sql filter builder (src/c.rs:88)",
            "Duplicated SQL filter builder at line 4 of query.rs",
            "Duplicated SQL filter builder for foo.ts",
            "Duplicated `SqlFilter` SQL filter builder in file src/b/c.py:12:4",
            "Duplicated SQL filter builder (0x1f3a)",
            "Duplicated SQL filter builder 123e4567-e89b-12d3-a456-426614174000",
            "  Duplicated   SQL filter-builder: L42 ",
        ] {
            assert_eq!(normalise(t), want, "{t}");
        }
    }

    #[test]
    fn meaning_survives() {
        assert_eq!(normalise("Row mapper doesn't validate the id"), "row mapper doesn t validate the id");
        assert_ne!(normalise("Missing limit check"), normalise("Missing ratio check"));
        assert_eq!(normalise("'limit' is unchecked"), normalise("\"offset\" is unchecked"));
    }

    #[test]
    fn all_location_title_does_not_become_empty() {
        assert_eq!(normalise("src/a.rs:12"), "src a rs 12");
    }
}

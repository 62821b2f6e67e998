//! Escaping for the text formats reviewers read in a terminal or a CI log: every
//! control character (ESC, BEL, a newline where one line is expected) and every bidi
//! formatting character is shown as a visible escape (`\u{1b}`, `\u{202e}`), so text an
//! agent wrote can neither drive the terminal nor reorder what the reader sees.
//! Printable text, ASCII or not, is left as it is ([`crate::input::push_escaped`]).

use crate::input::push_escaped;

/// `s` with control and bidi characters escaped (a newline as `\n`): one line.
pub fn plain(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_escaped(&mut out, s);
    out
}

/// A table cell: runs of whitespace (newlines and tabs included) as one space, then
/// [`plain`], so a cell never breaks the table's line and never carries an escape.
pub fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, word) in s.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        push_escaped(&mut out, word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_and_bidi_are_visible_never_raw() {
        let hostile = "ok\u{1b}[2J\u{1b}]0;owned\u{7}\u{1b}[31mRED \u{202e}txt.exe\u{2066}\u{200f}";
        let c = cell(hostile);
        assert!(!c.chars().any(|ch| ch.is_control() || crate::input::is_bidi_control(ch)), "{c}");
        assert_eq!(c, "ok\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\u{1b}[31mRED \\u{202e}txt.exe\\u{2066}\\u{200f}");
        assert_eq!(cell(" a\n\tb  c "), "a b c");
        assert_eq!(plain("a\nb"), "a\\nb");
        assert_eq!(plain("caf\u{e9}"), "caf\u{e9}");
    }
}

//! A [`Report`] as GitHub workflow commands, one line per result:
//! `::error file=src/a.rs,line=3,title=rust-option-widened: Query.limit::<message>`
//! (`error`, `warning` or `notice` by level), which a GitHub Actions log turns into
//! annotations on the pull request's diff.
//!
//! Escapes as GitHub documents them for workflow commands: in the message `%` -> `%25`,
//! CR -> `%0D`, LF -> `%0A`; in a property also `:` -> `%3A` and `,` -> `%2C`. Every
//! other control character and every bidi formatting character is shown as a visible
//! escape (`\u{1b}`), so one result is always one command on one line and what an agent
//! wrote can neither start a command of its own nor colour the log.

use super::Report;
use crate::input::is_bidi_control;

/// Where an escape is written: the message after `::`, or a property value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Message,
    Property,
}

fn escape(s: &str, part: Part) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            ':' if part == Part::Property => out.push_str("%3A"),
            ',' if part == Part::Property => out.push_str("%2C"),
            c if c.is_control() || is_bidi_control(c) => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A message escaped for the part after `::`.
pub fn escape_message(s: &str) -> String {
    escape(s, Part::Message)
}

/// A value escaped for a property (`file=`, `title=`).
pub fn escape_property(s: &str) -> String {
    escape(s, Part::Property)
}

/// One workflow command per result, at its primary location, in the report's order.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for item in report.items() {
        out.push_str("::");
        out.push_str(item.level.github());
        let mut props = Vec::new();
        if let Some(l) = item.locations.first() {
            props.push(format!("file={}", escape_property(&crate::waves::fence::display_path_bytes(&l.path))));
            if let Some(line) = l.line.filter(|&n| n >= 1) {
                props.push(format!("line={line}"));
            }
        }
        props.push(format!("title={}", escape_property(&item.title)));
        out.push(' ');
        out.push_str(&props.join(","));
        out.push_str("::");
        out.push_str(&escape_message(&item.message));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_follow_the_workflow_command_rules() {
        assert_eq!(escape_message("50% done\r\nnext: a,b"), "50%25 done%0D%0Anext: a,b");
        assert_eq!(escape_property("50% a:b,c\n"), "50%25 a%3Ab%2Cc%0A");
        // An injected command stays inside the message's one line.
        let m = escape_message("x\n::error file=evil::pwned\u{1b}[31m");
        assert_eq!(m, "x%0A::error file=evil::pwned\\u{1b}[31m");
        assert!(!m.contains('\n'));
    }

    #[test]
    fn one_command_per_result_with_its_level() {
        let r = super::super::from_strays(&[b"a,b:c.rs".to_vec()], "attempt 2", false);
        assert_eq!(
            render(&r),
            "::error file=a%2Cb%3Ac.rs,title=fence-stray-path::a,b:c.rs changed outside the allowed set of attempt 2 (the files of its wave plan)\n"
        );
    }
}

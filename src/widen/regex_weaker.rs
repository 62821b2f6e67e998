//! Whether a regular expression was rewritten into a recognisably weaker one: the
//! same pattern with one piece changed so that it admits everything the old one did
//! and more. Only three shapes are recognised, each read from the text alone:
//!
//! - an anchor dropped: `^` at the start or `$` at the end removed;
//! - a quantifier widened: `+` made `*`, `?` made `*`, `{m,n}` made `{m,}` or given a
//!   larger `n` or a smaller `m`, a single atom given `+`, `*`, `?` or a range
//!   including one (`[a-z]` to `[a-z]+`).
//!
//! Anything else (two pieces changed, a class or an alternative rewritten) is not
//! judged: what the new pattern admits cannot be told without running both. Used by
//! the yup and valibot passes on `.matches(/.../)` and `v.regex(/.../)`.

/// The body of a JavaScript regular expression literal at the start of `s`
/// (`/^a+$/i` is `^a+$`); `None` when `s` does not start with one.
pub(super) fn literal(s: &str) -> Option<&str> {
    let rest = s.strip_prefix('/')?;
    let (mut escaped, mut class) = (false, false);
    for (i, c) in rest.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '[' => class = true,
            ']' => class = false,
            '/' if !class => return Some(&rest[..i]),
            _ => {}
        }
    }
    None
}

/// Whether a check keyed `method(/old/...)` became `method(/new/...)` with a weaker
/// pattern (the keys as the passes compact them).
pub(super) fn weakened(old_key: &str, new_key: &str, method: &str) -> bool {
    let body = |k: &str| k.strip_prefix(method).and_then(|k| k.strip_prefix('(')).and_then(literal).map(str::to_owned);
    matches!((body(old_key), body(new_key)), (Some(o), Some(n)) if weaker(&o, &n))
}

/// How many times a quantifier lets its atom repeat: (least, most; `None` unbounded).
/// The empty quantifier is once.
pub(crate) fn quantifier_range(q: &str) -> Option<(u64, Option<u64>)> {
    match q {
        "" => Some((1, Some(1))),
        "+" => Some((1, None)),
        "*" => Some((0, None)),
        "?" => Some((0, Some(1))),
        _ => {
            let inner = q.strip_prefix('{')?.strip_suffix('}')?;
            match inner.split_once(',') {
                None => inner.parse().ok().map(|n| (n, Some(n))),
                Some((m, "")) => Some((m.parse().ok()?, None)),
                Some((m, n)) => Some((m.parse().ok()?, Some(n.parse().ok()?))),
            }
        }
    }
}

/// Whether `new` admits everything `old` does and more, by one of the shapes above.
pub(super) fn weaker(old: &str, new: &str) -> bool {
    if old == new {
        return false;
    }
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let mut p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let max_s = a.len().min(b.len()) - p;
    let mut s = a.iter().rev().zip(b.iter().rev()).take(max_s).take_while(|(x, y)| x == y).count();
    // Whole characters only.
    while !old.is_char_boundary(p) || !new.is_char_boundary(p) {
        p -= 1;
    }
    while !old.is_char_boundary(old.len() - s) || !new.is_char_boundary(new.len() - s) {
        s -= 1;
    }
    // The changed piece widened to whole quantifiers: back to an unclosed `{` before
    // it, on to the `}` closing one after it.
    if let Some(open) = old[..p].rfind('{')
        && !old[open..p].contains('}')
    {
        p = open;
    }
    let tail = &old[old.len() - s..];
    if let Some(close) = tail.find('}')
        && !tail[..close].contains('{')
    {
        s -= close + 1;
    }
    let (old_mid, new_mid) = (&old[p..old.len() - s], &new[p..new.len() - s]);
    let prefix = &old[..p];
    // Inside a class or after an escape, these characters are not what they seem.
    if prefix.ends_with('\\') || prefix.rfind('[') > prefix.rfind(']') {
        return false;
    }
    match (old_mid, new_mid) {
        ("^", "") => return p == 0,
        ("$", "") => return s == 0,
        _ => {}
    }
    // A quantifier on the atom before it (an empty one: the atom once).
    if p == 0 || prefix.ends_with(['^', '(', '|']) {
        return false;
    }
    let (Some((om, on)), Some((nm, nn))) = (quantifier_range(old_mid), quantifier_range(new_mid)) else { return false };
    let upper_wider = match (on, nn) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(o), Some(n)) => n >= o,
    };
    nm <= om && upper_wider
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognisably_weaker_patterns_are_told() {
        for (old, new) in [
            ("^[a-z]+$", "[a-z]+$"),
            ("^[a-z]+$", "^[a-z]+"),
            ("^[a-z]+$", "^[a-z]*$"),
            ("^[a-z]{1,64}$", "^[a-z]{1,}$"),
            ("^[a-z]{1,64}$", "^[a-z]{1,128}$"),
            ("^[a-z]{2,64}$", "^[a-z]{0,64}$"),
            ("^[0-9]{6}$", "^[0-9]{4,6}$"),
            ("^[a-z]$", "^[a-z]+$"),
            ("^a?b$", "^a*b$"),
        ] {
            assert!(weaker(old, new), "{old} -> {new}");
        }
    }

    #[test]
    fn other_rewrites_and_narrowing_are_not() {
        for (old, new) in [
            ("^[a-z]*$", "^[a-z]+$"),
            ("^[a-z]{1,}$", "^[a-z]{1,64}$"),
            ("^[a-z]+$", "^[a-z0-9]+$"),
            ("^[a-z]+$", "^[A-Z]+$"),
            ("^a|b$", "^a|b|c$"),
            ("^[+]$", "^[*]$"),
            ("^\\+$", "^\\*$"),
            ("^[a-z]+$", "^[a-z]+$"),
            ("x^", "x"),
            ("^a$b", "^ab"),
        ] {
            assert!(!weaker(old, new), "{old} -> {new}");
        }
        assert_eq!(literal("/^a\\/b[/]+$/i, 'msg'"), Some("^a\\/b[/]+$"));
        assert_eq!(literal("SHARE_ID_REGEX"), None);
    }
}

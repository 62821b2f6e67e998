//! Silent early returns removed (`ts-early-return-removed`, `go-early-return-removed`,
//! `py-early-return-removed`): the comparison the three detectors share. Each detector
//! records the guards of its language whose body is only a return of nothing
//! (`if (closed) return;`, `if x == nil { return }`, `if not x: return`) apart from
//! its other checks, so that the guard rules' matching is exactly what it was without
//! them; this module judges which of them went.

use super::RawFinding;
use super::syntax::{Body, Check, removed_checks};

/// The early returns `before` of the old version (whose checks, owners, conditions and
/// calls are `b`) gone from the new one (`after`, `a`). Judged as the guard rules judge
/// a removed check ([`removed_checks`]: the function stays, the condition guards
/// nothing else in it, no reworded or moved check stands for it, no new call to a
/// checking helper took it), where the new version's other guards (a throw, a raise,
/// an error returned) count as places the condition may have gone; and not when the
/// function now returns early on a part of the old condition (`a && b` became `b`:
/// it returns in more cases, not fewer), nor when it has as many early returns as
/// before (`if self.is_hidden: return` reworded as `if self.hidden or not
/// self._is_atty: return` reads other names, and is still the same exit) unless the
/// new one keeps only some alternatives of the old condition (`a || b` became `b`).
pub(super) fn removed(b: &Body, before: &[Check], a: &Body, after: &[Check]) -> Vec<RawFinding> {
    if before.is_empty() {
        return Vec::new();
    }
    let old = Body { checks: before.to_vec(), ..b.clone() };
    let new = Body { checks: after.iter().chain(&a.checks).cloned().collect(), ..a.clone() };
    let mut found = removed_checks(&old, &new);
    let count = |checks: &[Check], owner: &str| checks.iter().filter(|c| c.owner == owner).count();
    found.retain(|f| {
        let Some(check) = before.iter().find(|c| c.owner == f.symbol && c.display == f.before) else {
            return true;
        };
        // `a || b` to `b` returns in fewer cases: weakened, whatever the count.
        let weakened = after.iter().any(|c| c.owner == check.owner && check.disjuncts.contains(&c.key));
        if !weakened && count(after, &f.symbol) >= count(before, &f.symbol) {
            return false;
        }
        !conjuncts(&check.key).iter().any(|part| a.conditions.contains(&(check.owner.clone(), part.clone())))
    });
    found
}

/// The parts of a formatting-blind condition `a&&b&&c` joined by a top-level `&&`,
/// each without its outer parentheses; empty when there is only one part. (Python's
/// `and` is not split: the key has lost the spaces that would tell it from a name.)
fn conjuncts(key: &str) -> Vec<String> {
    let key = strip_outer(key);
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    let bytes = key.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'&' if depth == 0 && bytes.get(i + 1) == Some(&b'&') => {
                parts.push(strip_outer(&key[start..i]).to_string());
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    if parts.is_empty() {
        return parts;
    }
    parts.push(strip_outer(&key[start..]).to_string());
    parts
}

/// `(x)` as `x`, as often as the parentheses wrap the whole text.
fn strip_outer(mut s: &str) -> &str {
    while let Some(inner) = s.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        // `(a)&&(b)` starts and ends with parentheses that are not one pair.
        let mut depth = 0i32;
        let closes_early = inner.bytes().any(|c| {
            match c {
                b'(' => depth += 1,
                b')' => depth -= 1,
                _ => {}
            }
            depth < 0
        });
        if closes_early {
            break;
        }
        s = inner;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conjuncts_split_only_at_the_top_level() {
        assert_eq!(conjuncts("isWithin(p,root)&&!p.includes('/x/')"), vec!["isWithin(p,root)", "!p.includes('/x/')"]);
        assert_eq!(conjuncts("(a&&b)"), vec!["a", "b"]);
        assert_eq!(conjuncts("(a)&&(b||c)"), vec!["a", "b||c"]);
        assert!(conjuncts("f(a&&b)").is_empty());
        assert!(conjuncts("a||b").is_empty());
    }
}

//! The sentences of a guard memory, written from the finding itself: the constraint
//! as it was and as it is, the bound the old type or keyword implied (`u16` to `u64`:
//! "at most 65535"), the removed check quoted, and an instruction that fits the kind
//! of constraint (a removed check is not a "widened type").

use crate::widen::engine::Finding;
use crate::widen::{Family, RuleId, catalogue};

/// Code quoted as Markdown does: in single backticks, or in double ones with spaces
/// when the text holds a backtick itself (MySQL's quoted names).
pub fn quoted(s: &str) -> String {
    if s.contains('`') { format!("`` {s} ``") } else { format!("`{s}`") }
}

/// What happened to the constraint, in the finding's own words.
pub(super) fn change(f: &Finding) -> String {
    let family = RuleId::parse(&f.rule).map(|r| r.family());
    match (f.before.is_empty(), f.after.is_empty(), family) {
        (true, true, _) => "a constraint was removed".to_string(),
        (true, false, Some(Family::Unsafe)) => {
            format!("`{}` had no `unsafe` code and now has {}", f.symbol, quoted(&f.after))
        }
        (true, false, _) => format!("{} was added", quoted(&f.after)),
        (false, true, Some(Family::CheckRemoved)) => {
            format!("the check {} was removed from `{}`", quoted(&f.before), f.symbol)
        }
        (false, true, _) => format!("{} was removed", quoted(&f.before)),
        (false, false, _) => format!("{} became {}", quoted(&f.before), quoted(&f.after)),
    }
}

/// The limit the old constraint put on values, when the finding's text shows one.
pub(super) fn old_bound(f: &Finding) -> Option<String> {
    let rule = RuleId::parse(&f.rule)?;
    match rule {
        RuleId::RustIntegerWidened | RuleId::GoIntWidened | RuleId::SqlNumericWidened => {
            let (old, new) = int_pair(&f.before, &f.after)?;
            let sql = f.language == crate::widen::Language::Sql;
            let range = |t: &str| range(t, sql);
            let new_part = match range(&new) {
                Some(r) => format!("; `{new}` admits {r}"),
                None => format!("; `{new}` admits more"),
            };
            Some(format!("the old type `{old}` kept the value {}{new_part}", range(&old)?))
        }
        RuleId::SqlVarcharWidened => {
            let n = paren_number(&f.before.to_ascii_lowercase(), "char(")?;
            Some(format!("the old type kept stored strings at most {n} characters long"))
        }
        RuleId::SchemaRangeLoosened | RuleId::SchemaLengthLoosened | RuleId::SchemaItemCountLoosened => {
            keyword_bound(&f.before)
        }
        _ => None,
    }
}

/// The instruction, fitted to the kind of constraint that was lost.
pub(super) fn instruction(f: &Finding) -> String {
    let family = RuleId::parse(&f.rule).map(|r| r.family());
    match family {
        Some(Family::CheckRemoved) if f.after.is_empty() => {
            format!("Verify what now enforces {} before writing code that relies on it holding.", quoted(&f.before))
        }
        Some(Family::CheckRemoved) => format!(
            "Verify what now enforces what {} checked before writing code that relies on it.",
            quoted(&f.before)
        ),
        Some(Family::Unsafe) => format!(
            "Verify the safety conditions of `{}` are documented and upheld before calling or extending it.",
            f.symbol
        ),
        Some(Family::Optionality) => {
            "Verify what now guarantees the value is present before writing code that assumes it.".to_string()
        }
        Some(Family::MutabilityExposure) => format!(
            "Verify that nothing outside relies on `{}` keeping the old restriction before changing it from outside.",
            f.symbol
        ),
        _ => "Verify what now guarantees the old invariant before writing code that relies on the wider constraint."
            .to_string(),
    }
}

/// The old invariant, the rule's own sentence.
pub(super) fn invariant(f: &Finding) -> &'static str {
    catalogue::get(&f.rule).map(|r| r.invariant.trim_end_matches('.')).unwrap_or("")
}

const RUST_INTS: &[&str] = &["u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize"];
const GO_INTS: &[&str] = &[
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "byte", "rune", "int", "uint", "uintptr",
];
const SQL_INTS: &[&str] = &[
    "tinyint",
    "smallint",
    "mediumint",
    "int",
    "integer",
    "bigint",
    "int2",
    "int4",
    "int8",
    "serial",
    "smallserial",
    "bigserial",
    "numeric",
    "decimal",
];

/// The integer types named in a text, in order (`numeric(8,2)` kept whole).
fn int_types(s: &str) -> Vec<String> {
    let lower = s.to_ascii_lowercase();
    let mut out = Vec::new();
    let bytes = lower.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !(bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        let word = &lower[start..i];
        if RUST_INTS.contains(&word) || GO_INTS.contains(&word) || SQL_INTS.contains(&word) {
            // Keep `(p,s)` after numeric/decimal; the original spelling for the rest.
            if (word == "numeric" || word == "decimal") && lower[i..].starts_with('(') {
                let end = lower[i..].find(')').map(|e| i + e + 1).unwrap_or(i);
                out.push(lower[start..end].replace(' ', ""));
                i = end;
            } else {
                out.push(s[start..i].to_string());
            }
        }
    }
    out
}

/// The first integer type that differs between the two texts, positionally.
fn int_pair(before: &str, after: &str) -> Option<(String, String)> {
    let (b, a) = (int_types(before), int_types(after));
    b.iter().zip(a.iter()).find(|(x, y)| !x.eq_ignore_ascii_case(y)).map(|(x, y)| (x.clone(), y.clone()))
}

/// The values an integer type admits, as words.
/// `int8` and `int` mean different widths in SQL (PostgreSQL's 64-bit `int8`, a 32-bit
/// `int`) and in Go (8 bits, the platform's word).
fn range(ty: &str, sql: bool) -> Option<String> {
    let t = ty.to_ascii_lowercase();
    if sql && (t == "int8" || t == "int") {
        return range(if t == "int8" { "bigint" } else { "integer" }, true);
    }
    let between = |lo: &str, hi: &str| Some(format!("between {lo} and {hi}"));
    let at_most = |hi: &str| Some(format!("between 0 and {hi} (at most {hi})"));
    match t.as_str() {
        "u8" | "uint8" | "byte" => at_most("255"),
        "u16" | "uint16" => at_most("65535"),
        "u32" | "uint32" => at_most("4294967295"),
        "u64" | "uint64" => at_most("18446744073709551615"),
        "u128" => at_most("340282366920938463463374607431768211455"),
        "usize" | "uint" | "uintptr" => {
            Some("between 0 and the platform's word maximum (4294967295 on 32-bit targets)".to_string())
        }
        "i8" | "int8" | "tinyint" => between("-128", "127"),
        "i16" | "int16" | "smallint" | "int2" | "smallserial" => between("-32768", "32767"),
        "mediumint" => between("-8388608", "8388607"),
        "i32" | "int32" | "rune" | "integer" | "int4" | "serial" => between("-2147483648", "2147483647"),
        "int" => Some("within the platform's `int` (-2147483648 to 2147483647 on 32-bit targets)".to_string()),
        "i64" | "int64" | "bigint" | "bigserial" => between("-9223372036854775808", "9223372036854775807"),
        "i128" => between("-170141183460469231731687303715884105728", "170141183460469231731687303715884105727"),
        "isize" => Some("within the platform's word range (-2147483648 to 2147483647 on 32-bit targets)".to_string()),
        _ => {
            let inner = t.strip_prefix("numeric(").or_else(|| t.strip_prefix("decimal("))?.strip_suffix(')')?;
            let (p, s) = match inner.split_once(',') {
                Some((p, s)) => (p.trim().parse::<u32>().ok()?, s.trim().parse::<u32>().ok()?),
                None => (inner.trim().parse::<u32>().ok()?, 0),
            };
            let whole = p.saturating_sub(s);
            Some(format!("at most {p} digits, {s} of them after the point (under 10^{whole} in absolute value)"))
        }
    }
}

/// The number inside `<marker>n)`, such as `varchar(40)`.
fn paren_number(s: &str, marker: &str) -> Option<u64> {
    let at = s.find(marker)? + marker.len();
    let rest = &s[at..];
    rest[..rest.find(')')?].trim().parse().ok()
}

/// A JSON Schema bound keyword's meaning (`maximum: 100`: "values were at most 100").
fn keyword_bound(before: &str) -> Option<String> {
    let mut parts = Vec::new();
    for kv in before.split(", ") {
        let Some((k, v)) = kv.split_once(": ") else { continue };
        let said = match k.trim() {
            "maximum" => format!("values were at most {v}"),
            "exclusiveMaximum" => format!("values were below {v}"),
            "minimum" => format!("values were at least {v}"),
            "exclusiveMinimum" => format!("values were above {v}"),
            "maxLength" => format!("strings were at most {v} characters long"),
            "minLength" => format!("strings were at least {v} characters long"),
            "maxItems" => format!("arrays held at most {v} items"),
            "minItems" => format!("arrays held at least {v} items"),
            "uniqueItems" if v == "true" => "array items were unique".to_string(),
            _ => continue,
        };
        parts.push(said);
    }
    (!parts.is_empty()).then(|| format!("under the old schema {}", parts.join(" and ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_bounds_come_from_the_types_of_the_finding() {
        assert_eq!(int_pair("width: u16", "width: u64"), Some(("u16".into(), "u64".into())));
        assert_eq!(int_pair("sizes: Vec<u8>", "sizes: Vec<u32>"), Some(("u8".into(), "u32".into())));
        assert_eq!(int_pair("port uint16", "port int"), Some(("uint16".into(), "int".into())));
        assert_eq!(
            int_pair("unit_price NUMERIC(8,2) NOT NULL", "ALTER COLUMN unit_price TYPE NUMERIC(12,4)"),
            Some(("numeric(8,2)".into(), "numeric(12,4)".into()))
        );
        assert_eq!(range("u16", false).unwrap(), "between 0 and 65535 (at most 65535)");
        assert!(range("numeric(8,2)", true).unwrap().contains("under 10^6"));
        assert_eq!(range("int8", false).unwrap(), "between -128 and 127");
        assert!(range("INT8", true).unwrap().contains("9223372036854775807"));
        assert!(range("int", true).unwrap().starts_with("between -2147483648"));
        assert_eq!(range("String", false), None);
        assert_eq!(paren_number("name varchar(40) not null", "char("), Some(40));
        assert_eq!(
            keyword_bound("maxItems: 10, uniqueItems: true").unwrap(),
            "under the old schema arrays held at most 10 items and array items were unique"
        );
        assert_eq!(keyword_bound("pattern: ^a"), None);
    }
}

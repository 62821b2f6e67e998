//! diesel's schema declarations: the `table!` (or `diesel::table!`) blocks that
//! `diesel print-schema` writes into `schema.rs`, one line per column
//! (`followers_url -> Varchar,`), a `#[max_length = n]` line above a bounded one. They
//! state what the database holds, so a column whose type gains `Nullable<...>`, or
//! whose `max_length` is raised or removed, says the column was loosened, whether or
//! not the migration beside it is read (`table.column`, the table's name as written,
//! its schema prefix dropped).
//!
//! A pass of its own beside the Rust detector, run only where both versions contain
//! `table!` (a substring test). The generated text is line-based and regular, and a
//! macro's body is no syntax tree to tree-sitter, so it is read line by line: a block
//! header `name (key) {`, column lines `name -> Type,`, attribute lines and comments.
//! Nothing here recurses.
//!
//! Deliberately not findings: a table or column added, removed or renamed, a type
//! changed other than by `Nullable` (the SQL migration's rules judge the type), a
//! `Nullable` removed (narrowing), `max_length` lowered or added.

use std::collections::BTreeMap;

use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const RUST: &[Language] = &[Language::Rust];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::RustDieselNullableAdded,
        languages: RUST,
        family: Family::Optionality,
        description: "A column of a diesel `table!` declaration gains `Nullable<...>` (`Int4` became `Nullable<Int4>`): the database now holds NULL there.",
        severity: Severity::Medium,
        message: "{symbol} may now be NULL: `{before}` became `{after}`",
        invariant: "Every row had a value in this column, so code reading it through diesel got a value, never NULL.",
    },
    RuleDef {
        id: RuleId::RustDieselMaxLengthRaised,
        languages: RUST,
        family: Family::NumericRange,
        description: "A diesel `table!` column's `#[max_length = n]` is raised or removed: the column stores longer values.",
        severity: Severity::Medium,
        message: "{symbol} stores longer values: `{before}` became `{after}`",
        invariant: "Values in this column were at most the declared length, which consumers and other layers may rely on.",
    },
];

/// What one column line declares.
#[derive(Debug, Clone, PartialEq)]
struct Column {
    line: u32,
    /// The type as written, whitespace removed (`Nullable<Varchar>`).
    ty: String,
    max_length: Option<u64>,
    /// The declaration as shown in a finding (`#[max_length = 255] url -> Varchar`).
    shown: String,
}

/// Whether the versions may hold a `table!` block (the prefilter).
pub(crate) fn may_hold(before: &str, after: &str) -> bool {
    let has = |s: &str| memchr::memmem::find(s.as_bytes(), b"table!").is_some();
    has(before) && has(after)
}

/// The findings of a Rust file; text that holds no `table!` block gives none.
pub(crate) fn detect(before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let (old, new) = (columns(before), columns(after));
    let mut out = Vec::new();
    for (symbol, n) in &new {
        let Some(o) = old.get(symbol) else { continue };
        let finding = |rule| RawFinding {
            line: n.line,
            rule,
            symbol: symbol.clone(),
            before: o.shown.clone(),
            after: n.shown.clone(),
            in_test: false,
        };
        if !is_nullable(&o.ty) && is_nullable(&n.ty) {
            out.push(finding(RuleId::RustDieselNullableAdded));
        }
        let raised = match (o.max_length, n.max_length) {
            (Some(a), Some(b)) => b > a,
            (Some(_), None) => true,
            _ => false,
        };
        if raised {
            out.push(finding(RuleId::RustDieselMaxLengthRaised));
        }
    }
    out.sort();
    Ok(out)
}

fn is_nullable(ty: &str) -> bool {
    ty.starts_with("Nullable<")
        || ty.starts_with("diesel::sql_types::Nullable<")
        || ty.starts_with("sql_types::Nullable<")
}

/// Every column of every `table!` block, by `table.column`. A name declared twice
/// (two blocks for one table, which diesel refuses) keeps its first declaration.
fn columns(text: &str) -> BTreeMap<String, Column> {
    let mut out = BTreeMap::new();
    // Brace depth inside the current `table!` macro (`None`: outside one); the table
    // whose block is open at depth 2; a `#[max_length = n]` waiting for its column.
    let mut depth: Option<i64> = None;
    let mut table: Option<String> = None;
    let mut max_length: Option<u64> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let braces = line.matches('{').count() as i64 - line.matches('}').count() as i64;
        let Some(d) = depth else {
            let opens = line.strip_prefix("diesel::").unwrap_or(line).starts_with("table!");
            if opens && braces > 0 {
                depth = Some(braces);
                table = None;
                max_length = None;
            }
            continue;
        };
        if line.starts_with("//") {
            continue;
        }
        if table.is_none() && line.ends_with('{') && line.contains('(') {
            let head = line.split('(').next().unwrap_or("").trim();
            let name = head.rsplit('.').next().unwrap_or(head).trim();
            table = (!name.is_empty()).then(|| name.trim_start_matches("r#").to_string());
        } else if let (Some(_), Some(rest)) = (&table, line.strip_prefix("#[max_length")) {
            max_length =
                rest.trim_start().strip_prefix('=').and_then(|v| v.trim().trim_end_matches(']').trim().parse().ok());
        } else if let (Some(t), Some((name, ty))) = (&table, line.split_once("->")) {
            let name = name.trim().trim_start_matches("r#");
            let ty: String = ty.trim().trim_end_matches(',').split_whitespace().collect();
            if !name.is_empty() && !ty.is_empty() {
                let shown = match max_length {
                    Some(n) => format!("#[max_length = {n}] {name} -> {ty}"),
                    None => format!("{name} -> {ty}"),
                };
                let line = u32::try_from(i + 1).unwrap_or(u32::MAX);
                out.entry(format!("{t}.{name}")).or_insert(Column { line, ty, max_length, shown });
            }
            max_length = None;
        }
        let now = d + braces;
        if now <= 1 {
            table = None;
        }
        depth = (now > 0).then_some(now);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = "// @generated automatically by Diesel CLI.\n\ndiesel::table! {\n    use diesel::sql_types::*;\n\n    board (id) {\n        id -> Int4,\n        #[max_length = 120]\n        title -> Varchar,\n        owner_id -> Int4,\n        note -> Nullable<Text>,\n    }\n}\n\ntable! {\n    public.card (id) {\n        id -> Int4,\n        r#type -> Text,\n    }\n}\n";

    #[test]
    fn columns_are_read_with_their_bounds_and_tables() {
        let c = columns(SCHEMA);
        let names: Vec<&str> = c.keys().map(String::as_str).collect();
        assert_eq!(names, ["board.id", "board.note", "board.owner_id", "board.title", "card.id", "card.type"]);
        assert_eq!(c["board.title"].max_length, Some(120));
        assert_eq!(c["board.title"].line, 9);
        assert_eq!(c["board.owner_id"].max_length, None);
        assert_eq!(c["board.note"].ty, "Nullable<Text>");
    }

    #[test]
    fn nullable_added_and_bound_raised_are_reported_narrowing_is_not() {
        let after = SCHEMA
            .replace("owner_id -> Int4", "owner_id -> Nullable<Int4>")
            .replace("max_length = 120", "max_length = 400")
            .replace("note -> Nullable<Text>", "note -> Text");
        let found = detect(SCHEMA, &after).unwrap();
        let got: Vec<(RuleId, &str, &str)> =
            found.iter().map(|f| (f.rule, f.symbol.as_str(), f.after.as_str())).collect();
        assert_eq!(
            got,
            [
                (RuleId::RustDieselMaxLengthRaised, "board.title", "#[max_length = 400] title -> Varchar"),
                (RuleId::RustDieselNullableAdded, "board.owner_id", "owner_id -> Nullable<Int4>"),
            ]
        );
        // Backwards: the bound lowered and `Nullable` removed are narrowing; only `note`
        // (made `Text` above) gains `Nullable` again.
        let back: Vec<String> = detect(&after, SCHEMA).unwrap().into_iter().map(|f| f.symbol).collect();
        assert_eq!(back, ["board.note"]);
    }
}

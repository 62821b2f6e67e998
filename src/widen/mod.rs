//! The widening scan's pure core: language detection, the rule data model, and the
//! per-language detectors that compare the constraint inventories of the old and
//! new version of one file.
//!
//! Every language module (`rust`, `ts`, `python`, `go`, `sql`, `schema`) implements
//! [`detector::Detector`]: its rules as data (`RULES`), a parse of one version into an
//! inventory of constraints per symbol, and a comparison of two inventories that
//! reports each constraint the new version loosens or removes. Narrowing, formatting,
//! comments, reordering, renames and a check that moved elsewhere in the same file are
//! never findings. The engine ([`engine`]) is the only caller: it chooses the
//! detector, decides what to parse (added files, the change window), and turns a
//! parse failure or a panic inside one file into a note on that file.

pub mod catalogue;
pub(crate) mod detector;
mod early_return;
pub(crate) mod elide;
pub mod engine;
pub mod go;
pub(crate) mod go_ozzo;
pub(crate) mod go_tags;
pub mod layers;
pub mod migrations;
pub(crate) mod prisma;
pub(crate) mod py_attrs;
mod py_decl;
pub(crate) mod py_django;
mod py_django_migrations;
pub(crate) mod py_marshmallow;
pub(crate) mod py_pydantic;
pub(crate) mod py_sqlalchemy;
pub(crate) mod python;
mod regex_weaker;
pub mod rule;
pub mod rust;
pub(crate) mod rust_decl;
pub(crate) mod rust_diesel;
pub mod schema;
pub mod sql;
mod sql_constraints;
mod sql_model;
mod sql_types;
mod stored;
pub mod syntax;
#[cfg(test)]
mod testing;
pub mod ts;
pub(crate) mod ts_class_validator;
mod ts_decl;
pub(crate) mod ts_valibot;
pub(crate) mod ts_yup;
pub mod window;
pub(crate) mod zod;

use serde::Serialize;

pub use rule::{Family, RuleId};

/// A language (or schema format) the scan understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Language {
    Rust,
    Typescript,
    Javascript,
    Python,
    Go,
    Sql,
    /// JSON Schema in JSON or YAML, including OpenAPI component schemas.
    JsonSchema,
    /// Prisma schema files (`schema.prisma`).
    Prisma,
}

impl Language {
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Typescript => "typescript",
            Language::Javascript => "javascript",
            Language::Python => "python",
            Language::Go => "go",
            Language::Sql => "sql",
            Language::JsonSchema => "json-schema",
            Language::Prisma => "prisma",
        }
    }

    /// The language of a repository path, by its extension.
    pub(crate) fn for_path(path: &str) -> Option<Language> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
        Some(match ext.as_str() {
            "rs" => Language::Rust,
            "ts" | "tsx" | "mts" | "cts" => Language::Typescript,
            "js" | "jsx" | "mjs" | "cjs" => Language::Javascript,
            "py" | "pyi" => Language::Python,
            "go" => Language::Go,
            "sql" => Language::Sql,
            "json" | "yaml" | "yml" => Language::JsonSchema,
            "prisma" => Language::Prisma,
            _ => return None,
        })
    }
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    High,
}

/// One rule of the catalogue, as data.
#[derive(Debug)]
pub struct RuleDef {
    /// Stable id, serialised kebab-case, prefixed by language (`rust-option-widened`).
    pub id: RuleId,
    pub languages: &'static [Language],
    pub family: Family,
    /// One line: what the rule detects.
    pub description: &'static str,
    pub severity: Severity,
    /// Message template; `{symbol}`, `{before}`, `{after}` are replaced.
    pub message: &'static str,
    /// One sentence: which invariant is lost when this fires.
    pub invariant: &'static str,
}

/// What a detector reports, before the engine applies severity overrides, ignores,
/// allow comments and the test-code policy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct RawFinding {
    /// 1-based line in the new version (the old version's line when the owner is gone).
    pub line: u32,
    pub rule: RuleId,
    /// Innermost named declaration owning the constraint, dotted.
    pub symbol: String,
    /// The constraint as it was (source text, trimmed to one line).
    pub before: String,
    /// What it became (source text, or empty when removed outright).
    pub after: String,
    /// Whether the constraint sits in test code (`#[cfg(test)]`, a test function...).
    pub in_test: bool,
}

/// A file one of the versions of which could not be parsed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct DetectError(pub String);

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }

    /// Parse a severity name as written in `scan.severity`.
    pub fn parse(s: &str) -> Option<Severity> {
        match s {
            "low" => Some(Severity::Low),
            "medium" => Some(Severity::Medium),
            "high" => Some(Severity::High),
            _ => None,
        }
    }
}

/// Whether a file with no old version can yield a finding in `lang` (see
/// [`detector::Detector::added_may_fire`]).
pub(crate) fn added_may_fire(lang: Language, after: &str) -> bool {
    detector::added_may_fire(lang, after)
}

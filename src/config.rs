//! Effective configuration: built-in defaults, overridden by the committed
//! `premerge.toml` at the repository root (team policy), overridden by `premerge.*`
//! git config keys (local), overridden by environment variables (per run).
//!
//! Every key is declared once in [`KEYS`] with its type, default, environment
//! variable and a line of documentation. An unknown key in `premerge.toml` or in
//! `premerge.*` git config is an error naming the key. The loader is pure: callers
//! pass the file text, the git config entries and the environment.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

/// The committed team-policy file at the repository root.
pub const CONFIG_FILE_NAME: &str = "premerge.toml";

/// The three-position switch every authority has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Off,
    Shadow,
    Enforce,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "off" => Some(Mode::Off),
            "shadow" => Some(Mode::Shadow),
            "enforce" => Some(Mode::Enforce),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Shadow => "shadow",
            Mode::Enforce => "enforce",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The type of a configuration key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    /// A non-negative integer.
    Int,
    Str,
    Mode,
    /// A list of strings (globs, argv templates). Empty means "not set" for argv.
    List,
    /// A table of string values keyed by an open set of names (`scan.severity.<rule-id>`).
    Table,
}

/// A typed configuration value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Int(u64),
    Str(String),
    Mode(Mode),
    List(Vec<String>),
    Table(BTreeMap<String, String>),
}

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Default,
    /// `premerge.toml` at the repository root.
    File,
    /// A `premerge.*` git config key (the key is recorded).
    GitConfig(String),
    /// An environment variable (its name is recorded).
    Env(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File => f.write_str("premerge.toml"),
            Source::GitConfig(k) => write!(f, "git config {k}"),
            Source::Env(k) => write!(f, "env {k}"),
        }
    }
}

/// One declared key.
#[derive(Debug)]
pub struct KeyDef {
    /// Dotted name as written in `premerge.toml` (`section.key`).
    pub name: &'static str,
    pub kind: Kind,
    /// Default, in the TOML-ish text form parsed by [`parse_text`].
    pub default: &'static str,
    /// Environment variable that overrides it, if any.
    pub env: Option<&'static str>,
    pub doc: &'static str,
}

macro_rules! key {
    ($name:literal, $kind:ident, $default:literal, $env:expr, $doc:literal) => {
        KeyDef { name: $name, kind: Kind::$kind, default: $default, env: $env, doc: $doc }
    };
}

/// Every configuration key premerge understands. Byte-order sorted by name.
pub const KEYS: &[KeyDef] = &[
    key!("clones.enabled", Bool, "true", None, "Run the copied-code detector in `premerge seams` and pre-push."),
    key!("clones.min_files", Int, "3", None, "A clone cluster must span at least this many distinct files."),
    key!("clones.min_tokens", Int, "50", None, "Smallest block (in normalised tokens) that counts as a copy."),
    key!(
        "fence.mode",
        Mode,
        "enforce",
        Some("PREMERGE_FENCE_MODE"),
        "Commit fence in pre-push once a wave plan exists: off | shadow | enforce."
    ),
    key!(
        "gate.authority_command",
        List,
        "[]",
        None,
        "Argv template of an external stop-gate authority (no shell); empty: built-in."
    ),
    key!("gate.authority_timeout_ms", Int, "2000", None, "Timeout of the external authority."),
    key!(
        "gate.enabled",
        Bool,
        "true",
        Some("PREMERGE_GATE"),
        "Kill switch of the stop gate (false: every stop is allowed)."
    ),
    key!(
        "gate.mode",
        Mode,
        "shadow",
        Some("PREMERGE_GATE_MODE"),
        "Stop gate: off | shadow (decide and log, never block) | enforce."
    ),
    key!(
        "gate.plan_globs",
        List,
        r#"["docs/plans/**/*.md", "PLAN.md", ".premerge/plan*.md"]"#,
        None,
        "Globs of plan files the stop gate treats as durable artefacts."
    ),
    key!(
        "hooks.budget_ms",
        Int,
        "100",
        Some("PREMERGE_HOOKS_BUDGET_MS"),
        "Time a hook may spend on signal work (scan, copy detector) before the rest continues in the background; 0: all of it in the background. The fence always runs in the hook."
    ),
    key!("hooks.enabled", Bool, "true", Some("PREMERGE"), "Master switch: false makes every hook exit 0 at once."),
    key!(
        "memory.backend_command",
        List,
        "[]",
        None,
        "Argv template of an external memory backend (no shell); empty: embedded SQLite only."
    ),
    key!("memory.backend_timeout_ms", Int, "5000", None, "Timeout of the external memory backend."),
    key!("memory.enabled", Bool, "true", Some("PREMERGE_INVARIANT_MEMORY"), "Kill switch of guard-memory writes."),
    key!("plan.max_findings", Int, "100000", None, "Largest findings file `premerge plan` accepts, in findings."),
    key!("plan.max_per_wave", Int, "8", None, "Default largest wave."),
    key!(
        "proposal.generator_command",
        List,
        "[]",
        None,
        "Argv template that writes a proposal's suggested change (no shell)."
    ),
    key!("proposal.generator_timeout_ms", Int, "10000", None, "Timeout of the proposal generator."),
    key!(
        "proposal.halt_mode",
        Mode,
        "enforce",
        Some("PREMERGE_STRIPE_HALT_MODE"),
        "Stripe halt: enforce (a repeat exits 1), shadow (logged, exit 0), off (no dedup: every emit writes)."
    ),
    key!("proposal.root", Str, "docs/proposals", None, "Where proposals live (open/, applied/, rejected/)."),
    key!(
        "proposal.signal_root",
        Str,
        "",
        None,
        "Where premerge's own signals (seams, recurring blockers, fence violations, repeated widening) write proposals; empty: `<run dir>/proposals`, outside the working tree, so a proposal never becomes a stray for the fence."
    ),
    key!(
        "review.dispatch_command",
        List,
        "[]",
        None,
        "Argv template run with the step-back brief on stdin (no shell)."
    ),
    key!("review.dispatch_timeout_ms", Int, "120000", None, "Timeout of the step-back dispatch."),
    key!("review.max_findings_bytes", Int, "16777216", None, "Largest findings file accepted, in bytes."),
    key!(
        "review.seam_escalation",
        Bool,
        "true",
        Some("PREMERGE_SEAM_ESCALATION"),
        "Kill switch: false routes round 1 to lens-fix even with a seam."
    ),
    key!("scan.enabled", Bool, "true", Some("PREMERGE_WIDENING_SCAN"), "Kill switch of the widening scan."),
    key!("scan.ignore", List, "[]", None, "Globs of paths the widening scan skips."),
    key!("scan.include_tests", Bool, "false", None, "Report removals inside test code (at low severity)."),
    key!("scan.max_file_bytes", Int, "1048576", None, "Files larger than this are skipped with a note."),
    key!(
        "scan.severity",
        Table,
        "{}",
        None,
        "Per-rule severity override: `rule-id = \"high\" | \"medium\" | \"low\" | \"off\"`."
    ),
];

/// Look up a declared key.
pub fn key_def(name: &str) -> Option<&'static KeyDef> {
    KEYS.iter().find(|k| k.name == name)
}

/// The allowed range of every integer key, checked on load. Each bound keeps the
/// value meaningful and the arithmetic it feeds safe (a wave of 2^63 files overflows
/// the planner's allocation; a byte limit of 2^64-1 wraps to 0 when one is added).
pub const INT_RANGES: &[(&str, u64, u64)] = &[
    // A clone cluster needs at least two files to be a copy; 10,000 is beyond any change.
    ("clones.min_files", 2, 10_000),
    ("clones.min_tokens", 1, 1_000_000),
    // Timeouts: at least a millisecond, at most an hour.
    ("gate.authority_timeout_ms", 1, 3_600_000),
    // 0 defers every signal; up to an hour, for scripts and tests that want every
    // signal in the hook whatever the machine's load.
    ("hooks.budget_ms", 0, 3_600_000),
    ("memory.backend_timeout_ms", 1, 3_600_000),
    ("plan.max_findings", 1, 10_000_000),
    // A wave is planned in memory, one owner per file; 4,096 files is far above a useful wave.
    ("plan.max_per_wave", 1, 4_096),
    ("proposal.generator_timeout_ms", 1, 3_600_000),
    ("review.dispatch_timeout_ms", 1, 3_600_000),
    // From 2 bytes (`[]`, an empty round) to 1 GiB (held in memory once).
    ("review.max_findings_bytes", 2, 1 << 30),
    // Up to 256 MiB: a source file is parsed whole.
    ("scan.max_file_bytes", 1, 256 << 20),
];

/// The allowed range of an integer key.
pub fn int_range(name: &str) -> Option<(u64, u64)> {
    INT_RANGES.iter().find(|(n, _, _)| *n == name).map(|&(_, lo, hi)| (lo, hi))
}

/// A configuration error: which source, which key, why.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// A key no part of premerge declares.
    #[error("{source_name}: unknown key `{key}`")]
    UnknownKey { source_name: String, key: String },
    /// A key whose value has the wrong type or an invalid value.
    #[error("{source_name}: key `{key}`: {why}")]
    BadValue { source_name: String, key: String, why: String },
    /// The file is not valid TOML.
    #[error("{source_name}: {why}")]
    Syntax { source_name: String, why: String },
}

/// The effective configuration with the source of every value.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    pub values: BTreeMap<String, (Value, Source)>,
}

impl Config {
    /// Defaults only.
    pub fn defaults() -> Config {
        let mut values = BTreeMap::new();
        for k in KEYS {
            let v = parse_text(k, k.default).expect("built-in defaults are valid");
            values.insert(k.name.to_string(), (v, Source::Default));
        }
        Config { values }
    }

    /// Layer the sources: defaults < `premerge.toml` < git config < environment.
    ///
    /// `toml_text` is `(display name, text)` of the file when it exists; `git_entries`
    /// are `(full key, value)` pairs of every `premerge.*` git config entry, in the
    /// order git lists them (later wins); `env` is a lookup of environment variables.
    pub fn load(
        toml_text: Option<(&str, &str)>,
        git_entries: &[(String, String)],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let mut cfg = Config::defaults();
        if let Some((name, text)) = toml_text {
            cfg.apply_toml(name, text)?;
        }
        for (k, v) in git_entries {
            cfg.apply_git(k, v)?;
        }
        for k in KEYS {
            if let Some(var) = k.env
                && let Some(raw) = env(var)
            {
                let v = parse_env(k, &raw).map_err(|why| ConfigError::BadValue {
                    source_name: format!("environment variable {var}"),
                    key: k.name.to_string(),
                    why,
                })?;
                cfg.values.insert(k.name.to_string(), (v, Source::Env(var.to_string())));
            }
        }
        cfg.check_ranges()?;
        Ok(cfg)
    }

    /// Every integer within its declared range, or an error naming the key, where the
    /// value came from and the range.
    fn check_ranges(&self) -> Result<(), ConfigError> {
        for (name, (value, source)) in &self.values {
            let (Value::Int(i), Some((lo, hi))) = (value, int_range(name)) else { continue };
            if *i < lo || *i > hi {
                return Err(ConfigError::BadValue {
                    source_name: source.to_string(),
                    key: name.clone(),
                    why: format!("{i} is outside the allowed range {lo}..={hi}"),
                });
            }
        }
        Ok(())
    }

    fn apply_toml(&mut self, name: &str, text: &str) -> Result<(), ConfigError> {
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError::Syntax {
            source_name: name.to_string(),
            why: e.message().to_string(),
        })?;
        for (section, body) in &doc {
            let toml::Value::Table(body) = body else {
                return Err(ConfigError::UnknownKey { source_name: name.to_string(), key: section.clone() });
            };
            for (key, value) in body {
                let full = format!("{section}.{key}");
                let def = key_def(&full)
                    .ok_or_else(|| ConfigError::UnknownKey { source_name: name.to_string(), key: full.clone() })?;
                let v = from_toml(def, value).map_err(|why| ConfigError::BadValue {
                    source_name: name.to_string(),
                    key: full.clone(),
                    why,
                })?;
                self.values.insert(full, (v, Source::File));
            }
        }
        Ok(())
    }

    /// Apply one git config entry. Git variable names allow no `_`, so
    /// `premerge.scan.maxFileBytes`, `premerge.scan.max-file-bytes` and
    /// `premerge.scan.maxfilebytes` all name `scan.max_file_bytes`; a table entry is
    /// `premerge.scan.severity.<rule-id>` (section `premerge`, subsection `scan`).
    fn apply_git(&mut self, full_key: &str, raw: &str) -> Result<(), ConfigError> {
        let src = || format!("git config {full_key}");
        let rest = full_key
            .strip_prefix("premerge.")
            .ok_or_else(|| ConfigError::UnknownKey { source_name: src(), key: full_key.to_string() })?;
        let (section, name) = rest
            .rsplit_once('.')
            .ok_or_else(|| ConfigError::UnknownKey { source_name: src(), key: full_key.to_string() })?;
        // git lowercases the section and the variable name, and keeps the subsection.
        let fold = |s: &str| s.to_ascii_lowercase().replace(['_', '-'], "");
        // git keeps everything between the first and the last dot as the subsection, so a
        // table entry `premerge.scan.severity.<rule-id>` arrives as `scan.severity` + name.
        let (section, name) = match section.split_once('.') {
            Some((sec, table)) => {
                let table_key = format!("{sec}.{table}");
                let def = KEYS.iter().find(|k| k.kind == Kind::Table && fold(k.name) == fold(&table_key));
                let Some(def) = def else {
                    return Err(ConfigError::UnknownKey { source_name: src(), key: full_key.to_string() });
                };
                let mut map = match self.values.get(def.name) {
                    Some((Value::Table(m), _)) => m.clone(),
                    _ => BTreeMap::new(),
                };
                map.insert(name.to_string(), raw.to_string());
                self.values.insert(def.name.to_string(), (Value::Table(map), Source::GitConfig(full_key.to_string())));
                return Ok(());
            }
            None => (section, name),
        };
        let def = KEYS
            .iter()
            .find(|k| {
                let (s, n) = k.name.split_once('.').expect("declared keys are dotted");
                s == section.to_ascii_lowercase() && fold(n) == fold(name)
            })
            .ok_or_else(|| ConfigError::UnknownKey { source_name: src(), key: full_key.to_string() })?;
        let v = parse_env(def, raw).map_err(|why| ConfigError::BadValue {
            source_name: src(),
            key: def.name.to_string(),
            why,
        })?;
        self.values.insert(def.name.to_string(), (v, Source::GitConfig(full_key.to_string())));
        Ok(())
    }

    fn get(&self, name: &str) -> &Value {
        &self.values.get(name).unwrap_or_else(|| panic!("configuration key `{name}` is not declared in config::KEYS")).0
    }

    /// A boolean key. Panics when `name` is not a declared boolean (a programming error).
    pub fn bool(&self, name: &str) -> bool {
        match self.get(name) {
            Value::Bool(b) => *b,
            other => panic!("configuration key `{name}` is not a boolean: {other:?}"),
        }
    }
    pub fn int(&self, name: &str) -> u64 {
        match self.get(name) {
            Value::Int(i) => *i,
            other => panic!("configuration key `{name}` is not an integer: {other:?}"),
        }
    }
    pub fn str(&self, name: &str) -> &str {
        match self.get(name) {
            Value::Str(s) => s,
            other => panic!("configuration key `{name}` is not a string: {other:?}"),
        }
    }
    pub fn mode(&self, name: &str) -> Mode {
        match self.get(name) {
            Value::Mode(m) => *m,
            other => panic!("configuration key `{name}` is not a mode: {other:?}"),
        }
    }
    pub fn list(&self, name: &str) -> &[String] {
        match self.get(name) {
            Value::List(l) => l,
            other => panic!("configuration key `{name}` is not a list: {other:?}"),
        }
    }
    pub fn table(&self, name: &str) -> &BTreeMap<String, String> {
        match self.get(name) {
            Value::Table(t) => t,
            other => panic!("configuration key `{name}` is not a table: {other:?}"),
        }
    }
    /// Where the effective value of `name` came from.
    pub fn source(&self, name: &str) -> Option<&Source> {
        self.values.get(name).map(|(_, s)| s)
    }
}

fn from_toml(def: &KeyDef, v: &toml::Value) -> Result<Value, String> {
    match (def.kind, v) {
        (Kind::Bool, toml::Value::Boolean(b)) => Ok(Value::Bool(*b)),
        (Kind::Int, toml::Value::Integer(i)) if *i >= 0 => Ok(Value::Int(*i as u64)),
        (Kind::Int, toml::Value::Integer(_)) => Err("must not be negative".into()),
        (Kind::Str, toml::Value::String(s)) => Ok(Value::Str(s.clone())),
        (Kind::Mode, toml::Value::String(s)) => {
            Mode::parse(s).map(Value::Mode).ok_or_else(|| format!("`{}` is not one of off, shadow, enforce", shown(s)))
        }
        (Kind::List, toml::Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string).ok_or_else(|| "every item must be a string".to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::List),
        (Kind::Table, toml::Value::Table(t)) => t
            .iter()
            .map(|(k, v)| {
                v.as_str().map(|s| (k.clone(), s.to_string())).ok_or_else(|| format!("`{k}` must be a string"))
            })
            .collect::<Result<BTreeMap<_, _>, _>>()
            .map(Value::Table),
        (kind, _) => Err(format!("expected {}", kind_name(kind))),
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Bool => "a boolean",
        Kind::Int => "a non-negative integer",
        Kind::Str => "a string",
        Kind::Mode => "one of off, shadow, enforce",
        Kind::List => "an array of strings",
        Kind::Table => "a table of strings",
    }
}

/// Parse a default, an environment value or a git config value.
///
/// Booleans accept `1/0/true/false/yes/no/on/off` (so `PREMERGE=0` reads as false);
/// lists accept a JSON array of strings or, for convenience, a comma-separated list.
pub fn parse_env(def: &KeyDef, raw: &str) -> Result<Value, String> {
    let s = raw.trim();
    match def.kind {
        Kind::Bool => match s.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(Value::Bool(true)),
            "0" | "false" | "no" | "off" => Ok(Value::Bool(false)),
            _ => Err(format!("`{}` is not a boolean (use 1/0, true/false)", shown(s))),
        },
        Kind::Int => {
            s.parse::<u64>().map(Value::Int).map_err(|_| format!("`{}` is not a non-negative integer", shown(s)))
        }
        Kind::Str => Ok(Value::Str(s.to_string())),
        Kind::Mode => {
            Mode::parse(s).map(Value::Mode).ok_or_else(|| format!("`{}` is not one of off, shadow, enforce", shown(s)))
        }
        Kind::List => {
            if s.starts_with('[') {
                serde_json::from_str::<Vec<String>>(s)
                    .map(Value::List)
                    .map_err(|e| format!("not a JSON array of strings: {e}"))
            } else if s.is_empty() {
                Ok(Value::List(Vec::new()))
            } else {
                Ok(Value::List(s.split(',').map(|p| p.trim().to_string()).collect()))
            }
        }
        Kind::Table => serde_json::from_str::<BTreeMap<String, String>>(if s.is_empty() { "{}" } else { s })
            .map(Value::Table)
            .map_err(|e| format!("not a JSON object of strings: {e}")),
    }
}

/// A value as quoted in an error: control characters escaped, so a value holding a
/// line break cannot split the one-line message.
fn shown(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// Parse a built-in default.
pub fn parse_text(def: &KeyDef, raw: &str) -> Result<Value, String> {
    parse_env(def, raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn keys_are_sorted_and_defaults_parse() {
        let names: Vec<_> = KEYS.iter().map(|k| k.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        let c = Config::defaults();
        assert_eq!(c.int("plan.max_per_wave"), 8);
        assert!(c.bool("hooks.enabled"));
    }

    #[test]
    fn precedence_file_then_git_then_env() {
        let toml = "[fence]\nmode = \"shadow\"\n[scan]\nmax_file_bytes = 10\n";
        let git = vec![("premerge.scan.maxFileBytes".to_string(), "20".to_string())];
        let env = |k: &str| (k == "PREMERGE_FENCE_MODE").then(|| "off".to_string());
        let c = Config::load(Some(("premerge.toml", toml)), &git, &env).unwrap();
        assert_eq!(c.mode("fence.mode"), Mode::Off);
        assert_eq!(c.source("fence.mode"), Some(&Source::Env("PREMERGE_FENCE_MODE".into())));
        assert_eq!(c.int("scan.max_file_bytes"), 20);
    }

    #[test]
    fn every_integer_key_has_a_range_and_its_default_is_inside() {
        for k in KEYS.iter().filter(|k| k.kind == Kind::Int) {
            let (lo, hi) = int_range(k.name).unwrap_or_else(|| panic!("{} has no entry in INT_RANGES", k.name));
            let d = Config::defaults().int(k.name);
            assert!(lo <= d && d <= hi, "{}: default {d} outside {lo}..={hi}", k.name);
        }
        for (name, _, _) in INT_RANGES {
            assert!(key_def(name).is_some_and(|k| k.kind == Kind::Int), "{name} is not an integer key");
        }
    }

    /// Regression (issue 15): `plan.maxPerWave = 9223372036854775807` panicked with a
    /// capacity overflow; `review.max_findings_bytes = u64::MAX` wrapped to 0.
    #[test]
    fn integers_outside_their_range_are_refused_with_the_range() {
        let git = vec![("premerge.plan.maxPerWave".to_string(), "9223372036854775807".to_string())];
        let e = Config::load(None, &git, &no_env).unwrap_err();
        assert_eq!(
            e.to_string(),
            "git config premerge.plan.maxPerWave: key `plan.max_per_wave`: 9223372036854775807 is outside the allowed range 1..=4096"
        );
        let toml = "[review]\nmax_findings_bytes = 0\n";
        let e = Config::load(Some(("premerge.toml", toml)), &[], &no_env).unwrap_err();
        assert!(e.to_string().starts_with("premerge.toml: key `review.max_findings_bytes`: 0 is outside"), "{e}");
        let git = vec![("premerge.review.maxFindingsBytes".to_string(), "18446744073709551615".to_string())];
        assert!(Config::load(None, &git, &no_env).is_err());
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = Config::load(Some(("premerge.toml", "[scan]\nmax_bytes = 1\n")), &[], &no_env).unwrap_err();
        assert_eq!(e.to_string(), "premerge.toml: unknown key `scan.max_bytes`");
        let e = Config::load(None, &[("premerge.scan.bogus".into(), "1".into())], &no_env).unwrap_err();
        assert!(e.to_string().contains("unknown key `premerge.scan.bogus`"), "{e}");
    }

    #[test]
    fn kill_switch_env_reads_zero_as_false() {
        let env = |k: &str| (k == "PREMERGE").then(|| "0".to_string());
        assert!(!Config::load(None, &[], &env).unwrap().bool("hooks.enabled"));
    }

    #[test]
    fn severity_table_from_file_and_git() {
        let toml = "[scan.severity]\nrust-option-widened = \"low\"\n";
        let git = vec![("premerge.scan.severity.go-pointer-widened".to_string(), "off".to_string())];
        let c = Config::load(Some(("premerge.toml", toml)), &git, &no_env).unwrap();
        let t = c.table("scan.severity");
        assert_eq!(t.get("rust-option-widened").map(String::as_str), Some("low"));
        assert_eq!(t.get("go-pointer-widened").map(String::as_str), Some("off"));
    }
}

//! Effective configuration: built-in defaults, overridden by the committed
//! `premerge.toml` at the repository root (team policy), overridden by `premerge.*`
//! git config keys (local), overridden by environment variables (per run).
//!
//! The effective configuration is a typed struct tree ([`Config`], one struct per
//! section, each refusing fields it does not declare); the defaults are those structs'
//! `Default` implementations. Every key is also listed once in [`KEYS`] with its type,
//! environment variable and a line of documentation, which the loader uses to name a
//! bad key or value in one line. An unknown key in `premerge.toml` or in `premerge.*`
//! git config is an error naming the key. The loader is pure: callers pass the file
//! text, the git config entries and the environment (from the process's
//! [`crate::env::Env`] snapshot).

use std::collections::BTreeMap;
use std::fmt;

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

/// The committed team-policy file at the repository root.
pub(crate) const CONFIG_FILE_NAME: &str = "premerge.toml";

/// [`CONFIG_FILE_NAME`] as a path, relative to the root of the working tree.
pub(crate) fn config_file() -> &'static Utf8Path {
    Utf8Path::new(CONFIG_FILE_NAME)
}

/// The three-position switch every authority has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, PartialOrd, Ord)]
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
pub(crate) struct KeyDef {
    /// Dotted name as written in `premerge.toml` (`section.key`).
    pub name: &'static str,
    pub kind: Kind,
    /// Environment variable that overrides it, if any.
    pub env: Option<&'static str>,
    pub doc: &'static str,
}

macro_rules! key {
    ($name:literal, $kind:ident, $env:expr, $doc:literal) => {
        KeyDef { name: $name, kind: Kind::$kind, env: $env, doc: $doc }
    };
}

/// Every configuration key premerge understands. Byte-order sorted by name.
pub(crate) const KEYS: &[KeyDef] = &[
    key!("clones.enabled", Bool, None, "Run the copied-code detector in `premerge seams` and pre-push."),
    key!("clones.min_files", Int, None, "A clone cluster must span at least this many distinct files."),
    key!("clones.min_tokens", Int, None, "Smallest block (in normalised tokens) that counts as a copy."),
    key!(
        "fence.mode",
        Mode,
        Some("PREMERGE_FENCE_MODE"),
        "Commit fence in pre-push once a wave plan exists: off | shadow | enforce."
    ),
    key!(
        "gate.authority_command",
        List,
        None,
        "Argv template of an external stop-gate authority (no shell); empty: built-in."
    ),
    key!("gate.authority_timeout_ms", Int, None, "Timeout of the external authority."),
    key!("gate.enabled", Bool, Some("PREMERGE_GATE"), "Kill switch of the stop gate (false: every stop is allowed)."),
    key!(
        "gate.mode",
        Mode,
        Some("PREMERGE_GATE_MODE"),
        "Stop gate: off | shadow (decide and log, never block) | enforce."
    ),
    key!("gate.plan_globs", List, None, "Globs of plan files the stop gate treats as durable artefacts."),
    key!(
        "hooks.budget_ms",
        Int,
        Some("PREMERGE_HOOKS_BUDGET_MS"),
        "Time a hook may spend on signal work (scan, copy detector) before the rest continues in the background; 0: all of it in the background. The fence always runs in the hook."
    ),
    key!("hooks.enabled", Bool, Some("PREMERGE"), "Master switch: false makes every hook exit 0 at once."),
    key!(
        "memory.backend_command",
        List,
        None,
        "Argv template of an external memory backend (no shell); empty: embedded SQLite only."
    ),
    key!("memory.backend_timeout_ms", Int, None, "Timeout of the external memory backend."),
    key!("memory.enabled", Bool, Some("PREMERGE_INVARIANT_MEMORY"), "Kill switch of guard-memory writes."),
    key!("plan.max_findings", Int, None, "Largest findings file `premerge plan` accepts, in findings."),
    key!("plan.max_per_wave", Int, None, "Default largest wave."),
    key!(
        "proposal.generator_command",
        List,
        None,
        "Argv template that writes a proposal's suggested change (no shell)."
    ),
    key!("proposal.generator_timeout_ms", Int, None, "Timeout of the proposal generator."),
    key!(
        "proposal.halt_mode",
        Mode,
        Some("PREMERGE_STRIPE_HALT_MODE"),
        "Stripe halt: enforce (a repeat exits 1), shadow (logged, exit 0), off (no dedup: every emit writes)."
    ),
    key!("proposal.root", Str, None, "Where proposals live (open/, applied/, rejected/)."),
    key!(
        "proposal.signal_root",
        Str,
        None,
        "Where premerge's own signals (seams, recurring blockers, fence violations, repeated widening) write proposals; empty: `<run dir>/proposals`, outside the working tree, so a proposal never becomes a stray for the fence."
    ),
    key!("review.dispatch_command", List, None, "Argv template run with the step-back brief on stdin (no shell)."),
    key!("review.dispatch_timeout_ms", Int, None, "Timeout of the step-back dispatch."),
    key!("review.max_findings_bytes", Int, None, "Largest findings file accepted, in bytes."),
    key!(
        "review.seam_escalation",
        Bool,
        Some("PREMERGE_SEAM_ESCALATION"),
        "Kill switch: false routes round 1 to lens-fix even with a seam."
    ),
    key!(
        "review.seam_min_severity",
        Str,
        None,
        "Least severity a finding needs to count towards a seam: any (default) or blocker (suggestions never make a seam)."
    ),
    key!("scan.enabled", Bool, Some("PREMERGE_WIDENING_SCAN"), "Kill switch of the widening scan."),
    key!("scan.ignore", List, None, "Globs of paths the widening scan skips."),
    key!("scan.include_tests", Bool, None, "Report removals inside test code (at low severity)."),
    key!("scan.max_file_bytes", Int, None, "Files larger than this are skipped with a note."),
    key!(
        "scan.severity",
        Table,
        None,
        "Per-rule severity override: `rule-id = \"high\" | \"medium\" | \"low\" | \"off\"`."
    ),
];

/// Look up a declared key.
pub(crate) fn key_def(name: &str) -> Option<&'static KeyDef> {
    KEYS.iter().find(|k| k.name == name)
}

/// The allowed range of every integer key, checked on load. Each bound keeps the
/// value meaningful and the arithmetic it feeds safe (a wave of 2^63 files overflows
/// the planner's allocation; a byte limit of 2^64-1 wraps to 0 when one is added).
pub(crate) const INT_RANGES: &[(&str, u64, u64)] = &[
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

/// The effective configuration: one typed field per key, grouped by section as in
/// `premerge.toml`, and the record of where each value came from.
///
/// The defaults live in the sections' `Default` implementations and nowhere else
/// (`premerge config --keys` prints them from there). Every section refuses fields it
/// does not declare, and a test keeps the tree and [`KEYS`] naming the same keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub clones: Clones,
    pub fence: Fence,
    pub gate: Gate,
    pub hooks: Hooks,
    pub memory: Memory,
    pub plan: Plan,
    pub proposal: Proposal,
    pub review: Review,
    pub scan: Scan,
    /// Where each value not at its default came from, by dotted key name.
    #[serde(skip)]
    sources: BTreeMap<&'static str, Source>,
}

/// `[clones]`: the copied-code detector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Clones {
    pub enabled: bool,
    pub min_files: u64,
    pub min_tokens: u64,
}

impl Default for Clones {
    fn default() -> Clones {
        Clones { enabled: true, min_files: 3, min_tokens: 50 }
    }
}

/// `[fence]`: the commit fence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Fence {
    pub mode: Mode,
}

impl Default for Fence {
    fn default() -> Fence {
        Fence { mode: Mode::Enforce }
    }
}

/// `[gate]`: the stop gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Gate {
    pub authority_command: Vec<String>,
    pub authority_timeout_ms: u64,
    pub enabled: bool,
    pub mode: Mode,
    pub plan_globs: Vec<String>,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            authority_command: Vec::new(),
            authority_timeout_ms: 2000,
            enabled: true,
            mode: Mode::Shadow,
            plan_globs: ["docs/plans/**/*.md", "PLAN.md", ".premerge/plan*.md"].map(String::from).to_vec(),
        }
    }
}

/// `[hooks]`: the git hooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Hooks {
    pub budget_ms: u64,
    pub enabled: bool,
}

impl Default for Hooks {
    fn default() -> Hooks {
        Hooks { budget_ms: 100, enabled: true }
    }
}

/// `[memory]`: guard memories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Memory {
    pub backend_command: Vec<String>,
    pub backend_timeout_ms: u64,
    pub enabled: bool,
}

impl Default for Memory {
    fn default() -> Memory {
        Memory { backend_command: Vec::new(), backend_timeout_ms: 5000, enabled: true }
    }
}

/// `[plan]`: the wave planner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Plan {
    pub max_findings: u64,
    pub max_per_wave: u64,
}

impl Default for Plan {
    fn default() -> Plan {
        Plan { max_findings: 100_000, max_per_wave: 8 }
    }
}

/// `[proposal]`: proposals and the stripe halt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Proposal {
    pub generator_command: Vec<String>,
    pub generator_timeout_ms: u64,
    pub halt_mode: Mode,
    /// Relative to the working tree's root.
    pub root: Utf8PathBuf,
    /// Empty: `<run dir>/proposals`.
    pub signal_root: Utf8PathBuf,
}

impl Default for Proposal {
    fn default() -> Proposal {
        Proposal {
            generator_command: Vec::new(),
            generator_timeout_ms: 10_000,
            halt_mode: Mode::Enforce,
            root: Utf8PathBuf::from("docs/proposals"),
            signal_root: Utf8PathBuf::new(),
        }
    }
}

/// `review.seam_min_severity`: every finding counts towards a seam.
pub const SEAM_ANY: &str = "any";
/// `review.seam_min_severity`: only findings that are not suggestions count.
pub const SEAM_BLOCKER: &str = "blocker";

/// `[review]`: review rounds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Review {
    pub dispatch_command: Vec<String>,
    pub dispatch_timeout_ms: u64,
    pub max_findings_bytes: u64,
    pub seam_escalation: bool,
    /// The least severity a finding needs to count towards a seam: `any` (the source's
    /// rule: three files, one lens and title, whatever the severity) or `blocker`.
    pub seam_min_severity: String,
}

impl Default for Review {
    fn default() -> Review {
        Review {
            dispatch_command: Vec::new(),
            dispatch_timeout_ms: 120_000,
            max_findings_bytes: 16 << 20,
            seam_escalation: true,
            seam_min_severity: SEAM_ANY.to_string(),
        }
    }
}

/// `[scan]`: the widening scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Scan {
    pub enabled: bool,
    pub ignore: Vec<String>,
    pub include_tests: bool,
    pub max_file_bytes: u64,
    /// `rule-id` -> `high | medium | low | off`.
    pub severity: BTreeMap<String, String>,
}

impl Default for Scan {
    fn default() -> Scan {
        Scan {
            enabled: true,
            ignore: Vec::new(),
            include_tests: false,
            max_file_bytes: 1 << 20,
            severity: BTreeMap::new(),
        }
    }
}

impl Config {
    /// Defaults only.
    pub(crate) fn defaults() -> Config {
        Config::default()
    }

    /// Layer the sources: defaults < `premerge.toml` < git config < environment.
    ///
    /// `toml_text` is `(display name, text)` of the file when it exists; `git_entries`
    /// are `(full key, value)` pairs of every `premerge.*` git config entry, in the
    /// order git lists them (later wins); `env` is a lookup of environment variables
    /// (the process's come from the [`crate::env::Env`] snapshot).
    ///
    /// Each source is checked key by key against [`KEYS`] (so an error names the
    /// source, the key and why), laid over the defaults as a value tree, and the tree is
    /// read once into the typed sections.
    pub fn load(
        toml_text: Option<(&str, &str)>,
        git_entries: &[(String, String)],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let mut layers = Layers::default();
        if let Some((name, text)) = toml_text {
            layers.apply_toml(name, text)?;
        }
        for (k, v) in git_entries {
            layers.apply_git(k, v)?;
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
                layers.set(k, v, Source::Env(var.to_string()));
            }
        }
        let cfg = layers.into_config()?;
        cfg.check_ranges()?;
        cfg.check_choices()?;
        Ok(cfg)
    }

    /// Every integer key with its value, in [`KEYS`] order.
    pub fn ints(&self) -> [(&'static str, u64); 11] {
        [
            ("clones.min_files", self.clones.min_files),
            ("clones.min_tokens", self.clones.min_tokens),
            ("gate.authority_timeout_ms", self.gate.authority_timeout_ms),
            ("hooks.budget_ms", self.hooks.budget_ms),
            ("memory.backend_timeout_ms", self.memory.backend_timeout_ms),
            ("plan.max_findings", self.plan.max_findings),
            ("plan.max_per_wave", self.plan.max_per_wave),
            ("proposal.generator_timeout_ms", self.proposal.generator_timeout_ms),
            ("review.dispatch_timeout_ms", self.review.dispatch_timeout_ms),
            ("review.max_findings_bytes", self.review.max_findings_bytes),
            ("scan.max_file_bytes", self.scan.max_file_bytes),
        ]
    }

    /// Every integer within its declared range, or an error naming the key, where the
    /// value came from and the range.
    fn check_ranges(&self) -> Result<(), ConfigError> {
        for (name, i) in self.ints() {
            let Some((lo, hi)) = int_range(name) else { continue };
            if i < lo || i > hi {
                return Err(ConfigError::BadValue {
                    source_name: self.source(name).unwrap_or(&Source::Default).to_string(),
                    key: name.to_string(),
                    why: format!("{i} is outside the allowed range {lo}..={hi}"),
                });
            }
        }
        Ok(())
    }

    /// Every string key with a closed set of values holds one of them.
    fn check_choices(&self) -> Result<(), ConfigError> {
        let v = self.review.seam_min_severity.as_str();
        if v != SEAM_ANY && v != SEAM_BLOCKER {
            return Err(ConfigError::BadValue {
                source_name: self.source("review.seam_min_severity").unwrap_or(&Source::Default).to_string(),
                key: "review.seam_min_severity".to_string(),
                why: format!("`{}` is not one of {SEAM_ANY}, {SEAM_BLOCKER}", shown(v)),
            });
        }
        Ok(())
    }

    /// Where the effective value of `name` came from; `None` for a name no key has.
    pub fn source(&self, name: &str) -> Option<&Source> {
        let def = key_def(name)?;
        Some(self.sources.get(def.name).unwrap_or(&Source::Default))
    }

    /// Every key with its effective value (as JSON) and its source, in [`KEYS`] order:
    /// what `premerge config` prints.
    pub fn entries(&self) -> Vec<(&'static str, serde_json::Value, &Source)> {
        let tree = serde_json::to_value(self).unwrap_or_default();
        KEYS.iter()
            .map(|k| {
                let (section, key) = k.name.split_once('.').unwrap_or((k.name, ""));
                let v = tree.get(section).and_then(|s| s.get(key)).cloned().unwrap_or_default();
                (k.name, v, self.sources.get(k.name).unwrap_or(&Source::Default))
            })
            .collect()
    }
}

/// The sources laid over the defaults, as a value tree (`section -> key -> value`),
/// with the source of every key set.
struct Layers {
    tree: serde_json::Map<String, serde_json::Value>,
    sources: BTreeMap<&'static str, Source>,
}

impl Default for Layers {
    fn default() -> Layers {
        let tree = match serde_json::to_value(Config::default()) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        Layers { tree, sources: BTreeMap::new() }
    }
}

impl Layers {
    fn set(&mut self, def: &'static KeyDef, value: Value, source: Source) {
        let (section, key) = def.name.split_once('.').unwrap_or((def.name, ""));
        let section = self.tree.entry(section).or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
        if let serde_json::Value::Object(s) = section {
            s.insert(key.to_string(), serde_json::to_value(value).unwrap_or_default());
        }
        self.sources.insert(def.name, source);
    }

    /// The table of `def` as set so far (a git config entry adds to it).
    fn table(&self, def: &KeyDef) -> BTreeMap<String, String> {
        let (section, key) = def.name.split_once('.').unwrap_or((def.name, ""));
        self.tree
            .get(section)
            .and_then(|s| s.get(key))
            .and_then(|t| serde_json::from_value(t.clone()).ok())
            .unwrap_or_default()
    }

    fn into_config(self) -> Result<Config, ConfigError> {
        // Every value was checked against its key's kind above, so this cannot fail
        // unless `KEYS` and the struct tree disagree (a test keeps them together).
        let mut cfg: Config = serde_json::from_value(serde_json::Value::Object(self.tree))
            .map_err(|e| ConfigError::Syntax { source_name: "configuration".into(), why: e.to_string() })?;
        cfg.sources = self.sources;
        Ok(cfg)
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
                self.set(def, v, Source::File);
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
                let mut map = self.table(def);
                map.insert(name.to_string(), raw.to_string());
                self.set(def, Value::Table(map), Source::GitConfig(full_key.to_string()));
                return Ok(());
            }
            None => (section, name),
        };
        let def = KEYS
            .iter()
            .find(|k| {
                let (s, n) = k.name.split_once('.').unwrap_or((k.name, ""));
                s == section.to_ascii_lowercase() && fold(n) == fold(name)
            })
            .ok_or_else(|| ConfigError::UnknownKey { source_name: src(), key: full_key.to_string() })?;
        let v = parse_env(def, raw).map_err(|why| ConfigError::BadValue {
            source_name: src(),
            key: def.name.to_string(),
            why,
        })?;
        self.set(def, v, Source::GitConfig(full_key.to_string()));
        Ok(())
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
pub(crate) fn parse_env(def: &KeyDef, raw: &str) -> Result<Value, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn keys_are_sorted_and_defaults_are_typed() {
        let names: Vec<_> = KEYS.iter().map(|k| k.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        let c = Config::defaults();
        assert_eq!(c.plan.max_per_wave, 8);
        assert!(c.hooks.enabled);
        assert_eq!(c.source("plan.max_per_wave"), Some(&Source::Default));
        assert_eq!(c.source("plan.no_such_key"), None);
    }

    /// The struct tree and [`KEYS`] name the same keys, and each key's kind matches the
    /// JSON type of its default, so no key can be declared in one and not the other.
    #[test]
    fn struct_tree_and_keys_agree() {
        let tree = serde_json::to_value(Config::default()).unwrap();
        let mut fields = Vec::new();
        for (section, body) in tree.as_object().unwrap() {
            for (key, v) in body.as_object().unwrap() {
                fields.push((format!("{section}.{key}"), v.clone()));
            }
        }
        let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, KEYS.iter().map(|k| k.name).collect::<Vec<_>>());
        for (k, (_, v)) in KEYS.iter().zip(&fields) {
            let ok = match k.kind {
                Kind::Bool => v.is_boolean(),
                Kind::Int => v.is_u64(),
                Kind::Str => v.is_string(),
                Kind::Mode => v.as_str().is_some_and(|m| Mode::parse(m).is_some()),
                Kind::List => v.as_array().is_some_and(|a| a.iter().all(|i| i.is_string())),
                Kind::Table => v.is_object(),
            };
            assert!(ok, "{}: default {v} is not of kind {:?}", k.name, k.kind);
        }
        let ints: Vec<&str> = Config::default().ints().iter().map(|(n, _)| *n).collect();
        let int_keys: Vec<&str> = KEYS.iter().filter(|k| k.kind == Kind::Int).map(|k| k.name).collect();
        assert_eq!(ints, int_keys);
    }

    /// A key the struct tree does not declare is refused by the tree itself.
    #[test]
    fn sections_refuse_unknown_fields() {
        let e = toml::from_str::<Config>("[scan]\nmax_bytes = 1\n").unwrap_err();
        assert!(e.message().contains("unknown field `max_bytes`"), "{e}");
        assert!(toml::from_str::<Config>("[nosuch]\nx = 1\n").is_err());
        let c: Config = toml::from_str("[plan]\nmax_per_wave = 3\n").unwrap();
        assert_eq!((c.plan.max_per_wave, c.plan.max_findings), (3, 100_000));
    }

    #[test]
    fn precedence_file_then_git_then_env() {
        let toml = "[fence]\nmode = \"shadow\"\n[scan]\nmax_file_bytes = 10\n";
        let git = vec![("premerge.scan.maxFileBytes".to_string(), "20".to_string())];
        let env = |k: &str| (k == "PREMERGE_FENCE_MODE").then(|| "off".to_string());
        let c = Config::load(Some(("premerge.toml", toml)), &git, &env).unwrap();
        assert_eq!(c.fence.mode, Mode::Off);
        assert_eq!(c.source("fence.mode"), Some(&Source::Env("PREMERGE_FENCE_MODE".into())));
        assert_eq!(c.scan.max_file_bytes, 20);
        assert_eq!(c.source("scan.max_file_bytes"), Some(&Source::GitConfig("premerge.scan.maxFileBytes".into())));
        let c = Config::load(Some(("premerge.toml", toml)), &[], &no_env).unwrap();
        assert_eq!((c.fence.mode, c.scan.max_file_bytes), (Mode::Shadow, 10));
        assert_eq!(c.source("scan.max_file_bytes"), Some(&Source::File));
        assert_eq!(c.source("scan.enabled"), Some(&Source::Default));
    }

    #[test]
    fn every_integer_key_has_a_range_and_its_default_is_inside() {
        for (name, d) in Config::defaults().ints() {
            let (lo, hi) = int_range(name).unwrap_or_else(|| panic!("{name} has no entry in INT_RANGES"));
            assert!(lo <= d && d <= hi, "{name}: default {d} outside {lo}..={hi}");
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
        let env = |k: &str| (k == "PREMERGE_HOOKS_BUDGET_MS").then(|| "3600001".to_string());
        let e = Config::load(None, &[], &env).unwrap_err();
        assert_eq!(
            e.to_string(),
            "env PREMERGE_HOOKS_BUDGET_MS: key `hooks.budget_ms`: 3600001 is outside the allowed range 0..=3600000"
        );
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = Config::load(Some(("premerge.toml", "[scan]\nmax_bytes = 1\n")), &[], &no_env).unwrap_err();
        assert_eq!(e.to_string(), "premerge.toml: unknown key `scan.max_bytes`");
        let e = Config::load(Some(("premerge.toml", "[sources]\nx = 1\n")), &[], &no_env).unwrap_err();
        assert_eq!(e.to_string(), "premerge.toml: unknown key `sources.x`");
        let e = Config::load(None, &[("premerge.scan.bogus".into(), "1".into())], &no_env).unwrap_err();
        assert!(e.to_string().contains("unknown key `premerge.scan.bogus`"), "{e}");
    }

    #[test]
    fn bad_values_name_file_key_and_why() {
        let load = |t: &str| Config::load(Some(("premerge.toml", t)), &[], &no_env).unwrap_err().to_string();
        assert_eq!(
            load("[gate]\nmode = \"loud\"\n"),
            "premerge.toml: key `gate.mode`: `loud` is not one of off, shadow, enforce"
        );
        assert_eq!(load("[scan]\nignore = [1]\n"), "premerge.toml: key `scan.ignore`: every item must be a string");
        assert_eq!(load("[proposal]\nroot = 3\n"), "premerge.toml: key `proposal.root`: expected a string");
        assert_eq!(load("[clones]\nmin_files = -1\n"), "premerge.toml: key `clones.min_files`: must not be negative");
    }

    #[test]
    fn kill_switch_env_reads_zero_as_false() {
        let env = |k: &str| (k == "PREMERGE").then(|| "0".to_string());
        assert!(!Config::load(None, &[], &env).unwrap().hooks.enabled);
    }

    #[test]
    fn severity_table_from_file_and_git() {
        let toml = "[scan.severity]\nrust-option-widened = \"low\"\n";
        let git = vec![("premerge.scan.severity.go-pointer-widened".to_string(), "off".to_string())];
        let c = Config::load(Some(("premerge.toml", toml)), &git, &no_env).unwrap();
        let t = &c.scan.severity;
        assert_eq!(t.get("rust-option-widened").map(String::as_str), Some("low"));
        assert_eq!(t.get("go-pointer-widened").map(String::as_str), Some("off"));
    }

    #[test]
    fn entries_list_every_key_with_value_and_source() {
        let c = Config::load(Some(("premerge.toml", "[proposal]\nroot = \"p\"\n")), &[], &no_env).unwrap();
        let e = c.entries();
        assert_eq!(e.len(), KEYS.len());
        let root = e.iter().find(|(n, _, _)| *n == "proposal.root").unwrap();
        assert_eq!((&root.1, root.2), (&serde_json::json!("p"), &Source::File));
        assert_eq!(c.proposal.root, Utf8PathBuf::from("p"));
    }
}

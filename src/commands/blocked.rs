//! `premerge blocked record`: merge one fixer's `blocked_on_file` return into
//! `blocked-on-NN.json` under the run-directory lock.
//!
//! Rows are stored as the fixer reported them; they are validated only when the next
//! attempt carries them (`premerge plan --carry-blocked`), where every rejected row is
//! counted by reason. The file is always written, `"blocked_on": []` included, so the
//! next attempt can tell "nothing was blocked" from "nobody recorded".

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use serde_json::{Map, Value, json};

use super::Ctx;
use crate::error::{CmdResult, Exit};
use crate::store;
use crate::waves::SCHEMA_VERSION;

/// Most rows one `blocked-on-NN.json` keeps. Carry admits at most `MAX_BLOCKED_ON` (8)
/// of them; the rest exist only so drops can be counted. Sixty-four fixers' worth of
/// rows is more than any attempt has; beyond it rows are dropped here, with a warning.
pub(crate) const MAX_RECORDED_ROWS: usize = 64;

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Merge one fixer's return (JSON on stdin, `blocked_on_file` entries) into blocked-on-NN.json.
    Record(RecordArgs),
}

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// The attempt whose fixer is reporting.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=99))]
    pub attempt: u32,
    /// The file the reporting fixer owned.
    #[arg(long, value_name = "PATH")]
    pub from_file: String,
    /// Pipeline run directory.
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

/// The drop reason of rows past [`MAX_RECORDED_ROWS`].
pub(crate) const OVER_RECORD_CAP: &str = "over_record_cap";
/// The drop reason of a misspelt key: a top-level key that looks like `blocked_on_file`
/// but is not (its rows are not recorded), or a row key other than `file` and `reason`.
pub(crate) const UNKNOWN_KEY: &str = "unknown_key";

/// The key a fixer return names its blocked-on rows under.
pub(crate) const RETURN_KEY: &str = "blocked_on_file";

/// A fixer return read: the rows to record, and what was left out by reason.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Return {
    pub rows: Vec<Value>,
    pub dropped: BTreeMap<String, usize>,
    /// Every unknown key seen, for the warning.
    pub unknown: Vec<String>,
}

/// Whether a top-level key is a misspelling of [`RETURN_KEY`] (`blocked_on_files`,
/// `blockedOnFile`, `blocked-on`): compared without case, separators and a plural.
fn looks_like_return_key(k: &str) -> bool {
    let folded: String = k.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect();
    k != RETURN_KEY && folded.starts_with("blockedon")
}

/// The rows of a fixer's return: `blocked_on_file` as an array of paths or of
/// `{file, reason}` objects (absent or null: nothing). Unknown keys are counted.
pub(crate) fn read_return(text: &str, from_file: &str) -> Result<Return> {
    let doc: Value = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(text).map_err(|e| anyhow!("stdin: not valid JSON: {e}"))?
    };
    let Value::Object(o) = &doc else { bail!("stdin: a fixer return must be a JSON object") };
    let mut out = Return::default();
    for (k, v) in o {
        if looks_like_return_key(k) {
            let n = v.as_array().map_or(1, Vec::len).max(1);
            *out.dropped.entry(UNKNOWN_KEY.to_string()).or_default() += n;
            out.unknown.push(k.clone());
        }
    }
    if let Some(Value::Array(entries)) = o.get(RETURN_KEY) {
        for e in entries {
            if let Value::Object(m) = e {
                for k in m.keys().filter(|k| !matches!(k.as_str(), "file" | "reason" | "from_file")) {
                    *out.dropped.entry(UNKNOWN_KEY.to_string()).or_default() += 1;
                    out.unknown.push(format!("{RETURN_KEY}[].{k}"));
                }
            }
        }
    }
    out.rows = rows_of_return(text, from_file)?;
    Ok(out)
}

/// The rows of a fixer's return: `blocked_on_file` as an array of paths or of
/// `{file, reason}` objects (absent or null: nothing).
pub fn rows_of_return(text: &str, from_file: &str) -> Result<Vec<Value>> {
    let doc: Value = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(text).map_err(|e| anyhow!("stdin: not valid JSON: {e}"))?
    };
    let Value::Object(o) = doc else { bail!("stdin: a fixer return must be a JSON object") };
    let entries = match o.get("blocked_on_file") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => bail!("stdin: blocked_on_file must be an array"),
    };
    Ok(entries
        .iter()
        .map(|e| match e {
            Value::String(s) => json!({"file": s, "from_file": from_file, "reason": ""}),
            Value::Object(m) => {
                let reason = m.get("reason").cloned().unwrap_or(Value::String(String::new()));
                json!({"file": m.get("file").cloned().unwrap_or(Value::Null), "from_file": from_file, "reason": reason})
            }
            // Kept as is: carry drops and counts it as `not_object`.
            other => other.clone(),
        })
        .collect())
}

/// The `dropped` counts a blocked-on file already holds (none when absent or malformed).
fn recorded_dropped(text: &str) -> BTreeMap<String, usize> {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("dropped").cloned())
        .and_then(|d| serde_json::from_value(d).ok())
        .unwrap_or_default()
}

pub fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    let Cmd::Record(args) = cmd;
    let input = ctx.read_stdin(crate::input::Kind::BlockedOn)?;
    let ret = read_return(&input, &args.from_file)?;
    let new_rows = ret.rows;
    let mut dropped = ret.dropped;
    if !ret.unknown.is_empty() {
        ctx.warn(format!(
            "stdin: unknown key(s) {} not recorded (the rows go under `{RETURN_KEY}`, each {{file, reason}})",
            ret.unknown.join(", ")
        ));
    }
    let run_dir = ctx.run_dir_of(args.run_dir.as_deref())?;
    let path = store::run_dir::artefact(&run_dir, "blocked-on", args.attempt);
    let _lock = store::RunLock::acquire(run_dir.as_std_path())?;
    let (mut rows, mut recorded_drops) = match store::run_dir::read_blocked_on(path.as_std_path())? {
        Some(text) => (
            crate::waves::carry::rows_of(&text, args.attempt)
                .map_err(|why| anyhow!("{path}: {why}; not merging into it"))?,
            recorded_dropped(&text),
        ),
        None => (Vec::new(), BTreeMap::new()),
    };
    let before = rows.len();
    let mut over = 0;
    for r in new_rows {
        if rows.contains(&r) {
            continue;
        }
        if rows.len() >= MAX_RECORDED_ROWS {
            over += 1;
            continue;
        }
        rows.push(r);
    }
    if over > 0 {
        ctx.warn(format!("{path}: {over} row(s) over the {MAX_RECORDED_ROWS}-row bound were not recorded"));
        dropped.insert(OVER_RECORD_CAP.to_string(), over);
    }
    let added = rows.len() - before;
    for (k, v) in &dropped {
        *recorded_drops.entry(k.clone()).or_default() += v;
    }
    let mut doc = json!({"schema_version": SCHEMA_VERSION, "attempt": args.attempt, "blocked_on": rows});
    if !recorded_drops.is_empty() {
        doc["dropped"] = json!(recorded_drops);
    }
    store::atomic_write(path.as_std_path(), crate::canonical::to_pretty(&doc)?.as_bytes())?;
    store::append_event(
        run_dir.as_std_path(),
        &crate::events::Event::BlockedRecorded {
            attempt: args.attempt,
            from_file: args.from_file.clone(),
            added,
            dropped,
        },
    )?;
    writeln!(
        ctx.stdout,
        "recorded {added} blocked-on row(s) from {} into {} ({} in total)",
        crate::waves::fence::display_path(&args.from_file),
        path.file_name().unwrap_or_default(),
        before + added
    )?;
    Ok(Exit::Ok)
}

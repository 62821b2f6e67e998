//! The effective configuration printed with where each value came from: shared by
//! `premerge config` and `premerge doctor`.

use std::io::Write;

use serde_json::json;

use crate::cli::Format;
use crate::config::{Config, Value};

fn render(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Str(s) => serde_json::to_string(s).expect("a string serialises"),
        Value::Mode(m) => format!("\"{m}\""),
        Value::List(l) => serde_json::to_string(l).expect("a list of strings serialises"),
        Value::Table(t) => serde_json::to_string(t).expect("a table of strings serialises"),
    }
}

/// Print the configuration: `key = value  # source`, or canonical JSON.
pub fn write_config(cfg: &Config, format: Format, out: &mut dyn Write) -> anyhow::Result<()> {
    match format {
        Format::Text => {
            for (k, (v, src)) in &cfg.values {
                writeln!(out, "{k} = {}  # {src}", render(v))?;
            }
        }
        Format::Json => {
            let values: serde_json::Map<String, serde_json::Value> = cfg
                .values
                .iter()
                .map(|(k, (v, src))| (k.clone(), json!({"value": v, "source": src.to_string()})))
                .collect();
            out.write_all(crate::canonical::to_line(&json!({"schema_version": 1, "values": values}))?.as_bytes())?;
        }
    }
    Ok(())
}

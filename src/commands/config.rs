//! `premerge config`: the effective configuration and where each value came from.

use std::io::Write;

use clap::Args as ClapArgs;
use serde_json::json;

use super::Ctx;
use crate::cli::Format;
use crate::config::{Config, KEYS, Value};
use crate::error::{CmdResult, Exit};

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// List every key with its documentation instead of the effective values.
    #[arg(long)]
    pub keys: bool,
}

pub fn run(args: Args, ctx: &mut Ctx) -> CmdResult {
    if args.keys {
        for k in KEYS {
            let env = k.env.map(|e| format!(" (env {e})")).unwrap_or_default();
            writeln!(ctx.stdout, "{}{env}\n    {} Default: {}", k.name, k.doc, k.default)?;
        }
        return Ok(Exit::Ok);
    }
    let cfg = match ctx.repo() {
        Ok(repo) => super::load_config(&repo)?,
        Err(_) => super::load_config_without_repo()?,
    };
    write_config(&cfg, args.format, ctx.stdout)?;
    Ok(Exit::Ok)
}

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

//! `premerge config`: the effective configuration and where each value came from.

use clap::Args as ClapArgs;

use super::Ctx;
use crate::cli::Format;
use crate::config::{Config, KEYS};
use crate::config_render::write_config;
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
        for (name, default, _) in Config::defaults().entries() {
            let Some(k) = KEYS.iter().find(|k| k.name == name) else { continue };
            let env = k.env.map(|e| format!(" (env {e})")).unwrap_or_default();
            writeln!(ctx.stdout, "{}{env}\n    {} Default: {}", k.name, k.doc, default_text(&default))?;
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

/// A default as `--keys` shows it: strings bare, lists with `, ` between items.
fn default_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => {
            format!("[{}]", items.iter().map(serde_json::Value::to_string).collect::<Vec<_>>().join(", "))
        }
        other => other.to_string(),
    }
}

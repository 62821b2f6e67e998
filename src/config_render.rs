//! The effective configuration printed with where each value came from: shared by
//! `premerge config` and `premerge doctor`.

use std::io::Write;

use serde_json::json;

use crate::cli::Format;
use crate::config::Config;

/// Print the configuration: `key = value  # source`, or canonical JSON.
pub(crate) fn write_config(cfg: &Config, format: Format, out: &mut dyn Write) -> anyhow::Result<()> {
    match format {
        Format::Text => {
            for (k, v, src) in cfg.entries() {
                writeln!(out, "{k} = {v}  # {src}")?;
            }
        }
        Format::Json => {
            let values: serde_json::Map<String, serde_json::Value> = cfg
                .entries()
                .into_iter()
                .map(|(k, v, src)| (k.to_string(), json!({"value": v, "source": src.to_string()})))
                .collect();
            out.write_all(crate::canonical::to_line(&json!({"schema_version": 1, "values": values}))?.as_bytes())?;
        }
    }
    Ok(())
}

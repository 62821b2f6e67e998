//! Merging premerge's two agent hooks (Stop, SessionStart) into Claude Code's
//! `.claude/settings.json` without disturbing any other setting or hook.

use serde_json::{Map, Value, json};

/// Why the settings could not be merged.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    /// The file is not JSON.
    #[error("not valid JSON: {0}")]
    NotJson(String),
    /// A value on the way to the hook list has an unexpected type.
    #[error("`{0}` is not a JSON {1}")]
    Shape(String, &'static str),
}

/// The hooks premerge installs: (event, subcommand).
pub const AGENT_HOOKS: &[(&str, &str)] = &[("SessionStart", "gate session-start"), ("Stop", "gate evaluate")];

/// Merge the hooks into the settings text (empty text: a new file). Returns the new
/// text and how many hooks were added (0: already installed, text unchanged).
pub fn merge(existing: &str, program: &str) -> Result<(String, usize), SettingsError> {
    let mut root: Value = if existing.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(existing).map_err(|e| SettingsError::NotJson(e.to_string()))?
    };
    let obj = root.as_object_mut().ok_or_else(|| SettingsError::Shape("(top level)".into(), "object"))?;
    let hooks = obj.entry("hooks").or_insert_with(|| Value::Object(Map::new()));
    let hooks = hooks.as_object_mut().ok_or_else(|| SettingsError::Shape("hooks".into(), "object"))?;
    let mut added = 0;
    for (event, sub) in AGENT_HOOKS {
        let command = format!("{program} {sub}");
        let list = hooks.entry(event.to_string()).or_insert_with(|| Value::Array(Vec::new()));
        let list = list.as_array_mut().ok_or_else(|| SettingsError::Shape(format!("hooks.{event}"), "array"))?;
        let present = list.iter().any(|m| {
            m.get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|hs| hs.iter().any(|h| h.get("command").and_then(Value::as_str) == Some(&command)))
        });
        if !present {
            list.push(json!({"hooks": [{"type": "command", "command": command}]}));
            added += 1;
        }
    }
    if added == 0 {
        return Ok((existing.to_string(), 0));
    }
    let mut text = serde_json::to_string_pretty(&root).map_err(|e| SettingsError::NotJson(e.to_string()))?;
    text.push('\n');
    Ok((text, added))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_idempotent_and_keeps_other_settings() {
        let before =
            r#"{"model":"x","hooks":{"Stop":[{"hooks":[{"type":"command","command":"other"}]}],"PreToolUse":[]}}"#;
        let (once, n) = merge(before, "premerge").unwrap();
        assert_eq!(n, 2);
        let (twice, m) = merge(&once, "premerge").unwrap();
        assert_eq!((m, &twice), (0, &once));
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v["model"], "x");
        assert_eq!(v["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(v["hooks"]["PreToolUse"], json!([]));
        assert!(matches!(merge("[1]", "p"), Err(SettingsError::Shape(..))));
        assert!(matches!(merge("{", "p"), Err(SettingsError::NotJson(_))));
    }
}

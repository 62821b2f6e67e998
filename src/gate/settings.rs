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

/// Whether `command` runs premerge's `sub` (`gate evaluate`), whatever program path
/// it names: the last words are the subcommand and the program's file name is
/// `premerge` (quoted or not). This is what makes a second install with another
/// `--program` update the entry instead of adding a second one.
pub(crate) fn runs_subcommand(command: &str, sub: &str) -> bool {
    let c = command.trim();
    let Some(program) = c.strip_suffix(sub).map(str::trim_end) else { return false };
    if program.len() == c.len() - sub.len() {
        // No separating space: `xgate evaluate`.
        return false;
    }
    let program = program.trim_matches(|ch| ch == '\'' || ch == '"');
    let name = program.rsplit('/').next().unwrap_or(program);
    name == "premerge" || name.starts_with("premerge-") || name.starts_with("premerge.")
}

/// The command of a hook handler, if it is one.
fn command_of(h: &Value) -> Option<&str> {
    h.get("command").and_then(Value::as_str)
}

fn hooks_object(root: &mut Value) -> Result<&mut Map<String, Value>, SettingsError> {
    let obj = root.as_object_mut().ok_or_else(|| SettingsError::Shape("(top level)".into(), "object"))?;
    let hooks = obj.entry("hooks").or_insert_with(|| Value::Object(Map::new()));
    hooks.as_object_mut().ok_or_else(|| SettingsError::Shape("hooks".into(), "object"))
}

fn parse(existing: &str) -> Result<Value, SettingsError> {
    if existing.trim().is_empty() {
        Ok(Value::Object(Map::new()))
    } else {
        serde_json::from_str(existing).map_err(|e| SettingsError::NotJson(e.to_string()))
    }
}

/// The key order of every object of a settings text, by position. `serde_json::Value`
/// sorts keys (premerge's canonical JSON depends on that, so its `preserve_order`
/// feature is not an option), so the user's order is read separately and given back
/// when the file is written: a committed settings file then changes only where a hook
/// was added or removed. Reading nests as deep as the JSON does, which serde_json's
/// own recursion limit (128 levels) bounds, as it bounds the `Value` parse beside it.
#[derive(Debug, Default)]
enum Shape {
    Object(Vec<(String, Shape)>),
    Array(Vec<Shape>),
    #[default]
    Leaf,
}

impl<'de> serde::Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Shape, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Shape;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
                let mut keys = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    keys.push((k, map.next_value::<Shape>()?));
                }
                Ok(Shape::Object(keys))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element::<Shape>()? {
                    items.push(v);
                }
                Ok(Shape::Array(items))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
                Ok(Shape::Leaf)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
                Ok(Shape::Leaf)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
                Ok(Shape::Leaf)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
                Ok(Shape::Leaf)
            }
            fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
                Ok(Shape::Leaf)
            }
            fn visit_unit<E>(self) -> Result<Shape, E> {
                Ok(Shape::Leaf)
            }
            fn visit_none<E>(self) -> Result<Shape, E> {
                Ok(Shape::Leaf)
            }
        }
        d.deserialize_any(Visit)
    }
}

/// One piece of the output still to write: a value (with the shape of the original
/// at its position, if any) or literal text.
enum Piece<'a> {
    Value(&'a Value, Option<&'a Shape>, usize),
    Text(String),
}

/// Pretty JSON like `serde_json::to_string_pretty`, but each object's keys in the
/// order `shape` has them (keys it does not know follow, sorted). An explicit stack,
/// not recursion: the settings file is input.
fn render_ordered(root: &Value, shape: Option<&Shape>) -> Result<String, SettingsError> {
    let leaf = |v: &Value| serde_json::to_string(v).map_err(|e| SettingsError::NotJson(e.to_string()));
    let mut out = String::new();
    let mut stack = vec![Piece::Value(root, shape, 0)];
    while let Some(piece) = stack.pop() {
        let (value, shape, depth) = match piece {
            Piece::Text(t) => {
                out.push_str(&t);
                continue;
            }
            Piece::Value(v, s, d) => (v, s, d),
        };
        let pad = |d: usize| "  ".repeat(d);
        let mut items: Vec<(Option<String>, &Value, Option<&Shape>)> = Vec::new();
        match value {
            Value::Object(map) if !map.is_empty() => {
                let known: &[(String, Shape)] = match shape {
                    Some(Shape::Object(keys)) => keys,
                    _ => &[],
                };
                let mut seen = std::collections::BTreeSet::new();
                for (k, s) in known {
                    if let Some(v) = map.get(k)
                        && seen.insert(k.as_str())
                    {
                        items.push((Some(leaf(&Value::String(k.clone()))?), v, Some(s)));
                    }
                }
                for (k, v) in map {
                    if !seen.contains(k.as_str()) {
                        items.push((Some(leaf(&Value::String(k.clone()))?), v, None));
                    }
                }
            }
            Value::Array(list) if !list.is_empty() => {
                let known: &[Shape] = match shape {
                    Some(Shape::Array(s)) => s,
                    _ => &[],
                };
                items.extend(list.iter().enumerate().map(|(i, v)| (None, v, known.get(i))));
            }
            Value::Object(_) => {
                out.push_str("{}");
                continue;
            }
            Value::Array(_) => {
                out.push_str("[]");
                continue;
            }
            other => {
                out.push_str(&leaf(other)?);
                continue;
            }
        }
        let (open, close) = if value.is_object() { ('{', '}') } else { ('[', ']') };
        out.push(open);
        out.push('\n');
        // Pushed in reverse: the stack pops the first item first.
        stack.push(Piece::Text(format!("\n{}{close}", pad(depth))));
        let n = items.len();
        for (i, (key, v, s)) in items.into_iter().enumerate().rev() {
            if i + 1 < n {
                stack.push(Piece::Text(",\n".to_string()));
            }
            stack.push(Piece::Value(v, s, depth + 1));
            let key = key.map(|k| format!("{k}: ")).unwrap_or_default();
            stack.push(Piece::Text(format!("{}{key}", pad(depth + 1))));
        }
    }
    Ok(out)
}

/// The new settings text: `root` with the original text's key order, and a final newline.
fn render(root: &Value, original: &str) -> Result<String, SettingsError> {
    let shape = serde_json::from_str::<Shape>(original).ok();
    let mut text = render_ordered(root, shape.as_ref())?;
    text.push('\n');
    Ok(text)
}

/// What [`merge`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Merged {
    /// Hooks added where none ran the subcommand.
    pub added: usize,
    /// Hooks that ran the subcommand through another program path, now `program`.
    pub updated: usize,
    /// Further hooks running the same subcommand, removed (one evaluation per stop).
    pub duplicates_removed: usize,
}

impl Merged {
    pub fn changed(&self) -> bool {
        self.added + self.updated + self.duplicates_removed > 0
    }
}

/// Merge the hooks into the settings text (empty text: a new file): exactly one
/// handler per event runs each premerge subcommand, with `program` (already quoted
/// for a shell when needed). Returns the new text (the same text when nothing changed).
pub fn merge(existing: &str, program: &str) -> Result<(String, Merged), SettingsError> {
    let mut root = parse(existing)?;
    let hooks = hooks_object(&mut root)?;
    let mut m = Merged::default();
    for (event, sub) in AGENT_HOOKS {
        let command = format!("{program} {sub}");
        let list = hooks.entry(event.to_string()).or_insert_with(|| Value::Array(Vec::new()));
        let list = list.as_array_mut().ok_or_else(|| SettingsError::Shape(format!("hooks.{event}"), "array"))?;
        let mut seen = false;
        for group in list.iter_mut() {
            let Some(handlers) = group.get_mut("hooks").and_then(Value::as_array_mut) else { continue };
            let mut keep = Vec::with_capacity(handlers.len());
            for mut h in handlers.drain(..) {
                if command_of(&h).is_some_and(|c| runs_subcommand(c, sub)) {
                    if seen {
                        m.duplicates_removed += 1;
                        continue;
                    }
                    seen = true;
                    if command_of(&h) != Some(&command) {
                        h["command"] = Value::String(command.clone());
                        m.updated += 1;
                    }
                }
                keep.push(h);
            }
            *handlers = keep;
        }
        // A group left without handlers by the dedup goes too.
        list.retain(|g| g.get("hooks").and_then(Value::as_array).is_none_or(|h| !h.is_empty()));
        if !seen {
            list.push(json!({"hooks": [{"type": "command", "command": command}]}));
            m.added += 1;
        }
    }
    if !m.changed() {
        return Ok((existing.to_string(), m));
    }
    Ok((render(&root, existing)?, m))
}

/// Remove every handler that runs a premerge agent subcommand, the groups and event
/// lists this leaves empty, and an emptied `hooks` object. Returns the new text and
/// how many handlers went (0: the text is unchanged).
pub fn remove(existing: &str) -> Result<(String, usize), SettingsError> {
    if existing.trim().is_empty() {
        return Ok((existing.to_string(), 0));
    }
    let mut root = parse(existing)?;
    let Some(hooks) = root.get_mut("hooks") else { return Ok((existing.to_string(), 0)) };
    let hooks = hooks.as_object_mut().ok_or_else(|| SettingsError::Shape("hooks".into(), "object"))?;
    let mut removed = 0;
    for (event, sub) in AGENT_HOOKS {
        let Some(list) = hooks.get_mut(*event) else { continue };
        let list = list.as_array_mut().ok_or_else(|| SettingsError::Shape(format!("hooks.{event}"), "array"))?;
        let mut emptied = false;
        for group in list.iter_mut() {
            let Some(handlers) = group.get_mut("hooks").and_then(Value::as_array_mut) else { continue };
            let before = handlers.len();
            handlers.retain(|h| !command_of(h).is_some_and(|c| runs_subcommand(c, sub)));
            removed += before - handlers.len();
            emptied |= before > 0 && handlers.is_empty();
        }
        if emptied {
            list.retain(|g| g.get("hooks").and_then(Value::as_array).is_none_or(|h| !h.is_empty()));
            if list.is_empty() {
                hooks.remove(*event);
            }
        }
    }
    if removed == 0 {
        return Ok((existing.to_string(), 0));
    }
    if hooks.is_empty()
        && let Some(obj) = root.as_object_mut()
    {
        obj.remove("hooks");
    }
    Ok((render(&root, existing)?, removed))
}

/// Whether the settings text has a premerge agent hook.
pub fn installed(existing: &str) -> bool {
    remove(existing).is_ok_and(|(_, n)| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_idempotent_and_keeps_other_settings() {
        let before =
            r#"{"model":"x","hooks":{"Stop":[{"hooks":[{"type":"command","command":"other"}]}],"PreToolUse":[]}}"#;
        let (once, n) = merge(before, "premerge").unwrap();
        assert_eq!(n.added, 2);
        let (twice, m) = merge(&once, "premerge").unwrap();
        assert_eq!((m.changed(), &twice), (false, &once));
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v["model"], "x");
        assert_eq!(v["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(v["hooks"]["PreToolUse"], json!([]));
        assert!(matches!(merge("[1]", "p"), Err(SettingsError::Shape(..))));
        assert!(matches!(merge("{", "p"), Err(SettingsError::NotJson(_))));
    }

    #[test]
    fn another_program_path_updates_the_one_entry_and_drops_duplicates() {
        let (plain, _) = merge("", "premerge").unwrap();
        let (abs, m) = merge(&plain, "/opt/bin/premerge").unwrap();
        assert_eq!((m.added, m.updated), (0, 2));
        let v: Value = serde_json::from_str(&abs).unwrap();
        assert_eq!(v["hooks"]["Stop"].as_array().unwrap().len(), 1);
        assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], "/opt/bin/premerge gate evaluate");
        let two = r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"premerge gate evaluate"}]},
            {"hooks":[{"type":"command","command":"'/x y/premerge' gate evaluate"},{"type":"command","command":"notify"}]}]}}"#;
        let (one, m) = merge(two, "/usr/bin/premerge").unwrap();
        assert_eq!(m.duplicates_removed, 1);
        let v: Value = serde_json::from_str(&one).unwrap();
        let cmds: Vec<&str> = v["hooks"]["Stop"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap().iter().map(|h| h["command"].as_str().unwrap()))
            .collect();
        assert_eq!(cmds, ["/usr/bin/premerge gate evaluate", "notify"]);
    }

    #[test]
    fn the_users_key_order_is_kept_and_the_rendering_matches_serde_json() {
        let before = "{\n  \"permissions\": {\"allow\": [\"Bash(ls)\"], \"deny\": []},\n  \"model\": \"x\",\n  \"env\": {\"Z\": \"1\", \"A\": \"2\"},\n  \"hooks\": {\"Stop\": [{\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"notify\"}]}]}\n}\n";
        let (after, m) = merge(before, "premerge").unwrap();
        assert!(m.changed());
        let at = |k: &str| after.find(k).unwrap_or_else(|| panic!("{k} in {after}"));
        assert!(at("\"permissions\"") < at("\"model\"") && at("\"model\"") < at("\"env\""), "{after}");
        assert!(at("\"env\"") < at("\"hooks\""), "{after}");
        assert!(at("\"Z\"") < at("\"A\"") && at("\"allow\"") < at("\"deny\""), "{after}");
        assert!(at("\"matcher\"") < at("\"notify\""), "{after}");
        let v: Value = serde_json::from_str(&after).unwrap();
        assert_eq!(v["hooks"]["Stop"].as_array().unwrap().len(), 2);
        // Removing gives the user's order back too.
        let (back, n) = remove(&after).unwrap();
        assert_eq!(n, 2);
        let at = |k: &str| back.find(k).unwrap();
        assert!(at("\"permissions\"") < at("\"model\"") && at("\"Z\"") < at("\"A\""), "{back}");
        assert_eq!(serde_json::from_str::<Value>(&back).unwrap(), serde_json::from_str::<Value>(before).unwrap());
        // Without an order to keep, the text is exactly serde_json's pretty form.
        let v = json!({"b": [1, {"y": [], "x": {}}], "a": {"k": null, "j": "s\"q"}, "c": []});
        assert_eq!(render_ordered(&v, None).unwrap(), serde_json::to_string_pretty(&v).unwrap());
    }

    #[test]
    fn subcommand_matching_is_strict() {
        assert!(runs_subcommand("premerge gate evaluate", "gate evaluate"));
        assert!(runs_subcommand("'/a b/premerge' gate evaluate", "gate evaluate"));
        assert!(!runs_subcommand("notpremerge gate evaluate", "gate evaluate"));
        assert!(!runs_subcommand("premerge xgate evaluate", "gate evaluate"));
        assert!(!runs_subcommand("premerge gate evaluate --x", "gate evaluate"));
    }

    #[test]
    fn remove_takes_only_premerge_and_what_it_emptied() {
        let before = r#"{"model":"x","hooks":{"Stop":[{"hooks":[{"type":"command","command":"notify"}]}]}}"#;
        let (with, _) = merge(before, "/p/premerge").unwrap();
        assert!(installed(&with));
        let (back, n) = remove(&with).unwrap();
        assert_eq!(n, 2);
        let v: Value = serde_json::from_str(&back).unwrap();
        assert_eq!(v, serde_json::from_str::<Value>(before).unwrap());
        let (fresh, _) = merge("", "premerge").unwrap();
        assert_eq!(serde_json::from_str::<Value>(&remove(&fresh).unwrap().0).unwrap(), json!({}));
        assert_eq!(remove(before).unwrap(), (before.to_string(), 0));
    }
}

//! Inputs from the agent's side: the Stop and SessionStart hook payloads, the last
//! assistant message of a transcript JSONL, unchecked steps of a plan file, and the
//! files of a wave plan. All parsing is lenient about what it does not need
//! (unknown fields are ignored, so newer payloads keep working) and strict about
//! what it does.

use serde::Deserialize;
use serde_json::Value;

/// Longest accepted `session_id`: Claude Code's are UUIDs; anything far longer is not one.
pub const MAX_SESSION_ID: usize = 200;
/// How many characters of a stop reason are kept: enough for the phrasing checks and
/// the log, bounded so a huge message cannot bloat the database.
pub const MAX_STOP_REASON_CHARS: usize = 4000;
/// How many unchecked steps of a plan file are kept as evidence.
pub const MAX_STEPS: usize = 5;
/// Longest kept step text.
pub const MAX_STEP_CHARS: usize = 160;

/// Why a hook payload was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PayloadError {
    /// Not JSON at all.
    #[error("hook payload is not valid JSON: {0}")]
    NotJson(String),
    /// Valid JSON, but not an object, or a field is missing or has the wrong type
    /// (`{}` lacks `session_id`): a different fault from a torn or garbled payload.
    #[error("hook payload: {0}")]
    BadFields(String),
    /// `session_id` missing, empty, too long or with control characters.
    #[error("hook payload: `session_id` is missing or not a plausible id")]
    BadSessionId,
}

/// The Stop hook's JSON (Claude Code).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct StopPayload {
    pub session_id: String,
    #[serde(default)]
    pub transcript_path: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub permission_mode: Option<String>,
    #[serde(default)]
    pub hook_event_name: Option<String>,
    /// True when this stop follows a continuation a Stop hook already forced.
    #[serde(default)]
    pub stop_hook_active: bool,
    /// Newer Claude Code versions and Codex CLI's Stop hook send the final message
    /// directly; Gemini CLI's `AfterAgent` hook sends it as `prompt_response`.
    #[serde(default, alias = "prompt_response")]
    pub last_assistant_message: Option<String>,
}

/// The SessionStart hook's JSON.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct SessionStartPayload {
    pub session_id: String,
    #[serde(default)]
    pub transcript_path: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// `startup`, `resume`, `clear` or `compact`.
    #[serde(default)]
    pub source: Option<String>,
}

fn check_session_id(id: &str) -> Result<(), PayloadError> {
    if id.is_empty() || id.chars().count() > MAX_SESSION_ID || id.chars().any(char::is_control) {
        return Err(PayloadError::BadSessionId);
    }
    Ok(())
}

/// Parse in two steps so the log tells a payload that is not JSON from one that is
/// JSON without the fields a hook payload has.
fn parse_object<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, PayloadError> {
    let v: Value = serde_json::from_str(text).map_err(|e| PayloadError::NotJson(e.to_string()))?;
    if !v.is_object() {
        return Err(PayloadError::BadFields("not a JSON object".to_string()));
    }
    serde_json::from_value(v).map_err(|e| PayloadError::BadFields(e.to_string()))
}

pub fn parse_stop(text: &str) -> Result<StopPayload, PayloadError> {
    let p: StopPayload = parse_object(text)?;
    check_session_id(&p.session_id)?;
    Ok(p)
}

pub fn parse_session_start(text: &str) -> Result<SessionStartPayload, PayloadError> {
    let p: SessionStartPayload = parse_object(text)?;
    check_session_id(&p.session_id)?;
    Ok(p)
}

/// Keep at most [`MAX_STOP_REASON_CHARS`] of a stop reason (its end, where the
/// reason for stopping usually is).
pub fn bound_reason(text: &str) -> String {
    let n = text.chars().count();
    if n <= MAX_STOP_REASON_CHARS {
        return text.to_string();
    }
    text.chars().skip(n - MAX_STOP_REASON_CHARS).collect()
}

/// The text of the last assistant message in a transcript JSONL. Lines that do not
/// parse (a torn last line while Claude Code is still writing) are skipped; an
/// assistant entry without text (only tool calls) does not count.
pub fn last_assistant_text(jsonl: impl AsRef<[u8]>) -> Option<String> {
    jsonl
        .as_ref()
        .split(|&b| b == b'\n')
        .rev()
        .filter(|l| !l.trim_ascii().is_empty())
        .filter_map(|l| {
            serde_json::from_slice::<Value>(l).ok().or_else(|| {
                // A line with bad bytes reads as a lossy copy of the text would.
                std::str::from_utf8(l).is_err().then(|| serde_json::from_str(&String::from_utf8_lossy(l)).ok())?
            })
        })
        .find_map(|v| assistant_text(&v))
}

fn assistant_text(v: &Value) -> Option<String> {
    let msg = v.get("message").unwrap_or(v);
    let is_assistant = v.get("type").and_then(Value::as_str) == Some("assistant")
        || msg.get("role").and_then(Value::as_str) == Some("assistant");
    if !is_assistant {
        return None;
    }
    let text = match msg.get("content")? {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    (!text.trim().is_empty()).then_some(text)
}

/// One line of plan text made safe for a log or a reminder: no control characters,
/// at most [`MAX_STEP_CHARS`].
pub(crate) fn sanitise_line(s: &str) -> String {
    let clean: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let trimmed = clean.trim();
    if trimmed.chars().count() <= MAX_STEP_CHARS {
        return trimmed.to_string();
    }
    let mut out: String = trimmed.chars().take(MAX_STEP_CHARS - 3).collect();
    out.push_str("...");
    out
}

/// The Markdown task boxes of a plan file in order (`- [ ] step`, `* [x]`, `1. [ ]`):
/// whether each is checked, and the text after its box.
fn task_boxes(markdown: &str) -> impl Iterator<Item = (bool, &str)> {
    markdown.lines().filter_map(|line| {
        let t = line.trim_start();
        let rest = match t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) {
            Some(r) => r,
            None => {
                let digits = t.chars().take_while(char::is_ascii_digit).count();
                t[digits..].strip_prefix(". ").filter(|_| digits > 0)?
            }
        };
        match rest.strip_prefix("[ ]") {
            Some(step) => Some((false, step)),
            None => rest.strip_prefix("[x]").or_else(|| rest.strip_prefix("[X]")).map(|step| (true, step)),
        }
    })
}

/// Unchecked Markdown task items (`- [ ] step`, `* [ ]`, `1. [ ]`) of a plan file:
/// the first [`MAX_STEPS`] texts and the total count.
pub fn unchecked_steps(markdown: &str) -> (Vec<String>, usize) {
    let mut steps = Vec::new();
    let mut count = 0;
    for (_, step) in task_boxes(markdown).filter(|(checked, _)| !checked) {
        count += 1;
        if steps.len() < MAX_STEPS {
            steps.push(sanitise_line(step));
        }
    }
    (steps, count)
}

/// The position (1-based, among all of the file's boxes, checked or not) of the first
/// unchecked step, read like [`unchecked_steps`].
pub fn first_open_position(markdown: &str) -> Option<usize> {
    task_boxes(markdown).position(|(checked, _)| !checked).map(|i| i + 1)
}

/// The text of the `n`th step (1-based, among all of the file's boxes, checked or not),
/// read like [`unchecked_steps`]: "skip step 3" names it.
pub fn step_at(markdown: &str, n: usize) -> Option<String> {
    task_boxes(markdown).nth(n.checked_sub(1)?).map(|(_, step)| sanitise_line(step))
}

/// A file of a wave plan and its owner, read loosely (the waves area owns the format).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedFile {
    pub file: String,
    pub owner: Option<String>,
}

/// Files of `{"waves":[[{"file","owner",...}]]}`, in plan order; anything else is skipped.
pub(crate) fn wave_files(plan: &Value) -> Vec<OwnedFile> {
    let mut out = Vec::new();
    for wave in plan.get("waves").and_then(Value::as_array).into_iter().flatten() {
        for item in wave.as_array().into_iter().flatten() {
            if let Some(file) = item.get("file").and_then(Value::as_str) {
                let owner = item.get("owner").and_then(Value::as_str).map(sanitise_line);
                out.push(OwnedFile { file: sanitise_line(file), owner });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_and_gemini_stop_payloads_are_read() {
        // Codex CLI's Stop hook: Claude Code's fields and a few of its own.
        let p = parse_stop(r#"{"session_id":"c1","turn_id":"t1","model":"gpt-5-codex","cwd":"/r","hook_event_name":"Stop","transcript_path":"/h/.codex/sessions/rollout.jsonl","permission_mode":"default","stop_hook_active":false,"last_assistant_message":"Done."}"#).unwrap();
        assert_eq!(p.last_assistant_message.as_deref(), Some("Done."));
        // Gemini CLI's AfterAgent hook: the final message is `prompt_response`.
        let p = parse_stop(r#"{"session_id":"g1","transcript_path":"/h/.gemini/tmp/x/chats/session.json","cwd":"/r","hook_event_name":"AfterAgent","timestamp":"2026-12-01T10:00:00Z","prompt":"Fix it.","prompt_response":"Fixed.","stop_hook_active":false}"#).unwrap();
        assert_eq!(p.last_assistant_message.as_deref(), Some("Fixed."));
    }

    #[test]
    fn unknown_fields_are_ignored_and_session_id_is_required() {
        let p = parse_stop(r#"{"session_id":"s1","stop_hook_active":true,"brand_new_field":{"x":1}}"#).unwrap();
        assert!(p.stop_hook_active);
        assert_eq!(p.last_assistant_message, None);
        assert_eq!(parse_stop(r#"{"session_id":""}"#), Err(PayloadError::BadSessionId));
        assert!(matches!(parse_stop("{"), Err(PayloadError::NotJson(_))));
        // Valid JSON without the fields is a missing field, not "not valid JSON".
        let e = parse_stop("{}").unwrap_err();
        assert!(matches!(e, PayloadError::BadFields(_)), "{e:?}");
        assert!(e.to_string().contains("missing field `session_id`") && !e.to_string().contains("not valid JSON"));
        assert!(matches!(parse_stop(r#"{"cwd":"/x"}"#), Err(PayloadError::BadFields(_))));
        assert!(matches!(parse_stop("[1,2]"), Err(PayloadError::BadFields(_))));
        assert!(matches!(parse_stop(r#"{"session_id":123}"#), Err(PayloadError::BadFields(_))));
    }

    #[test]
    fn last_assistant_text_skips_tool_only_entries_and_torn_lines() {
        let t = concat!(
            r#"{"type":"user","message":{"role":"user","content":"go"}}"#,
            "\n",
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"first"}]}}"#,
            "\n",
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t"}]}}"#,
            "\n",
            r#"{"type":"assistant","message":{"role":"ass"#
        );
        assert_eq!(last_assistant_text(t).as_deref(), Some("first"));
        assert_eq!(last_assistant_text(""), None);
    }

    #[test]
    fn unchecked_steps_are_counted() {
        let md = "# Plan\n- [x] one\n- [ ] two\n  * [ ] three\n1. [ ] four\n- [] not a box\n";
        let (steps, n) = unchecked_steps(md);
        assert_eq!(n, 3);
        assert_eq!(steps, vec!["two", "three", "four"]);
        assert_eq!(first_open_position(md), Some(2));
        assert_eq!(first_open_position("- [x] a\n- [X] b\n"), None);
    }

    #[test]
    fn wave_files_read_loosely() {
        let v: Value = serde_json::from_str(
            r#"{"schema_version":1,"waves":[[{"file":"src/a.rs","owner":"w1"},{"nofile":1}],[{"file":"src/b.rs"}]]}"#,
        )
        .unwrap();
        let f = wave_files(&v);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].owner.as_deref(), Some("w1"));
        assert_eq!(f[1].owner, None);
        assert!(wave_files(&Value::Null).is_empty());
    }
}

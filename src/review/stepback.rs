//! The step-back: the brief premerge writes for an explore agent or a person when a
//! seam escalates, and the handoff built from the answer.
//!
//! The answer is free text with three labelled fields, each starting a line:
//! `sddElement:` (the specification element that under-specifies the shared
//! behaviour), `diagnosis:` and `proposedRevision:`. A field runs until the next label.
//! A JSON object with the same keys is accepted too.

use serde::Serialize;
use serde_json::{Value, json};

use super::seam::Cluster;

/// A guard memory touching a seam file, as the brief lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct GuardMemory {
    pub file: String,
    pub symbol: Option<String>,
    pub text: String,
}

/// The three fields of a step-back answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Analysis {
    #[serde(rename = "sddElement")]
    pub sdd_element: Option<String>,
    pub diagnosis: Option<String>,
    #[serde(rename = "proposedRevision")]
    pub proposed_revision: Option<String>,
}

/// The labels, as written in the answer, in the order the brief asks for them.
pub(crate) const FIELDS: [&str; 3] = ["sddElement", "diagnosis", "proposedRevision"];

impl Analysis {
    fn slot(&mut self, i: usize) -> &mut Option<String> {
        match i {
            0 => &mut self.sdd_element,
            1 => &mut self.diagnosis,
            _ => &mut self.proposed_revision,
        }
    }

    /// The labels with no value.
    pub(crate) fn missing(&self) -> Vec<&'static str> {
        let vals = [&self.sdd_element, &self.diagnosis, &self.proposed_revision];
        FIELDS.iter().zip(vals).filter(|(_, v)| v.is_none()).map(|(k, _)| *k).collect()
    }
}

/// Render the step-back brief (Markdown).
pub(crate) fn render_brief(round: u32, issue: Option<u64>, seams: &[Cluster], memories: &[GuardMemory]) -> String {
    let mut s = String::new();
    let issue_part = issue.map(|n| format!(", issue #{n}")).unwrap_or_default();
    s.push_str(&format!("# Step-back: review round {round}{issue_part}\n\n"));
    s.push_str(
        "Round 1 of the review found the same finding shape in several files. That is a missing\n\
         seam (one shared piece the specification never named), not separate defects: patching\n\
         each copy would entrench the duplication. Analyse the seam before anyone fixes it.\n",
    );
    for (i, c) in seams.iter().enumerate() {
        let lens = if c.lens.is_empty() { "(no lens)" } else { c.lens.as_str() };
        s.push_str(&format!("\n## Seam {}: {lens}: \"{}\"\n\n", i + 1, c.title));
        s.push_str(&format!("Files ({}):\n", c.files.len()));
        for f in &c.files {
            s.push_str(&format!("- `{f}`\n"));
        }
        s.push_str("\nFindings:\n");
        for m in &c.findings {
            let at = match m.line {
                Some(l) => format!("{}:{l}", m.file),
                None => m.file.clone(),
            };
            let sev = m.severity.as_deref().map(|v| format!(" [{v}]")).unwrap_or_default();
            s.push_str(&format!("- `{at}`{sev} {}\n", one_line(&m.title)));
            if let Some(d) = m.description.as_deref().filter(|d| !d.trim().is_empty()) {
                s.push_str(&format!("  {}\n", one_line(d)));
            }
        }
    }
    s.push_str("\n## Guard memories touching these files\n\n");
    if memories.is_empty() {
        s.push_str("None recorded.\n");
    }
    for m in memories {
        let sym = m.symbol.as_deref().map(|v| format!(" `{v}`")).unwrap_or_default();
        s.push_str(&format!("- `{}`{sym}: {}\n", m.file, one_line(&m.text)));
    }
    s.push_str(
        "\n## The question\n\n\
         Which element of the specification under-specifies the shared behaviour these files\n\
         each re-implement? Name it, say why the copies diverged, and propose the revision that\n\
         gives the behaviour one owner.\n\n\
         Answer with three labelled fields, each starting a line:\n\n\
         sddElement: <the specification element>\n\
         diagnosis: <what it leaves unsaid, and how the copies diverged>\n\
         proposedRevision: <the revision of the specification, and the shared piece it implies>\n",
    );
    s
}

fn one_line(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Parse a step-back answer: labelled lines, or a JSON object with the same keys.
pub(crate) fn parse_answer(text: &str) -> Analysis {
    let mut a = Analysis::default();
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text.trim()) {
        for (i, k) in FIELDS.iter().enumerate() {
            *a.slot(i) = o.get(*k).and_then(Value::as_str).map(str::trim).filter(|v| !v.is_empty()).map(String::from);
        }
        return a;
    }
    let mut cur: Option<(usize, String)> = None;
    let mut done: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        if let Some((i, rest)) = label(line) {
            if let Some(c) = cur.take() {
                done.push(c);
            }
            cur = Some((i, rest.to_string()));
        } else if let Some((_, v)) = cur.as_mut() {
            v.push('\n');
            v.push_str(line);
        }
    }
    done.extend(cur);
    for (i, v) in done {
        let v = v.trim().to_string();
        // The first non-empty value of a label wins: a later repeat is usually an echo.
        if !v.is_empty() && a.slot(i).is_none() {
            *a.slot(i) = Some(v);
        }
    }
    a
}

/// `sddElement: x`, `- **diagnosis:** x`, `## proposedRevision: x` -> (field, value).
fn label(line: &str) -> Option<(usize, &str)> {
    let t = line.trim_start().trim_start_matches(['-', '*', '#', '>', ' ']);
    let (key, rest) = t.split_once(':')?;
    let key = key.trim().trim_matches('*').trim_matches('`').trim();
    let i = FIELDS.iter().position(|f| f.eq_ignore_ascii_case(key))?;
    Some((i, rest.trim_start_matches('*').trim()))
}

/// How the dispatch of the brief went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dispatch {
    /// `review.dispatch_command` is empty.
    NotConfigured,
    /// The command could not run, timed out or exited non-zero.
    Failed { argv: Vec<String>, why: String },
    /// The command answered (its stdout).
    Answered { argv: Vec<String>, output: String },
}

/// Largest dispatch output kept in a handoff, in bytes: enough for any useful
/// analysis, small enough that a runaway agent cannot bloat the run directory.
pub(crate) const MAX_OUTPUT_KEPT: usize = 64 * 1024;

/// Build `handoff-NN.json`. It always carries the brief; `status` is `analysed`
/// (all three fields), `incomplete` (an answer missing fields), `failed` or
/// `not-configured`, and `failure` says what went wrong when anything did.
pub(crate) fn handoff(
    round: u32,
    issue: Option<u64>,
    brief_file: &str,
    brief: &str,
    seams: &[Cluster],
    d: &Dispatch,
) -> Value {
    let (status, analysis, argv, output, failure) = match d {
        Dispatch::NotConfigured => (
            "not-configured",
            None,
            None,
            None,
            Some(
                "review.dispatch_command is not configured: hand the brief to an explore agent or a person".to_string(),
            ),
        ),
        Dispatch::Failed { argv, why } => ("failed", None, Some(argv), None, Some(why.clone())),
        Dispatch::Answered { argv, output } => {
            let a = parse_answer(output);
            let missing = a.missing();
            let kept = truncate(output, MAX_OUTPUT_KEPT);
            if missing.is_empty() {
                ("analysed", Some(a), Some(argv), Some(kept), None)
            } else {
                let why = format!("the answer has no {}", missing.join(", no "));
                ("incomplete", Some(a), Some(argv), Some(kept), Some(why))
            }
        }
    };
    json!({
        "schema_version": 1,
        "round": round,
        "issue": issue,
        "nextStep": "step-back",
        "cap": super::caps::REPEAT_FINDING_SEAM,
        "status": status,
        "brief_file": brief_file,
        "brief": brief,
        "seams": seams.iter().map(|c| json!({"lens": c.lens, "title": c.title, "files": c.files})).collect::<Vec<_>>(),
        "analysis": analysis,
        "dispatch": {"argv": argv, "output": output},
        "failure": failure,
    })
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[truncated: {} of {} bytes kept]", &s[..end], end, s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labelled_fields_span_lines() {
        let a = parse_answer(
            "thinking...\n**sddElement:** Query filtering (spec 3.2)\n- diagnosis: no owner\n  for the builder\n\
             proposedRevision: one `FilterBuilder`\n",
        );
        assert_eq!(a.sdd_element.as_deref(), Some("Query filtering (spec 3.2)"));
        assert_eq!(a.diagnosis.as_deref(), Some("no owner\n  for the builder"));
        assert_eq!(a.proposed_revision.as_deref(), Some("one `FilterBuilder`"));
        assert!(a.missing().is_empty());
        let j = parse_answer(r#"{"sddElement":"x","diagnosis":" "}"#);
        assert_eq!(j.missing(), ["diagnosis", "proposedRevision"]);
    }

    #[test]
    fn handoff_never_empty() {
        let h = handoff(1, None, "step-back-01.md", "BRIEF", &[], &Dispatch::NotConfigured);
        assert_eq!(h["status"], "not-configured");
        assert_eq!(h["brief"], "BRIEF");
        let h = handoff(1, Some(2), "b", "BRIEF", &[], &Dispatch::Answered { argv: vec![], output: "nothing".into() });
        assert_eq!(h["status"], "incomplete");
        assert!(h["failure"].as_str().unwrap().contains("sddElement"));
    }
}

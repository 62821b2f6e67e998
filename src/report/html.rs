//! `premerge show loop --format html`: one self-contained page for a fix loop's attempts,
//! for the reviewer who wants the whole loop at a glance. A vertical timeline, one card
//! per attempt: the converge decision as the card's colour and badge, the findings, the
//! fence's result, the waves (wave, owner, file, findings, carried), the carried rows
//! with the fixers' reasons, and the drops by reason.
//!
//! Self-contained: the style is inline, there is no script, no font, image or any other
//! URL, so the page opens offline and leaks nothing. Every piece of text comes through
//! [`escape`] (control and bidi characters made visible, then `& < > " '` as entities),
//! so nothing a fixer wrote can become markup.

use std::fmt::Write as _;

use super::markdown::AttemptView;

/// The card colour of a converge decision (and of an attempt not yet decided). The
/// layout test reads these from a screenshot, so they are part of the page's contract.
pub const COLOUR_GREEN: &str = "#1a7f37";
pub const COLOUR_CONTINUE: &str = "#9a6700";
pub const COLOUR_STOPPED: &str = "#cf222e";
pub const COLOUR_UNDECIDED: &str = "#6e7781";

/// The colour of an attempt's card: its converge decision, or refused by the fence.
pub fn card_colour(v: &AttemptView) -> &'static str {
    if v.fence.as_ref().is_some_and(|f| f.refused) {
        return COLOUR_STOPPED;
    }
    match v.converge.as_deref() {
        Some("STOP_GREEN") => COLOUR_GREEN,
        Some("CONTINUE") => COLOUR_CONTINUE,
        Some(_) => COLOUR_STOPPED,
        None => COLOUR_UNDECIDED,
    }
}

/// Text for HTML: control and bidi characters as visible escapes, then the five
/// characters HTML gives meaning to as entities.
pub fn escape(s: &str) -> String {
    let plain = super::text::plain(s);
    let mut out = String::with_capacity(plain.len());
    for c in plain.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;background:#ffffff;color:#1f2328}\
h1{font-size:20px;margin:0 0 4px}p.meta{margin:0 0 20px;color:#57606a}\
.card{border-left:14px solid;padding:8px 16px;margin:0 0 18px;background:#f6f8fa}\
.card h2{font-size:16px;margin:4px 0}.badge{display:inline-block;padding:1px 8px;color:#ffffff;\
font-size:12px;margin-left:8px}table{border-collapse:collapse;margin:6px 0}\
td,th{border:1px solid #d0d7de;padding:2px 8px;text-align:left;font-size:13px}\
code{font-family:monospace}ul{margin:4px 0}";

/// The page for a loop: `title` names it (the loop id or the run directory), `attempts`
/// in order.
pub fn loop_page(title: &str, run_dir: &str, attempts: &[AttemptView]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <title>premerge: {t}</title><style>{STYLE}</style></head><body>\n\
         <h1>premerge fix loop {t}</h1><p class=\"meta\">run directory <code>{r}</code>, {n} attempt(s)</p>\n",
        t = escape(title),
        r = escape(run_dir),
        n = attempts.len()
    );
    for v in attempts {
        card(&mut s, v);
    }
    s.push_str("</body></html>\n");
    s
}

fn card(s: &mut String, v: &AttemptView) {
    let colour = card_colour(v);
    let decision = v.converge.as_deref().unwrap_or("not decided");
    let _ = writeln!(
        s,
        "<section class=\"card\" style=\"border-color:{colour}\" id=\"attempt-{nn}\">\
         <h2>Attempt {nn}<span class=\"badge\" style=\"background:{colour}\">{d}</span></h2>",
        nn = crate::store::nn(v.attempt),
        d = escape(decision)
    );
    let [total, blocker, suggestion, carried] = v.totals;
    let _ = writeln!(
        s,
        "<p>{total} finding(s): {blocker} blocker, {suggestion} suggestion, {carried} carried from the previous attempt</p>"
    );
    let fence = match &v.fence {
        None => "fence: not run".to_string(),
        Some(f) if f.refused => format!(
            "fence ({}): refused, {} stray path(s): {}",
            escape(&f.source),
            f.strays.len(),
            f.strays.iter().map(|p| format!("<code>{}</code>", escape(p))).collect::<Vec<_>>().join(", ")
        ),
        Some(f) => format!("fence ({}): ok", escape(&f.source)),
    };
    let _ = writeln!(s, "<p>{fence}</p>");
    match &v.waves {
        Err(why) => {
            let _ = writeln!(s, "<p>no readable wave plan: {}</p>", escape(why));
        }
        Ok(rows) if rows.is_empty() => s.push_str("<p>no waves: nothing to fix</p>\n"),
        Ok(rows) => {
            s.push_str("<table><tr><th>wave</th><th>owner</th><th>file</th><th>findings</th><th>carried</th></tr>\n");
            for r in rows {
                let _ = writeln!(
                    s,
                    "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    r.wave,
                    escape(&r.owner),
                    escape(&r.file),
                    r.findings,
                    r.carried
                );
            }
            s.push_str("</table>\n");
        }
    }
    if !v.carried.is_empty() {
        s.push_str("<p>carried from the previous attempt's fixers:</p><ul>\n");
        for c in &v.carried {
            let _ = writeln!(
                s,
                "<li><code>{}</code> for <code>{}</code>: {}</li>",
                escape(&c.file),
                escape(&c.from),
                escape(&c.reason)
            );
        }
        s.push_str("</ul>\n");
    }
    for (what, drops) in [("blocked-on rows dropped", &v.blocked_on_dropped), ("findings dropped", &v.findings_dropped)]
    {
        if drops.is_empty() {
            continue;
        }
        let list: Vec<String> = drops.iter().map(|(k, n)| format!("{} {n}", escape(k))).collect();
        let _ = writeln!(s, "<p>{what}: {}</p>", list.join(", "));
    }
    s.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::markdown::{CarriedRow, FenceResult, WaveRow};

    fn hostile() -> AttemptView {
        AttemptView {
            attempt: 2,
            totals: [2, 1, 1, 1],
            waves: Ok(vec![WaveRow {
                wave: 1,
                owner: "w<script>alert(1)</script>".into(),
                file: "src/\"a\".rs".into(),
                findings: 2,
                carried: 1,
            }]),
            wave_count: 1,
            carried: vec![CarriedRow {
                file: "b.rs".into(),
                from: "a.rs".into(),
                reason: "<img src=x onerror=alert(1)> \u{1b}[2J \u{202e}gnp.exe".into(),
            }],
            fence: Some(FenceResult {
                source: "fence check".into(),
                mode: None,
                refused: true,
                strays: vec!["<b>x</b>".into()],
            }),
            converge: Some("CONTINUE".into()),
            ..AttemptView::default()
        }
    }

    #[test]
    fn agent_text_never_becomes_markup_and_the_page_loads_nothing() {
        let page = loop_page("loop-<1>", "/run", &[hostile()]);
        for raw in ["<script", "<img", "<b>", "\u{1b}", "\u{202e}", "http://", "https://", "src=\"", "url("] {
            assert!(!page.contains(raw), "{raw:?} in {page}");
        }
        assert!(page.contains("&lt;img src=x onerror=alert(1)&gt; \\u{1b}[2J \\u{202e}gnp.exe"), "{page}");
        assert!(page.contains("default-src 'none'"));
        // Refused by the fence: the stopped colour, whatever converge said.
        assert!(page.contains(&format!("border-color:{COLOUR_STOPPED}")));
    }

    #[test]
    fn the_card_colour_follows_the_decision() {
        let mut v = AttemptView::default();
        assert_eq!(card_colour(&v), COLOUR_UNDECIDED);
        v.converge = Some("CONTINUE".into());
        assert_eq!(card_colour(&v), COLOUR_CONTINUE);
        v.converge = Some("STOP_GREEN".into());
        assert_eq!(card_colour(&v), COLOUR_GREEN);
        v.converge = Some("STOP_NO_PROGRESS".into());
        assert_eq!(card_colour(&v), COLOUR_STOPPED);
    }
}

//! `premerge show loop`: a loop's attempts as text, JSON and one self-contained HTML
//! page, the page looked at through headless Chromium (Debian's `chromium`), whose
//! screenshot is checked for its layout: one card per attempt, top to bottom, each in
//! its decision's colour.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::common::{TestRepo, have_tool};

/// A loop of three attempts in one run directory, through the real commands: attempt 1
/// continues (a fixer was blocked on `b.rs`), attempt 2 carries `b.rs` and its fence
/// refuses a stray, attempt 3 finds nothing and stops green.
fn three_attempts() -> (TestRepo, std::path::PathBuf) {
    let r = TestRepo::new();
    for f in ["a.rs", "b.rs", "c.rs"] {
        r.write(f, "fn f() {}\n");
    }
    r.commit_all("base");
    let run = r.dir.path().join("run");
    let rd = run.to_str().unwrap().to_string();
    let finding = |f: &str| {
        json!({"file": f, "line": 1, "summary": format!("unchecked input in {f}"),
                                    "failure_scenario": "x", "category": "bug", "severity": "blocker"})
    };
    let plan = |n: &str, doc: serde_json::Value| {
        r.write("findings.json", doc.to_string());
        let f = r.root.join("findings.json");
        r.premerge(&["plan", "--attempt", n, "--findings", f.to_str().unwrap(), "--carry-blocked", "--run-dir", &rd])
            .expect_code(0);
        fs::remove_file(&f).unwrap();
    };
    plan("1", json!([finding("a.rs")]));
    let ret = r#"{"blocked_on_file":[{"file":"b.rs","reason":"the <b>shared</b> check lives in b.rs \u001b[2J"}]}"#;
    r.premerge_stdin(&["blocked", "record", "--attempt", "1", "--from-file", "a.rs", "--run-dir", &rd], ret.as_bytes())
        .expect_code(0);
    r.premerge(&["converge", "--attempt", "1", "--run-dir", &rd]).expect_code(0);
    plan("2", json!([finding("c.rs")]));
    r.write("stray.txt", "not planned\n");
    r.premerge(&["fence", "check", "--attempt", "2", "--worktree", "--run-dir", &rd]).expect_code(1);
    fs::remove_file(r.root.join("stray.txt")).unwrap();
    r.premerge(&["converge", "--attempt", "2", "--run-dir", &rd]).expect_code(0);
    plan("3", json!([]));
    r.premerge(&["converge", "--attempt", "3", "--run-dir", &rd]).expect_code(0);
    (r, run)
}

#[test]
fn show_loop_lists_every_attempt_in_text_and_json() {
    let (r, run) = three_attempts();
    let rd = run.to_str().unwrap();
    let text = r.premerge(&["show", "loop", "--run-dir", rd]).expect_code(0).stdout.clone();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[1].starts_with("attempt 01: 1 finding(s), 0 carried") && lines[1].ends_with("CONTINUE"), "{text}");
    assert!(lines[2].contains("1 carried") && lines[2].contains("fence refused 1 stray path(s)"), "{text}");
    assert!(lines[3].ends_with("STOP_GREEN"), "{text}");
    let j = r.premerge(&["show", "loop", "--run-dir", rd, "--format", "json"]).expect_code(0).json();
    let attempts = j["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3);
    assert_eq!(attempts[1]["carried"][0]["file"], "b.rs");
    assert_eq!(attempts[2]["converge"], "STOP_GREEN");
    // A run directory without attempts is a clear error.
    let empty = r.dir.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let out = r.premerge(&["show", "loop", "--run-dir", empty.to_str().unwrap()]);
    out.expect_code(2);
    assert!(out.stderr.contains("no attempt here"), "{}", out.stderr);
}

/// RGB of `#rrggbb`.
fn rgb(hex: &str) -> [u8; 3] {
    let v = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap();
    [v(1), v(3), v(5)]
}

fn screenshot(page: &Path, png: &Path, profile: &Path) -> String {
    let url = format!("file://{}", page.display());
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-color-profile=srgb",
            "--window-size=1000,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn the_loop_page_renders_one_card_per_attempt_in_its_decisions_colour() {
    let (r, run) = three_attempts();
    let page = r.premerge(&["show", "loop", "--run-dir", run.to_str().unwrap(), "--format", "html"]);
    page.expect_code(0);
    let html = &page.stdout;
    // Self-contained, and nothing a fixer wrote is markup.
    for raw in ["<script", "http://", "https://", "<b>shared", "\u{1b}"] {
        assert!(!html.contains(raw), "{raw:?} in the page");
    }
    assert!(html.contains("the &lt;b&gt;shared&lt;/b&gt; check lives in b.rs \\u{1b}[2J"), "{html}");
    if !have_tool("chromium", &["--version"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("loop.html");
    fs::write(&file, html).unwrap();
    let png = dir.path().join("loop.png");
    let log = screenshot(&file, &png, &dir.path().join("profile"));
    let decoder =
        png::Decoder::new(std::io::BufReader::new(fs::File::open(&png).unwrap_or_else(|e| panic!("{e}: {log}"))));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert_eq!(info.width, 1000);
    // Down the cards' left border (the body's 24 px margin, then a 14 px border), the
    // colours met in order, each run at least a card's few lines tall.
    let x = 30usize;
    let pixel = |y: usize| {
        let i = (y * info.width as usize + x) * channels;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    let wanted = [
        premerge::report::html::COLOUR_CONTINUE,
        premerge::report::html::COLOUR_STOPPED,
        premerge::report::html::COLOUR_GREEN,
    ];
    let close = |a: [u8; 3], b: [u8; 3]| a.iter().zip(b).all(|(p, q)| p.abs_diff(q) <= 6);
    let mut runs: Vec<(usize, usize, usize)> = Vec::new(); // (colour index, first y, height)
    for y in 0..info.height as usize {
        let p = pixel(y);
        let Some(c) = wanted.iter().position(|w| close(p, rgb(w))) else { continue };
        match runs.last_mut() {
            Some((last, first, h)) if *last == c && *first + *h == y => *h += 1,
            _ => runs.push((c, y, 1)),
        }
    }
    let order: Vec<usize> = runs.iter().map(|r| r.0).collect();
    assert_eq!(order, [0, 1, 2], "cards top to bottom: CONTINUE, refused, STOP_GREEN: {runs:?}");
    assert!(runs.iter().all(|r| r.2 >= 40), "each card is a block, not a line: {runs:?}");
    assert!(runs.windows(2).all(|w| w[1].1 > w[0].1 + w[0].2), "the cards are apart: {runs:?}");
}

//! `premerge proposal`: emit a refinement proposal under its stripe (or halt when the
//! stripe is already open), and the operator's `list`, `show`, `apply`, `reject`.
//!
//! Emission is [`crate::stripe::emit`] (also called by other commands for premerge's
//! own signals); the files are [`crate::store::proposals`]. The pure side (ids,
//! projections, documents) is `crate::stripe`.
//!
//! Layout: `<root>/{open,applied,rejected}/<stripe with / as -->-<YYYYMMDDTHHMMSSZ>[-N].md`.
//! Only `open/` is consulted by the stripe check, so a resolved stripe fires again
//! when its problem recurs. Events (`refinement_proposal_emitted`,
//! `stripe_repeat_halt`, `proposal_applied`, `proposal_rejected`) are appended to
//! `events.jsonl` of the repository's run directory, where `premerge drain` reads them.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{Value, json};

use super::Ctx;
pub use crate::cli::RootArgs;
use crate::error::{CmdResult, Exit, input_error};
use crate::store::proposals::{RootScan, STATES, read_proposal, resolve, resolve_open, scan_root};
use crate::stripe::emit::{Outcome, emit};
use crate::stripe::proposal as doc;
use crate::stripe::{Evidence, StripeId, validate_scope, validate_signal};

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Compute the stripe of some evidence and write a proposal, or halt (exit 1)
    /// when a proposal of that stripe is still open.
    Emit(EmitArgs),
    /// List open, applied and rejected proposals with their stripes and ages.
    List(ListArgs),
    /// Print a proposal (ID: a stripe id or a proposal's file name).
    Show(IdArgs),
    /// Mark an open proposal applied (moves it to applied/).
    Apply(IdArgs),
    /// Reject an open proposal: append the rationale and move it to rejected/.
    Reject(RejectArgs),
}

#[derive(Debug, clap::Args)]
pub struct EmitArgs {
    /// Scope of the stripe: [a-z0-9_-]+, optionally /another-segment.
    #[arg(long)]
    pub scope: String,
    /// Signal name: a letter or digit, then [A-Za-z0-9_-] (e.g. repeat_seam, TRACE-001).
    #[arg(long)]
    pub signal: String,
    /// JSON array of evidence rows (or {"rows": [...]}); `-` reads stdin.
    #[arg(long, value_name = "FILE")]
    pub evidence: PathBuf,
    /// Workflow id recorded in the proposal and in a halt event.
    #[arg(long, value_name = "ID")]
    pub workflow: Option<String>,
    #[command(flatten)]
    pub root: RootArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub root: RootArgs,
}

#[derive(Debug, clap::Args)]
pub struct IdArgs {
    /// A stripe id or a proposal's file name.
    pub id: String,
    #[command(flatten)]
    pub root: RootArgs,
}

#[derive(Debug, clap::Args)]
pub struct RejectArgs {
    /// A stripe id or a proposal's file name.
    pub id: String,
    /// Why the proposal is rejected (appended as `## Rejection rationale`).
    #[arg(long)]
    pub reason: String,
    #[command(flatten)]
    pub root: RootArgs,
}

// ---------------------------------------------------------------------------
// Commands

pub fn run(cmd: Cmd, ctx: &mut Ctx) -> CmdResult {
    match cmd {
        Cmd::Emit(a) => run_emit(a, ctx),
        Cmd::List(a) => run_list(a, ctx),
        Cmd::Show(a) => run_show(a, ctx),
        Cmd::Apply(a) => run_apply(a, ctx),
        Cmd::Reject(a) => run_reject(a, ctx),
    }
}

fn read_evidence(ctx: &mut Ctx, file: &Path) -> Result<Vec<Value>> {
    let (name, text) = if file == Path::new("-") {
        ("stdin".to_string(), ctx.read_stdin(crate::input::Kind::Evidence)?)
    } else {
        let p = ctx.cwd.join(file);
        let t = crate::input::read_text(&p, crate::input::Kind::Evidence)?;
        (p.display().to_string(), t)
    };
    let ev = Evidence::parse(&text).map_err(|e| input_error(&name, e))?;
    // Re-serialised rows: `emit` takes plain values so other areas can pass theirs.
    Ok(ev.rows.into_iter().map(|r| Value::Object(r.fields)).collect())
}

fn run_emit(a: EmitArgs, ctx: &mut Ctx) -> CmdResult {
    validate_scope(&a.scope).map_err(|e| input_error("--scope", e))?;
    validate_signal(&a.signal).map_err(|e| input_error("--signal", e))?;
    let rows = read_evidence(ctx, &a.evidence)?;
    let w = super::proposal_place(ctx, &a.root)?;
    let out =
        emit(&w.root, &w.events_dir, &a.scope, &a.signal, &rows, a.workflow.as_deref(), w.generator.as_ref(), w.mode)?;
    for warning in &out.warnings {
        ctx.warn(warning);
    }
    ctx.stdout.write_all(crate::canonical::to_line(&out.to_json())?.as_bytes())?;
    if out.outcome == Outcome::StripeRepeatHalt && !out.halts() {
        ctx.warn("stripe repeat in shadow mode (proposal.halt_mode): logged, not halting");
    }
    Ok(if out.halts() { Exit::Policy } else { Exit::Ok })
}

fn run_list(a: ListArgs, ctx: &mut Ctx) -> CmdResult {
    let w = super::proposal_place(ctx, &a.root)?;
    let RootScan { listed, unparseable: bad, totals } = scan_root(&w.root)?;
    for b in &bad {
        ctx.warn(format!("{}: unparseable proposal skipped: {}", b.path, b.reason));
    }
    let total: usize = totals.values().sum();
    match a.format {
        Format::Json => {
            let mut t = serde_json::Map::new();
            for (k, v) in &totals {
                t.insert((*k).to_string(), json!(v));
            }
            t.insert("total".into(), json!(total));
            t.insert("unparseable".into(), json!(bad.len()));
            let v = json!({"schema_version": 1, "root": w.root.display().to_string(), "proposals": listed, "unparseable": bad, "totals": t});
            ctx.stdout.write_all(crate::canonical::to_line(&v)?.as_bytes())?;
        }
        Format::Text => {
            if !listed.is_empty() {
                writeln!(ctx.stdout, "{:<9} {:<40} {:>5}  PATH", "STATUS", "STRIPE", "AGE")?;
            }
            for l in &listed {
                let age = l.age_seconds.map(doc::format_age).unwrap_or_else(|| "?".into());
                writeln!(ctx.stdout, "{:<9} {:<40} {:>5}  {}", l.status, l.stripe, age, l.path)?;
            }
            writeln!(
                ctx.stdout,
                "totals: open {}, applied {}, rejected {}, total {} ({} unparseable)",
                totals["open"],
                totals["applied"],
                totals["rejected"],
                total,
                bad.len()
            )?;
        }
    }
    Ok(Exit::Ok)
}

fn run_show(a: IdArgs, ctx: &mut Ctx) -> CmdResult {
    let w = super::proposal_place(ctx, &a.root)?;
    let found = resolve(&w.root, &a.id, &STATES)?;
    let open: Vec<_> = found.iter().filter(|(s, _)| *s == "open").collect();
    let path = match (found.len(), open.len()) {
        (0, _) => return Err(input_error(format!("`{}`", a.id), format!("no proposal under {}", w.root.display()))),
        (1, _) => found[0].1.clone(),
        (_, 1) => open[0].1.clone(),
        _ => {
            return Err(input_error(
                format!("`{}`", a.id),
                format!(
                    "names {} proposals; give a file name: {}",
                    found.len(),
                    found.iter().map(|(_, p)| p.display().to_string()).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    };
    let text = read_proposal(&path)?;
    ctx.stdout.write_all(text.as_bytes())?;
    Ok(Exit::Ok)
}

fn run_apply(a: IdArgs, ctx: &mut Ctx) -> CmdResult {
    let w = super::proposal_place(ctx, &a.root)?;
    let (stripe, to) = resolve_open(&w.root, &w.events_dir, &a.id, "applied", None)?;
    let v = json!({"outcome": "applied", "stripe": stripe, "path": to.display().to_string()});
    ctx.stdout.write_all(crate::canonical::to_line(&v)?.as_bytes())?;
    Ok(Exit::Ok)
}

fn run_reject(a: RejectArgs, ctx: &mut Ctx) -> CmdResult {
    if a.reason.trim().is_empty() {
        return Err(input_error("--reason", "must not be empty"));
    }
    let w = super::proposal_place(ctx, &a.root)?;
    let (stripe, to) = resolve_open(&w.root, &w.events_dir, &a.id, "rejected", Some(&a.reason))?;
    let v = json!({"outcome": "rejected", "stripe": stripe, "path": to.display().to_string()});
    ctx.stdout.write_all(crate::canonical::to_line(&v)?.as_bytes())?;
    Ok(Exit::Ok)
}

// ---------------------------------------------------------------------------
// Demo

pub(crate) fn demo_stage(d: &mut super::DemoRun) -> Result<()> {
    let evidence = r#"[
  {"id": "round-1/ARCHITECTURE/1", "title": "Unchecked numeric range", "summary": "src/query.rs: limit widened"},
  {"id": "round-1/ARCHITECTURE/2", "title": "unchecked numeric range", "summary": "src/query.rs: ratio check removed"}
]
"#;
    d.write("evidence/seam.json", evidence)?;
    let run_dir = d.run_dir.clone();
    let here = || RootArgs { root: None, run_dir: Some(run_dir.clone()) };
    let emit_args = || EmitArgs {
        scope: "review".into(),
        signal: "repeat_seam".into(),
        evidence: "evidence/seam.json".into(),
        workflow: Some("demo-1".into()),
        root: here(),
    };
    d.say("$ premerge proposal emit --scope review --signal repeat_seam --evidence evidence/seam.json")?;
    let first = d.with_ctx(b"", |c| run_emit(emit_args(), c))?;
    d.say(format!("  (exit {}: the workflow goes on)", first.code()))?;
    d.say("$ premerge proposal emit ...   # the same seam again while its proposal is open")?;
    let second = d.with_ctx(b"", |c| run_emit(emit_args(), c))?;
    d.say(format!("  (exit {}: stripe repeat, the workflow halts for a human)", second.code()))?;
    d.say("$ premerge drain")?;
    let drained = d.cli(b"", &["drain", "--run-dir", &run_dir.to_string_lossy()])?;
    d.say(format!("  (exit {})", drained.code()))?;
    d.say("$ premerge proposal list")?;
    d.with_ctx(b"", |c| run_list(ListArgs { format: Format::Text, root: here() }, c))?;
    // The review stage's step-back opened a proposal of its own; apply the one this
    // stage emitted, whose id follows from the evidence alone.
    let projection = crate::stripe::projection::project("repeat_seam", &Evidence::parse(evidence)?);
    let stripe = StripeId::compute("review", &projection)?.to_string();
    d.say(format!("$ premerge proposal apply {stripe}"))?;
    d.with_ctx(b"", |c| run_apply(IdArgs { id: stripe.clone(), root: here() }, c))?;
    d.say("$ premerge drain")?;
    let drained = d.cli(b"", &["drain", "--run-dir", &run_dir.to_string_lossy()])?;
    d.say(format!("  (exit {}: the halt is resolved)", drained.code()))?;
    Ok(())
}

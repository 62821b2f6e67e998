//! What `premerge status` shows on one screen besides the background job: the open fix
//! loop, the proposals and their pending halts, the stop gate and the guard memories.
//! The types are the `--format json` document's parts, and `premerge schema status`
//! is derived from them.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// `premerge status --format json`: one line.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct StatusDoc {
    #[schemars(extend("const" = 1))]
    pub schema_version: u32,
    /// The background job: `state` (`running`, `idle`, `never-ran`) and what it recorded.
    pub job: Value,
    /// Ranges queued for the job.
    pub pending: usize,
    /// Results of the job nobody had printed, printed (and so claimed) by this call.
    pub results: Vec<Value>,
    /// The scan cache's intact and damaged entries; `null` without a cache.
    pub scan_cache: Option<Value>,
    #[serde(rename = "loop")]
    pub fix_loop: LoopSummary,
    /// `null` when the proposal root cannot be told (a root refused by its rule).
    pub proposals: Option<ProposalSummary>,
    pub gate: GateSummary,
    pub memories: MemorySummary,
}

/// This worktree's fix loop.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub(crate) struct LoopSummary {
    /// `none`, `open`, `closed` or `unreadable` (the fence then refuses: fail closed).
    pub state: String,
    pub id: Option<String>,
    pub attempt: Option<u32>,
    pub run_dir: Option<String>,
    /// `fence.mode`: `off`, `shadow` or `enforce`.
    pub fence_mode: String,
}

/// Proposals under the proposal root, and the stripe halts waiting for a person.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ProposalSummary {
    pub root: String,
    pub open: usize,
    /// Halts whose proposal is still open (`premerge drain` exits 1 while any is).
    pub pending_halts: usize,
}

/// The stop gate's mode and what it would have blocked.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct GateSummary {
    /// The effective mode: `off`, `shadow`, `enforce`, or `off (kill switch)`.
    pub mode: String,
    pub kill_switch: bool,
    /// Shadow decisions that enforce would have blocked, today and over the last 7 days.
    pub would_block_today: i64,
    pub would_block_7_days: i64,
    /// Stops enforce blocked over the last 7 days.
    pub blocked_7_days: i64,
}

/// The guard memories of the clone.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct MemorySummary {
    pub recorded: usize,
    /// `memory.backend_command` when set (memories go there too).
    pub backend: Option<Vec<String>>,
}

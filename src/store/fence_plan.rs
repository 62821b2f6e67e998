//! The wave plans of a run directory as the fence reads them: the current attempt and
//! its allowed set. Shared by `premerge fence` and the pre-push fence
//! (`crate::hook::stages`).

use std::fs;
use std::path::Path;

use anyhow::{Result, anyhow, bail};

use crate::waves::fence::allowed;

/// The allowed set of `attempt`'s plan in `run_dir` (only `owner`'s files with an owner).
pub(crate) fn allowed_of(run_dir: &camino::Utf8Path, attempt: u32, owner: Option<&str>) -> Result<Vec<String>> {
    let plan = crate::store::run_dir::read_plan(run_dir, attempt)?;
    allowed(&plan, owner)
        .ok_or_else(|| anyhow!("owner `{}` is not in the plan of attempt {attempt}", owner.unwrap_or("")))
}

/// The current plan of a run directory: the highest-numbered `fix-waves-NN.json`
/// (NN all digits). `None` when the directory holds no plan (the fence is inactive).
pub(crate) fn current_attempt(run_dir: &Path) -> Result<Option<u32>> {
    let entries = match fs::read_dir(run_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("{}: cannot list: {e}", run_dir.display()),
    };
    let mut best = None;
    for e in entries {
        let name = e?.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(nn) = name.strip_prefix("fix-waves-").and_then(|r| r.strip_suffix(".json")) else { continue };
        if nn.len() >= 2 && nn.bytes().all(|b| b.is_ascii_digit()) {
            let n: u32 = nn.parse().unwrap_or(u32::MAX);
            best = best.max(Some(n));
        }
    }
    Ok(best)
}

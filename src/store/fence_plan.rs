//! The wave plans of a run directory as the fence reads them: an attempt's allowed
//! set. Shared by `premerge fence` and the pre-push fence (`crate::hook::stages`),
//! which takes the attempt from the fix loop's record, never from the file names it
//! finds.

use anyhow::{Result, anyhow};

use crate::waves::fence::allowed;

/// The allowed set of `attempt`'s plan in `run_dir` (only `owner`'s files with an owner).
pub(crate) fn allowed_of(run_dir: &camino::Utf8Path, attempt: u32, owner: Option<&str>) -> Result<Vec<String>> {
    let plan = crate::store::run_dir::read_plan(run_dir, attempt)?;
    allowed(&plan, owner)
        .ok_or_else(|| anyhow!("owner `{}` is not in the plan of attempt {attempt}", owner.unwrap_or("")))
}

//! Creating repositories and commits: used by `premerge demo` to build its scratch
//! repository without needing a `git` executable or any user configuration.

use std::path::Path;

use git2::{IndexAddOption, Repository, Signature, Time};

use super::{Repo, Result};

/// The identity of demo commits: fixed, so the demo prints the same ids every run.
const DEMO_NAME: &str = "premerge demo";
const DEMO_EMAIL: &str = "demo@premerge.invalid";
/// 2026-01-01T00:00:00Z: the demo's first commit time; each commit adds a minute.
const DEMO_EPOCH: i64 = 1_767_225_600;

impl Repo {
    /// Create a new non-bare repository at `path` whose initial branch is `main`.
    pub fn init(path: &Path) -> Result<Repo> {
        let mut opts = git2::RepositoryInitOptions::new();
        opts.initial_head("main");
        Ok(Repo { inner: Repository::init_opts(path, &opts)? })
    }

    /// Stage every change in the working tree (additions, modifications, deletions)
    /// and commit it on HEAD with the fixed demo identity. Returns the commit id.
    pub fn commit_all(&self, message: &str) -> Result<String> {
        let mut index = self.inner.index()?;
        index.add_all(["*"].iter(), IndexAddOption::DEFAULT, None)?;
        index.update_all(["*"].iter(), None)?;
        index.write()?;
        let tree = self.inner.find_tree(index.write_tree()?)?;
        let parent = self.inner.head().ok().and_then(|h| h.peel_to_commit().ok());
        let n = parent.as_ref().map_or(0, |p| p.parents().count() as i64 + 1);
        let sig = Signature::new(DEMO_NAME, DEMO_EMAIL, &Time::new(DEMO_EPOCH + 60 * n, 0))?;
        let parents: Vec<_> = parent.iter().collect();
        let id = self.inner.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)?;
        Ok(id.to_string())
    }
}

//! Review routing: what a review round's findings mean for the next step.
//!
//! - [`title`]: normalising finding titles so file-specific tokens do not split a cluster;
//! - [`seam`]: clustering a round's findings, and which clusters are seams;
//! - [`route`]: the routing table (done, lens-fix, step-back, handoff) and its events;
//! - [`stepback`]: the step-back brief and the handoff built from its answer;
//! - [`caps`]: the caps routing emits and their operator-facing explanations;
//! - [`clones`]: the copy detector over the code a change adds.
//!
//! Pure: no file system, git, process or clock. The commands `premerge review`,
//! `premerge explain-cap` and `premerge seams` do the I/O.

pub(crate) mod caps;
pub mod clones;
pub mod copies;
pub mod route;
pub mod seam;
pub(crate) mod stepback;
pub mod title;

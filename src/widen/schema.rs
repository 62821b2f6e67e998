//! Placeholder: this language's detector is filled by the widening-scan work.

use super::{DetectError, RawFinding, RuleDef};

pub const RULES: &[RuleDef] = &[];

pub fn detect(_path: &str, _before: &str, _after: &str) -> Result<Vec<RawFinding>, DetectError> {
    Ok(Vec::new())
}

//! Stripes: deterministic categorical keys for classes of recurring problems, and
//! the refinement proposals filed under them.
//!
//! A stripe id is `<scope>:<signal>:<hash>`. The hash is the first 8 lowercase hex
//! digits of SHA-256 over the compact canonical JSON of the signal's normalised
//! projection of its evidence rows (algorithm [`ALGORITHM`]). Row ids, timestamps,
//! row order and free text never enter a hash, so the same problem class gives the
//! same id on every machine and in every run.
//!
//! Everything here is pure: evidence arrives as parsed JSON, times as values. The
//! file-system side (the open-stripe check, writing, moving) lives in
//! `store::proposals`, and emission (which reads the configuration and writes through
//! the store) in [`emit`].

pub mod emit;
pub mod projection;
pub mod proposal;

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

pub use projection::{Evidence, EvidenceError, EvidenceRow, Projection, project};

/// The stripe algorithm this build computes. A change of projection or hashing is a
/// new version (`stripe/v2`), never a silent change of ids: ids are compared against
/// files written by earlier runs.
/// stripe/v2 (the default projection keeps whole paths; `TRACE-001` clauses) leaves
/// the id of every stripe v1 projected the same way unchanged: the hash does not
/// include the version.
pub(crate) const ALGORITHM: &str = "stripe/v2";

/// Hex digits kept from the SHA-256: 8 (32 bits). A false merge of two different
/// patterns within one scope and signal needs a 2^-32 coincidence, negligible for the
/// handful of open proposals a repository carries at a time.
pub(crate) const HASH_LEN: usize = 8;

/// Why a stripe id did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StripeIdError {
    /// Not three `:`-separated parts.
    #[error("`{0}` is not a stripe id: expected <scope>:<signal>:<8 lowercase hex>")]
    Shape(String),
    /// The scope is not `[a-z0-9_-]+` with at most one `/segment`.
    #[error("`{0}` is not a valid scope: expected [a-z0-9_-]+, optionally `/` and another such segment")]
    Scope(String),
    /// The signal is not a letter or digit followed by `[A-Za-z0-9_-]*`.
    #[error(
        "`{0}` is not a valid signal: expected a letter or digit, then letters, digits, `_` or `-` (e.g. repeat_seam, TRACE-001)"
    )]
    Signal(String),
    /// The hash is not exactly 8 lowercase hex digits.
    #[error("`{0}` is not a valid stripe hash: expected exactly 8 lowercase hex digits")]
    Hash(String),
}

/// A parsed stripe id. `Display` formats it back exactly as parsed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StripeId {
    scope: String,
    signal: String,
    hash: String,
}

fn is_segment(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Check a scope: `[a-z0-9_-]+`, optionally followed by `/` and another such segment.
pub(crate) fn validate_scope(scope: &str) -> Result<(), StripeIdError> {
    let ok = match scope.split_once('/') {
        Some((a, b)) => is_segment(a) && is_segment(b),
        None => is_segment(scope),
    };
    if ok { Ok(()) } else { Err(StripeIdError::Scope(scope.to_string())) }
}

/// Longest signal name: a name, not a payload.
pub(crate) const MAX_SIGNAL_LEN: usize = 64;

/// Check a signal name: an ASCII letter or digit, then letters, digits, `_` or `-`, at
/// most [`MAX_SIGNAL_LEN`] bytes. Signal ids of audit rule sets (`TRACE-001`) are
/// signals as much as premerge's own (`repeat_seam`); case is kept, never folded.
pub(crate) fn validate_signal(signal: &str) -> Result<(), StripeIdError> {
    let b = signal.as_bytes();
    if !b.is_empty()
        && b.len() <= MAX_SIGNAL_LEN
        && b[0].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
    {
        Ok(())
    } else {
        Err(StripeIdError::Signal(signal.to_string()))
    }
}

fn validate_hash(hash: &str) -> Result<(), StripeIdError> {
    if hash.len() == HASH_LEN && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(())
    } else {
        Err(StripeIdError::Hash(hash.to_string()))
    }
}

impl StripeId {
    /// Build an id from its parts, validating each.
    pub fn new(scope: &str, signal: &str, hash: &str) -> Result<StripeId, StripeIdError> {
        validate_scope(scope)?;
        validate_signal(signal)?;
        validate_hash(hash)?;
        Ok(StripeId { scope: scope.to_string(), signal: signal.to_string(), hash: hash.to_string() })
    }

    /// Parse `<scope>:<signal>:<hash>`.
    pub fn parse(s: &str) -> Result<StripeId, StripeIdError> {
        let mut parts = s.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(scope), Some(signal), Some(hash), None) => StripeId::new(scope, signal, hash),
            _ => Err(StripeIdError::Shape(s.to_string())),
        }
    }

    /// The stripe of `projection` under `scope` (algorithm [`ALGORITHM`]).
    pub fn compute(scope: &str, projection: &Projection) -> Result<StripeId, StripeIdError> {
        StripeId::new(scope, &projection.signal, &hash_projection(projection))
    }

    pub fn scope(&self) -> &str {
        &self.scope
    }
    pub fn signal(&self) -> &str {
        &self.signal
    }
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The id as it appears in proposal file names: `/` in the scope becomes `+`, a
    /// character no scope holds, so the scopes `a/b` and `a--b` never share a name.
    pub fn file_stem(&self) -> String {
        self.to_string().replace('/', "+")
    }

    /// The file stem proposals written before `+` had: `/` as `--`, which the scope
    /// `a--b` shares. Still read (confirmed by the front matter), never written.
    pub fn legacy_file_stem(&self) -> String {
        self.to_string().replace('/', "--")
    }

    /// Whether the proposal file `name` names this stripe, by its current or its
    /// legacy stem (the caller confirms a legacy match by the front matter).
    pub(crate) fn names_file(&self, name: &str) -> bool {
        let stem = self.file_stem();
        crate::store::proposals::names_stripe(name, &stem) || {
            let legacy = self.legacy_file_stem();
            legacy != stem && crate::store::proposals::names_stripe(name, &legacy)
        }
    }
}

impl fmt::Display for StripeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.scope, self.signal, self.hash)
    }
}

impl FromStr for StripeId {
    type Err = StripeIdError;
    fn from_str(s: &str) -> Result<StripeId, StripeIdError> {
        StripeId::parse(s)
    }
}

/// The first [`HASH_LEN`] hex digits of SHA-256 over the compact canonical JSON of the
/// projection's items (a sorted, deduplicated JSON array).
pub(crate) fn hash_projection(projection: &Projection) -> String {
    let json = crate::canonical::to_compact(&projection.items).expect("a JSON array of strings always serialises");
    let digest = Sha256::digest(json.as_bytes());
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    hex.truncate(HASH_LEN);
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_format_round_trip() {
        for s in [
            "review:repeat_seam:0123abcd",
            "scan/rust:widening_repeat:ffffffff",
            "a-b_c:x:00000000",
            "task-audit:TRACE-001:0123abcd",
        ] {
            let id = StripeId::parse(s).unwrap();
            assert_eq!(id.to_string(), s);
            assert_eq!(s.parse::<StripeId>().unwrap(), id);
        }
        let id = StripeId::parse("scan/rust:widening_repeat:ffffffff").unwrap();
        assert_eq!(id.scope(), "scan/rust");
        assert_eq!(id.file_stem(), "scan+rust:widening_repeat:ffffffff");
        assert_eq!(id.legacy_file_stem(), "scan--rust:widening_repeat:ffffffff");
        // `a--b` is a valid scope of its own: its stem can never be `a/b`'s.
        let dashes = StripeId::parse("scan--rust:widening_repeat:ffffffff").unwrap();
        assert_ne!(dashes.file_stem(), id.file_stem());
        assert!(id.names_file("scan--rust:widening_repeat:ffffffff-20260101T000000Z.md"), "legacy names are read");
        assert!(!dashes.names_file("scan+rust:widening_repeat:ffffffff-20260101T000000Z.md"));
    }

    #[test]
    fn malformed_ids_are_refused_with_the_part_named() {
        let cases = [
            ("review:repeat_seam", "not a stripe id"),
            ("a:b:c:d", "not a stripe id"),
            ("Review:x:0123abcd", "scope"),
            ("a/b/c:x:0123abcd", "scope"),
            ("a/:x:0123abcd", "scope"),
            (":x:0123abcd", "scope"),
            ("a:-x:0123abcd", "signal"),
            ("a:x.1:0123abcd", "signal"),
            ("a::0123abcd", "signal"),
            ("a:x:0123ABCD", "hash"),
            ("a:x:0123abc", "hash"),
            ("a:x:0123abcde", "hash"),
            ("a:x:0123abcg", "hash"),
        ];
        for (s, part) in cases {
            let e = StripeId::parse(s).unwrap_err().to_string();
            assert!(e.contains(part), "{s}: {e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_valid_id_round_trips(
            a in "[a-z0-9_-]{1,12}", b in proptest::option::of("[a-z0-9_-]{1,12}"),
            sig in "[A-Za-z0-9][A-Za-z0-9_-]{0,19}", h in "[0-9a-f]{8}",
        ) {
            let scope = match b { Some(b) => format!("{a}/{b}"), None => a };
            let s = format!("{scope}:{sig}:{h}");
            let id = StripeId::parse(&s).unwrap();
            proptest::prop_assert_eq!(id.to_string(), s);
        }
    }
}

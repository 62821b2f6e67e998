//! Inventories as the store keeps them ([`crate::store::inventories`]): a version's
//! inventory, encoded by the detector that built it, read back by blob id in a later
//! scan.
//!
//! Inventories are serde types; the few fields that hold one of a closed set of words
//! (`&'static str`: the plain types a literal or an enum value may have) are read back
//! through [`word`], so a stored word premerge does not know is an error (the entry is
//! then a miss), never a leaked or guessed string.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::{Deserializer, Error};
use serde::{Deserialize, Serialize};

/// A word of [`WORDS`] in an inventory field (an alias, so that serde does not take the
/// field for text borrowed from the input).
pub(in crate::widen) type Word = &'static str;

/// Every word an inventory's `&'static str` fields hold: Python's plain types and
/// TypeScript's primitives. A round trip of every fixture's inventories is tested, so a
/// detector that records a new word fails a test until it is listed here.
const WORDS: &[&str] =
    &["Decimal", "bool", "boolean", "bytes", "float", "int", "list", "number", "set", "str", "string"];

/// The static copy of `w`, if it is one of [`WORDS`].
fn word<E: Error>(w: &str) -> Result<&'static str, E> {
    WORDS.iter().copied().find(|x| *x == w).ok_or_else(|| E::custom(format!("unknown word `{w}`")))
}

/// `Option<&'static str>` read back.
pub(in crate::widen) fn opt_word<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'static str>, D::Error> {
    Option::<String>::deserialize(d)?.map(|w| word(&w)).transpose()
}

/// `Option<BTreeSet<&'static str>>` read back.
pub(in crate::widen) fn opt_word_set<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeSet<&'static str>>, D::Error> {
    Option::<BTreeSet<String>>::deserialize(d)?.map(|s| s.iter().map(|w| word(w)).collect()).transpose()
}

/// `BTreeMap<String, BTreeSet<&'static str>>` read back.
pub(in crate::widen) fn word_sets<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, BTreeSet<&'static str>>, D::Error> {
    BTreeMap::<String, BTreeSet<String>>::deserialize(d)?
        .into_iter()
        .map(|(k, s)| Ok((k, s.iter().map(|w| word(w)).collect::<Result<_, _>>()?)))
        .collect()
}

/// The store's name for the grammar that reads `path`: the language and the file's
/// extension (TypeScript, TSX and JavaScript read one text differently).
pub(in crate::widen) fn kind(path: &str) -> String {
    let lang = super::Language::for_path(path).map_or("", super::Language::as_str);
    let ext = path.rsplit('/').next().and_then(|n| n.rsplit_once('.')).map_or("", |(_, e)| e);
    format!("{lang}.{}", ext.to_ascii_lowercase())
}

/// Bytes of the checksum in front of an encoded inventory.
const SUM_BYTES: usize = 8;

fn checksum(payload: &[u8]) -> [u8; SUM_BYTES] {
    use sha2::Digest as _;
    let full = sha2::Sha256::digest(payload);
    let mut out = [0; SUM_BYTES];
    out.copy_from_slice(&full[..SUM_BYTES]);
    out
}

/// An inventory as stored bytes: a checksum, then the inventory in postcard (compact,
/// and unlike JSON it keeps maps whose keys are tuples). `None` if it cannot be
/// encoded.
pub(in crate::widen) fn encode<I: Serialize>(inv: &I) -> Option<Vec<u8>> {
    let payload = postcard::to_stdvec(inv).ok()?;
    let mut out = Vec::with_capacity(SUM_BYTES + payload.len());
    out.extend_from_slice(&checksum(&payload));
    out.extend_from_slice(&payload);
    Some(out)
}

/// Stored bytes as an inventory; `None` for bytes this build cannot read. postcard
/// does not describe itself, so damaged bytes could read as another inventory: the
/// checksum refuses them first.
pub(in crate::widen) fn decode<I: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Option<I> {
    let (sum, payload) = bytes.split_at_checked(SUM_BYTES)?;
    if sum != checksum(payload) {
        return None;
    }
    match postcard::take_from_bytes(payload) {
        Ok((inv, [])) => Some(inv),
        _ => None,
    }
}

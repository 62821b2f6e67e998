//! Canonical JSON: sorted keys (byte order), compact or pretty, `\n` line ends.
//!
//! Every artefact premerge writes goes through here, so the same input gives the
//! same bytes on every machine. Struct field order never leaks into output because
//! values are first converted to `serde_json::Value`, whose map is a `BTreeMap`
//! (byte-order sorted keys).

use serde::Serialize;

/// Compact canonical JSON (no trailing newline): the form hashed for ids.
pub(crate) fn to_compact<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let v = serde_json::to_value(value)?;
    serde_json::to_string(&v)
}

/// Pretty canonical JSON with a trailing `\n`: the form written to artefacts.
pub fn to_pretty<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let v = serde_json::to_value(value)?;
    let mut s = serde_json::to_string_pretty(&v)?;
    s.push('\n');
    Ok(s)
}

/// One line of canonical JSON with a trailing `\n`: the form for stdout and JSONL.
pub(crate) fn to_line<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut s = to_compact(value)?;
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize)]
    struct Unsorted {
        zeta: u8,
        alpha: u8,
        #[serde(rename = "Beta")]
        beta: u8,
    }

    #[test]
    fn keys_are_sorted_by_bytes_not_declaration() {
        let s = to_compact(&Unsorted { zeta: 1, alpha: 2, beta: 3 }).unwrap();
        assert_eq!(s, r#"{"Beta":3,"alpha":2,"zeta":1}"#);
    }

    #[test]
    fn pretty_ends_with_newline() {
        assert!(to_pretty(&serde_json::json!({"b":1,"a":2})).unwrap().ends_with("}\n"));
    }
}

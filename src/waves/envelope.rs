//! Envelope-token detection on a skeleton.
//!
//! Fixer prompts quote untrusted text inside an `<external-untrusted-input>` envelope.
//! A carried string that names the token could close the envelope early and read as the
//! controller's words, so carry drops such rows. Spelling the token differently must not
//! get it through: both the token and the candidate text are reduced to a *skeleton* and
//! compared there.
//!
//! The skeleton of a string is, in this order:
//! 1. NFKC (compatibility forms: fullwidth letters, mathematical alphanumerics, ligatures);
//! 2. full lowercase (`İ` becomes `i` + a combining dot, removed in step 3);
//! 3. NFD, then every character that is not a letter or digit removed: combining marks,
//!    zero-width and other format characters, whitespace and line breaks, dashes,
//!    underscores and punctuation (`external_untrusted_input`, `external untrusted input`
//!    and a newline inside the token are the same skeleton);
//! 4. the confusable skeleton of Unicode TS #39 (`unicode-security`: Cyrillic `е` is `e`);
//! 5. NFD and step 3's filter again, then lowercase (a confusable prototype may be
//!    upper case or carry a mark).
//!
//! The comparison is a substring test on skeletons. It over-matches on purpose (prose
//! saying "external untrusted input" is dropped too): a dropped row is a path no fixer
//! may touch, the fail-closed direction, and it is counted.

use unicode_normalization::UnicodeNormalization as _;

use super::ENVELOPE_TOKEN;

/// The skeleton of `s` (see the module documentation).
pub fn skeleton(s: &str) -> String {
    // Separators go before the confusable map too: TS #39 maps some dashes to letters
    // (an em dash to the katakana prolonged sound mark).
    let folded: String = s.nfkc().flat_map(char::to_lowercase).nfd().filter(|c| c.is_alphanumeric()).collect();
    let confusable: String = unicode_security::skeleton(&folded).collect();
    confusable.nfd().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// Whether `s` carries the envelope token, literally or disguised.
pub(crate) fn has_envelope_token(s: &str) -> bool {
    s.contains(ENVELOPE_TOKEN) || skeleton(s).contains(&skeleton(ENVELOPE_TOKEN))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Disguises of the token a fixer (or text it quotes) might produce.
    const DISGUISES: &[&str] = &[
        "external-untrusted-input",
        "</external-untrusted-input>",
        "EXTERNAL-UNTRUSTED-INPUT",
        "external_untrusted_input",
        "external untrusted input",
        "External.Untrusted.Input",
        // mathematical bold small e (U+1D41E)
        "\u{1D41E}xternal-untrusted-input",
        // Turkish capital I with dot above
        "external-untrusted-\u{130}nput",
        // a combining acute accent on the first e
        "exte\u{301}rnal-untrusted-input",
        // precomposed é
        "ext\u{e9}rnal-untrusted-input",
        // a newline and a tab inside the token
        "external-untr\nusted-in\tput",
        "external-\r\nuntrusted-input",
        // zero-width joiner, zero-width space, word joiner, soft hyphen, BOM
        "exter\u{200D}nal-untrusted-input",
        "external-un\u{200B}trusted-input",
        "external\u{2060}-untrusted-input",
        "external-untru\u{AD}sted-input",
        "\u{FEFF}external-untrusted-\u{FEFF}input",
        // Unicode dashes and fullwidth forms
        "external\u{2010}untrusted\u{2011}input",
        "external\u{2014}untrusted\u{2212}input",
        "\u{FF45}\u{FF58}\u{FF54}ernal-untrusted-input",
        // Cyrillic е, х, р, о; Greek ν is not a u, but Cyrillic и is not either: use
        // confusables the TS #39 table maps.
        "\u{435}\u{445}ternal-untrusted-input",
        "external-untrusted-in\u{440}ut",
        // mixed case plus line break
        "ExTeRnAl\nUnTrUsTeD\ninput",
        // a non-breaking space and an ideographic space as separators
        "external\u{A0}untrusted\u{3000}input",
    ];

    #[test]
    fn every_disguise_is_caught() {
        for s in DISGUISES {
            assert!(has_envelope_token(s), "{s:?} -> {}", skeleton(s));
        }
    }

    #[test]
    fn ordinary_text_passes() {
        for s in [
            "needs the new signature",
            "src/external/untrusted.rs",
            "externally untrusted inputs are validated",
            "external-input",
            "untrusted-input",
            "the user input is external",
        ] {
            assert!(!has_envelope_token(s), "{s:?} -> {}", skeleton(s));
        }
    }

    #[test]
    fn skeleton_is_stable() {
        assert_eq!(skeleton("external-untrusted-input"), skeleton("EXTERNAL UNTRUSTED INPUT"));
        assert_eq!(skeleton("a\u{301}"), skeleton("a"));
        assert_eq!(skeleton(""), "");
    }
}

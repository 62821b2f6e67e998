//! The process environment, read once.
//!
//! `main` takes one [`Env`] snapshot before any command runs and carries it in the
//! command context ([`crate::context::Ctx::env`]); the few functions below the
//! commands that have no context (the run-directory and clock helpers of the store,
//! opening the repository a hook runs in, the panic hook) read the same snapshot
//! through [`process`]. No other module reads `std::env` variables (a test in
//! `src/layering_tests.rs` holds every source file to that), so what premerge saw
//! is fixed for the whole run and a test can say exactly which variables it sets.
//! The environment given to child processes (git, hook managers, configured
//! commands) is not a read and is left to them.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::sync::OnceLock;

/// The environment variables of the process at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<OsString, OsString>,
}

impl Env {
    /// Every variable of the process, now. Called once, by `main` (or by [`process`]
    /// when premerge runs as a library without one).
    pub fn capture() -> Env {
        Env { vars: std::env::vars_os().collect() }
    }

    /// A snapshot holding exactly `vars` (unit tests).
    #[cfg(test)]
    pub(crate) fn from_vars<K: Into<OsString>, V: Into<OsString>>(vars: impl IntoIterator<Item = (K, V)>) -> Env {
        Env { vars: vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect() }
    }

    /// The value of `name` as the OS gave it, whether set (even empty).
    pub fn var_os(&self, name: &str) -> Option<&OsStr> {
        self.vars.get(OsStr::new(name)).map(OsString::as_os_str)
    }

    /// The value of `name` when it is set and valid UTF-8 (what `std::env::var(..).ok()`
    /// gives).
    pub fn var(&self, name: &str) -> Option<&str> {
        self.var_os(name)?.to_str()
    }

    /// The value of `name` when it is set, UTF-8 and not empty.
    pub(crate) fn non_empty(&self, name: &str) -> Option<&str> {
        self.var(name).filter(|v| !v.is_empty())
    }

    /// `name` as the configuration loader looks it up (owned, UTF-8 only).
    pub(crate) fn lookup(&self, name: &str) -> Option<String> {
        self.var(name).map(str::to_string)
    }
}

static PROCESS: OnceLock<Env> = OnceLock::new();

/// Make `env` the process's snapshot (`main` calls this first). A later call keeps the
/// first snapshot and returns it.
pub fn init(env: Env) -> &'static Env {
    PROCESS.get_or_init(|| env)
}

/// The process's snapshot: the one `main` took, else (premerge used as a library, unit
/// tests) one taken now, once.
pub fn process() -> &'static Env {
    PROCESS.get_or_init(Env::capture)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_distinguish_unset_empty_and_set() {
        let e = Env::from_vars([("A", "1"), ("EMPTY", "")]);
        assert_eq!(e.var("A"), Some("1"));
        assert_eq!(e.var("EMPTY"), Some(""));
        assert_eq!(e.non_empty("EMPTY"), None);
        assert_eq!(e.var("UNSET"), None);
        assert_eq!(e.var_os("A"), Some(OsStr::new("1")));
        assert_eq!(e.lookup("A"), Some("1".to_string()));
    }

    #[cfg(unix)]
    #[test]
    fn a_value_that_is_not_utf8_is_seen_only_as_os_text() {
        use std::os::unix::ffi::OsStringExt;
        let e = Env::from_vars([(OsString::from("B"), OsString::from_vec(vec![0xff, b'x']))]);
        assert_eq!(e.var("B"), None);
        assert!(e.var_os("B").is_some());
    }
}

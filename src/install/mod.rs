//! Hook installation and agent-instruction retrofits, as pure decisions.
//!
//! What belongs here: the shim text (embedded from `hooks/`, with its version
//! marker), recognising what already sits where a hook goes (a premerge shim, a hook
//! written by pre-commit, lefthook or husky, anything else), deciding what install
//! and uninstall do with it, parsing `git --version`, premerge beside other hook
//! managers ([`managers`]: snippets, telling whether a manager already runs premerge),
//! and the marker-block migration of `AGENTS.md` / `CLAUDE.md` ([`agent_docs`]). The
//! file system and git stay in `commands::install`.

pub mod agent_docs;
pub mod managers;
pub(crate) mod probe;

use std::fmt;

/// The hooks premerge installs, in the order they are installed.
pub(crate) const HOOKS: &[&str] = &["pre-push", "post-merge"];

/// First line after the shebang of every shim: how a shim is recognised.
pub(crate) const SHIM_MARKER: &str = "# premerge hook shim: ";
/// The version marker line of a shim: the premerge version that wrote it.
pub(crate) const VERSION_MARKER: &str = "# premerge-shim-version: ";
/// Suffix of the user's own hook, moved aside and chained by the shim. Distinct from
/// pre-commit's `.legacy` and lefthook's `.old`, so premerge never takes theirs.
pub(crate) const CHAINED_SUFFIX: &str = ".premerge-chained";
/// The first git release that runs hooks declared in config (`hook.<name>.command`
/// with `hook.<name>.event`).
pub(crate) const CONFIG_HOOKS_MIN_GIT: GitVersion = GitVersion(2, 54, 0);
/// Prefix of the config-hook names premerge writes (`hook.premerge-pre-push.*`).
pub(crate) const CONFIG_HOOK_PREFIX: &str = "premerge-";

const PRE_PUSH_TEMPLATE: &str = include_str!("../../hooks/pre-push");
const POST_MERGE_TEMPLATE: &str = include_str!("../../hooks/post-merge");

/// Errors of the install decisions.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InstallError {
    /// A hook name premerge has no shim for.
    #[error("unknown hook `{0}` (premerge installs: pre-push, post-merge)")]
    UnknownHook(String),
    /// The hook path is a symbolic link: replacing it would change what its target means.
    #[error(
        "{0}: is a symbolic link; premerge will not replace it (point it elsewhere or remove it, then install again)"
    )]
    Symlink(String),
    /// The hook path is a directory.
    #[error("{0}: is a directory, not a hook file; remove or rename it, then install again")]
    Directory(String),
    /// A chained file is present but the hook is not premerge's shim: an earlier
    /// install or uninstall was interrupted, and guessing which file is the user's
    /// could lose it.
    #[error(
        "{chained}: left over from an interrupted install (the hook beside it is not premerge's shim); move it back to {hook} or delete it, then install again"
    )]
    LeftoverChained { chained: String, hook: String },
    /// The chained path exists but is not a regular file.
    #[error("{0}: is not a regular file; remove it, then install again")]
    ChainedNotFile(String),
}

/// A hook premerge has a shim for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Hook {
    PrePush,
    PostMerge,
}

impl Hook {
    /// Parse a hook name as git spells it.
    pub fn parse(name: &str) -> Result<Hook, InstallError> {
        match name.trim() {
            "pre-push" => Ok(Hook::PrePush),
            "post-merge" => Ok(Hook::PostMerge),
            other => Err(InstallError::UnknownHook(other.to_string())),
        }
    }

    /// Parse a comma-separated list, deduplicated, in [`HOOKS`] order.
    pub(crate) fn parse_list(list: &str) -> Result<Vec<Hook>, InstallError> {
        let mut out: Vec<Hook> = Vec::new();
        for name in list.split(',').filter(|s| !s.trim().is_empty()) {
            let h = Hook::parse(name)?;
            if !out.contains(&h) {
                out.push(h);
            }
        }
        out.sort();
        Ok(out)
    }

    pub fn name(self) -> &'static str {
        match self {
            Hook::PrePush => "pre-push",
            Hook::PostMerge => "post-merge",
        }
    }

    /// File name of the user's hook once chained.
    pub(crate) fn chained_name(self) -> String {
        format!("{}{CHAINED_SUFFIX}", self.name())
    }

    fn template(self) -> &'static str {
        match self {
            Hook::PrePush => PRE_PUSH_TEMPLATE,
            Hook::PostMerge => POST_MERGE_TEMPLATE,
        }
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the shim runs a chained hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChainMode {
    /// Executed as a program with the hook's arguments (every ordinary hook).
    Exec,
    /// Sourced in a subshell, so `$0` stays the hook's own path: husky's hook stubs
    /// derive the hook name and their helper's location from `$0`, and would silently
    /// do nothing if run under the chained file's name.
    Source,
}

impl ChainMode {
    fn word(self) -> &'static str {
        match self {
            ChainMode::Exec => "exec",
            ChainMode::Source => "source",
        }
    }
}

/// Quote a string for POSIX sh: single quotes, with `'` written as `'\''`.
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Undo [`sh_quote`] (only that form: one or more single-quoted runs joined by `\'`).
fn sh_unquote(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("\\'") {
            out.push('\'');
            rest = r;
        } else if let Some(r) = rest.strip_prefix('\'') {
            let end = r.find('\'')?;
            out.push_str(&r[..end]);
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// The shim text for `hook`, running the binary at `bin` (absolute), written by
/// premerge `version`, chaining a user hook in `chain` mode when one is present.
pub(crate) fn shim_text(hook: Hook, version: &str, bin: &str, chain: ChainMode) -> String {
    hook.template().replace("@VERSION@", version).replace("@BIN@", &sh_quote(bin)).replace("@CHAIN@", chain.word())
}

/// What a premerge shim says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShimInfo {
    /// The hook it was written for.
    pub hook: String,
    /// The premerge version that wrote it.
    pub version: String,
    /// The binary it runs first (before `PREMERGE_BIN` and `PATH`).
    pub bin: Option<String>,
}

/// Recognise a premerge shim by its marker line; `None` for anything else.
pub(crate) fn parse_shim(bytes: &[u8]) -> Option<ShimInfo> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines().take(12);
    lines.next()?.starts_with("#!").then_some(())?;
    let hook = lines.next()?.strip_prefix(SHIM_MARKER)?.trim().to_string();
    let mut version = None;
    let mut bin = None;
    for line in text.lines().take(12) {
        if let Some(v) = line.strip_prefix(VERSION_MARKER) {
            version = Some(v.trim().to_string());
        } else if let Some(b) = line.strip_prefix("recorded=") {
            bin = sh_unquote(b.trim());
        }
    }
    Some(ShimInfo { hook, version: version?, bin })
}

/// A hook manager whose hook files premerge recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Manager {
    PreCommit,
    /// prek: pre-commit's configuration and hook protocol, reimplemented.
    Prek,
    Lefthook,
    Husky,
}

impl Manager {
    pub(crate) fn parse(name: &str) -> Option<Manager> {
        match name {
            "pre-commit" => Some(Manager::PreCommit),
            "prek" => Some(Manager::Prek),
            "lefthook" => Some(Manager::Lefthook),
            "husky" => Some(Manager::Husky),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Manager::PreCommit => "pre-commit",
            Manager::Prek => "prek",
            Manager::Lefthook => "lefthook",
            Manager::Husky => "husky",
        }
    }
}

/// Which manager wrote a hook file, from the marks each leaves in it: pre-commit's
/// "File generated by pre-commit" header, lefthook's `call_lefthook`/`lefthook run`,
/// prek's "File generated by prek", husky's `husky.sh` (v4–v8) or its v9 stub that
/// sources `h` beside itself.
pub(crate) fn recognise(bytes: &[u8]) -> Option<Manager> {
    let text = String::from_utf8_lossy(bytes);
    if text.contains("File generated by pre-commit") || text.contains("-mpre_commit") {
        return Some(Manager::PreCommit);
    }
    if text.contains("File generated by prek") {
        return Some(Manager::Prek);
    }
    if text.contains("lefthook") || text.contains("LEFTHOOK") {
        return Some(Manager::Lefthook);
    }
    let husky_v9_stub = text.lines().any(|l| {
        let l = l.trim();
        l == r#". "${0%/*}/h""# || l == r#". "$(dirname "$0")/h""# || l == r#". "$(dirname -- "$0")/h""#
    });
    if husky_v9_stub || text.contains("husky.sh") {
        return Some(Manager::Husky);
    }
    None
}

/// How a hook file must be chained: sourced when it hands control to a helper beside
/// it that finds the hook's name from `$0` (husky v9's stub sourcing `h`, husky v4's
/// `.git/hooks/<hook>` sourcing `husky.sh`), executed otherwise. husky v5–v8 scripts,
/// which source `_/husky.sh` and re-run `$0`, are executed: re-running the chained
/// file is what they need.
pub(crate) fn chain_mode(bytes: &[u8]) -> ChainMode {
    let text = String::from_utf8_lossy(bytes);
    let sources_helper = text.lines().any(|l| {
        let l = l.trim();
        let Some(arg) = l.strip_prefix(". ") else { return false };
        let arg = arg.trim_matches('"');
        ["${0%/*}/", "$(dirname \"$0\")/", "$(dirname -- \"$0\")/"]
            .iter()
            .any(|dir| arg.strip_prefix(dir).is_some_and(|rest| rest == "h" || rest == "husky.sh"))
    });
    if sources_helper { ChainMode::Source } else { ChainMode::Exec }
}

/// What sits at a path, as the command layer observed it (`lstat`, then the bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Observed {
    Absent,
    Symlink,
    Directory,
    /// Some other kind of file (fifo, socket, device).
    Special,
    File(Vec<u8>),
}

/// What install does for one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InstallAction {
    /// The shim there is byte-identical to the one install would write.
    Unchanged,
    /// No hook there: write the shim.
    Write { shim: String },
    /// A premerge shim of another version or binary: replace it (any chained hook stays).
    Update { shim: String, from_version: String },
    /// A hook of the user's (or of a manager): move it aside to the chained name, then
    /// write the shim.
    Chain { shim: String, manager: Option<Manager> },
    /// The hook is a manager's generated file and the chained file beside it is an
    /// older one of the same manager's: the manager rewrote its hooks (husky on every
    /// `npm install`) and dropped premerge's shim. The current file replaces the
    /// orphaned one as the chained hook and the shim goes back in place.
    Rechain { shim: String, manager: Manager },
    /// pre-commit or prek runs the hook: premerge's shim becomes (or stays) the
    /// manager's legacy hook (`<hook>.legacy`), which the manager runs first and which
    /// a later `pre-commit install` / `prek install` keeps (it only rewrites its own
    /// file). Chaining the manager's hook instead breaks on its next install: it moves
    /// the shim to `.legacy` and the shim runs the manager's older hook, which refuses
    /// to run in "migration mode", so every push fails.
    UnderManager(UnderManager),
}

/// The steps that put premerge's shim under pre-commit or prek, in the order they run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnderManager {
    pub manager: Manager,
    /// The shim to write at `<hook>.legacy`; `None` when the one there is identical.
    pub shim: Option<String>,
    /// The hook file is premerge's shim chaining the manager's hook (premerge was
    /// installed after the manager by an older premerge): the manager's hook moves
    /// back from the chained name to the hook's name.
    pub hook_from_chained: bool,
    /// The chained file is an older hook of the same manager (left by the sequence
    /// manager, premerge, manager again, or by `install -f` after it): it is removed.
    /// Run as premerge's chained hook it is what fails in migration mode; the
    /// manager's current hook at the hook's name does all it did.
    pub drop_chained: bool,
    /// A legacy hook of the user's is there: it moves to the chained name, so the
    /// shim runs it first, as the manager did.
    pub legacy_to_chained: bool,
}

/// File name under which pre-commit keeps the hook it found, and runs it.
pub(crate) fn pre_commit_legacy_name(hook: Hook) -> String {
    format!("{}.legacy", hook.name())
}

/// Whether `bytes` is a hook file of pre-commit's or prek's (the two managers that
/// run a `<hook>.legacy` beside their own hook).
pub(crate) fn is_pre_commit_family(bytes: &[u8]) -> Option<Manager> {
    recognise(bytes).filter(|m| matches!(m, Manager::PreCommit | Manager::Prek))
}

/// What pre-commit or prek does to premerge, read from the three files of one hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnderManagerState {
    /// premerge's shim is the manager's legacy hook and chains nothing of the manager's.
    Working(Manager),
    /// The shim is the legacy hook and chains an older hook of the manager's, which
    /// refuses to run in migration mode: every push fails, premerge never runs.
    MigrationMode(Manager),
    /// The hook is the manager's and no shim is its legacy hook (`install -f` removed
    /// it, or premerge was never installed).
    NoShim(Manager),
    /// The hook is premerge's shim chaining the manager's hook: it works until the
    /// manager's next install moves the shim to `.legacy` (then [`Self::MigrationMode`]).
    ShimChainsManager(Manager),
}

/// Classify one hook's files when pre-commit or prek is involved; `None` otherwise.
pub(crate) fn under_manager_state(
    at_hook: &Observed,
    at_legacy: &Observed,
    at_chained: &Observed,
) -> Option<UnderManagerState> {
    let file = |o: &Observed| match o {
        Observed::File(b) => Some(b.clone()),
        _ => None,
    };
    let (hook, legacy, chained) = (file(at_hook), file(at_legacy), file(at_chained));
    let chained_manager = chained.as_deref().and_then(is_pre_commit_family);
    if let Some(h) = hook.as_deref() {
        if let Some(m) = is_pre_commit_family(h) {
            let shim_at_legacy = legacy.as_deref().is_some_and(|l| parse_shim(l).is_some());
            return Some(match (shim_at_legacy, chained_manager) {
                (true, Some(_)) => UnderManagerState::MigrationMode(m),
                (true, None) => UnderManagerState::Working(m),
                (false, _) => UnderManagerState::NoShim(m),
            });
        }
        if parse_shim(h).is_some()
            && let Some(m) = chained_manager
        {
            return Some(UnderManagerState::ShimChainsManager(m));
        }
    }
    None
}

/// What install does where pre-commit or prek runs the hook (or where premerge's
/// shim chains one of their hooks); `None` where neither does, and an error where
/// two files of the user's would compete for one place.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_under_manager(
    hook: Hook,
    at_hook: &Observed,
    at_legacy: &Observed,
    at_chained: &Observed,
    version: &str,
    bin: &str,
    legacy_path: &str,
    chained_path: &str,
) -> Option<Result<InstallAction, InstallError>> {
    let state = under_manager_state(at_hook, at_legacy, at_chained)?;
    let manager = match state {
        UnderManagerState::Working(m)
        | UnderManagerState::MigrationMode(m)
        | UnderManagerState::NoShim(m)
        | UnderManagerState::ShimChainsManager(m) => m,
    };
    let chained = match at_chained {
        Observed::Absent => None,
        Observed::File(b) => Some(b.as_slice()),
        _ => return Some(Err(InstallError::ChainedNotFile(chained_path.to_string()))),
    };
    let legacy = match at_legacy {
        Observed::Absent => None,
        Observed::File(b) => Some(b.as_slice()),
        _ => return Some(Err(InstallError::ChainedNotFile(legacy_path.to_string()))),
    };
    let chained_is_manager = chained.is_some_and(|c| is_pre_commit_family(c).is_some());
    let legacy_is_shim = legacy.is_some_and(|l| parse_shim(l).is_some());
    let hook_from_chained = matches!(state, UnderManagerState::ShimChainsManager(_));
    if hook_from_chained && legacy_is_shim {
        // Two shims: not a layout any sequence of installs leaves; decided as before.
        return None;
    }
    // The file that ends up chained: the user's legacy hook when it moves there,
    // else whatever is chained now unless it is dropped or becomes the hook again.
    let drop_chained = chained_is_manager && !hook_from_chained;
    let legacy_to_chained = legacy.is_some() && !legacy_is_shim;
    let user_chained = chained.filter(|_| !chained_is_manager);
    if legacy_to_chained && user_chained.is_some() {
        return Some(Err(InstallError::LeftoverChained {
            chained: chained_path.to_string(),
            hook: legacy_path.to_string(),
        }));
    }
    let kept = if legacy_to_chained { legacy } else { user_chained };
    let shim = shim_text(hook, version, bin, kept.map_or(ChainMode::Exec, chain_mode));
    let shim = (!(legacy_is_shim && legacy == Some(shim.as_bytes()))).then_some(shim);
    Some(Ok(InstallAction::UnderManager(UnderManager {
        manager,
        shim,
        hook_from_chained,
        drop_chained,
        legacy_to_chained,
    })))
}

/// Decide what install does for `hook`, given what is at the hook path and at the
/// chained path. `bin` is the absolute path of the installing binary.
pub(crate) fn plan_install(
    hook: Hook,
    at_hook: &Observed,
    at_chained: &Observed,
    version: &str,
    bin: &str,
    hook_path: &str,
    chained_path: &str,
) -> Result<InstallAction, InstallError> {
    let chained_bytes = match at_chained {
        Observed::Absent => None,
        Observed::File(b) => Some(b),
        _ => return Err(InstallError::ChainedNotFile(chained_path.to_string())),
    };
    match at_hook {
        Observed::Symlink => Err(InstallError::Symlink(hook_path.to_string())),
        Observed::Directory | Observed::Special => Err(InstallError::Directory(hook_path.to_string())),
        Observed::File(bytes) if parse_shim(bytes).is_some() => {
            let info = parse_shim(bytes).expect("checked just above");
            let mode = chained_bytes.map_or(ChainMode::Exec, |b| chain_mode(b));
            let shim = shim_text(hook, version, bin, mode);
            if shim.as_bytes() == bytes.as_slice() {
                Ok(InstallAction::Unchanged)
            } else {
                Ok(InstallAction::Update { shim, from_version: info.version })
            }
        }
        Observed::File(bytes)
            if chained_bytes.is_some_and(|c| recognise(c).is_some() && recognise(c) == recognise(bytes)) =>
        {
            let manager = recognise(bytes).expect("checked by the guard");
            Ok(InstallAction::Rechain { shim: shim_text(hook, version, bin, chain_mode(bytes)), manager })
        }
        _ if chained_bytes.is_some() => {
            Err(InstallError::LeftoverChained { chained: chained_path.to_string(), hook: hook_path.to_string() })
        }
        Observed::Absent => Ok(InstallAction::Write { shim: shim_text(hook, version, bin, ChainMode::Exec) }),
        Observed::File(bytes) => {
            let shim = shim_text(hook, version, bin, chain_mode(bytes));
            Ok(InstallAction::Chain { shim, manager: recognise(bytes) })
        }
    }
}

/// What uninstall does for one hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UninstallAction {
    /// Nothing of premerge's is there.
    NotInstalled,
    /// Remove the shim; no hook was there before.
    Remove,
    /// Remove the shim and move the chained hook back to its name (byte for byte).
    Restore,
    /// The hook is not premerge's but a chained file lies beside it: left alone, and
    /// reported, because either file may be the user's.
    LeftoverChained,
}

/// Decide what uninstall does for one hook.
pub(crate) fn plan_uninstall(at_hook: &Observed, at_chained: &Observed) -> UninstallAction {
    let ours = matches!(at_hook, Observed::File(b) if parse_shim(b).is_some());
    let chained = !matches!(at_chained, Observed::Absent);
    match (ours, chained) {
        (true, true) => UninstallAction::Restore,
        (true, false) => UninstallAction::Remove,
        (false, true) => UninstallAction::LeftoverChained,
        (false, false) => UninstallAction::NotInstalled,
    }
}

/// A git version `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct GitVersion(pub u32, pub u32, pub u32);

impl fmt::Display for GitVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// Parse the output of `git --version` (`git version 2.47.3`,
/// `git version 2.39.3 (Apple Git-145)`, `git version 2.45.0.windows.1`, `2.54.0.rc1`).
pub(crate) fn parse_git_version(out: &str) -> Option<GitVersion> {
    let word = out.trim().strip_prefix("git version ")?.split_whitespace().next()?;
    let mut nums = word.split('.').map(|p| {
        let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse::<u32>().ok()
    });
    let major = nums.next()??;
    let minor = nums.next()??;
    let patch = nums.next().flatten().unwrap_or(0);
    Some(GitVersion(major, minor, patch))
}

/// File name under which `lefthook install` keeps the hook it found (and never runs).
pub(crate) fn lefthook_old_name(hook: Hook) -> String {
    format!("{}.old", hook.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIN: &str = "/opt/premerge/bin/premerge";

    #[test]
    fn shim_carries_version_and_binary_and_parses_back() {
        let s = shim_text(Hook::PrePush, "9.8.7", "/a b/it's/premerge", ChainMode::Exec);
        assert!(s.starts_with("#!/bin/sh\n# premerge hook shim: pre-push\n# premerge-shim-version: 9.8.7\n"));
        for placeholder in ["@VERSION@", "@BIN@", "@CHAIN@"] {
            assert!(!s.contains(placeholder), "{placeholder} is filled:\n{s}");
        }
        let info = parse_shim(s.as_bytes()).unwrap();
        assert_eq!(info.hook, "pre-push");
        assert_eq!(info.version, "9.8.7");
        assert_eq!(info.bin.as_deref(), Some("/a b/it's/premerge"));
    }

    #[test]
    fn shim_checks_master_switch_before_the_binary() {
        for hook in [Hook::PrePush, Hook::PostMerge] {
            let s = shim_text(hook, "1.0.0", BIN, ChainMode::Exec);
            let switch = s.find("${PREMERGE:-}").unwrap();
            let exec = s.find("exec \"$bin\"").unwrap();
            let missing = s.find("binary is missing").unwrap();
            assert!(switch < missing && missing < exec);
        }
    }

    #[test]
    fn foreign_hooks_are_not_shims() {
        assert_eq!(parse_shim(b"#!/bin/sh\necho hi\n"), None);
        assert_eq!(parse_shim(b""), None);
        assert_eq!(parse_shim(b"# premerge hook shim: pre-push\n"), None, "the marker is the second line");
    }

    #[test]
    fn managers_are_recognised() {
        let pc = b"#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\n";
        assert_eq!(recognise(pc), Some(Manager::PreCommit));
        assert_eq!(recognise(b"#!/bin/sh\ncall_lefthook run \"pre-push\" \"$@\"\n"), Some(Manager::Lefthook));
        assert_eq!(recognise(b"#!/usr/bin/env sh\n. \"${0%/*}/h\""), Some(Manager::Husky));
        assert_eq!(recognise(b"#!/bin/sh\n. \"$(dirname -- \"$0\")/_/husky.sh\"\n"), Some(Manager::Husky));
        assert_eq!(recognise(b"#!/bin/sh\nexit 0\n"), None);
        assert_eq!(chain_mode(b"#!/usr/bin/env sh\n. \"${0%/*}/h\""), ChainMode::Source, "husky v9 stub");
        assert_eq!(
            chain_mode(b"#!/bin/sh\n# husky\n. \"$(dirname \"$0\")/husky.sh\"\n"),
            ChainMode::Source,
            "husky v4"
        );
        assert_eq!(
            chain_mode(b"#!/bin/sh\n. \"$(dirname -- \"$0\")/_/husky.sh\"\nnpm test\n"),
            ChainMode::Exec,
            "husky v5-v8"
        );
        assert_eq!(chain_mode(b"#!/bin/sh\n. ./lib.sh\n"), ChainMode::Exec);
    }

    fn plan(at_hook: Observed, at_chained: Observed) -> Result<InstallAction, InstallError> {
        plan_install(Hook::PrePush, &at_hook, &at_chained, "1.0.0", BIN, "h/pre-push", "h/pre-push.premerge-chained")
    }

    #[test]
    fn install_decisions() {
        let current = shim_text(Hook::PrePush, "1.0.0", BIN, ChainMode::Exec);
        let old = shim_text(Hook::PrePush, "0.9.0", BIN, ChainMode::Exec);
        assert!(matches!(plan(Observed::Absent, Observed::Absent), Ok(InstallAction::Write { .. })));
        assert_eq!(plan(Observed::File(current.clone().into_bytes()), Observed::Absent), Ok(InstallAction::Unchanged));
        assert_eq!(
            plan(Observed::File(old.into_bytes()), Observed::Absent),
            Ok(InstallAction::Update { shim: current.clone(), from_version: "0.9.0".into() })
        );
        let user = Observed::File(b"#!/bin/sh\nexit 0\n".to_vec());
        assert_eq!(
            plan(user.clone(), Observed::Absent),
            Ok(InstallAction::Chain { shim: current.clone(), manager: None })
        );
        assert_eq!(
            plan(Observed::File(current.into_bytes()), user.clone()),
            Ok(InstallAction::Unchanged),
            "an installed shim with its chained hook is a finished install"
        );
        assert!(matches!(plan(user.clone(), user.clone()), Err(InstallError::LeftoverChained { .. })));
        assert!(matches!(plan(Observed::Absent, user), Err(InstallError::LeftoverChained { .. })));
        assert!(matches!(plan(Observed::Symlink, Observed::Absent), Err(InstallError::Symlink(_))));
        assert!(matches!(plan(Observed::Directory, Observed::Absent), Err(InstallError::Directory(_))));
        assert!(matches!(plan(Observed::Absent, Observed::Directory), Err(InstallError::ChainedNotFile(_))));
    }

    fn under(h: &Observed, l: &Observed, c: &Observed) -> Option<Result<InstallAction, InstallError>> {
        plan_under_manager(Hook::PrePush, h, l, c, "1.0.0", BIN, "h/pre-push.legacy", "h/pre-push.premerge-chained")
    }

    fn steps(shim: bool, hook_from_chained: bool, drop_chained: bool, legacy_to_chained: bool) -> UnderManager {
        UnderManager { manager: Manager::PreCommit, shim: None, hook_from_chained, drop_chained, legacy_to_chained }
            .with_shim(shim)
    }

    impl UnderManager {
        fn with_shim(mut self, shim: bool) -> Self {
            self.shim = shim.then(|| shim_text(Hook::PrePush, "1.0.0", BIN, ChainMode::Exec));
            self
        }
    }

    #[test]
    fn premerge_goes_under_pre_commit_as_its_legacy_hook() {
        let pc =
            Observed::File(b"#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\n".to_vec());
        let current = Observed::File(shim_text(Hook::PrePush, "1.0.0", BIN, ChainMode::Exec).into_bytes());
        let old = Observed::File(shim_text(Hook::PrePush, "0.9.0", BIN, ChainMode::Exec).into_bytes());
        let user = Observed::File(b"#!/bin/sh\necho mine\n".to_vec());
        let none = Observed::Absent;
        let ok = |s: UnderManager| Some(Ok(InstallAction::UnderManager(s)));
        // Working: nothing changes, or the shim is rewritten in place.
        assert_eq!(under(&pc, &current, &none), ok(steps(false, false, false, false)));
        assert_eq!(under(&pc, &current, &user), ok(steps(false, false, false, false)));
        assert_eq!(under(&pc, &old, &none), ok(steps(true, false, false, false)));
        // The manager first: the shim becomes its legacy hook; a legacy hook of the
        // user's moves to the chained name, so the shim runs it first.
        assert_eq!(under(&pc, &none, &none), ok(steps(true, false, false, false)));
        assert_eq!(under(&pc, &user, &none), ok(steps(true, false, false, true)));
        // Migration mode (manager, premerge, manager again): the older manager hook goes.
        assert_eq!(under(&pc, &current, &pc), ok(steps(false, false, true, false)));
        // `install -f` removed the shim: it comes back; the user's chained hook stays.
        assert_eq!(under(&pc, &none, &user), ok(steps(true, false, false, false)));
        assert_eq!(under(&pc, &none, &pc), ok(steps(true, false, true, false)));
        // An older install's layout (the shim chaining the manager) moves under it.
        assert_eq!(under(&current, &none, &pc), ok(steps(true, true, false, false)));
        assert_eq!(under(&current, &user, &pc), ok(steps(true, true, false, true)));
        // Two hooks of the user's compete for the chained name: refused.
        assert!(matches!(under(&pc, &user, &user), Some(Err(InstallError::LeftoverChained { .. }))));
        assert!(matches!(under(&pc, &Observed::Directory, &none), Some(Err(InstallError::ChainedNotFile(_)))));
        // Neither manager involved.
        assert_eq!(under(&user, &old, &none), None);
        assert_eq!(under(&current, &none, &user), None);
        assert_eq!(under(&none, &none, &none), None);
        assert_eq!(under_manager_state(&pc, &current, &pc), Some(UnderManagerState::MigrationMode(Manager::PreCommit)));
        assert_eq!(under_manager_state(&pc, &none, &user), Some(UnderManagerState::NoShim(Manager::PreCommit)));
        let prek = Observed::File(b"#!/bin/sh\n# File generated by prek: https://github.com/j178/prek\n".to_vec());
        assert_eq!(under_manager_state(&prek, &current, &none), Some(UnderManagerState::Working(Manager::Prek)));
        assert_eq!(
            under_manager_state(&current, &none, &prek),
            Some(UnderManagerState::ShimChainsManager(Manager::Prek))
        );
    }

    #[test]
    fn husky_hooks_are_chained_by_sourcing() {
        let husky = Observed::File(b"#!/usr/bin/env sh\n. \"${0%/*}/h\"".to_vec());
        match plan(husky, Observed::Absent).unwrap() {
            InstallAction::Chain { shim, manager } => {
                assert_eq!(manager, Some(Manager::Husky));
                assert!(shim.contains("if [ source = source ]"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_manager_that_rewrote_its_hooks_is_chained_again() {
        let stub = b"#!/usr/bin/env sh\n. \"$(dirname \"$0\")/h\"".to_vec();
        match plan(Observed::File(stub.clone()), Observed::File(stub.clone())).unwrap() {
            InstallAction::Rechain { shim, manager } => {
                assert_eq!(manager, Manager::Husky);
                assert!(shim.contains("if [ source = source ]"));
            }
            other => panic!("{other:?}"),
        }
        let lefthook = Observed::File(b"#!/bin/sh\ncall_lefthook run \"pre-push\" \"$@\"\n".to_vec());
        assert!(matches!(plan(lefthook, Observed::File(stub.clone())), Err(InstallError::LeftoverChained { .. })));
        let user = Observed::File(b"#!/bin/sh\nexit 0\n".to_vec());
        assert!(
            matches!(plan(Observed::File(stub), user), Err(InstallError::LeftoverChained { .. })),
            "a user's own chained hook is never replaced"
        );
    }

    #[test]
    fn uninstall_decisions() {
        let shim = Observed::File(shim_text(Hook::PrePush, "1.0.0", BIN, ChainMode::Exec).into_bytes());
        let user = Observed::File(b"#!/bin/sh\n".to_vec());
        assert_eq!(plan_uninstall(&shim, &Observed::Absent), UninstallAction::Remove);
        assert_eq!(plan_uninstall(&shim, &user), UninstallAction::Restore);
        assert_eq!(plan_uninstall(&user, &user), UninstallAction::LeftoverChained);
        assert_eq!(plan_uninstall(&user, &Observed::Absent), UninstallAction::NotInstalled);
        assert_eq!(plan_uninstall(&Observed::Absent, &Observed::Absent), UninstallAction::NotInstalled);
    }

    #[test]
    fn git_versions() {
        assert_eq!(parse_git_version("git version 2.47.3\n"), Some(GitVersion(2, 47, 3)));
        assert_eq!(parse_git_version("git version 2.39.3 (Apple Git-145)"), Some(GitVersion(2, 39, 3)));
        assert_eq!(parse_git_version("git version 2.45.0.windows.1"), Some(GitVersion(2, 45, 0)));
        assert_eq!(parse_git_version("git version 2.54.0.rc1"), Some(GitVersion(2, 54, 0)));
        assert_eq!(parse_git_version("git version 3.0"), Some(GitVersion(3, 0, 0)));
        assert_eq!(parse_git_version("hg 6.1"), None);
        assert!(GitVersion(2, 54, 0) >= CONFIG_HOOKS_MIN_GIT && GitVersion(2, 53, 9) < CONFIG_HOOKS_MIN_GIT);
    }

    #[test]
    fn hook_lists() {
        assert_eq!(Hook::parse_list("post-merge,pre-push,pre-push").unwrap(), vec![Hook::PrePush, Hook::PostMerge]);
        assert_eq!(Hook::parse_list("pre-commit"), Err(InstallError::UnknownHook("pre-commit".into())));
    }
}

//! Exit codes and the error type every command returns at the CLI edge.
//!
//! A policy outcome (the fence refused, a stripe halted) is a value, [`Exit::Policy`],
//! never an error. Anything that goes wrong operationally is an `anyhow::Error`
//! whose chain is printed as `premerge: <what>: <why>` with exit code 2.

use std::process::ExitCode;

/// What a command decided, mapped onto the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: success, or "allowed".
    Ok,
    /// 1: a policy outcome (fence refused, stripe halt, drain halt, gate blocked a push).
    Policy,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Policy => 1,
        }
    }
}

/// Exit code for usage and operational errors.
pub const EXIT_ERROR: u8 = 2;

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

/// Result type of every command function.
pub(crate) type CmdResult = anyhow::Result<Exit>;

/// Build a one-line usage/input error: `<what>: <why>`.
pub(crate) fn input_error(what: impl std::fmt::Display, why: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{what}: {why}")
}

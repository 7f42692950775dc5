//! Errors the binary maps to exit codes.
//!
//! Bad input (a malformed command line, a cpulist out of range, a scenario typo, a missing
//! file, no permission) is an [`InputError`]: the binary prints it and exits with code 2.
//! Everything else exits with code 1.

use std::fmt;

/// An error in what the user gave us; exit code 2.
#[derive(Debug)]
pub(crate) struct InputError(pub(crate) String);

impl InputError {
    /// Wraps a message naming the input and what was expected.
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        InputError(msg.into())
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// Shorthand: `Err(input_error(...))?`.
pub(crate) fn input_error(msg: impl Into<String>) -> anyhow::Error {
    InputError::new(msg).into()
}

/// A run stopped early by SIGINT or SIGTERM, after it printed its partial report (marked as
/// interrupted): exit code [`EXIT_INTERRUPTED`], whichever of the two signals it was.
#[derive(Debug)]
pub(crate) struct Interrupted(pub(crate) String);

/// Exit code of an interrupted run.
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Interrupted {}

/// The error a host command returns after printing a partial report because `reason` (a
/// signal's name) stopped it.
pub(crate) fn interrupted(reason: &str, what: &str) -> anyhow::Error {
    Interrupted(format!("interrupted by {reason}: {what}")).into()
}

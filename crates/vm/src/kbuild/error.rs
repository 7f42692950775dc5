//! Why a build did not produce a kernel, in the two kinds the CLI's exit codes tell apart.

/// Why a build did not produce a kernel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// What the user gave is wrong: a series with no package, a patch that does not apply, a
    /// fragment line the source cannot satisfy (exit code 2).
    #[error("{0}")]
    Input(String),
    /// The machine is missing something or a step failed: a tool, space, make (exit code 1).
    #[error("{0}")]
    Environment(String),
}

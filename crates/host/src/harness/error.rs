//! [`HarnessError`]: why a run could not be done, shared by every part of the harness (a
//! leaf, so that the parts and `mod.rs`, which re-exports it, do not import each other).

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The request cannot be run on this host (offline CPU, zero calls, ...): bad input.
    #[error("{0}")]
    Input(String),
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A harness thread panicked.
    #[error("harness {0} panicked")]
    Panicked(String),
    /// A measuring thread could not be pinned to a CPU the request named: bad input.
    #[error("pin to CPU {cpu}: {source}")]
    Pin {
        /// The CPU.
        cpu: u32,
        /// The error of `sched_setaffinity`.
        #[source]
        source: std::io::Error,
    },
}

impl HarnessError {
    /// Whether this is the user's input at fault (exit code 2 in the CLI).
    pub fn is_input(&self) -> bool {
        matches!(self, HarnessError::Input(_) | HarnessError::Pin { .. })
    }
}

/// Shorthand for [`HarnessError::Os`].
pub(crate) fn os_error(what: &str, source: std::io::Error) -> HarnessError {
    HarnessError::Os {
        what: what.to_string(),
        source,
    }
}

//! [`CalibrateError`]: why a calibration failed, one type for every stage.

use crate::harness::HarnessError;

/// Why calibration failed.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// The budget is too short or otherwise unusable.
    #[error("{0}")]
    Input(String),
    /// This host lacks something calibration needs (not Linux, no LOC row, no HZ).
    #[error("cannot calibrate this host: {0}")]
    Unsupported(String),
    /// A harness phase failed.
    #[error("{phase}: {source}")]
    Harness {
        /// Which phase.
        phase: String,
        /// The harness error.
        #[source]
        source: HarnessError,
    },
    /// The twin refused a fitting run.
    #[error("twin: {0}")]
    Twin(String),
    /// A stop request (Ctrl-C) ended calibration.
    #[error("interrupted")]
    Interrupted,
}

impl CalibrateError {
    /// Whether the user's input is at fault (a budget under 5 s, a workload spec or CPU the
    /// harness refused); the rest are the host's (exit code 1 in the CLI).
    pub fn is_input(&self) -> bool {
        match self {
            CalibrateError::Input(_) => true,
            CalibrateError::Harness { source, .. } => source.is_input(),
            _ => false,
        }
    }

    /// A harness error in `phase`.
    pub(crate) fn harness(phase: &str, source: HarnessError) -> CalibrateError {
        CalibrateError::Harness {
            phase: phase.to_string(),
            source,
        }
    }
}

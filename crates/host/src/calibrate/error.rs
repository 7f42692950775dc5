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
    /// A phase ran on a host busy with other work (or stolen from by the hypervisor), so a
    /// fit from it would describe the load, not the host: refused unless forced.
    #[error(
        "refusing to fit from a contaminated measurement ({}); rerun on a quiet host, or pass --force to fit anyway",
        .0.iter().map(|c| format!("{}: {}", c.phase, c.why)).collect::<Vec<_>>().join("; ")
    )]
    Contaminated(Vec<ContaminatedPhase>),
}

/// A calibration phase whose measurement other load contaminated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContaminatedPhase {
    /// The phase (`idle`, `hog`, `syscall`, ...).
    pub phase: String,
    /// What was seen (`CPU 0 was 99.8 % busy where the workload explains 0.0 %`).
    pub why: String,
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

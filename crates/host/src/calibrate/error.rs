//! [`CalibrateError`]: why a calibration failed, one type for every stage; [`SimulatorError`]:
//! why the twin behind the seams ([`Simulator`](super::Simulator), [`KvmModel`](super::KvmModel))
//! gave no answer; [`TwinRunError`]: why one of the stages' twin runs gave no figure.

use ticklab_schema::workload::WorkloadError;

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
    Twin(#[source] SimulatorError),
    /// The `[kernel]` section of the calibrated scenario did not build.
    #[error("twin: kernel section: {0}")]
    KernelSection(#[source] serde_json::Error),
    /// The workload of a fitting run did not parse for the measured CPUs.
    #[error("twin: {0}")]
    TwinWorkload(#[source] WorkloadError),
    /// A stop request (Ctrl-C) ended calibration.
    #[error("interrupted")]
    Interrupted,
    /// A phase ran on a host busy with other work (or stolen from by the hypervisor), so a
    /// fit from it would describe the load, not the host: refused unless tolerated
    /// ([`Tolerate`](super::Tolerate)). Every contaminated phase is listed, tolerated or not.
    #[error(
        "refusing to fit from a contaminated measurement ({}); rerun on a quiet host, or pass --force to fit anyway{}",
        .0.iter().map(|c| format!("{}: {}", c.phase, c.why)).collect::<Vec<_>>().join("; "),
        if self.steal_only() {
            " (steal time only: --tolerate-steal fits from it and still refuses other load; the interrupt counts stay the host's, the fitted costs include what the hypervisor took)"
        } else {
            ""
        }
    )]
    Contaminated(Vec<ContaminatedPhase>),
}

/// A calibration phase whose measurement other load contaminated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContaminatedPhase {
    /// The phase (`idle`, `hog`, `syscall`, ...).
    pub phase: String,
    /// What contaminated it.
    pub by: Contaminant,
    /// What was seen (`CPU 0 was 99.8 % busy where the workload explains 0.0 %`).
    pub why: String,
}

/// What contaminated a calibration phase ([`ContaminatedPhase::by`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contaminant {
    /// Work the phase does not explain ran on a measured CPU (another process, a kernel
    /// thread): it brings timers and wake-ups of its own, so counts and costs both move.
    OtherLoad,
    /// The hypervisor ran something else while this guest wanted the CPU (steal above
    /// [`ticklab_schema::report::STEAL_THRESHOLD_PCT`] of the window): the phase's threads
    /// wait, so its costs grow by the stolen time, but no interrupt is added.
    Steal,
}

/// Why the twin behind a seam gave no report: its own error, whole. The host crate does not
/// depend on the twin (docs/architecture.md), so it cannot name the twin's `SimError`; the
/// binary's adapter boxes it here, and the message and the causes below it stay the twin's.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct SimulatorError(Box<dyn std::error::Error + Send + Sync + 'static>);

impl SimulatorError {
    /// The twin's error `e` (or, for a stand-in twin, its message).
    pub fn new(e: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        SimulatorError(e.into())
    }

    /// The twin's error, to downcast.
    pub fn get_ref(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

/// Why a calibration stage's twin run gave no figure: its workload, the twin, or a report
/// without the result the stage reads. The stages say so in a note and keep the preset.
#[derive(Debug, thiserror::Error)]
pub enum TwinRunError {
    /// The run's workload spec does not parse for the scenario's CPUs.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The twin refused the run.
    #[error(transparent)]
    Simulator(#[from] SimulatorError),
    /// The twin's report of a frame workload has no wake-up figure.
    #[error("{spec}: the twin reported no wake-ups")]
    NoWakeups {
        /// The workload spec run.
        spec: String,
    },
    /// The twin's report of a ping-pong has no ping-pong result.
    #[error("the twin gave no ping-pong result")]
    NoPingPong,
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

    /// A refusal whose every contaminated phase was stolen from by the hypervisor and
    /// none busied by other work ([`Contaminant::Steal`]): the state of the machine this
    /// guest shares, which no rerun on the guest itself can change. False for every
    /// other error, and for a refusal with no phase.
    pub fn steal_only(&self) -> bool {
        match self {
            CalibrateError::Contaminated(phases) => {
                !phases.is_empty() && phases.iter().all(|p| p.by == Contaminant::Steal)
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(by: Contaminant) -> ContaminatedPhase {
        ContaminatedPhase {
            phase: "hog".into(),
            by,
            why: "CPU 0: seen".into(),
        }
    }

    #[test]
    fn steal_only_is_a_refusal_by_the_hypervisor_alone() {
        use Contaminant::{OtherLoad, Steal};
        let table: &[(&[Contaminant], bool)] = &[
            (&[Steal], true),
            (&[Steal, Steal], true),
            (&[OtherLoad], false),
            (&[Steal, OtherLoad], false),
            (&[], false),
        ];
        for (by, want) in table {
            let e = CalibrateError::Contaminated(by.iter().map(|&b| phase(b)).collect());
            assert_eq!(e.steal_only(), *want, "{by:?}");
            // The refusal says so only when it is steal alone.
            assert_eq!(e.to_string().contains("steal time only"), *want, "{e}");
        }
        assert!(!CalibrateError::Interrupted.steal_only());
    }
}

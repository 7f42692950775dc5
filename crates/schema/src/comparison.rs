//! One comparison of a measured run with the twin's prediction of it, figure by figure, as
//! data: the table `host run --twin` prints, the fit-quality lines of `host calibrate`, and
//! the kernel-versus-twin rows of `vm compare` (docs/architecture.md).
//!
//! A [`Row`] is one figure (per CPU or for the whole run): the measured value, the predicted
//! one, and the [`Band`] it is judged in; its ratio (predicted ÷ measured) and its
//! [`Verdict`] follow from those, so whoever renders or counts rows reads them from the row
//! alone. Rows are built from two reports, and their bands chosen, in
//! `ticklab_host::comparison` (the host bands, the VM bands, the builders every front end
//! shares); `ticklab-report` renders them.

use serde::{Deserialize, Serialize};

/// What a row compares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "figure", rename_all = "snake_case")]
pub enum Figure {
    /// Local timer interrupts per second.
    LocPerS,
    /// Share of the window with the tick stopped, %.
    TickStoppedPct,
    /// Share of the window not idle, %.
    BusyPct,
    /// Residency in one idle state, % of the window.
    IdleStatePct {
        /// The state's name.
        state: String,
    },
    /// Idle-state entries per second (all states).
    IdleEntriesPerS,
    /// Frame wake-up latency percentile / maximum of a CPU's worker, µs.
    WakeupUs {
        /// `p50`, `p99` or `max`.
        stat: String,
    },
    /// Frame jitter maximum of a CPU's worker, µs.
    JitterMaxUs,
    /// Ping-pong round trip, ns.
    PingPongNs {
        /// `pipe` or `futex`, and the CPUs (`pipe 0,1`).
        what: String,
    },
    /// getpid() cost, ns per call.
    SyscallNs,
    /// A frame worker's cost per work unit, ns.
    WorkUnitNs,
    /// OS noise: time the busy task lost to detours, ns per second of runtime.
    NoiseNsPerS,
    /// OS noise: the longest single detour, µs.
    MaxDetourUs,
    /// OS noise: interference count of one class of sources, per second of runtime (nested
    /// parts left out: [`crate::noise::NoiseSource::class_interference`]).
    NoiseCountPerS {
        /// The class.
        class: crate::noise::NoiseClass,
    },
    /// OS noise: runs of one softirq vector (`TIMER`, `RCU`, ...) per second of runtime,
    /// nested or not: one vector's runs counted one for one on either side.
    SoftirqPerS {
        /// The vector's name, as tracefs prints it (`action=`).
        vector: String,
    },
    /// A bulk-synchronous job's iteration time, µs.
    BspIterationUs {
        /// `mean`, `p99` or `max`.
        stat: String,
    },
    /// A bulk-synchronous job's mean excess over the noiseless iteration, µs.
    BspExcessUs,
    /// A bulk-synchronous job's late iterations, % of its iterations.
    BspLatePct,
}

impl Figure {
    /// The name in tables (`LOC/s`, `busy %`, `wake-up p99 us`).
    pub fn name(&self) -> String {
        match self {
            Figure::LocPerS => "LOC/s".into(),
            Figure::TickStoppedPct => "tick stopped %".into(),
            Figure::BusyPct => "busy %".into(),
            Figure::IdleStatePct { state } => format!("{state} %"),
            Figure::IdleEntriesPerS => "idle entries/s".into(),
            Figure::WakeupUs { stat } => format!("wake-up {stat} us"),
            Figure::JitterMaxUs => "jitter max us".into(),
            Figure::PingPongNs { what } => format!("ping-pong {what} ns/round trip"),
            Figure::SyscallNs => "getpid ns/call".into(),
            Figure::WorkUnitNs => "work unit ns".into(),
            Figure::NoiseNsPerS => "noise ns/s".into(),
            Figure::MaxDetourUs => "max detour us".into(),
            Figure::NoiseCountPerS { class } => format!("{class:?} noise/s").to_lowercase(),
            Figure::SoftirqPerS { vector } => format!("softirq {vector}/s"),
            Figure::BspIterationUs { stat } => format!("bsp iteration {stat} us"),
            Figure::BspExcessUs => "bsp excess us".into(),
            Figure::BspLatePct => "bsp late %".into(),
        }
    }

    /// Whether the figure is a share of the window, % (busy, tick stopped, an idle state's
    /// residency), which a band may give an absolute floor in points.
    pub fn is_share(&self) -> bool {
        matches!(
            self,
            Figure::TickStoppedPct | Figure::BusyPct | Figure::IdleStatePct { .. }
        )
    }
}

/// When a predicted value counts as matching the measured one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "band", rename_all = "snake_case")]
pub enum Band {
    /// |predicted − measured| ≤ `rel` × measured, or ≤ `abs` (whichever is wider).
    Within {
        /// Relative tolerance.
        rel: f64,
        /// Absolute tolerance, in the figure's unit.
        abs: f64,
    },
    /// Shown, not judged.
    Shown,
}

impl Band {
    /// Whether `predicted` matches `measured` (`None` for [`Band::Shown`]).
    pub fn within(self, measured: f64, predicted: f64) -> Option<bool> {
        match self {
            Band::Within { rel, abs } => {
                Some((predicted - measured).abs() <= (rel * measured.abs()).max(abs))
            }
            Band::Shown => None,
        }
    }
}

/// The verdict of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Inside its band.
    Ok,
    /// Outside its band: flagged.
    Miss,
    /// The band does not judge this figure.
    Shown,
    /// One side has no value: not compared.
    NotCompared,
}

impl Verdict {
    /// The word in tables.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Miss => "MISS",
            Verdict::Shown => "shown",
            Verdict::NotCompared => "-",
        }
    }
}

/// One figure, measured beside predicted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The CPU, or `None` for a figure of the whole run.
    pub cpu: Option<u32>,
    /// What is compared.
    #[serde(flatten)]
    pub figure: Figure,
    /// Measured value (`None`: not measured here).
    pub measured: Option<f64>,
    /// Predicted value (`None`: the twin does not model it).
    pub predicted: Option<f64>,
    /// How it is judged.
    pub band: Band,
}

impl Row {
    /// Predicted ÷ measured, when both exist and the measured value is not 0.
    pub fn ratio(&self) -> Option<f64> {
        match (self.measured, self.predicted) {
            (Some(m), Some(p)) if m != 0.0 => Some(p / m),
            _ => None,
        }
    }

    /// The verdict from the band.
    pub fn verdict(&self) -> Verdict {
        match (self.measured, self.predicted) {
            (Some(m), Some(p)) => match self.band.within(m, p) {
                Some(true) => Verdict::Ok,
                Some(false) => Verdict::Miss,
                None => Verdict::Shown,
            },
            _ => Verdict::NotCompared,
        }
    }
}

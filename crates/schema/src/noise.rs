//! OS noise: what the kernel takes from a busy, pinned task, per CPU and per source.
//!
//! One type for the host lab (`host noise`, a sampler thread that reads a cycle counter in a
//! tight loop, as rtla's osnoise tracer does) and for the twin (which knows the length of every
//! interrupt, callback and lock wait it simulates), so a measurement and a prediction are read
//! and compared the same way.
//!
//! # Definitions
//!
//! * **runtime**: the time the measuring task (or, in the twin, the busy task) owned its CPU
//!   during the window, its detours included.
//! * **detour**: one gap in the task's progress longer than the report's `threshold_ns`
//!   (the sampler saw two consecutive reads of the clock further apart than that). Gaps at or
//!   below the threshold are not noise: they are the loop's own cost.
//! * **noise**: the sum of all detours' lengths; **available %** is
//!   `100 · (1 − noise / runtime)`, the share of the CPU left to the task.
//! * **interference count** of a source: how many times that source ran on the CPU during the
//!   window, whether or not it made a detour above the threshold (rtla osnoise's IRQ, SIRQ,
//!   NMI and Thread columns).
//! * A detour inside which no source was seen is **hardware** noise (an SMI, or on a guest the
//!   hypervisor): [`NoiseClass::Hardware`].
//!
//! Invariants (kept by the producers, checked by [`CpuNoise::check`]): `noise_ns ≤ runtime_ns`,
//! `max_detour_ns ≤ noise_ns`, `detours == 0` iff `noise_ns == 0`, and the detour histogram,
//! when present, holds exactly `detours` samples.

use serde::{Deserialize, Serialize};

use crate::histogram::LatencyHistogram;

/// How a noise report attributed its detours to sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoiseMethod {
    /// Simulated by the twin: every source's time is known exactly.
    Twin,
    /// Measured, sources from tracefs events (`irq_handler_entry/exit`,
    /// `local_timer_entry/exit`, `softirq_entry/exit`, `sched_switch`, NMI events) that fell
    /// inside each detour.
    Tracefs,
    /// Measured, sources from per-CPU count deltas (`/proc/interrupts`, `/proc/softirqs`, the
    /// sampler's involuntary context switches): counts per source, no time per source.
    CountDeltas,
}

/// The class of a noise source, as rtla osnoise groups them.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum NoiseClass {
    /// A hard interrupt (the local timer included).
    Irq,
    /// A softirq vector.
    Softirq,
    /// A non-maskable interrupt.
    Nmi,
    /// Another thread scheduled on the CPU (kernel or user).
    Thread,
    /// Time stolen with no kernel source inside it: firmware, SMIs, or the hypervisor.
    Hardware,
}

/// One source of noise on one CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NoiseSource {
    /// Its class.
    pub class: NoiseClass,
    /// Its name within the class: the interrupt's name as `/proc/interrupts` or the
    /// `irq_handler_entry` event gives it (`local_timer` for the tick's interrupt), the softirq
    /// vector (`TIMER`, `RCU`, `SCHED`, ...), the thread's `comm`; for the twin, also the part
    /// of a kernel path it models (`tick`, `hrtimer callbacks`, `lock wait`, ...). A label for
    /// people: the class is the category.
    pub name: String,
    /// Times this source ran on the CPU during the window (interference count).
    pub count: u64,
    /// Time this source took from the task, ns, when the method can attribute time (`None`
    /// for [`NoiseMethod::CountDeltas`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_ns: Option<u64>,
    /// Longest single run of this source, ns, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ns: Option<u64>,
    /// A part of another source's run, not an interruption of its own: the twin's `tick`
    /// inside the timer interrupt, say. Its time and runs are its own, but a class's
    /// interference count leaves it out (the interrupt around it was counted), so that the
    /// twin's counts mean what a tracer's do: one per interrupt, softirq or thread run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nested: bool,
}

impl NoiseSource {
    /// Interruptions of one class, per the module's definition: the runs of its sources that
    /// are not nested in another source's run.
    pub fn class_interference(sources: &[NoiseSource], class: NoiseClass) -> u64 {
        sources
            .iter()
            .filter(|s| s.class == class && !s.nested)
            .map(|s| s.count)
            .sum()
    }
}

/// The noise one CPU's task saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuNoise {
    /// Logical CPU number.
    pub cpu: u32,
    /// Time the task owned the CPU in the window, detours included, ns.
    pub runtime_ns: u64,
    /// Sum of the detours, ns.
    pub noise_ns: u64,
    /// `100 · (1 − noise / runtime)`: the share of the CPU left to the task, %.
    pub available_pct: f64,
    /// The longest single detour, ns.
    pub max_detour_ns: u64,
    /// Detours above the threshold.
    pub detours: u64,
    /// Detour lengths in 1 µs buckets (cyclictest / rtla hist layout), when kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<LatencyHistogram>,
    /// Per-source interference, largest noise (then count) first.
    pub sources: Vec<NoiseSource>,
}

impl CpuNoise {
    /// `100 · (1 − noise / runtime)`, 100 for an empty runtime.
    pub fn available_pct(runtime_ns: u64, noise_ns: u64) -> f64 {
        if runtime_ns == 0 {
            100.0
        } else {
            100.0 * (1.0 - noise_ns as f64 / runtime_ns as f64)
        }
    }

    /// Checks the invariants of the module docs; the error names the first one broken.
    pub fn check(&self) -> Result<(), NoiseCheckError> {
        let cpu = self.cpu;
        if self.noise_ns > self.runtime_ns {
            return Err(NoiseCheckError::NoiseAboveRuntime {
                cpu,
                noise_ns: self.noise_ns,
                runtime_ns: self.runtime_ns,
            });
        }
        if self.max_detour_ns > self.noise_ns {
            return Err(NoiseCheckError::DetourAboveNoise {
                cpu,
                max_detour_ns: self.max_detour_ns,
                noise_ns: self.noise_ns,
            });
        }
        if (self.detours == 0) != (self.noise_ns == 0) {
            return Err(NoiseCheckError::DetoursWithoutNoise {
                cpu,
                detours: self.detours,
                noise_ns: self.noise_ns,
            });
        }
        if let Some(h) = &self.histogram
            && h.samples() != self.detours
        {
            return Err(NoiseCheckError::Histogram {
                cpu,
                histogram: h.samples(),
                detours: self.detours,
            });
        }
        Ok(())
    }
}

/// Which invariant of a CPU's noise ([`CpuNoise::check`]) is broken: the CPU and the figures
/// that disagree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoiseCheckError {
    /// More noise than runtime.
    #[error("CPU {cpu}: noise {noise_ns} ns above runtime {runtime_ns} ns")]
    NoiseAboveRuntime {
        /// The CPU.
        cpu: u32,
        /// Its noise, ns.
        noise_ns: u64,
        /// Its runtime, ns.
        runtime_ns: u64,
    },
    /// One detour longer than all the noise.
    #[error("CPU {cpu}: longest detour {max_detour_ns} ns above total noise {noise_ns} ns")]
    DetourAboveNoise {
        /// The CPU.
        cpu: u32,
        /// Its longest detour, ns.
        max_detour_ns: u64,
        /// Its noise, ns.
        noise_ns: u64,
    },
    /// Detours without noise, or noise without detours.
    #[error("CPU {cpu}: {detours} detours but {noise_ns} ns of noise")]
    DetoursWithoutNoise {
        /// The CPU.
        cpu: u32,
        /// Its detours.
        detours: u64,
        /// Its noise, ns.
        noise_ns: u64,
    },
    /// A histogram that does not hold every detour.
    #[error("CPU {cpu}: histogram holds {histogram} detours, the report {detours}")]
    Histogram {
        /// The CPU.
        cpu: u32,
        /// Detours in the histogram.
        histogram: u64,
        /// Detours in the report.
        detours: u64,
    },
}

/// A noise report: every measured (or simulated) busy CPU, with the threshold and the method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NoiseReport {
    /// How sources were attributed.
    pub method: NoiseMethod,
    /// A gap longer than this is a detour, ns (rtla's default since 2024: 1 µs).
    pub threshold_ns: u64,
    /// One entry per busy CPU, in CPU order.
    pub cpus: Vec<CpuNoise>,
}

/// The default detour threshold, ns: rtla osnoise's default since 2024 (the kernel tracer's own
/// default is 5 µs).
pub const DEFAULT_THRESHOLD_NS: u64 = 1_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_counts_its_interruptions_not_the_parts_inside_them() {
        let src = |class, name: &str, count, nested| NoiseSource {
            class,
            name: name.into(),
            count,
            noise_ns: None,
            max_ns: None,
            nested,
        };
        let sources = [
            src(NoiseClass::Irq, "local_timer", 250, false),
            src(NoiseClass::Irq, "tick", 250, true),
            src(NoiseClass::Irq, "IPI reschedule", 3, false),
            src(NoiseClass::Softirq, "TIMER", 40, false),
            src(NoiseClass::Softirq, "RCU", 187, true),
        ];
        for (class, want) in [
            (NoiseClass::Irq, 253),
            (NoiseClass::Softirq, 40),
            (NoiseClass::Thread, 0),
        ] {
            assert_eq!(
                NoiseSource::class_interference(&sources, class),
                want,
                "{class:?}"
            );
        }
    }

    fn cpu(runtime_ns: u64, noise_ns: u64, max_detour_ns: u64, detours: u64) -> CpuNoise {
        CpuNoise {
            cpu: 1,
            runtime_ns,
            noise_ns,
            available_pct: CpuNoise::available_pct(runtime_ns, noise_ns),
            max_detour_ns,
            detours,
            histogram: None,
            sources: Vec::new(),
        }
    }

    #[test]
    fn invariants_table() {
        let cases = [
            (cpu(1_000, 0, 0, 0), true),
            (cpu(1_000, 100, 60, 2), true),
            (cpu(1_000, 1_001, 1_001, 1), false),
            (cpu(1_000, 100, 101, 2), false),
            (cpu(1_000, 100, 50, 0), false),
            (cpu(1_000, 0, 0, 1), false),
        ];
        for (c, ok) in cases {
            assert_eq!(c.check().is_ok(), ok, "{c:?}");
        }
    }

    #[test]
    fn available_share() {
        assert_eq!(CpuNoise::available_pct(0, 0), 100.0);
        assert_eq!(CpuNoise::available_pct(1_000, 250), 75.0);
    }

    #[test]
    fn histogram_count_must_match() {
        let mut c = cpu(10_000, 3_000, 2_000, 2);
        let mut h = LatencyHistogram::new(100);
        h.record(0, 1_000);
        c.histogram = Some(h.clone());
        assert!(c.check().is_err());
        h.record(1, 2_000);
        c.histogram = Some(h);
        assert!(c.check().is_ok());
    }
}

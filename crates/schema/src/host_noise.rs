//! What a measured noise run (`host noise`) knows beyond the shared [`NoiseReport`](crate::noise::NoiseReport): the clock
//! the sampler read, how each sampler thread ran, the cross-checks against the kernel's own
//! counters, and the longest detours with every source found inside each.
//!
//! The [`NoiseReport`](crate::noise::NoiseReport) in [`Report::noise`](crate::report::Report)
//! is what a measurement and the twin's prediction share; this is the host-only rest, written
//! beside it (`host_noise` in the JSON) and shown by `ticklab-report`'s noise renderer.

use serde::{Deserialize, Serialize};

use crate::noise::NoiseClass;

/// The host-only details of one `host noise` run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostNoiseDetails {
    /// The clock the samplers read and how its counts became ns (`rdtsc, 2445.404 MHz
    /// (CLOCK_MONOTONIC_RAW over the run)`).
    pub clock: String,
    /// Why the run attributed by count deltas instead of tracefs, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method_note: Option<String>,
    /// A PREEMPT_RT kernel: softirqs ran in threads and are counted as those threads' noise,
    /// not as softirqs (what the osnoise tracer does on such a kernel).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub softirqs_in_threads: bool,
    /// Why the run ended early (`SIGINT`), when it did: the report is partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// `locked`, or why memory was not locked.
    pub memory: String,
    /// Trace events lost to ring-buffer overruns (sources of those events are missing).
    pub trace_overruns: u64,
    /// One entry per sampled CPU, in CPU order.
    pub cpus: Vec<HostNoiseCpu>,
}

/// One sampler thread's run and its cross-checks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostNoiseCpu {
    /// Logical CPU.
    pub cpu: u32,
    /// The sampler's scheduling policy (`SCHED_FIFO 95`, `SCHED_OTHER`, or why FIFO failed).
    pub policy: String,
    /// Mean cost of one pass of the sampling loop, ns (runtime ÷ clock reads).
    pub loop_ns: f64,
    /// The CPU's `LOC` (local timer) delta in `/proc/interrupts`, read just before the start
    /// line and just after the samplers ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loc_delta: Option<u64>,
    /// `local_timer_entry` events traced on the CPU between those two readings (the same
    /// window as [`HostNoiseCpu::loc_delta`]), with tracefs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loc_traced: Option<u64>,
    /// Steal time of the CPU in `/proc/stat` over the run, ns (counted in `USER_HZ` ticks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<u64>,
    /// The longest detours, longest first.
    pub longest: Vec<DetourRecord>,
}

/// One detour above the threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetourRecord {
    /// Its start, ns after the sampler's first clock read.
    pub at_ns: u64,
    /// Its length, ns.
    pub ns: u64,
    /// Every source found inside it, in the order they began (empty: hardware).
    pub sources: Vec<SourceRef>,
}

/// A source by class and name (as in [`NoiseSource`](crate::noise::NoiseSource)).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceRef {
    /// Its class.
    pub class: NoiseClass,
    /// Its name within the class.
    pub name: String,
}

/// How many of the longest detours each CPU keeps with their sources.
pub const LONGEST_KEPT: usize = 10;

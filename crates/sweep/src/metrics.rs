//! The numbers a sweep keeps of each run: every figure of a [`Report`] that has one value per
//! run ([`Metric`]) or per CPU ([`CpuMetric`]), named once here so the sweep's rows, its CSV
//! columns, its summary and its plots all spell them the same way.
//!
//! A metric the run does not produce (watts of a guest without a power model, frame jitter of
//! a run without frames, IPIs the twin does not model) is absent from the map, never a 0.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use ticklab_schema::report::{CpuRole, Report, WorkloadResult};

/// A figure with one value per run (machine-wide).
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
pub enum Metric {
    /// Local timer interrupts per second, all CPUs (`LOC` in /proc/interrupts).
    IrqPerS,
    /// Reschedule IPIs per second, all CPUs (`RES`), where counted.
    ResPerS,
    /// Function-call IPIs per second, all CPUs (`CAL`), where counted.
    CalPerS,
    /// irq_work interrupts per second, all CPUs (`IWI`).
    IwiPerS,
    /// Tick handler runs per second, all CPUs.
    TicksPerS,
    /// Share of CPU time with the tick stopped (0..1, mean over CPUs).
    TickStoppedFraction,
    /// Share of CPU time not idle (0..1, mean over CPUs).
    BusyFraction,
    /// Average package power (W).
    Watts,
    /// Share of the window with every core of the package idle at once (0..1).
    PackageIdleFraction,
    /// Longest interval without a jiffies update (ms).
    MaxJiffiesGapMs,
    /// Worst staleness of jiffies seen by a reader (ms).
    MaxReaderStalenessMs,
    /// Time-weighted mean staleness of coarse time (ms).
    MeanCoarseStalenessMs,
    /// Hand-overs of the timekeeping duty in the window.
    DutyHandovers,
    /// hrtimer interrupts per second, all CPUs (`.nr_events`).
    HrtimerEventsPerS,
    /// hrtimer interrupt hangs in the window (`.nr_hangs`).
    HrtimerHangs,
    /// Longest single hrtimer interrupt (µs).
    MaxIrqUs,
    /// Time ticks spent waiting for shared locks, µs per second of the window, all CPUs.
    TickLockWaitUsPerS,
    /// Longest wait of one tick for shared locks (µs).
    MaxTickLockWaitUs,
    /// Median frame jitter, worst frame group (µs).
    FrameP50Us,
    /// 99th percentile of frame jitter, worst frame group (µs).
    FrameP99Us,
    /// 99.9th percentile of frame jitter, worst frame group (µs).
    FrameP999Us,
    /// Largest frame jitter of any worker (µs).
    FrameMaxUs,
    /// Frames above the flier threshold, all groups.
    FrameFliers,
    /// Frames that overran the next frame's start, all groups.
    FrameOverruns,
    /// Nanoseconds per context switch of the ping-pong pair (first pair).
    PingpongNsPerSwitch,
    /// Nanoseconds per call of the syscall loop (first loop).
    SyscallNsPerCall,
    /// OS noise, µs per second of runtime, the noisiest busy CPU (noise report).
    NoiseUsPerS,
    /// Longest single detour of any busy CPU (µs, noise report).
    MaxDetourUs,
    /// Mean iteration of the bsp job (µs).
    BspIterationMeanUs,
    /// 99th percentile iteration of the bsp job (µs).
    BspIterationP99Us,
    /// Mean excess of a bsp iteration over the noiseless one (µs).
    BspExcessUs,
    /// The mean excess as a share of the noiseless iteration (%).
    BspExcessPct,
}

impl Metric {
    /// Whether the metric is a share in 0..1 (its interval: [`super::Stats::of_fraction`];
    /// its figures: a 0–100 % axis).
    pub fn is_fraction(self) -> bool {
        matches!(
            self,
            Metric::TickStoppedFraction | Metric::BusyFraction | Metric::PackageIdleFraction
        )
    }

    /// Every metric, in column order.
    pub const ALL: [Metric; 32] = [
        Metric::IrqPerS,
        Metric::ResPerS,
        Metric::CalPerS,
        Metric::IwiPerS,
        Metric::TicksPerS,
        Metric::TickStoppedFraction,
        Metric::BusyFraction,
        Metric::Watts,
        Metric::PackageIdleFraction,
        Metric::MaxJiffiesGapMs,
        Metric::MaxReaderStalenessMs,
        Metric::MeanCoarseStalenessMs,
        Metric::DutyHandovers,
        Metric::HrtimerEventsPerS,
        Metric::HrtimerHangs,
        Metric::MaxIrqUs,
        Metric::TickLockWaitUsPerS,
        Metric::MaxTickLockWaitUs,
        Metric::FrameP50Us,
        Metric::FrameP99Us,
        Metric::FrameP999Us,
        Metric::FrameMaxUs,
        Metric::FrameFliers,
        Metric::FrameOverruns,
        Metric::PingpongNsPerSwitch,
        Metric::SyscallNsPerCall,
        Metric::NoiseUsPerS,
        Metric::MaxDetourUs,
        Metric::BspIterationMeanUs,
        Metric::BspIterationP99Us,
        Metric::BspExcessUs,
        Metric::BspExcessPct,
    ];

    /// The name in JSON, CSV headers and on the command line (`irq_per_s`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::IrqPerS => "irq_per_s",
            Metric::ResPerS => "res_per_s",
            Metric::CalPerS => "cal_per_s",
            Metric::IwiPerS => "iwi_per_s",
            Metric::TicksPerS => "ticks_per_s",
            Metric::TickStoppedFraction => "tick_stopped_fraction",
            Metric::BusyFraction => "busy_fraction",
            Metric::Watts => "watts",
            Metric::PackageIdleFraction => "package_idle_fraction",
            Metric::MaxJiffiesGapMs => "max_jiffies_gap_ms",
            Metric::MaxReaderStalenessMs => "max_reader_staleness_ms",
            Metric::MeanCoarseStalenessMs => "mean_coarse_staleness_ms",
            Metric::DutyHandovers => "duty_handovers",
            Metric::HrtimerEventsPerS => "hrtimer_events_per_s",
            Metric::HrtimerHangs => "hrtimer_hangs",
            Metric::MaxIrqUs => "max_irq_us",
            Metric::TickLockWaitUsPerS => "tick_lock_wait_us_per_s",
            Metric::MaxTickLockWaitUs => "max_tick_lock_wait_us",
            Metric::FrameP50Us => "frame_p50_us",
            Metric::FrameP99Us => "frame_p99_us",
            Metric::FrameP999Us => "frame_p999_us",
            Metric::FrameMaxUs => "frame_max_us",
            Metric::FrameFliers => "frame_fliers",
            Metric::FrameOverruns => "frame_overruns",
            Metric::PingpongNsPerSwitch => "pingpong_ns_per_switch",
            Metric::SyscallNsPerCall => "syscall_ns_per_call",
            Metric::NoiseUsPerS => "noise_us_per_s",
            Metric::MaxDetourUs => "max_detour_us",
            Metric::BspIterationMeanUs => "bsp_iteration_mean_us",
            Metric::BspIterationP99Us => "bsp_iteration_p99_us",
            Metric::BspExcessUs => "bsp_excess_us",
            Metric::BspExcessPct => "bsp_excess_pct",
        }
    }

    /// An axis label for plots (`local timer irq/s`).
    pub fn label(self) -> &'static str {
        match self {
            Metric::IrqPerS => "local timer irq/s",
            Metric::ResPerS => "reschedule IPIs/s",
            Metric::CalPerS => "function-call IPIs/s",
            Metric::IwiPerS => "irq_work interrupts/s",
            Metric::TicksPerS => "ticks/s",
            Metric::TickStoppedFraction => "tick stopped (fraction of CPU time)",
            Metric::BusyFraction => "busy (fraction of CPU time)",
            Metric::Watts => "package power (W)",
            Metric::PackageIdleFraction => "package idle (fraction)",
            Metric::MaxJiffiesGapMs => "max jiffies gap (ms)",
            Metric::MaxReaderStalenessMs => "max jiffies staleness seen (ms)",
            Metric::MeanCoarseStalenessMs => "mean coarse-time staleness (ms)",
            Metric::DutyHandovers => "timekeeping duty hand-overs",
            Metric::HrtimerEventsPerS => "hrtimer interrupts/s",
            Metric::HrtimerHangs => "hrtimer hangs",
            Metric::MaxIrqUs => "longest hrtimer interrupt (µs)",
            Metric::TickLockWaitUsPerS => "tick lock wait (µs/s)",
            Metric::MaxTickLockWaitUs => "longest tick lock wait (µs)",
            Metric::FrameP50Us => "frame jitter p50 (µs)",
            Metric::FrameP99Us => "frame jitter p99 (µs)",
            Metric::FrameP999Us => "frame jitter p99.9 (µs)",
            Metric::FrameMaxUs => "frame jitter max (µs)",
            Metric::FrameFliers => "frame fliers",
            Metric::FrameOverruns => "frame overruns",
            Metric::PingpongNsPerSwitch => "ns per context switch",
            Metric::SyscallNsPerCall => "ns per syscall",
            Metric::NoiseUsPerS => "OS noise, noisiest busy CPU (µs/s)",
            Metric::MaxDetourUs => "longest detour (µs)",
            Metric::BspIterationMeanUs => "bsp iteration mean (µs)",
            Metric::BspIterationP99Us => "bsp iteration p99 (µs)",
            Metric::BspExcessUs => "bsp excess over noiseless (µs)",
            Metric::BspExcessPct => "bsp excess over noiseless (%)",
        }
    }

    /// Looks a metric up by its [`name`](Metric::name).
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// A figure with one value per CPU.
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
pub enum CpuMetric {
    /// Local timer interrupts per second on this CPU.
    IrqPerS,
    /// irq_work interrupts per second.
    IwiPerS,
    /// Tick handler runs per second.
    TicksPerS,
    /// Share of the window with the tick stopped (0..1).
    TickStoppedFraction,
    /// Share of the window not idle (0..1).
    BusyFraction,
}

impl CpuMetric {
    /// Whether the metric is a share in 0..1 (its interval: [`super::Stats::of_fraction`]).
    pub fn is_fraction(self) -> bool {
        matches!(
            self,
            CpuMetric::TickStoppedFraction | CpuMetric::BusyFraction
        )
    }

    /// Every per-CPU metric, in column order.
    pub const ALL: [CpuMetric; 5] = [
        CpuMetric::IrqPerS,
        CpuMetric::IwiPerS,
        CpuMetric::TicksPerS,
        CpuMetric::TickStoppedFraction,
        CpuMetric::BusyFraction,
    ];

    /// The name in JSON and CSV headers (`cpu3_irq_per_s` in CSV).
    pub fn name(self) -> &'static str {
        match self {
            CpuMetric::IrqPerS => "irq_per_s",
            CpuMetric::IwiPerS => "iwi_per_s",
            CpuMetric::TicksPerS => "ticks_per_s",
            CpuMetric::TickStoppedFraction => "tick_stopped_fraction",
            CpuMetric::BusyFraction => "busy_fraction",
        }
    }
}

/// One CPU's metrics in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuMetrics {
    /// Logical CPU number.
    pub cpu: u32,
    /// Its role in the tick configuration.
    pub role: CpuRole,
    /// The values the run produced.
    pub values: BTreeMap<CpuMetric, f64>,
}

/// Everything a sweep keeps of one run: machine-wide values and per-CPU values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Metrics {
    /// Machine-wide values the run produced, by metric.
    pub aggregate: BTreeMap<Metric, f64>,
    /// Per-CPU values, in CPU order.
    pub cpus: Vec<CpuMetrics>,
}

impl Metrics {
    /// Reads every metric out of a report's typed fields.
    // Over 100 lines because it is one table: a `put` per metric, read from the report's typed field
    // that holds it; the metrics' list reads in one place.
    pub fn from_report(r: &Report) -> Metrics {
        let secs = r.seconds().max(1e-12);
        let window_ns = r.duration_ns.max(1) as f64;
        let nr = r.cpus.len().max(1) as f64;
        let mut a = BTreeMap::new();
        let mut put = |m: Metric, v: Option<f64>| {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                a.insert(m, v);
            }
        };
        // A sum over CPUs of an optional counter: present only when every CPU counts it.
        let sum = |f: &dyn Fn(&ticklab_schema::report::CpuReport) -> Option<u64>| -> Option<f64> {
            r.cpus.iter().map(f).sum::<Option<u64>>().map(|x| x as f64)
        };
        put(Metric::IrqPerS, Some(r.loc_per_s()));
        put(Metric::ResPerS, sum(&|c| c.res).map(|x| x / secs));
        put(Metric::CalPerS, sum(&|c| c.cal).map(|x| x / secs));
        put(Metric::IwiPerS, sum(&|c| Some(c.iwi)).map(|x| x / secs));
        put(Metric::TicksPerS, sum(&|c| c.ticks).map(|x| x / secs));
        put(
            Metric::TickStoppedFraction,
            sum(&|c| c.tick_stopped_ns).map(|x| x / window_ns / nr),
        );
        put(
            Metric::BusyFraction,
            sum(&|c| c.busy_ns).map(|x| x / window_ns / nr),
        );
        if let Some(e) = &r.energy {
            put(Metric::Watts, Some(e.watts));
            put(Metric::PackageIdleFraction, Some(e.package_idle_fraction));
        }
        if let Some(t) = &r.timekeeping {
            put(
                Metric::MaxJiffiesGapMs,
                Some(t.max_jiffies_gap_ns as f64 / 1e6),
            );
            put(
                Metric::MaxReaderStalenessMs,
                Some(t.max_reader_staleness_ns as f64 / 1e6),
            );
            put(
                Metric::MeanCoarseStalenessMs,
                Some(t.mean_coarse_staleness_ns / 1e6),
            );
            put(Metric::DutyHandovers, Some(t.duty_handovers as f64));
        }
        if let Some(h) = &r.hrtimer {
            put(Metric::HrtimerEventsPerS, Some(h.nr_events as f64 / secs));
            put(Metric::HrtimerHangs, Some(h.nr_hangs as f64));
            put(Metric::MaxIrqUs, Some(h.max_irq_ns as f64 / 1e3));
        }
        if let Some(l) = &r.locks {
            put(Metric::TickLockWaitUsPerS, Some(l.tick_wait_us_per_s(secs)));
            put(
                Metric::MaxTickLockWaitUs,
                Some(l.max_tick_wait_ns as f64 / 1e3),
            );
        }
        let frames: Vec<_> = r
            .workloads
            .iter()
            .filter_map(|w| match w {
                WorkloadResult::Frames(f) => Some(f),
                _ => None,
            })
            .collect();
        if !frames.is_empty() {
            let worst = |f: &dyn Fn(&ticklab_schema::report::FrameGroupReport) -> f64| {
                frames
                    .iter()
                    .map(|g| f(g))
                    .fold(f64::NEG_INFINITY, f64::max)
            };
            put(Metric::FrameP50Us, Some(worst(&|g| g.p50_us)));
            put(Metric::FrameP99Us, Some(worst(&|g| g.p99_us)));
            put(Metric::FrameP999Us, Some(worst(&|g| g.p999_us)));
            let rows = frames.iter().flat_map(|g| &g.rows);
            put(
                Metric::FrameMaxUs,
                rows.clone()
                    .filter(|row| row.frames > 0)
                    .map(|row| row.max_us)
                    .reduce(f64::max),
            );
            put(
                Metric::FrameFliers,
                Some(rows.clone().map(|row| row.fliers).sum::<u64>() as f64),
            );
            put(
                Metric::FrameOverruns,
                Some(rows.map(|row| row.overruns).sum::<u64>() as f64),
            );
        }
        put(
            Metric::PingpongNsPerSwitch,
            r.workloads.iter().find_map(|w| match w {
                WorkloadResult::PingPong(p) => Some(p.ns_per_switch),
                _ => None,
            }),
        );
        put(
            Metric::SyscallNsPerCall,
            r.workloads.iter().find_map(|w| match w {
                WorkloadResult::Syscall(s) => Some(s.ns_per_call),
                _ => None,
            }),
        );
        if let Some(n) = &r.noise {
            put(
                Metric::NoiseUsPerS,
                n.cpus
                    .iter()
                    .filter(|c| c.runtime_ns > 0)
                    .map(|c| c.noise_ns as f64 * 1e6 / c.runtime_ns as f64)
                    .reduce(f64::max),
            );
            put(
                Metric::MaxDetourUs,
                n.cpus
                    .iter()
                    .map(|c| c.max_detour_ns as f64 / 1e3)
                    .reduce(f64::max),
            );
        }
        if let Some(b) = r.workloads.iter().find_map(|w| match w {
            WorkloadResult::Bsp(b) if b.iterations > 0 => Some(b),
            _ => None,
        }) {
            put(Metric::BspIterationMeanUs, Some(b.mean_ns / 1e3));
            put(Metric::BspIterationP99Us, Some(b.p99_ns as f64 / 1e3));
            put(Metric::BspExcessUs, Some(b.excess_mean_ns / 1e3));
            put(Metric::BspExcessPct, Some(b.excess_pct));
        }
        let cpus = r
            .cpus
            .iter()
            .map(|c| {
                let mut values = BTreeMap::new();
                values.insert(CpuMetric::IrqPerS, c.loc as f64 / secs);
                values.insert(CpuMetric::IwiPerS, c.iwi as f64 / secs);
                if let Some(t) = c.ticks {
                    values.insert(CpuMetric::TicksPerS, t as f64 / secs);
                }
                if let Some(t) = c.tick_stopped_ns {
                    values.insert(CpuMetric::TickStoppedFraction, t as f64 / window_ns);
                }
                if let Some(b) = c.busy_ns {
                    values.insert(CpuMetric::BusyFraction, b as f64 / window_ns);
                }
                CpuMetrics {
                    cpu: c.cpu,
                    role: c.role,
                    values,
                }
            })
            .collect();
        Metrics { aggregate: a, cpus }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found_again() {
        for m in Metric::ALL {
            assert_eq!(Metric::from_name(m.name()), Some(m));
            // The JSON key is the name.
            assert_eq!(
                serde_json::to_string(&m).ok(),
                Some(format!("\"{}\"", m.name()))
            );
        }
        for m in CpuMetric::ALL {
            assert_eq!(
                serde_json::to_string(&m).ok(),
                Some(format!("\"{}\"", m.name()))
            );
        }
        let mut sorted = Metric::ALL.to_vec();
        sorted.sort();
        assert_eq!(sorted, Metric::ALL.to_vec(), "ALL is in declaration order");
    }
}

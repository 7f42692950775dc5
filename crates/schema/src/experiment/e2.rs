//! E2: frame-scheduler jitter on a 64-CPU server of 2012 (kernel 3.0-rt), with and without
//! `skew_tick=1` (docs/experiments.md E2).
//!
//! This module holds what the experiment is — its frame [`GROUPS`], the jitter [`BUDGET_US`],
//! the four [`Config`]urations (a)–(d) and their kernel command lines, the 3.0-era
//! [`Mechanism`]s an ablation switches off one at a time — and what a run of it yields: one
//! [`Outcome`] per configuration, the per-group [`GroupSummary`], the per-CPU JSON view
//! ([`ConfigSummary`]), all gathered in [`Results`]; an ablation run yields [`Ablation`].
//! The twin builds the scenarios and runs them (`ticklab_twin::experiments::e2`, where the
//! configurations and assumptions are explained); `ticklab-report` renders the results.
//!
//! Jitter is counted from the moment the worker starts running its frame; the wake-up
//! latency (programmed start → running) is reported beside it ([`crate::frames`]).

use crate::report::{FrameGroupReport, Report, WorkloadResult};
use serde::{Deserialize, Serialize};

/// The frame groups: (name, Hz, LOOP, first CPU, last CPU) — docs/experiments.md E2.
pub const GROUPS: [(&str, f64, u64, u32, u32); 3] = [
    ("A", 960.0, 50_000, 4, 23),
    ("B", 666.0, 72_072, 24, 43),
    ("C", 300.0, 160_000, 44, 63),
];

/// The user's jitter budget (docs/experiments.md E2), µs.
pub const BUDGET_US: f64 = 30.0;

/// Rcu leaf fan-out of the 3.0 MAXSMP build (docs/experiments.md E2).
pub const MAXSMP_RCU_FANOUT: u32 = 64;

/// Simulated warm-up before each configuration's window, ns.
pub const WARMUP_NS: u64 = 1_000_000_000;

/// One of the four E2 configurations (docs/experiments.md E2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Config {
    /// (a) as published: no skew, nohz on, RT push/pull on (the defaults).
    A,
    /// (b) as published: `skew_tick=1`, nohz and RT push/pull off for the isolated CPUs.
    B,
    /// (c) skew on, nohz on, push/pull off: what nohz costs even with the skew.
    C,
    /// (d) no skew, nohz off, push/pull off: what the skew alone does.
    D,
}

impl Config {
    /// All four, in table order.
    pub const ALL: [Config; 4] = [Config::A, Config::B, Config::C, Config::D];

    /// `skew_tick=1`.
    pub fn skew(self) -> bool {
        matches!(self, Config::B | Config::C)
    }

    /// Dyntick-idle on the isolated CPUs.
    pub fn nohz(self) -> bool {
        matches!(self, Config::A | Config::C)
    }

    /// RT push/pull (cpupri and overload bookkeeping shared with the isolated CPUs).
    pub fn push_pull(self) -> bool {
        matches!(self, Config::A)
    }

    /// The letter, `a`..`d`.
    pub fn letter(self) -> char {
        match self {
            Config::A => 'a',
            Config::B => 'b',
            Config::C => 'c',
            Config::D => 'd',
        }
    }

    /// The kernel command line. "nohz off" is `nohz=off` (the isolated CPUs tick
    /// periodically; the housekeeping CPUs too, which changes nothing they share with the
    /// workers but their own idle ticks). Push/pull has no command-line switch: it was a
    /// cpuset switch of that era's RT kernels, given to the twin as [`Config::push_pull`].
    pub fn cmdline(self) -> &'static str {
        match self {
            Config::A => "nohz=on intel_idle.max_cstate=1",
            Config::B => "skew_tick=1 nohz=off intel_idle.max_cstate=1",
            Config::C => "skew_tick=1 nohz=on intel_idle.max_cstate=1",
            Config::D => "nohz=off intel_idle.max_cstate=1",
        }
    }

    /// One-line description for the tables.
    pub fn describe(self) -> &'static str {
        match self {
            Config::A => "no skew, nohz on, RT push/pull on (as published)",
            Config::B => {
                "skew_tick=1, nohz and RT push/pull off on the isolated CPUs (as published)"
            }
            Config::C => "skew_tick=1, nohz on, RT push/pull off",
            Config::D => "no skew, nohz off, RT push/pull off",
        }
    }
}

/// (a) for `false`, (b) for `true`: the two published configurations.
impl From<bool> for Config {
    fn from(skew: bool) -> Config {
        if skew { Config::B } else { Config::A }
    }
}

/// The E2 kernel command line of a configuration ([`Config::cmdline`]).
pub fn cmdline(c: impl Into<Config>) -> &'static str {
    c.into().cmdline()
}

/// The short name of a configuration in tables: `(a)`..`(d)`.
pub fn config_name(c: impl Into<Config>) -> String {
    format!("({})", c.into().letter())
}

/// A shared-line mechanism of the 3.0-rt era the twin models, each switchable for the
/// ablation (docs/model.md "E2 mechanisms"). Each acts through the event loop: CPUs reach the
/// shared line at their own simulated time and queue there ([`Mechanisms`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// `tick_do_update_jiffies64`'s check-then-lock race: every CPU whose lockless staleness
    /// check passed before the first writer published the update queues on `xtime_lock`'s
    /// write side. Off: a CPU sees the update the moment the first writer starts.
    JiffiesRace,
    /// Entering/leaving nohz: `nohz_cpu_mask`, the idle load balancer's `idle_cpus_mask` and
    /// its pick counters, RCU's dynticks counter.
    NohzEnterExit,
    /// RT wake-up and sleep with push/pull on: `cpupri_set` on the shared priority vectors,
    /// the root domain's RT-overload count read by the pull check.
    Cpupri,
    /// RCU grace-period work on the leaf `rcu_node` lock: noticing a new grace period,
    /// reporting the quiescent state, forcing quiescent states of dyntick-idle CPUs.
    RcuGracePeriod,
    /// The load-average fold every `LOAD_FREQ` (5 s + 1 tick) on `calc_load_tasks`.
    LoadFold,
    /// The scheduler tick's load-balance trigger (`nohz_kick_needed`: the first/second pick
    /// CPU atomics every busy tick).
    LoadBalanceTrigger,
    /// The `xtime_lock` read side in every tick (`ktime_get`): spin while a writer is inside,
    /// fetch the line after each write.
    SeqlockRead,
}

impl Mechanism {
    /// Every mechanism, in table order.
    pub const ALL: [Mechanism; 7] = [
        Mechanism::JiffiesRace,
        Mechanism::NohzEnterExit,
        Mechanism::Cpupri,
        Mechanism::RcuGracePeriod,
        Mechanism::LoadFold,
        Mechanism::LoadBalanceTrigger,
        Mechanism::SeqlockRead,
    ];

    /// Short name for tables and the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::JiffiesRace => "jiffies-race",
            Mechanism::NohzEnterExit => "nohz-enter-exit",
            Mechanism::Cpupri => "cpupri",
            Mechanism::RcuGracePeriod => "rcu-gp",
            Mechanism::LoadFold => "load-fold",
            Mechanism::LoadBalanceTrigger => "lb-trigger",
            Mechanism::SeqlockRead => "seqlock-read",
        }
    }

    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// A set of [`Mechanism`]s (which are switched on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Mechanisms(u16);

impl Mechanisms {
    /// None.
    pub const NONE: Mechanisms = Mechanisms(0);

    /// Every mechanism.
    pub fn all() -> Mechanisms {
        Mechanism::ALL
            .iter()
            .fold(Mechanisms::NONE, |s, &m| s.with(m))
    }

    /// Whether `m` is on.
    #[inline]
    pub fn has(self, m: Mechanism) -> bool {
        self.0 & m.bit() != 0
    }

    /// This set with `m` on.
    pub fn with(self, m: Mechanism) -> Mechanisms {
        Mechanisms(self.0 | m.bit())
    }

    /// This set with `m` off.
    pub fn without(self, m: Mechanism) -> Mechanisms {
        Mechanisms(self.0 & !m.bit())
    }
}

/// One configuration's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Which configuration.
    pub config: Config,
    /// The mechanism switched off for an ablation point, `None` for the full model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ablated: Option<Mechanism>,
    /// The full report of the run.
    pub report: Report,
    /// Events the run processed (the twin's speed, not a result of the experiment).
    pub events: u64,
    /// Wall time the run took on its thread, s (the twin's speed; not serialised, so that
    /// the output stays byte-identical for a seed).
    #[serde(skip)]
    pub wall_s: f64,
}

impl Outcome {
    /// The frame groups of the report, in group order.
    pub fn groups(&self) -> Vec<&FrameGroupReport> {
        self.report
            .workloads
            .iter()
            .filter_map(|w| match w {
                WorkloadResult::Frames(g) => Some(g),
                _ => None,
            })
            .collect()
    }

    /// The JSON view of this configuration: per-group summaries and per-CPU jitter.
    pub fn summary(&self) -> ConfigSummary {
        let groups = self.groups();
        ConfigSummary {
            config: self.config,
            skew: self.config.skew(),
            groups: groups.iter().map(|g| summary(g)).collect(),
            cpus: groups
                .iter()
                .flat_map(|g| g.rows.iter())
                .map(|r| CpuJitter {
                    cpu: r.cpu,
                    frames: r.frames,
                    min_us: r.min_us,
                    max_us: r.max_us,
                    avg_us: r.avg_us,
                    sigma_us: r.sigma_us,
                    overruns: r.overruns,
                    fliers: r.fliers,
                    wakeup: r.wakeup.clone(),
                    max_lock_wait_us: r.max_lock_wait_us,
                })
                .collect(),
        }
    }
}

/// A group's summary over its CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Group name.
    pub group: String,
    /// Largest jitter of any worker, µs.
    pub max_us: f64,
    /// Mean over all frames, µs.
    pub avg_us: f64,
    /// Standard deviation over all frames (pooled), µs.
    pub sigma_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Frames above the budget-independent flier threshold, all CPUs.
    pub fliers: u64,
    /// Overruns, all CPUs.
    pub overruns: u64,
    /// Wake-up latency: largest of any worker, µs.
    pub wakeup_max_us: f64,
    /// Wake-up latency: mean over all frames, µs.
    pub wakeup_avg_us: f64,
    /// Wake-up latency: group 99.9th percentile, µs.
    pub wakeup_p999_us: f64,
    /// Longest wait of any of the group's CPUs for a shared lock or line, µs.
    pub max_lock_wait_us: f64,
}

/// Summarises a group (pooled mean and sigma from the per-CPU rows).
pub fn summary(g: &FrameGroupReport) -> GroupSummary {
    let n: f64 = g.rows.iter().map(|r| r.frames as f64).sum();
    let mean = if n > 0.0 {
        g.rows
            .iter()
            .map(|r| r.frames as f64 * r.avg_us)
            .sum::<f64>()
            / n
    } else {
        0.0
    };
    let var = if n > 0.0 {
        g.rows
            .iter()
            .map(|r| {
                r.frames as f64 * (r.sigma_us * r.sigma_us + (r.avg_us - mean) * (r.avg_us - mean))
            })
            .sum::<f64>()
            / n
    } else {
        0.0
    };
    let wakeups = || {
        g.rows
            .iter()
            .filter_map(|r| r.wakeup.as_ref().map(|w| (r.frames, w)))
    };
    let wn: f64 = wakeups().map(|(n, _)| n as f64).sum();
    GroupSummary {
        wakeup_max_us: wakeups().map(|(_, w)| w.max_us).fold(0.0, f64::max),
        wakeup_avg_us: if wn > 0.0 {
            wakeups().map(|(n, w)| n as f64 * w.avg_us).sum::<f64>() / wn
        } else {
            0.0
        },
        wakeup_p999_us: g.wakeup.map_or(0.0, |p| p.p999_us),
        max_lock_wait_us: g
            .rows
            .iter()
            .filter_map(|r| r.max_lock_wait_us)
            .fold(0.0, f64::max),
        group: g.group.clone(),
        max_us: g.rows.iter().map(|r| r.max_us).fold(0.0, f64::max),
        avg_us: mean,
        sigma_us: var.sqrt(),
        p999_us: g.p999_us,
        fliers: g.rows.iter().map(|r| r.fliers).sum(),
        overruns: g.rows.iter().map(|r| r.overruns).sum(),
    }
}

/// The JSON of one configuration: `skew`, the group summaries, then per CPU `cpu`, `frames`,
/// `min_us`, `max_us`, `avg_us`, `sigma_us`, `overruns`, `fliers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigSummary {
    /// Which configuration.
    pub config: Config,
    /// `skew_tick=1`.
    pub skew: bool,
    /// Per-group summaries.
    pub groups: Vec<GroupSummary>,
    /// One entry per worker CPU.
    pub cpus: Vec<CpuJitter>,
}

/// One worker CPU's jitter in the JSON output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuJitter {
    /// CPU.
    pub cpu: u32,
    /// Frames completed.
    pub frames: u64,
    /// Minimum jitter, µs.
    pub min_us: f64,
    /// Maximum jitter, µs.
    pub max_us: f64,
    /// Mean jitter, µs.
    pub avg_us: f64,
    /// Standard deviation, µs.
    pub sigma_us: f64,
    /// Overruns.
    pub overruns: u64,
    /// Fliers.
    pub fliers: u64,
    /// Wake-up latency columns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeup: Option<crate::report::WakeupRow>,
    /// Longest wait for a shared lock or line, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lock_wait_us: Option<f64>,
}

/// A whole E2 run: both configurations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Seed of both configurations.
    pub seed: u64,
    /// Measured time per configuration, ns (after [`WARMUP_NS`] of warm-up).
    pub duration_ns: u64,
    /// Frames with more jitter than this are fliers, µs.
    pub flier_us: f64,
    /// One per configuration, in the order run ((a)..(d) by default).
    pub outcomes: Vec<Outcome>,
}

/// An ablation run: each configuration with every mechanism on, then with each switched off
/// in turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ablation {
    /// Seed of every point.
    pub seed: u64,
    /// Measured time per point, ns.
    pub duration_ns: u64,
    /// Flier threshold, µs.
    pub flier_us: f64,
    /// Per configuration: the full model first (`ablated == None`), then one point per
    /// mechanism switched off, in [`Mechanism::ALL`] order.
    pub points: Vec<Outcome>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::FrameRow;

    #[test]
    fn pooled_summary_of_two_cpus() {
        let row = |cpu, frames, avg_us, sigma_us, max_us| FrameRow {
            cpu,
            frames,
            min_us: 1.0,
            max_us,
            max_frame: 0,
            avg_us,
            sigma_us,
            overruns: 1,
            last_overrun: 0,
            fliers: 2,
            first_fliers: Vec::new(),
            last_flier: None,
            wakeup: None,
            max_lock_wait_us: None,
        };
        let g = FrameGroupReport {
            jitter_histogram: None,
            group: "A".into(),
            frequency_hz: 960.0,
            loop_units: 50_000,
            flier_threshold_us: 10.0,
            rows: vec![row(4, 100, 2.0, 1.0, 5.0), row(5, 300, 4.0, 1.0, 9.0)],
            p50_us: 0.0,
            p99_us: 0.0,
            p999_us: 7.5,
            policy: None,
            wakeup: None,
            histograms: Vec::new(),
        };
        let s = summary(&g);
        assert_eq!(s.max_us, 9.0);
        assert_eq!(s.avg_us, 3.5);
        // pooled: (100·(1 + 2.25) + 300·(1 + 0.25)) / 400 = 1.75
        assert!((s.sigma_us - 1.75f64.sqrt()).abs() < 1e-12);
        assert_eq!((s.fliers, s.overruns, s.p999_us), (4, 2, 7.5));
    }
}

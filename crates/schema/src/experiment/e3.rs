//! E3: context switches in a KVM guest, polling before idle (the 2017 proposal), against
//! host halt polling, `idle=poll` and today's cpuidle-haltpoll (docs/experiments.md E3).
//!
//! This module holds what the experiment is — its [`Config`]urations in table order
//! ([`CONFIGS`]), the published figures of the later revision ([`published`], docs/costs.md
//! §3b) — and what a run yields: one [`Row`] per configuration, the cost table the rows were
//! computed from ([`CostRow`]), and the [`BandCheck`]s of the HLT-versus-polling difference,
//! gathered in [`Results`], with the guest-poll rows under the other reading of where the 2017
//! patch polled beside them ([`PlacementReading`]). The twin runs it (`ticklab_twin::experiments::e3`); the renderer
//! is `ticklab_report::e3`.

use super::BandCheck;
use serde::{Deserialize, Serialize};

/// Context switches per configuration in the published benchmark (`contextswitch`'s
/// `timectxsw`: 500 000 iterations counted as 2 000 000 switches, docs/experiments.md E3).
pub const SWITCHES: u64 = 2_000_000;

/// Switches per round trip as the published benchmark counts them: `timectxsw` divides its
/// run by `iterations << 2` (docs/costs.md §12), so one of its switches is a quarter of a
/// round trip, half of one wake. Every E3 row is given in this unit.
pub const SWITCHES_PER_ROUND_TRIP: u64 = 4;

/// Published ns per switch of the baseline (HLT), docs/costs.md §3b.
pub const PUBLISHED_HLT_NS: f64 = 2493.14;

/// The band the HLT-versus-polling difference is held to (issue E3: ±35 %).
pub const DIFF_BAND: f64 = 0.35;

/// The band each published row's absolute ns per switch is held to (±25 %).
pub const ABSOLUTE_BAND: f64 = 0.25;

/// One configuration of the guest and its host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Config {
    /// Default guest idle: HLT (no cpuidle driver), host halt polling at the host kernel's
    /// default (the published baseline's host CPU of 200.3 % says its vCPU threads never
    /// blocked).
    Hlt,
    /// The 2017 proposal: poll `ns` before HLT, host as in [`Config::Hlt`].
    GuestPoll {
        /// `poll_threshold_ns`.
        ns: u64,
    },
    /// HLT in the guest, host `halt_poll_ns` = `ns`.
    HostPoll {
        /// Host `halt_poll_ns`.
        ns: u64,
    },
    /// Guest `idle=poll`.
    IdlePoll,
    /// cpuidle-haltpoll driver and governor with `guest_halt_poll_ns` = `ns`.
    Haltpoll {
        /// `guest_halt_poll_ns`.
        ns: u64,
    },
    /// cpuidle-haltpoll driver with `cpuidle.governor=teo` (Linux 6.6 teo).
    HaltpollTeo,
    /// HLT, both tasks on one vCPU (no idle, no exits on the switch path).
    HltOneCpu,
    /// HLT, a blocking pipe ping-pong (no spinning: each task reads as soon as it has
    /// written), in the table's unit.
    HltPipe,
    /// HLT with host `halt_poll_ns=0`, host CPU idle under the 4.x menu governor (the other
    /// reading of the published baseline).
    HltHostPollOff,
    /// HLT with host `halt_poll_ns=0`, host CPU idle under a current menu governor.
    HltHostPollOffCurrentMenu,
}

/// The configurations in table order: the rows, then the extra rows (teo, one CPU,
/// pipe).
pub const CONFIGS: [Config; 17] = [
    Config::Hlt,
    Config::GuestPoll { ns: 10_000 },
    Config::GuestPoll { ns: 20_000 },
    Config::GuestPoll { ns: 30_000 },
    Config::GuestPoll { ns: 500_000 },
    Config::HostPoll { ns: 10_000 },
    Config::HostPoll { ns: 20_000 },
    Config::HostPoll { ns: 30_000 },
    Config::HostPoll { ns: 500_000 },
    Config::HltHostPollOff,
    Config::HltHostPollOffCurrentMenu,
    Config::IdlePoll,
    Config::Haltpoll { ns: 200_000 },
    Config::Haltpoll { ns: 0 },
    Config::HaltpollTeo,
    Config::HltOneCpu,
    Config::HltPipe,
];

impl Config {
    /// The row label.
    pub fn label(self) -> String {
        match self {
            Config::Hlt => "HLT (default idle)".into(),
            Config::GuestPoll { ns } => format!("guest poll_threshold {} us", ns / 1000),
            Config::HostPoll { ns } => format!("host halt_poll_ns {} us", ns / 1000),
            Config::IdlePoll => "guest idle=poll".into(),
            Config::Haltpoll { ns: 200_000 } => "cpuidle-haltpoll (defaults)".into(),
            Config::Haltpoll { ns } => format!("cpuidle-haltpoll guest_halt_poll_ns={ns}"),
            Config::HaltpollTeo => "cpuidle-haltpoll + teo".into(),
            Config::HltOneCpu => "HLT, both tasks on one vCPU".into(),
            Config::HltPipe => "HLT, blocking pipe ping-pong".into(),
            Config::HltHostPollOff => "HLT, host halt_poll_ns=0 (4.x host menu)".into(),
            Config::HltHostPollOffCurrentMenu => {
                "HLT, host halt_poll_ns=0 (current host menu)".into()
            }
        }
    }
}

/// The published figure of a configuration (docs/costs.md §3b, Yang Zhang 2017, later
/// revision): (ns per switch, CPU % as published), or `None` where nothing was published.
pub fn published(c: Config) -> Option<(f64, &'static str)> {
    match c {
        Config::Hlt => Some((PUBLISHED_HLT_NS, "200.3 %")),
        Config::GuestPoll { ns: 10_000 } => Some((1485.96, "201.0 %")),
        Config::GuestPoll { ns: 20_000 } => Some((1391.26, "200.7 %")),
        Config::GuestPoll { ns: 30_000 } => Some((1488.55, "200.1 %")),
        Config::GuestPoll { ns: 500_000 } => Some((1159.14, "201.5 %")),
        Config::HostPoll { ns: 10_000 } => Some((2296.11, "201.2 %")),
        Config::HostPoll { ns: 20_000 } => Some((2599.7, "201.7 %")),
        Config::HostPoll { ns: 30_000 } => Some((2588.68, "211.6 %")),
        Config::HostPoll { ns: 500_000 } => Some((2423.20, "229.2 %")),
        Config::IdlePoll => Some((2050.1, "1003 %")),
        _ => None,
    }
}

/// One configuration's modelled result; "per switch" is per switch as the published
/// benchmark counts them ([`SWITCHES_PER_ROUND_TRIP`] per round trip).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The configuration.
    pub config: Config,
    /// Its label.
    pub label: String,
    /// Nanoseconds per context switch.
    pub ns_per_switch: f64,
    /// HLT exits per switch.
    pub hlt_exits: f64,
    /// TSC-deadline MSR-write exits per switch.
    pub tsc_deadline_exits: f64,
    /// ICR (IPI) MSR-write exits per switch.
    pub icr_exits: f64,
    /// External-interrupt exits per switch.
    pub ext_int_exits: f64,
    /// Wakes that skipped the IPI because the target's polling flag was up, % of wakes.
    pub ipi_skipped_pct: f64,
    /// Guest busy time, % of one CPU summed over the vCPUs.
    pub guest_busy_pct: f64,
    /// Host CPU consumed by the vCPU threads (polling included), % of one CPU summed.
    pub host_cpu_pct: f64,
    /// The part of it spent in host halt polling.
    pub host_poll_pct: f64,
    /// Where blocked vCPUs' host CPUs idled: the commonest host idle state and its share of
    /// the host idle entries; `None` when under 1 % of the wakes found the vCPU blocked.
    pub host_idle: Option<(String, f64)>,
    /// Published ns per switch, if any.
    pub published_ns: Option<f64>,
    /// Published CPU figure as published, if any.
    pub published_cpu: Option<String>,
    /// The row's critical path per switch, term by term, in path order; the terms add up
    /// to `ns_per_switch`.
    pub path: Vec<PathPart>,
}

/// One term of a row's critical path: a cost the switch waits for, per switch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathPart {
    /// What it is.
    pub name: String,
    /// Where its cost comes from: the cost field, its value and source tag.
    pub source: String,
    /// Nanoseconds per switch.
    pub ns_per_switch: f64,
    /// Its share of the row's ns per switch, %.
    pub share_pct: f64,
}

/// One cost the model used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostRow {
    /// What it is.
    pub name: String,
    /// Nanoseconds.
    pub ns: u64,
}

/// One term of a modelled HLT − guest-poll difference: a term of the two rows' critical
/// paths, the HLT row's less the poll row's (negative: the poll row pays more of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffPart {
    /// What it is, with its source.
    pub name: String,
    /// Nanoseconds per switch.
    pub ns: f64,
}

/// The parts of one baseline's HLT − guest-poll difference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffParts {
    /// The HLT row these parts belong to.
    pub baseline: Config,
    /// The guest-poll row it is taken against.
    pub poll: Config,
    /// The terms, in path order.
    pub parts: Vec<DiffPart>,
}

impl DiffParts {
    /// The sum of the terms.
    pub fn total(&self) -> f64 {
        self.parts.iter().map(|p| p.ns).sum()
    }
}

/// A run of E3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Switches per configuration, as the published benchmark counts them.
    pub switches: u64,
    /// How many of them make a round trip ([`SWITCHES_PER_ROUND_TRIP`]).
    pub switches_per_round_trip: u64,
    /// One row per configuration, in [`CONFIGS`] order.
    pub rows: Vec<Row>,
    /// The costs the rows come from.
    pub costs: Vec<CostRow>,
    /// HLT − guest-poll row, modelled against published, per guest-poll row.
    pub checks: Vec<BandCheck>,
    /// The same differences with the other reading of the baseline (host `halt_poll_ns=0`),
    /// per host menu rule: shown, not the verdict (see docs/model.md).
    pub other_reading: Vec<BandCheck>,
    /// The critical path of each baseline's difference from the guest-poll row, term by term.
    pub parts: Vec<DiffParts>,
    /// Every row with a published figure, its ns per switch against the published one
    /// ([`ABSOLUTE_BAND`]).
    pub absolute: Vec<BandCheck>,
    /// The guest-poll rows under the other reading of where the 2017 patch polled (before the
    /// tick stop): shown, not the verdict.
    pub poll_before_tick_stop: PlacementReading,
    /// The assumptions, one sentence each.
    pub assumptions: Vec<String>,
}

/// E3's guest-poll rows under a reading of where the 2017 patch ran its poll relative to the
/// idle loop's tick stop (`tick_nohz_idle_enter()`, docs/kernel-behaviour.md §9.7), with the
/// checks that reading gives. The verdict ([`Results::rows`], [`Results::checks`]) keeps the
/// documented assumption, the poll after the stop, until the patch text is found; the other
/// reading (the poll before the stop: a wake landing in the poll skips the stop and the
/// restart) is carried here and shown beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementReading {
    /// The guest-poll rows ([`Config::GuestPoll`], in [`CONFIGS`] order) under this reading.
    pub rows: Vec<Row>,
    /// Each of them against its published figure ([`ABSOLUTE_BAND`]).
    pub absolute: Vec<BandCheck>,
    /// The verdict's HLT row less each of them, against the published difference
    /// ([`DIFF_BAND`]).
    pub checks: Vec<BandCheck>,
    /// The critical path of the verdict's HLT row less the first of them, term by term.
    pub parts: Vec<DiffParts>,
}

impl Results {
    /// The band checks of the HLT-versus-polling difference: one per guest-poll row with a
    /// published figure.
    pub fn difference_checks(rows: &[Row]) -> Vec<BandCheck> {
        Self::difference_checks_from(rows, Config::Hlt)
    }

    /// The band checks of the absolute rows: every row with a published figure, its ns per
    /// switch against the published one within [`ABSOLUTE_BAND`].
    pub fn absolute_checks(rows: &[Row]) -> Vec<BandCheck> {
        rows.iter()
            .filter_map(|r| {
                Some(BandCheck::within(
                    format!("{} (ns/switch)", r.label),
                    r.ns_per_switch,
                    r.published_ns?,
                    ABSOLUTE_BAND,
                ))
            })
            .collect()
    }

    /// The band checks of `baseline` (an HLT row) minus each guest-poll row with a published
    /// figure, against the published baseline minus that row.
    pub fn difference_checks_from(rows: &[Row], baseline: Config) -> Vec<BandCheck> {
        match rows.iter().find(|r| r.config == baseline) {
            Some(hlt) => Self::difference_checks_between(hlt, rows),
            None => Vec::new(),
        }
    }

    /// The band checks of `hlt` (an HLT row) minus each guest-poll row of `polls` with a
    /// published figure, against the published baseline minus that row.
    pub fn difference_checks_between(hlt: &Row, polls: &[Row]) -> Vec<BandCheck> {
        polls
            .iter()
            .filter(|r| matches!(r.config, Config::GuestPoll { .. }))
            .filter_map(|r| {
                let published = r.published_ns?;
                Some(BandCheck::within(
                    format!("{} − {} (ns/switch)", hlt.label, r.label),
                    hlt.ns_per_switch - r.ns_per_switch,
                    PUBLISHED_HLT_NS - published,
                    DIFF_BAND,
                ))
            })
            .collect()
    }
}

/// One `guest_halt_poll_ns` value of the live sweep on this host, with the calibrated twin's
/// prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LivePoint {
    /// The value written to `haltpoll.guest_halt_poll_ns` for this point.
    pub guest_halt_poll_ns: u64,
    /// Round trips measured.
    pub round_trips: u64,
    /// Measured ns per switch (futex ping-pong across the two CPUs).
    pub ns_per_switch: f64,
    /// Measured guest CPU busy % of the two CPUs (mean).
    pub busy_pct: f64,
    /// cpuidle state usage during the point, summed over the two CPUs: (state, entries);
    /// empty when sysfs has no cpuidle states (no driver).
    pub idle_usage: Vec<(String, u64)>,
    /// The twin's prediction, ns per switch (`None` where the twin was not built).
    pub predicted_ns: Option<f64>,
    /// This point was the calibration point (not a prediction).
    pub calibration_point: bool,
}

impl LivePoint {
    /// Prediction error, % of the measurement.
    pub fn error_pct(&self) -> Option<f64> {
        self.predicted_ns
            .map(|p| 100.0 * (p - self.ns_per_switch) / self.ns_per_switch)
    }
}

/// The live part of E3 on this host: the sweep of `guest_halt_poll_ns`, the parameters
/// before and after, and the twin calibrated at `guest_halt_poll_ns=0`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveSweep {
    /// `current_driver` (e.g. `none`, `haltpoll`).
    pub driver: String,
    /// `current_governor`.
    pub governor: String,
    /// What the sweep can show here, one sentence (e.g. that without the haltpoll driver the
    /// parameter has no effect).
    pub verdict: String,
    /// Known writable parameters before the sweep: (name, value).
    pub params_before: Vec<(String, String)>,
    /// The same after the sweep (restored).
    pub params_after: Vec<(String, String)>,
    /// Measured ns per switch with both tasks on one CPU (calibration input).
    pub same_cpu_ns: f64,
    /// The calibrated costs: (name, ns, how obtained).
    pub calibration: Vec<(String, u64, String)>,
    /// The sweep points, in the order run.
    pub points: Vec<LivePoint>,
    /// The run was interrupted (Ctrl-C): the points are those completed.
    pub interrupted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_published_figure_is_in_the_table() {
        let with: Vec<_> = CONFIGS
            .iter()
            .filter(|c| published(**c).is_some())
            .collect();
        assert_eq!(with.len(), 10);
        assert_eq!(published(Config::Hlt).map(|p| p.0), Some(2493.14));
        assert_eq!(
            published(Config::GuestPoll { ns: 500_000 }).map(|p| p.0),
            Some(1159.14)
        );
        assert!(published(Config::Haltpoll { ns: 0 }).is_none());
    }

    #[test]
    fn labels_are_distinct() {
        let mut labels: Vec<String> = CONFIGS.iter().map(|c| c.label()).collect();
        labels.sort();
        labels.dedup();
        assert_eq!(labels.len(), CONFIGS.len());
    }

    #[test]
    fn difference_checks_use_the_published_baseline() {
        let row = |config: Config, ns: f64| Row {
            config,
            label: config.label(),
            ns_per_switch: ns,
            hlt_exits: 0.0,
            tsc_deadline_exits: 0.0,
            icr_exits: 0.0,
            ext_int_exits: 0.0,
            ipi_skipped_pct: 0.0,
            guest_busy_pct: 0.0,
            host_cpu_pct: 0.0,
            host_poll_pct: 0.0,
            host_idle: None,
            published_ns: published(config).map(|p| p.0),
            published_cpu: None,
            path: Vec::new(),
        };
        let rows = [
            row(Config::Hlt, 3000.0),
            row(Config::GuestPoll { ns: 10_000 }, 2000.0),
            row(Config::HostPoll { ns: 10_000 }, 2900.0),
        ];
        let checks = Results::difference_checks(&rows);
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].value, 1000.0);
        assert!((checks[0].target - (2493.14 - 1485.96)).abs() < 1e-9);
        assert!(checks[0].ok);
        // Absolute: 3000 against 2493.14 is +20.3 % (in), 2000 against 1485.96 +34.6 %
        // (out), 2900 against 2296.11 +26.3 % (out).
        let abs = Results::absolute_checks(&rows);
        assert_eq!(abs.len(), 3);
        assert_eq!(
            abs.iter().map(|c| c.ok).collect::<Vec<_>>(),
            [true, false, false]
        );
        assert_eq!(abs[0].target, 2493.14);
    }
}

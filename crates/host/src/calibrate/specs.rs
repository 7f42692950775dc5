//! What every stage of a calibration shares: the phases' workload specs and shares of the
//! budget, the simulated windows, the thresholds, the harness coordinator's background
//! source, and the [`Simulator`] seam. A leaf: it depends on nothing else in `calibrate`
//! but [`super::error`].

use std::time::Duration;

use ticklab_schema::report::{CpuWakeups, Report};
use ticklab_schema::scenario::{BackgroundSource, Placement, Scenario, TimerKind};
use ticklab_schema::workload::Workload;

use super::error::{CalibrateError, SimulatorError};
use crate::harness::HostRun;

/// Runs one twin simulation (the CLI passes `ticklab_twin::run`, its `SimError` boxed in a
/// [`SimulatorError`]; the host crate does not depend on the twin).
pub type Simulator<'a> = &'a dyn Fn(&Scenario) -> Result<Report, SimulatorError>;

/// The signature of the measurement's phase runner: workload spec, duration, phase name,
/// warnings → the harness run.
pub(crate) type RunPhase<'a> =
    &'a dyn Fn(String, Duration, &str, &mut Vec<String>) -> Result<HostRun, CalibrateError>;

/// Per-CPU LOC/s of a report.
pub fn loc_per_s(r: &Report) -> Vec<f64> {
    let s = r.seconds().max(1e-9);
    r.cpus.iter().map(|c| c.loc as f64 / s).collect()
}

/// The frames phase: the 1 kHz frame worker waking on an idle CPU.
pub(crate) const IDLE_FRAMES: &str = "frames:1000@0:loop=0";

/// The frames-beside-a-hog phase: the 1 kHz frame worker (SCHED_FIFO) waking on the hog's CPU
/// `h`, which a SCHED_OTHER hog keeps busy.
pub(crate) fn busy_frames_spec(h: u32) -> String {
    format!("hogs:1@{h}+frames:1000@{h}:loop=0")
}

/// Shares of the budget per phase: idle, hog, syscall, each ping-pong, frames, tracepoints,
/// frames beside a hog. With [`MICRO_SHARES`] they add up to the whole budget.
pub(crate) const SHARES: [f64; 7] = [0.31, 0.18, 0.06, 0.07, 0.12, 0.10, 0.06];
/// Shares of the micro-benchmarks ([`super::micro`]): clock reads, cache-line bounces. Short:
/// both are tight loops timed in batches of well under a millisecond, so even a 5 s budget
/// gives them hundreds of batches.
pub(crate) const MICRO_SHARES: [f64; 2] = [0.01, 0.02];

/// Busy fraction above which a CPU of the idle phase ran other work (a warning; and the
/// background-task figure leaves the CPU out, [`super::micro`]).
pub(crate) const OTHER_WORK_BUSY: f64 = 0.05;

/// The harness coordinator's polling period during timed workloads (hogs, frames).
pub const HARNESS_POLL_NS: u64 = crate::harness::run::COORDINATOR_POLL_NS;

/// The name of the harness coordinator's background source: the phases run through
/// `host run`'s harness have it, the idle phase (one sleep) does not.
pub(crate) const HARNESS_SOURCE: &str = "harness_coordinator";

/// The harness coordinator's background source on `nr` CPUs ([`super::fitting`], "Harness
/// coordinator").
pub(crate) fn harness_source(nr: u32) -> BackgroundSource {
    BackgroundSource {
        name: HARNESS_SOURCE.into(),
        kind: TimerKind::Hrtimer,
        placement: Placement::PerCpu,
        period_ns: Some(HARNESS_POLL_NS * nr as u64),
        rate_hz: None,
        deferrable: false,
        slack_ns: 50_000,
        wakes_task: true,
        follows_task: true,
        timer_migrates: false,
        hard: false,
        task_ns: None,
        relative: false,
        provenance: "C: ticklab host run's coordinator sleeps in 100 ms slices during timed workloads (harness::run::COORDINATOR_POLL_NS); E: the unpinned thread's wake-ups spread evenly over CPUs".into(),
        cpus: None,
    }
}

/// Gives the harness coordinator's source of a calibrated scenario the poll that `workload`'s
/// run uses ([`crate::harness::coordinator_poll_ns`]). The calibration fits it at the timed
/// poll (100 ms); a run with a counted group polls every 5 ms, 200 wake-ups a second on the
/// measured CPUs, which the twin must charge too (issue 30: a getpid loop beside a hog
/// counted about 200 LOC/s above its tick on one CPU, the coordinator's). A scenario without
/// the source (not written by `host calibrate`) is left alone.
pub fn harness_poll_for(s: &mut Scenario, workload: &Workload) {
    let nr = u64::from(s.machine.topology.nr_cpus());
    let poll = crate::harness::coordinator_poll_ns(workload);
    for b in s.background.iter_mut().filter(|b| b.name == HARNESS_SOURCE) {
        b.period_ns = Some(poll * nr);
    }
}

/// Places the harness coordinator's source where the measured run's coordinator woke
/// (`Report::coordinator_wakeups`, counted per CPU with `sched_getcpu` after each poll). The
/// calibrated source spreads the wake-ups evenly over the CPUs, an estimate for a thread that
/// is not pinned; a run that recorded them gives each CPU it woke on one instance at that
/// CPU's share of the poll rate, armed there and kept there (the counts already say where
/// the scheduler put it). Call after [`harness_poll_for`]. Without counts (a report written
/// before they were recorded), or with a CPU the scenario lacks, nothing changes.
pub fn harness_where_measured(s: &mut Scenario, wakeups: &[CpuWakeups]) {
    let nr = s.machine.topology.nr_cpus();
    let Some(i) = s.background.iter().position(|b| b.name == HARNESS_SOURCE) else {
        return;
    };
    if wakeups.iter().all(|w| w.wakeups == 0)
        || wakeups.iter().any(|w| w.cpu >= nr)
        || s.background.len() + wakeups.len() > ticklab_schema::validate::MAX_BACKGROUND_SOURCES + 1
    {
        return;
    }
    let base = s.background[i].clone();
    // The source's period is the poll times the CPUs it is spread over.
    let poll = base.period_ns.unwrap_or(HARNESS_POLL_NS * u64::from(nr)) / u64::from(nr);
    s.background
        .splice(i..=i, base.split_by_wakeups(poll, wakeups));
}

/// Rescaling rounds of the background-rate fit.
pub const FIT_ROUNDS: usize = 4;
/// Simulated window of each fitting run.
pub(crate) const FIT_SIM_NS: u64 = 60_000_000_000;

/// Simulated window of the cost checks (syscall, ping-pong, frames).
pub const CHECK_SIM_NS: u64 = 2_000_000_000;

/// How long the twin simulates each kind of check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// The idle phase, ns.
    pub idle_ns: u64,
    /// The one-hog phase, ns.
    pub hog_ns: u64,
    /// Each cost check (syscall, ping-pong, frames), ns.
    pub check_ns: u64,
}

/// The fit-quality windows: idle and one hog as long as the fit's own runs (so the rows are
/// the values the fit converged on), [`CHECK_SIM_NS`] for the cost checks.
pub const FIT_WINDOWS: Windows = Windows {
    idle_ns: FIT_SIM_NS,
    hog_ns: FIT_SIM_NS / 4,
    check_ns: CHECK_SIM_NS,
};

#[cfg(test)]
pub(in crate::calibrate) mod tests {
    use ticklab_schema::scenario::Scenario;
    use ticklab_schema::workload::Workload;

    /// A fitted scenario of the two-CPU host of `fit_quality`'s `measured`, idle workload.
    pub(in crate::calibrate) fn scenario() -> Scenario {
        Scenario {
            name: "t".into(),
            machine: ticklab_schema::machine::kvm_guest(2),
            kernel: serde_json::from_value(serde_json::json!({
                "version": "6.18", "hz": 250, "nohz": "idle", "high_res": true, "cmdline": ""
            }))
            .unwrap(),
            workload: Workload::default(),
            background: Vec::new(),
            run: Default::default(),
        }
    }

    #[test]
    fn the_phases_fit_in_the_budget() {
        // The ping-pong share is spent twice (same CPU, cross CPU); inspect's 0.3 s is extra.
        let total: f64 = super::SHARES.iter().sum::<f64>()
            + super::SHARES[3]
            + super::MICRO_SHARES.iter().sum::<f64>();
        assert!(total <= 1.0 + 1e-9, "phase shares add up to {total}");
    }

    #[test]
    fn the_harness_source_goes_where_the_run_woke() {
        use super::{HARNESS_POLL_NS, HARNESS_SOURCE, harness_source, harness_where_measured};
        use ticklab_schema::report::CpuWakeups;
        let w = |cpu, wakeups| CpuWakeups { cpu, wakeups };
        // (wake-ups per CPU, expected (name, CPU, period) of the coordinator's sources; empty:
        // the calibrated source left as it was)
        type Case = (Vec<CpuWakeups>, Vec<(&'static str, u32, u64)>);
        let cases: Vec<Case> = vec![
            (
                vec![w(1, 100)],
                vec![("harness_coordinator (CPU 1)", 1, HARNESS_POLL_NS)],
            ),
            (
                vec![w(0, 25), w(1, 75)],
                vec![
                    ("harness_coordinator (CPU 0)", 0, 4 * HARNESS_POLL_NS),
                    ("harness_coordinator (CPU 1)", 1, HARNESS_POLL_NS * 100 / 75),
                ],
            ),
            // No counts (an older report), or a CPU this scenario lacks: unchanged.
            (vec![], vec![]),
            (vec![w(5, 10)], vec![]),
        ];
        for (wakeups, want) in cases {
            let mut s = scenario();
            s.background.push(harness_source(2));
            harness_where_measured(&mut s, &wakeups);
            let got: Vec<_> = s
                .background
                .iter()
                .filter(|b| b.name.starts_with(HARNESS_SOURCE))
                .map(|b| {
                    (
                        b.name.as_str(),
                        b.cpus.as_ref().and_then(|c| c.first()),
                        b.period_ns,
                        b.follows_task,
                    )
                })
                .collect();
            if want.is_empty() {
                assert_eq!(
                    got,
                    vec![(HARNESS_SOURCE, None, Some(2 * HARNESS_POLL_NS), true)],
                    "{wakeups:?}"
                );
            } else {
                let want: Vec<_> = want
                    .iter()
                    .map(|&(n, c, p)| (n, Some(c), Some(p), false))
                    .collect();
                assert_eq!(got, want, "{wakeups:?}");
            }
            s.validate().expect("the placed sources validate");
        }
    }

    #[test]
    fn the_harness_source_polls_as_the_run_does() {
        use super::{HARNESS_SOURCE, Scenario, Workload, harness_poll_for, harness_source};
        let base = |with_source: bool| {
            let mut s = scenario();
            s.background.retain(|b| b.name != HARNESS_SOURCE);
            if with_source {
                s.background.push(harness_source(2));
            }
            s
        };
        let period = |s: &Scenario| {
            s.background
                .iter()
                .find(|b| b.name == HARNESS_SOURCE)
                .and_then(|b| b.period_ns)
        };
        // (workload, the source's period on 2 CPUs: the poll spread over both)
        for (spec, want) in [
            ("idle", 200_000_000),
            ("hogs:2", 200_000_000),
            ("frames:100@1:loop=1000", 200_000_000),
            ("syscall:getpid@0:n=1000+hogs:1@1", 10_000_000),
            ("pingpong:futex@0,1:n=1000", 10_000_000),
            ("bsp:2@0-1:work=100us:iters=10", 10_000_000),
            ("bsp:2@0-1:work=100us", 200_000_000),
        ] {
            let w = Workload::parse(spec, 2).unwrap();
            let mut s = base(true);
            harness_poll_for(&mut s, &w);
            assert_eq!(period(&s), Some(want), "{spec}");
            // A scenario without the source gains none.
            let mut s = base(false);
            harness_poll_for(&mut s, &w);
            assert_eq!(period(&s), None, "{spec}");
        }
    }
}

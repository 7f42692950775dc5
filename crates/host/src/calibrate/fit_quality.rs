//! How well the fitted twin reproduces what calibration measured, figure by figure: the
//! check stage of the pipeline, after every fit.
//!
//! # Fit quality
//!
//! After the fit, the twin with the fitted costs runs each calibration phase again and every
//! figure is set beside its measurement in the shared comparison
//! ([`crate::comparison`], [`Bands::Host`]: a miss above 20 %, with a floor of
//! 2 LOC/s for interrupt rates): idle and one-hog LOC/s per CPU, getpid ns/call, the pipe
//! ping-pong round trips, and the 1 kHz frame worker's wake-up p50 / p99, on an idle CPU and
//! beside a hog on the hog's CPU. A figure the twin cannot run is listed with the reason
//! instead of a value. The wake-up p50s are what [`super::wakeup_fit`] fitted the wake-path
//! costs to, so they check the bisection; the p99s are not fitted (the twin's uniform
//! delivery spread has no tail), and a miss there is the host's noise.
//!
//! One function, [`twin_checks`], runs every phase in the twin of a scenario; the phases are
//! one table (`checks`), so a new check is one entry there. The idle phase runs without the
//! harness coordinator's wake-ups (calibration measures it with one sleep), the others with
//! them. The fit-quality rows use [`FIT_WINDOWS`], where idle and one hog are simulated as
//! long as the fit's own runs (the twin is deterministic: the same values the fit saw); the
//! sensitivity test ([`super::sensitivity`]) calls it again with one cost varied.

use ticklab_schema::comparison::{Figure, Row};
use ticklab_schema::report::{Report, WorkloadResult};
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::{Workload, WorkloadError};

use super::measurements::Measurements;
use super::specs::{
    FIT_WINDOWS, HARNESS_SOURCE, IDLE_FRAMES, Simulator, Windows, busy_frames_spec, loc_per_s,
};
use crate::comparison::{Bands, row};

/// One calibration phase re-run in the twin: its rows, or why the twin could not run it.
#[derive(Debug, Clone, PartialEq)]
pub struct FitCheck {
    /// The phase (`idle`, `hogs:1@1`, `syscall:getpid@0`, ...).
    pub phase: String,
    /// Measured beside the fitted twin.
    pub rows: Vec<Row>,
    /// Why the twin could not run it (the rows are then empty).
    pub refused: Option<String>,
}

/// Per-CPU LOC/s rows.
fn loc_rows(measured: &[f64], twin: &[f64]) -> Vec<Row> {
    measured
        .iter()
        .zip(twin)
        .enumerate()
        .map(|(c, (m, t))| {
            row(
                Some(c as u32),
                Figure::LocPerS,
                Some(*m),
                Some(*t),
                Bands::Host,
            )
        })
        .collect()
}

/// How a check reads its rows (measured beside the twin) from the twin's report.
type RowsOf<'a> = Box<dyn Fn(&Report) -> Vec<Row> + 'a>;

/// One calibration phase as the twin re-runs it: the workload, whether the harness
/// coordinator ran during it, the window, and its rows read from the twin's report.
struct Check<'a> {
    /// The workload spec, also the phase's name.
    spec: String,
    /// The phase ran through `host run`'s harness, whose coordinator wakes every 100 ms; the
    /// idle phase sleeps in one piece without it.
    harness: bool,
    /// Simulated window, ns.
    window_ns: u64,
    /// The rows: measured beside the twin's report.
    rows: RowsOf<'a>,
}

/// The phases the twin re-runs, in header order. Adding a check is one entry here.
fn checks<'a>(m: &'a Measurements, w: &Windows) -> Vec<Check<'a>> {
    let check = |spec: String, harness: bool, window_ns: u64, rows: RowsOf<'a>| Check {
        spec,
        harness,
        window_ns,
        rows,
    };
    let mut out = vec![
        check(
            "idle".into(),
            false,
            w.idle_ns,
            Box::new(|r| loc_rows(&m.idle_loc, &loc_per_s(r))),
        ),
        check(
            format!("hogs:1@{}", m.hog_cpu),
            true,
            w.hog_ns,
            Box::new(|r| loc_rows(&m.hog_loc, &loc_per_s(r))),
        ),
        check(
            "syscall:getpid@0:n=1000000".into(),
            true,
            w.check_ns,
            syscall_rows(m.syscall_ns),
        ),
        check(
            "pingpong:pipe@0,0:n=10000".into(),
            true,
            w.check_ns,
            pingpong_rows("pipe 0,0", m.same_cpu_rt_ns),
        ),
    ];
    if let Some(x) = m.cross_cpu_rt_ns {
        out.push(check(
            "pingpong:pipe@0,1:n=10000".into(),
            true,
            w.check_ns,
            pingpong_rows("pipe 0,1", x),
        ));
    }
    if let Some(wk) = m.wakeup {
        out.push(check(
            IDLE_FRAMES.into(),
            true,
            w.check_ns,
            wakeup_rows(0, wk),
        ));
    }
    if let Some(wk) = m.busy_wakeup {
        out.push(check(
            busy_frames_spec(m.hog_cpu),
            true,
            w.check_ns,
            wakeup_rows(m.hog_cpu, wk),
        ));
    }
    out
}

/// The syscall check's row: getpid ns/call, measured beside the twin's.
fn syscall_rows<'a>(measured: f64) -> RowsOf<'a> {
    Box::new(move |r: &Report| {
        let twin = r.workloads.iter().find_map(|w| match w {
            WorkloadResult::Syscall(s) if s.calls > 0 => Some(s.ns_per_call),
            _ => None,
        });
        vec![row(
            Some(0),
            Figure::SyscallNs,
            Some(measured),
            twin,
            Bands::Host,
        )]
    })
}

/// A ping-pong check's row: the round trip `what`, measured beside the twin's.
fn pingpong_rows<'a>(what: &str, measured: f64) -> RowsOf<'a> {
    let what = what.to_string();
    Box::new(move |r: &Report| {
        let twin = r.workloads.iter().find_map(|w| match w {
            WorkloadResult::PingPong(p) if p.round_trips > 0 => Some(p.ns_per_round_trip),
            _ => None,
        });
        vec![row(
            None,
            Figure::PingPongNs { what: what.clone() },
            Some(measured),
            twin,
            Bands::Host,
        )]
    })
}

/// A frames check's rows on `cpu`: the wake-up p50 and p99, measured (`wk`) beside the twin's.
fn wakeup_rows<'a>(cpu: u32, wk: crate::harness::LatencySummary) -> RowsOf<'a> {
    Box::new(move |r: &Report| {
        let p = r.workloads.iter().find_map(|x| match x {
            WorkloadResult::Frames(g) => g.wakeup,
            _ => None,
        });
        vec![
            row(
                Some(cpu),
                Figure::WakeupUs { stat: "p50".into() },
                Some(wk.p50_us),
                p.map(|p| p.p50_us),
                Bands::Host,
            ),
            row(
                Some(cpu),
                Figure::WakeupUs { stat: "p99".into() },
                Some(wk.p99_us),
                p.map(|p| p.p99_us),
                Bands::Host,
            ),
        ]
    })
}

/// Every calibration phase re-run in the twin of `fitted` (a calibrated scenario, harness
/// coordinator included) over the windows `w`: the twin's figures beside the measured ones.
/// The one function behind the fit-quality rows and the sensitivity test
/// (`super::sensitivity`), which calls it again with one cost changed.
pub fn twin_checks(
    m: &Measurements,
    fitted: &Scenario,
    w: &Windows,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Vec<FitCheck> {
    checks(m, w)
        .into_iter()
        .map(|c| {
            progress(&format!("fit quality: simulating {}", c.spec));
            let (rows, refused) = match run_spec(fitted, &c, m.nr_cpus) {
                Ok(x) => match sim(&x) {
                    Ok(r) => ((c.rows)(&r), None),
                    Err(e) => (Vec::new(), Some(e.to_string())),
                },
                Err(e) => (Vec::new(), Some(e.to_string())),
            };
            FitCheck {
                phase: c.spec,
                rows,
                refused,
            }
        })
        .collect()
}

/// The scenario of one check: `fitted` with the check's workload and window, without the
/// harness coordinator for a phase that did not run through the harness.
fn run_spec(fitted: &Scenario, c: &Check<'_>, nr_cpus: u32) -> Result<Scenario, WorkloadError> {
    let mut x = fitted.clone();
    x.workload = Workload::parse(&c.spec, nr_cpus)?;
    x.run.duration_ns = c.window_ns;
    if !c.harness {
        x.background.retain(|s| s.name != HARNESS_SOURCE);
    }
    Ok(x)
}

/// The fit-quality checks (module docs): [`twin_checks`] over [`FIT_WINDOWS`].
pub(crate) fn fit_quality(
    m: &Measurements,
    fitted: &Scenario,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Vec<FitCheck> {
    twin_checks(m, fitted, &FIT_WINDOWS, sim, progress)
}

#[cfg(test)]
pub(in crate::calibrate) mod tests {
    use super::*;
    use crate::calibrate::error::SimulatorError;
    use crate::harness::LatencySummary;
    use ticklab_schema::comparison::Verdict;
    use ticklab_schema::machine::Machine;
    use ticklab_schema::report::{CpuReport, CpuRole, PingPongReport, Source, SyscallReport};
    use ticklab_schema::scenario::BackgroundSource;

    pub(in crate::calibrate) fn measured() -> Measurements {
        let mut m = crate::calibrate::measurements::tests::measured(
            vec![4.0, 3.0],
            vec![0.0, 0.0],
            vec![65.8, 262.0],
        );
        m.syscall_ns = 160.0;
        m.wakeup = Some(LatencySummary {
            samples: 1000,
            min_us: 5.0,
            p25_us: 8.0,
            p50_us: 9.0,
            p75_us: 10.0,
            p99_us: 20.0,
            p999_us: 40.0,
            max_us: 50.0,
        });
        m.busy_wakeup = m.wakeup;
        m
    }

    /// The two-CPU test scenario lives beside the specs it is built on (no specs <-> fit_quality
    /// import cycle through the tests).
    pub(in crate::calibrate) use crate::calibrate::specs::tests::scenario;

    /// A twin report of `s` with these LOC/s per CPU and workload results.
    pub(in crate::calibrate) fn report(
        s: &Scenario,
        loc_per_s: &[f64],
        workloads: Vec<WorkloadResult>,
    ) -> Report {
        let seconds = s.run.duration_ns as f64 / 1e9;
        Report {
            cpus: loc_per_s
                .iter()
                .enumerate()
                .map(|(c, l)| CpuReport {
                    cpu: c as u32,
                    role: CpuRole::Housekeeping,
                    loc: (l * seconds).round() as u64,
                    res: None,
                    cal: None,
                    iwi: 0,
                    ticks: None,
                    tick_stopped_ns: None,
                    busy_ns: None,
                    idle_states: Vec::new(),
                    steal_ns: None,
                    idle_entries: None,
                })
                .collect(),
            workloads,
            ..Report::new(
                Source::Twin { seed: s.run.seed },
                s.name.clone(),
                s.machine.name.clone(),
                String::new(),
                s.kernel.hz,
                s.run.duration_ns,
            )
        }
    }

    /// A twin that stands in for the real one: a fixed LOC/s per CPU (the one-hog phase's
    /// CPU 1 at 250 more) scaled by `loc_scale` of the machine, getpid at `syscall_ns`, a
    /// ping-pong round trip of two switches and four syscalls; frames refused.
    pub(in crate::calibrate) fn fake_twin(
        s: &Scenario,
        loc_scale: &dyn Fn(&Machine) -> f64,
    ) -> Result<Report, SimulatorError> {
        let c = &s.machine.costs;
        let spec = s.workload.label();
        let k = loc_scale(&s.machine);
        // The harness coordinator adds 5 wake-ups per second per CPU.
        let harness = if s.background.iter().any(|b| b.name == HARNESS_SOURCE) {
            5.0
        } else {
            0.0
        };
        let idle = [4.0 * k + harness, 3.0 * k + harness];
        let result = if spec.starts_with("hogs") {
            report(s, &[idle[0], 250.0 * k + harness], Vec::new())
        } else if spec.starts_with("syscall") {
            let sys = WorkloadResult::Syscall(SyscallReport {
                syscall: "getpid".into(),
                cpu: Some(0),
                calls: 1000,
                ns_per_call: c.syscall_ns as f64,
                breakdown: None,
            });
            report(s, &idle, vec![sys])
        } else if spec.starts_with("pingpong") {
            let rt = (2 * c.context_switch_ns + 4 * c.syscall_ns) as f64;
            let pp = WorkloadResult::PingPong(PingPongReport {
                method: ticklab_schema::workload::PingPongMethod::Pipe,
                cpus: (0, 0),
                round_trips: 1000,
                ns_per_switch: rt / 2.0,
                ns_per_round_trip: rt,
            });
            report(s, &idle, vec![pp])
        } else if spec == "idle" {
            report(s, &idle, Vec::new())
        } else {
            return Err(SimulatorError::new(format!("{spec}: not in the fake twin")));
        };
        Ok(result)
    }

    #[test]
    fn a_miss_above_twenty_percent_is_flagged_and_a_refused_check_says_why() {
        let m = measured();
        let s = scenario();
        // The case: CPU 0 at 26.9 LOC/s in the twin against 65.8 measured (26.8 here:
        // a whole number of interrupts in the 15 s window).
        let twin = |x: &Scenario| -> Result<Report, SimulatorError> {
            match x.workload.label().as_str() {
                "idle" => Ok(report(x, &[4.1, 3.2], Vec::new())),
                "hogs:1@1" => Ok(report(x, &[26.8, 258.0], Vec::new())),
                _ => Err(SimulatorError::new("not modelled")),
            }
        };
        let checks = fit_quality(&m, &s, &twin, &mut |_| {});
        let idle = &checks[0];
        assert_eq!(idle.phase, "idle");
        assert!(
            idle.rows.iter().all(|r| r.verdict() == Verdict::Ok),
            "{idle:?}"
        );
        let hog = &checks[1];
        assert_eq!(hog.phase, "hogs:1@1");
        let verdicts: Vec<Verdict> = hog.rows.iter().map(Row::verdict).collect();
        assert_eq!(verdicts, [Verdict::Miss, Verdict::Ok]);
        let miss = &hog.rows[0];
        assert_eq!(
            (miss.cpu, &miss.figure, miss.measured, miss.predicted),
            (Some(0), &Figure::LocPerS, Some(65.8), Some(26.8))
        );
        // Every cost check the twin refused is kept with the reason (and no rows).
        let refused: Vec<(&str, Option<&str>, usize)> = checks
            .iter()
            .skip(2)
            .map(|c| (c.phase.as_str(), c.refused.as_deref(), c.rows.len()))
            .collect();
        let not_modelled = Some("not modelled");
        assert_eq!(
            refused,
            [
                ("syscall:getpid@0:n=1000000", not_modelled, 0),
                ("pingpong:pipe@0,0:n=10000", not_modelled, 0),
                ("pingpong:pipe@0,1:n=10000", not_modelled, 0),
                ("frames:1000@0:loop=0", not_modelled, 0),
                ("hogs:1@1+frames:1000@1:loop=0", not_modelled, 0),
            ]
        );
    }

    #[test]
    fn the_idle_phase_runs_without_the_harness_coordinator_and_every_window_is_kept() {
        let m = measured();
        let mut s = scenario();
        s.background.push(BackgroundSource {
            name: HARNESS_SOURCE.into(),
            ..ticklab_schema::scenario::default_background()[0].clone()
        });
        let seen = std::cell::RefCell::new(Vec::new());
        let twin = |x: &Scenario| {
            seen.borrow_mut()
                .push((x.workload.label(), x.run.duration_ns, x.background.len()));
            fake_twin(x, &|_| 1.0)
        };
        let checks = twin_checks(&m, &s, &FIT_WINDOWS, &twin, &mut |_| {});
        let seen = seen.into_inner();
        assert_eq!(seen[0], ("idle".to_string(), FIT_WINDOWS.idle_ns, 0));
        assert_eq!(seen[1], ("hogs:1@1".to_string(), FIT_WINDOWS.hog_ns, 1));
        assert!(
            seen[2..]
                .iter()
                .all(|x| x.1 == FIT_WINDOWS.check_ns && x.2 == 1),
            "{seen:?}"
        );
        // Idle without the coordinator's 5 wake-ups per second, one hog with them.
        assert_eq!(checks[0].rows[0].predicted, Some(4.0));
        assert_eq!(checks[1].rows[1].predicted, Some(255.0));
    }
}

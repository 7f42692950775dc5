//! The costs on a timer wake-up's path, fitted from the frame worker's wake-up latency with
//! the twin in the loop.
//!
//! Two calibration phases time the same 1 kHz SCHED_FIFO frame worker
//! ([`measure_idle`], [`measure_busy`]): once on an idle CPU (`frames:1000@0:loop=0`) and once on the hog's
//! CPU beside one SCHED_OTHER hog (`hogs:1@H+frames:1000@H:loop=0`). Beside the hog the CPU
//! never idles, so the two differ by what leaving the idle state costs; on a KVM guest that is
//! mostly the host waking the halted vCPU. Three costs are fitted, in this order (each fit
//! runs with the ones before it in place, and after `fitting::machine()`, so every cost fitted
//! there is in place too):
//!
//! 1. **`costs.timer_delivery_jitter_ns`** (J) from the spread of the wake-ups beside the
//!    hog. The twin delays each timer interrupt by a uniform draw from [0, J]
//!    (docs/costs.md), whose lower quartile lies J / 4 below its median, so
//!    J = 4 × (p50 − p25). The lower half is used, not the tail nor the upper quartile: the
//!    host's wake-ups lean right (on this project's host p75 − p50 was five times p50 − p25),
//!    with preemptions and host-side stalls that a uniform spread does not model, and the
//!    busy-CPU p99 check of [`super::fit_quality`] shows how much.
//! 2. **`costs.irq_entry_exit_ns`** by bisection over [`IRQ_ENTRY_EXIT_BOUNDS_NS`] until the
//!    twin's wake-up p50 beside the hog equals the measured one. Both halves of the cost lie
//!    on that path (entry before the hrtimer callback, exit before the switch to the
//!    worker), so the twin's p50 rises with it; the bisection checks that it does at the two
//!    bounds. When even the lower bound gives a p50 above the measurement, the other costs on
//!    the path (context switch, hrtimer callback, clock-event programming, delivery spread)
//!    already explain more than was measured: the lower bound is kept and the note gives the
//!    residual.
//! 3. **The exit latency of the idle state the twin idles in** when the cpuidle driver is
//!    `none` (state 1, the default idle HLT: sysfs has no number for it), by bisection over
//!    [`EXIT_LATENCY_BOUNDS_NS`] (kept well below the worker's 1 ms period, where the twin's
//!    median stops rising) until the twin's idle-CPU wake-up p50 equals the measured one. With a driver, each state's latency is the kernel's own (sysfs
//!    `stateN/latency`, registered by `fitting`) and nothing is bisected.
//!
//! A bisection stops when its bracket is narrower than [`TOLERANCE_NS`] and keeps the end
//! whose twin p50 is closer to the measurement. Each twin run simulates [`WAKEUP_SIM_NS`]
//! with the scenario's seed, so the fit is deterministic for given measurements.

use std::time::Duration;

use ticklab_schema::report::{Report, WorkloadResult};
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::Workload;

use super::error::{CalibrateError, TwinRunError};
use super::ledger::CostLedger;
use super::measurements::Measurements;
use super::specs::{IDLE_FRAMES, RunPhase, Simulator, busy_frames_spec};
use crate::harness::{HostRun, LatencySummary};

/// The frames phase (`frames:1000@0:loop=0` for `d`): the wake-up latency of the frame
/// worker on an idle CPU, and its calibrated cost of one work unit.
pub(crate) fn measure_idle(
    run: RunPhase<'_>,
    d: Duration,
    progress: &mut dyn FnMut(&str),
    warnings: &mut Vec<String>,
) -> Result<(Option<LatencySummary>, Option<f64>), CalibrateError> {
    progress(&format!(
        "frames 1 kHz on CPU 0 (wake-up latency): {:.1} s",
        d.as_secs_f64()
    ));
    let fr = run(IDLE_FRAMES.into(), d, "frames", warnings)?;
    Ok((first_wakeup(&fr), measured_work_unit_ns(&fr)))
}

/// The frames-beside-a-hog phase on `hog_cpu` for `d`: the same worker's wake-up latency on a
/// CPU that never idles.
pub(crate) fn measure_busy(
    run: RunPhase<'_>,
    hog_cpu: u32,
    d: Duration,
    progress: &mut dyn FnMut(&str),
    warnings: &mut Vec<String>,
) -> Result<Option<LatencySummary>, CalibrateError> {
    progress(&format!(
        "frames 1 kHz beside a hog on CPU {hog_cpu} (wake-up latency, busy CPU): {:.1} s",
        d.as_secs_f64()
    ));
    let busy = run(
        busy_frames_spec(hog_cpu),
        d,
        "frames beside a hog",
        warnings,
    )?;
    Ok(first_wakeup(&busy))
}

/// The wake-up latency of a run's first frame group, `None` without samples.
fn first_wakeup(r: &HostRun) -> Option<LatencySummary> {
    r.host_run
        .frame_groups
        .first()
        .map(|g| g.wakeup)
        .filter(|w| w.samples > 0)
}

/// The frame worker's calibrated cost of one work unit (ns): the minimum over batches the
/// worker timed before its frames ([`crate::harness::work`]), the figure the twin's
/// `work_unit_ns` stands for. `None` when no worker reported one.
fn measured_work_unit_ns(fr: &HostRun) -> Option<f64> {
    fr.host_run
        .frame_groups
        .iter()
        .flat_map(|g| &g.workers)
        .map(|w| w.ns_per_unit)
        .filter(|ns| ns.is_finite() && *ns > 0.0)
        .min_by(f64::total_cmp)
}

/// Bounds of the `irq_entry_exit_ns` bisection: from a bare-metal LAPIC interrupt's order
/// (docs/costs.md puts a laptop at 400 ns) well past any VM-exit round trip.
pub(crate) const IRQ_ENTRY_EXIT_BOUNDS_NS: (u64, u64) = (100, 50_000);
/// Bounds of the idle exit-latency bisection: from none (a polling state) up to a quarter of
/// the 1 kHz worker's period. The twin's wake-up median rises one to one with the latency only
/// while the CPU still reaches idle between frames: at 1 ms it never does, and a first run on
/// this host bisected to that bound with a median *lower* than at 10 µs.
pub(crate) const EXIT_LATENCY_BOUNDS_NS: (u64, u64) = (0, 250_000);
/// A bisection stops when its bracket is this narrow: both costs move the wake-up p50 one to
/// one, and the twin's latency histogram resolves about 10 ns at 10 µs (3 digits).
pub(crate) const TOLERANCE_NS: u64 = 25;
/// Simulated window of each twin run of a bisection (4000 wake-ups at 1 kHz).
pub(crate) const WAKEUP_SIM_NS: u64 = 4_000_000_000;
/// Busy fraction of CPU 0 in the idle phase above which the idle-CPU wake-up is flagged as
/// taken on a loaded CPU (the idle phase warns from the same 5 %).
const LOADED_BUSY: f64 = 0.05;
/// The idle state the twin idles in without a cpuidle driver.
const DRIVERLESS_STATE: usize = 1;

/// How a bisection of a monotone twin figure against a target ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Bisected {
    /// The twin's figure crosses the target inside the bounds: the value whose figure is
    /// closest to it.
    Matched {
        /// The fitted value, ns.
        value: u64,
        /// The twin's figure there, µs.
        twin_us: f64,
    },
    /// Even the lower bound gives a figure above the target: the rest of the model already
    /// explains more than was measured. The value is the lower bound.
    AtLower {
        /// The lower bound, ns.
        value: u64,
        /// The twin's figure there, µs (above the target).
        twin_us: f64,
    },
    /// Even the upper bound gives a figure below the target. The value is the upper bound.
    AtUpper {
        /// The upper bound, ns.
        value: u64,
        /// The twin's figure there, µs (below the target).
        twin_us: f64,
    },
    /// The figure at the lower bound is above the one at the upper bound: the twin does not
    /// rise with this cost, so no value is fitted.
    NotMonotone {
        /// The twin's figure at the lower bound, µs.
        low_us: f64,
        /// The twin's figure at the upper bound, µs.
        high_us: f64,
    },
}

/// Finds the value in `bounds` (ns) at which the rising figure `twin` (µs) equals `target_us`,
/// to within `tolerance_ns` of the value. `twin` is called about log2(range / tolerance) + 2
/// times; its error (the twin refusing a run) ends the bisection.
pub(crate) fn bisect<E>(
    bounds: (u64, u64),
    target_us: f64,
    tolerance_ns: u64,
    mut twin: impl FnMut(u64) -> Result<f64, E>,
) -> Result<Bisected, E> {
    let (mut lo, mut hi) = bounds;
    debug_assert!(
        lo < hi && tolerance_ns > 0,
        "bisection needs lo < hi and a tolerance"
    );
    let mut f_lo = twin(lo)?;
    let mut f_hi = twin(hi)?;
    if f_lo > f_hi {
        return Ok(Bisected::NotMonotone {
            low_us: f_lo,
            high_us: f_hi,
        });
    }
    if f_lo >= target_us {
        return Ok(Bisected::AtLower {
            value: lo,
            twin_us: f_lo,
        });
    }
    if f_hi < target_us {
        return Ok(Bisected::AtUpper {
            value: hi,
            twin_us: f_hi,
        });
    }
    while hi - lo > tolerance_ns.max(1) {
        // Invariant: the target lies in [f(lo), f(hi)).
        debug_assert!(f_lo < target_us && target_us <= f_hi);
        let mid = lo + (hi - lo) / 2;
        let f = twin(mid)?;
        if f < target_us {
            (lo, f_lo) = (mid, f);
        } else {
            (hi, f_hi) = (mid, f);
        }
    }
    let (value, twin_us) = if target_us - f_lo <= f_hi - target_us {
        (lo, f_lo)
    } else {
        (hi, f_hi)
    };
    Ok(Bisected::Matched { value, twin_us })
}

/// The twin's `timer_delivery_jitter_ns` from the busy-CPU wake-ups' lower half: a uniform
/// spread over [0, J] has its lower quartile J / 4 below its median (module docs). 0 when
/// the figures are missing or inverted.
pub(crate) fn jitter_from_quartiles(w: &LatencySummary) -> u64 {
    let lower_ns = (w.p50_us - w.p25_us) * 1e3;
    if lower_ns.is_finite() && lower_ns > 0.0 {
        (4.0 * lower_ns).round() as u64
    } else {
        0
    }
}

/// The twin's frame wake-up p50 (µs) for `spec` on `s`, over [`WAKEUP_SIM_NS`].
fn twin_wakeup_p50(s: &Scenario, spec: &str, sim: Simulator<'_>) -> Result<f64, TwinRunError> {
    let mut x = s.clone();
    x.workload = Workload::parse(spec, s.machine.topology.nr_cpus())?;
    x.run.duration_ns = WAKEUP_SIM_NS;
    wakeup_p50(&sim(&x)?).ok_or_else(|| TwinRunError::NoWakeups { spec: spec.into() })
}

/// The first frame group's wake-up p50 of a report, µs.
pub(crate) fn wakeup_p50(r: &Report) -> Option<f64> {
    r.workloads.iter().find_map(|w| match w {
        WorkloadResult::Frames(g) => g.wakeup.map(|p| p.p50_us),
        _ => None,
    })
}

/// One bisected cost: its ledger name, the wake-up figure it is fitted to, the bounds and the
/// measured p50.
struct CostFit<'a> {
    name: &'a str,
    figure: &'a str,
    bounds: (u64, u64),
    target_us: f64,
}

impl CostFit<'_> {
    /// Bisects, then returns the value to set (`None`: keep the preset) after registering it.
    fn run(
        &self,
        ledger: &mut CostLedger,
        notes: &mut Vec<String>,
        twin: impl FnMut(u64) -> Result<f64, TwinRunError>,
    ) -> Option<u64> {
        let (name, figure, target) = (self.name, self.figure, self.target_us);
        let outcome = match bisect(self.bounds, target, TOLERANCE_NS, twin) {
            Ok(o) => o,
            Err(why) => {
                notes.push(format!(
                    "{name}: not fitted, the twin refused a run ({why}); preset kept"
                ));
                return None;
            }
        };
        match outcome {
            Bisected::Matched { value, twin_us } => {
                ledger.fitted(
                    name,
                    format!("bisected until the twin's {figure} p50 equals the measured one"),
                );
                notes.push(format!(
                    "fit: {name} = {value} by bisection: twin {figure} p50 {twin_us:.2} us vs measured {target:.2} us"
                ));
                Some(value)
            }
            Bisected::AtLower { value, twin_us } => {
                ledger.fitted(
                    name,
                    format!(
                        "lower bound of the bisection on the {figure} p50: the rest of the wake path already explains more"
                    ),
                );
                notes.push(format!(
                    "fit: {name} = {value} (lower bound): even there the twin's {figure} p50 is {twin_us:.2} us, above the measured {target:.2} us; residual {:.2} us the other costs on the path explain too much",
                    twin_us - target
                ));
                Some(value)
            }
            Bisected::AtUpper { value, twin_us } => {
                ledger.fitted(
                    name,
                    format!("upper bound of the bisection on the {figure} p50"),
                );
                notes.push(format!(
                    "fit: {name} = {value} (upper bound): even there the twin's {figure} p50 is {twin_us:.2} us, below the measured {target:.2} us; residual {:.2} us unexplained",
                    target - twin_us
                ));
                Some(value)
            }
            Bisected::NotMonotone { low_us, high_us } => {
                notes.push(format!(
                    "{name}: the twin's {figure} p50 does not rise with it ({low_us:.2} us at {} ns, {high_us:.2} us at {} ns); preset kept",
                    self.bounds.0, self.bounds.1
                ));
                None
            }
        }
    }
}

/// Fits the three wake-path costs of `s.machine` to the wake-up measurements of `m`
/// (module docs), with `sim` as the twin. `s` is the fitted scenario (background sources in
/// place); a missing measurement or a twin that refuses a run keeps the preset and says so
/// in `notes`.
pub(crate) fn fit(
    m: &Measurements,
    s: &mut Scenario,
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) {
    let busy_spec = busy_frames_spec(m.hog_cpu);
    match m.busy_wakeup {
        Some(b) => {
            let j = jitter_from_quartiles(&b);
            s.machine.costs.timer_delivery_jitter_ns = j;
            ledger.fitted(
                "costs.timer_delivery_jitter_ns",
                "4 x (p50 - p25) of the frame worker's wake-up beside a hog (uniform spread)",
            );
            notes.push(format!(
                "fit: timer_delivery_jitter_ns = 4 x (p50 {:.2} - p25 {:.2} us) of {busy_spec} wake-ups = {j}; their p99 {:.2} us is host noise a uniform spread does not model",
                b.p50_us, b.p25_us, b.p99_us
            ));
            progress("fit: bisecting irq_entry_exit_ns on the wake-up beside a hog");
            let fit = CostFit {
                name: "costs.irq_entry_exit_ns",
                figure: "wake-up beside a hog",
                bounds: IRQ_ENTRY_EXIT_BOUNDS_NS,
                target_us: b.p50_us,
            };
            let base = s.clone();
            if let Some(v) = fit.run(ledger, notes, |v| {
                let mut x = base.clone();
                x.machine.costs.irq_entry_exit_ns = v;
                twin_wakeup_p50(&x, &busy_spec, sim)
            }) {
                s.machine.costs.irq_entry_exit_ns = v;
            }
        }
        None => notes.push(format!(
            "wake-up beside a hog not measured: timer_delivery_jitter_ns {} and irq_entry_exit_ns {} kept (presets)",
            s.machine.costs.timer_delivery_jitter_ns, s.machine.costs.irq_entry_exit_ns
        )),
    }
    let driverless = s.machine.cpuidle_driver == "none";
    match (
        driverless,
        m.wakeup,
        s.machine.idle_states.len() > DRIVERLESS_STATE,
    ) {
        (false, _, _) => notes.push(format!(
            "idle exit latencies: cpuidle driver {}, the kernel's own (sysfs), not bisected",
            s.machine.cpuidle_driver
        )),
        (true, Some(w), true) => {
            progress("fit: bisecting the idle state's exit latency on the idle-CPU wake-up");
            let name = format!("idle_states.{DRIVERLESS_STATE}.exit_latency_ns");
            let fit = CostFit {
                name: &name,
                figure: "idle-CPU wake-up",
                bounds: EXIT_LATENCY_BOUNDS_NS,
                target_us: w.p50_us,
            };
            let base = s.clone();
            if let Some(v) = fit.run(ledger, notes, |v| {
                let mut x = base.clone();
                x.machine.idle_states[DRIVERLESS_STATE].exit_latency_ns = v;
                twin_wakeup_p50(&x, IDLE_FRAMES, sim)
            }) {
                s.machine.idle_states[DRIVERLESS_STATE].exit_latency_ns = v;
            }
            // The idle phase's busy fraction of the frames CPU tells whether it was idle at all:
            // under other load the SCHED_FIFO worker preempts that work instead of waking the
            // CPU from HLT, and the two phases time the same path.
            if let Some(b) = m.idle_busy.first().filter(|b| **b > LOADED_BUSY) {
                notes.push(format!(
                    "{name}: CPU 0 was {:.0} % busy with other work in the idle phase; its wake-ups may not have left an idle state, so this exit latency describes a loaded host",
                    b * 100.0
                ));
            }
        }
        (true, _, _) => notes.push(
            "idle-CPU wake-up not measured (or no state 1): the idle exit latency preset kept"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::error::SimulatorError;

    fn summary(p25: f64, p50: f64, p75: f64) -> LatencySummary {
        LatencySummary {
            samples: 1000,
            min_us: p25 - 1.0,
            p25_us: p25,
            p50_us: p50,
            p75_us: p75,
            p99_us: p75 + 20.0,
            p999_us: p75 + 40.0,
            max_us: p75 + 50.0,
        }
    }

    #[test]
    fn jitter_is_four_times_the_lower_quartile_spread() {
        // (p25, p50, p75 µs, J ns): the upper quartile plays no part.
        let table = [
            (7.25, 7.5, 7.75, 1000),
            (7.25, 7.5, 30.0, 1000), // a long right side: not the uniform spread
            (7.5, 7.5, 7.5, 0),
            (5.0, 5.15, 5.3, 600),
            (8.0, 7.5, 9.0, 0), // inverted: no spread
            (f64::NAN, 7.5, 9.0, 0),
        ];
        for (p25, p50, p75, want) in table {
            assert_eq!(
                jitter_from_quartiles(&summary(p25, p50, p75)),
                want,
                "{p25} {p50} {p75}"
            );
        }
    }

    /// A fake twin: the figure is `base + slope × value` µs (value in ns), with a counter.
    fn linear(
        base_us: f64,
        slope: f64,
    ) -> impl FnMut(u64) -> Result<f64, std::convert::Infallible> {
        move |v| Ok(base_us + slope * v as f64 / 1e3)
    }

    #[test]
    fn bisection_on_a_monotone_twin() {
        // (base µs, slope, target µs, bounds, expected value ns ± tolerance / slope)
        let table = [
            // The busy wake-up: 5.7 µs of other costs, 7.7 µs measured: 2000 ns.
            (5.7, 1.0, 7.7, IRQ_ENTRY_EXIT_BOUNDS_NS, 2000),
            // Idle CPU: 10.3 µs with no exit latency, 21 µs measured: 10.7 µs exit.
            (10.3, 1.0, 21.0, EXIT_LATENCY_BOUNDS_NS, 10_700),
            // A half slope (only one half of a cost on the path) doubles the step.
            (5.0, 0.5, 6.0, IRQ_ENTRY_EXIT_BOUNDS_NS, 2000),
            // Just above the lower bound's figure.
            (1.0, 1.0, 1.2, IRQ_ENTRY_EXIT_BOUNDS_NS, 200),
        ];
        for (base, slope, target, bounds, want) in table {
            let mut calls = 0;
            let mut f = linear(base, slope);
            let got = bisect(bounds, target, TOLERANCE_NS, |v| {
                calls += 1;
                f(v)
            })
            .unwrap();
            let Bisected::Matched { value, twin_us } = got else {
                panic!("{base} {target}: {got:?}");
            };
            assert!(
                value.abs_diff(want) as f64 <= TOLERANCE_NS as f64 / slope,
                "{base} {slope} {target}: {value} vs {want}"
            );
            assert!(
                (twin_us - target).abs() <= TOLERANCE_NS as f64 / 1e3,
                "{got:?}"
            );
            // log2(range / tolerance) + the two bounds.
            let range = (bounds.1 - bounds.0) as f64 / TOLERANCE_NS as f64;
            assert!(calls as f64 <= range.log2().ceil() + 2.0, "{calls} calls");
        }
    }

    #[test]
    fn bisection_at_the_edges_and_on_a_falling_twin() {
        // Measured below what the rest explains: the lower bound, with the twin's figure.
        let low = bisect((100, 50_000), 7.7, TOLERANCE_NS, linear(12.0, 1.0)).unwrap();
        assert_eq!(
            low,
            Bisected::AtLower {
                value: 100,
                twin_us: 12.1
            }
        );
        let high = bisect((0, 1_000), 50.0, TOLERANCE_NS, linear(1.0, 1.0)).unwrap();
        assert_eq!(
            high,
            Bisected::AtUpper {
                value: 1_000,
                twin_us: 2.0
            }
        );
        let falling = bisect((0, 1_000), 5.0, TOLERANCE_NS, linear(10.0, -1.0)).unwrap();
        assert_eq!(
            falling,
            Bisected::NotMonotone {
                low_us: 10.0,
                high_us: 9.0
            }
        );
        // A twin that refuses the run ends the bisection with its reason.
        let refused = bisect(
            (0, 1_000),
            5.0,
            TOLERANCE_NS,
            |_| Err("not modelled".into()),
        );
        assert_eq!(refused, Err("not modelled".to_string()));
    }

    /// A twin report with one frame group whose wake-up p50 is `p50_us`.
    fn report(p50_us: f64) -> Report {
        serde_json::from_value(serde_json::json!({
            "schema_version": 2, "source": {"kind": "twin", "seed": 1}, "label": "fake",
            "machine": "fake", "cmdline": "", "hz": 250, "duration_ns": WAKEUP_SIM_NS,
            "cpus": [], "energy": null, "messages": [], "timekeeping": null, "hrtimer": null,
            "locks": null, "background": [], "warnings": [],
            "workloads": [{
                "kind": "frames", "group": "frames", "frequency_hz": 1000.0, "loop_units": 0,
                "flier_threshold_us": 10.0, "rows": [], "p50_us": 0.0, "p99_us": 0.0,
                "p999_us": 0.0, "policy": null,
                "wakeup": {"p50_us": p50_us, "p99_us": p50_us, "p999_us": p50_us}
            }]
        }))
        .unwrap()
    }

    #[test]
    // Over 100 lines because it is one fake twin and the three fits made on it in turn, each checked
    // against the cost it was given.
    fn the_three_wake_path_costs_on_a_fake_twin() {
        // A fake twin of the wake path: beside a hog the worker wakes after a 3 µs switch, the
        // interrupt's entry and exit and half the delivery spread; on an idle CPU the exit
        // latency and a 1 µs tick restart come on top.
        let fake = |s: &Scenario| -> Result<Report, SimulatorError> {
            let c = &s.machine.costs;
            let busy =
                3.0 + (c.irq_entry_exit_ns as f64 + c.timer_delivery_jitter_ns as f64 / 2.0) / 1e3;
            let p50 = if s.workload.groups.len() == 2 {
                busy
            } else {
                busy + 1.0 + s.machine.idle_states[1].exit_latency_ns as f64 / 1e3
            };
            Ok(report(p50))
        };
        let mut m = crate::calibrate::measurements::tests::measured(
            vec![4.0, 3.0],
            vec![0.0, 0.0],
            vec![65.8, 262.0],
        );
        // Beside the hog: p50 - p25 0.25 µs -> J = 1000 ns; p50 7.7 = 3 + irq + 0.5 -> irq
        // 4200 ns.
        m.busy_wakeup = Some(summary(7.45, 7.7, 7.9));
        // Idle: 21 = 7.7 + 1 + exit -> exit 12.3 µs.
        m.wakeup = Some(summary(20.0, 21.0, 23.0));
        // This host: no cpuidle driver, the twin idles in state 1.
        let driverless = || {
            let mut s = crate::calibrate::fit_quality::tests::scenario();
            s.machine.cpuidle_driver = "none".into();
            s
        };
        // The notes of one fit of `s` against `sim`, with a ledger of its own.
        let notes_of = |m: &Measurements, s: &mut Scenario, sim: Simulator<'_>| {
            let mut notes = Vec::new();
            fit(m, s, &mut CostLedger::new(), &mut notes, sim, &mut |_| {});
            notes
        };
        let mut s = driverless();
        let (mut ledger, mut notes) = (CostLedger::new(), Vec::new());
        fit(&m, &mut s, &mut ledger, &mut notes, &fake, &mut |_| {});
        let c = &s.machine.costs;
        assert_eq!(c.timer_delivery_jitter_ns, 1000);
        assert!(
            c.irq_entry_exit_ns.abs_diff(4200) <= TOLERANCE_NS,
            "{notes:?}"
        );
        let exit = s.machine.idle_states[1].exit_latency_ns;
        assert!(
            exit.abs_diff(12_300) <= 2 * TOLERANCE_NS,
            "{exit} {notes:?}"
        );
        for name in [
            "costs.timer_delivery_jitter_ns",
            "costs.irq_entry_exit_ns",
            "idle_states.1.exit_latency_ns",
        ] {
            assert!(ledger.how(name).is_some(), "{name} not in the ledger");
        }
        assert_eq!(notes.len(), 3, "{notes:?}");
        // CPU 0 busy with other work in the idle phase: the exit latency is flagged.
        m.idle_busy = vec![0.98, 0.0];
        let notes = notes_of(&m, &mut driverless(), &fake);
        assert!(notes[3].contains("98 % busy with other work"), "{notes:?}");
        m.idle_busy = vec![0.0, 0.0];
        assert!(
            notes[1].starts_with("fit: costs.irq_entry_exit_ns = "),
            "{notes:?}"
        );

        // Measured beside the hog below what the switch alone takes: the lower bound, with the
        // residual in the note.
        m.busy_wakeup = Some(summary(2.4, 2.5, 2.6));
        let mut s = driverless();
        let notes = notes_of(&m, &mut s, &fake);
        assert_eq!(
            s.machine.costs.irq_entry_exit_ns,
            IRQ_ENTRY_EXIT_BOUNDS_NS.0
        );
        assert!(notes[1].contains("(lower bound)"), "{notes:?}");

        // With a cpuidle driver the exit latencies are sysfs's: not bisected.
        let mut s = crate::calibrate::fit_quality::tests::scenario();
        s.machine.cpuidle_driver = "haltpoll".into();
        let before = s.machine.idle_states[1].exit_latency_ns;
        let notes = notes_of(&m, &mut s, &fake);
        assert_eq!(s.machine.idle_states[1].exit_latency_ns, before);
        assert!(notes[2].contains("not bisected"), "{notes:?}");

        // A twin that refuses the runs: presets kept (the spread is still measured), said so.
        let refuse = |_: &Scenario| -> Result<Report, SimulatorError> {
            Err(SimulatorError::new("not modelled"))
        };
        let mut s = driverless();
        let preset = s.machine.clone();
        let notes = notes_of(&m, &mut s, &refuse);
        assert_eq!(
            s.machine.costs.irq_entry_exit_ns,
            preset.costs.irq_entry_exit_ns
        );
        assert_eq!(s.machine.idle_states, preset.idle_states);
        assert!(
            notes[1].contains("the twin refused a run (not modelled)"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_step_twin_lands_on_its_step() {
        // A twin whose figure jumps from 5 to 9 µs at 3000 ns: the bracket closes on the step
        // and keeps the side whose figure is nearer the target.
        let step = |v: u64| Ok::<f64, std::convert::Infallible>(if v < 3000 { 5.0 } else { 9.0 });
        for (target, below) in [(8.0, false), (6.0, true)] {
            let Bisected::Matched { value, twin_us } =
                bisect((0, 10_000), target, TOLERANCE_NS, step).unwrap()
            else {
                panic!("{target}")
            };
            let side = if below {
                3000 - TOLERANCE_NS..=2999
            } else {
                3000..=3000 + TOLERANCE_NS
            };
            assert!(side.contains(&value), "{target}: {value}");
            assert_eq!(twin_us, if below { 5.0 } else { 9.0 });
        }
    }
}

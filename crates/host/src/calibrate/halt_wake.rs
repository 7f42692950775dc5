//! On a VM guest, the hypervisor's wake-up of a halted vCPU against how long it was halted,
//! measured and fitted into `[machine.halt_wake]` ([`ticklab_schema::machine::HaltWake`]).
//!
//! When a guest CPU halts (HLT, the haltpoll driver's idle state), its vCPU thread blocks on
//! the host; the timer interrupt that ends the sleep has to be noticed by the host, the
//! thread woken (its host CPU maybe taken out of a deep C-state of its own) and the guest
//! re-entered. The longer the vCPU slept, the longer that takes. The twin's idle states have
//! one exit latency each (sysfs `stateN/latency`: 1 µs for haltpoll), which cannot show it:
//! on this project's Firecracker guest a timer wake-up on an idle vCPU took a median of 26 µs
//! after sleeping 100 µs and 64 µs after 100 ms (docs/host-lab.md, "The unseen-load check").
//!
//! # Measure ([`measure`])
//!
//! The 1 kHz frames phase's worker (SCHED_FIFO, `loop=0`) on CPU 0 at [`RATES_HZ`]: periods of
//! 100 µs to 100 ms, so the vCPU halts for a period less one wake-up between frames. Each rate
//! runs until it has [`MIN_FRAMES`] frames, at least [`MIN_POINT`]; about 10 s in all, outside
//! the budget like the KVM ping-pongs. Only on a VM guest (the hypervisor CPU flag): on bare
//! metal the idle states the twin already models are what deepens with the sleep.
//!
//! # Fit ([`fit`])
//!
//! Per rate: the fitted scenario (every other cost in place, no curve) runs the same worker
//! in the twin; the measured wake-up p50 less the twin's is what leaving the halt cost beyond
//! the state's own latency, since an exit cost adds one to one to the wake-up of a timer that
//! fires on a halted CPU. The point is (sleep = period − measured p50, exit = state latency +
//! that residual, at least the latency). The points are then made monotone by pooling
//! adjacent violators (a longer sleep is never cheaper to leave; where a point falls below
//! the one before, both take their mean: the least-squares monotone fit, so noise is averaged
//! rather than the curve ratcheting up to its largest sample). The twin interpolates linearly
//! between points and holds the end values beyond them. A point other load contaminated is
//! left out, `--force` or not: on a CPU kept busy the worker preempts that work and never
//! wakes a halted vCPU. With no point left the machine gets no curve.

use std::time::Duration;

use ticklab_schema::machine::{HaltWake, HaltWakePoint};
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::Workload;

use super::error::{CalibrateError, TwinRunError};
use super::ledger::CostLedger;
use super::measurements::SleepWake;
use super::specs::{RunPhase, Simulator};

/// Frame rates of the sweep: periods 100 µs, 500 µs, 2 ms, 10 ms, 50 ms and 100 ms.
pub(crate) const RATES_HZ: [u32; 6] = [10_000, 2_000, 500, 100, 20, 10];
/// Frames each rate is measured for at least (the p50 of 40 samples is within a few
/// samples' spread of the true median).
pub(crate) const MIN_FRAMES: u32 = 40;
/// The shortest run of one rate.
pub(crate) const MIN_POINT: Duration = Duration::from_secs(1);
/// Simulated frames of each twin run of the fit.
const TWIN_FRAMES: u64 = 400;
/// The ledger's name of the fitted curve.
pub(crate) const LEDGER_NAME: &str = "halt_wake";

/// The frame worker's spec at `rate` Hz on CPU 0.
pub(crate) fn spec(rate_hz: u32) -> String {
    format!("frames:{rate_hz}@0:loop=0")
}

/// How long rate `rate_hz` runs: [`MIN_FRAMES`] frames, at least [`MIN_POINT`].
pub(crate) fn point_duration(rate_hz: u32) -> Duration {
    MIN_POINT.max(Duration::from_secs_f64(
        f64::from(MIN_FRAMES) / f64::from(rate_hz.max(1)),
    ))
}

/// The sweep (module docs), each rate through `run`.
pub(crate) fn measure(
    run: RunPhase<'_>,
    progress: &mut dyn FnMut(&str),
    warnings: &mut Vec<String>,
) -> Result<Vec<SleepWake>, CalibrateError> {
    let mut out = Vec::with_capacity(RATES_HZ.len());
    for rate in RATES_HZ {
        let d = point_duration(rate);
        progress(&format!(
            "halt wake: frames {rate} Hz on CPU 0 (sleep {} us): {:.1} s",
            1_000_000 / rate,
            d.as_secs_f64()
        ));
        let mut w = Vec::new();
        let r = run(spec(rate), d, &format!("halt wake {rate} Hz"), &mut w)?;
        let contaminated = !r.report.contamination.is_empty();
        warnings.extend(w);
        if let Some(g) = r
            .host_run
            .frame_groups
            .first()
            .filter(|g| g.wakeup.samples > 0)
        {
            out.push(SleepWake {
                rate_hz: rate,
                samples: g.wakeup.samples,
                p50_us: g.wakeup.p50_us,
                contaminated,
            });
        }
    }
    Ok(out)
}

/// Pools adjacent violators of a non-decreasing sequence of `(x, y)` sorted by `x`: every run
/// of points whose `y` falls takes the mean `y` of the run (the least-squares monotone fit).
pub(crate) fn pool_adjacent_violators(ys: &[f64]) -> Vec<f64> {
    // Blocks of (sum, count), merged while a block's mean is below the one before.
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(ys.len());
    for &y in ys {
        blocks.push((y, 1));
        while blocks.len() >= 2 {
            let (s2, n2) = blocks[blocks.len() - 1];
            let (s1, n1) = blocks[blocks.len() - 2];
            if s2 / n2 as f64 >= s1 / n1 as f64 {
                break;
            }
            blocks.pop();
            let last = blocks.len() - 1;
            blocks[last] = (s1 + s2, n1 + n2);
        }
    }
    let out: Vec<f64> = blocks
        .iter()
        .flat_map(|&(s, n)| std::iter::repeat_n(s / n as f64, n))
        .collect();
    debug_assert_eq!(out.len(), ys.len());
    debug_assert!(
        out.windows(2).all(|w| w[0] <= w[1] + 1e-9),
        "pooled is monotone"
    );
    out
}

/// The curve from measured points and the twin's p50 at each (µs), over a state whose own
/// exit latency is `latency_ns`: (sleep, exit) per point as in the module docs, sorted by
/// sleep, pooled to be monotone. `None` without a usable point.
pub(crate) fn curve(points: &[(SleepWake, f64)], latency_ns: u64) -> Option<HaltWake> {
    let mut raw: Vec<(u64, f64)> = points
        .iter()
        .filter(|(p, twin)| p.p50_us.is_finite() && twin.is_finite() && p.rate_hz > 0)
        .map(|(p, twin_us)| {
            let period_ns = 1e9 / f64::from(p.rate_hz);
            let slept_ns = (period_ns - p.p50_us * 1e3).max(1.0).round() as u64;
            let residual_ns = ((p.p50_us - twin_us) * 1e3).max(0.0);
            (slept_ns, latency_ns as f64 + residual_ns)
        })
        .collect();
    raw.sort_by_key(|&(s, _)| s);
    raw.dedup_by_key(|p| p.0);
    if raw.is_empty() {
        return None;
    }
    let ys: Vec<f64> = raw.iter().map(|p| p.1).collect();
    let pooled = pool_adjacent_violators(&ys);
    let mut out: Vec<HaltWakePoint> = Vec::with_capacity(raw.len());
    for (&(slept_ns, _), y) in raw.iter().zip(pooled) {
        // Rounding keeps the pooled order: equal means round alike.
        let exit_ns = (y.round() as u64).max(out.last().map_or(0, |p| p.exit_ns));
        out.push(HaltWakePoint { slept_ns, exit_ns });
    }
    Some(HaltWake { points: out })
}

/// The twin's wake-up p50 (µs) of the frame worker at `rate` Hz on `s`, [`TWIN_FRAMES`] frames.
fn twin_p50(s: &Scenario, rate_hz: u32, sim: Simulator<'_>) -> Result<f64, TwinRunError> {
    let mut x = s.clone();
    x.workload = Workload::parse(&spec(rate_hz), s.machine.topology.nr_cpus())?;
    x.run.duration_ns = TWIN_FRAMES * 1_000_000_000 / u64::from(rate_hz.max(1));
    super::wakeup_fit::wakeup_p50(&sim(&x)?).ok_or_else(|| TwinRunError::NoWakeups {
        spec: spec(rate_hz),
    })
}

/// Fits `[machine.halt_wake]` of `s` to the sweep `measured` (module docs), with `sim` as the
/// twin; nothing measured (not a guest) or no point usable leaves the machine without it and
/// says why in `notes`.
pub(crate) fn fit(
    measured: &[SleepWake],
    s: &mut Scenario,
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) {
    if measured.is_empty() {
        notes.push(
            "halt wake: not measured (not a VM guest): every idle state keeps its own exit latency"
                .into(),
        );
        return;
    }
    let Some(state) = s.machine.idle_states.iter().find(|st| !st.polling) else {
        notes.push("halt wake: the machine has no halting idle state: not fitted".into());
        return;
    };
    let latency_ns = state.exit_latency_ns;
    progress("fit: halt wake, the twin's idle-CPU wake-up at each sleep length");
    let base = s.clone();
    let mut points = Vec::with_capacity(measured.len());
    for p in measured {
        if p.contaminated {
            // Other work kept the CPU busy: the worker preempted it instead of waking a
            // halted vCPU, so the point says nothing about the halt (even with --force).
            notes.push(format!(
                "halt wake {} Hz: measured p50 {:.2} us on a CPU other load kept busy; point left out",
                p.rate_hz, p.p50_us
            ));
            continue;
        }
        match twin_p50(&base, p.rate_hz, sim) {
            Ok(t) => {
                notes.push(format!(
                    "halt wake {} Hz: measured p50 {:.2} us ({} frames), twin without the curve {:.2} us, residual {:.2} us",
                    p.rate_hz,
                    p.p50_us,
                    p.samples,
                    t,
                    p.p50_us - t
                ));
                points.push((*p, t));
            }
            Err(why) => notes.push(format!(
                "halt wake {} Hz: the twin refused the run ({why}); point left out",
                p.rate_hz
            )),
        }
    }
    match curve(&points, latency_ns) {
        Some(c) => {
            let text: Vec<String> = c
                .points
                .iter()
                .map(|p| format!("{} us -> {:.1} us", p.slept_ns / 1000, p.exit_ns as f64 / 1e3))
                .collect();
            notes.push(format!(
                "fit: halt_wake (slept -> exit, monotone by pooling adjacent violators) {}",
                text.join(", ")
            ));
            ledger.fitted(
                LEDGER_NAME,
                "frame worker's idle-CPU wake-up p50 at 6 sleep lengths less the twin's without it, plus the state's latency, pooled to be monotone",
            );
            s.machine.halt_wake = Some(c);
        }
        None => notes.push(
            "halt wake: no usable point (each contaminated or refused): not fitted, every idle state keeps its own exit latency"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(rate_hz: u32, p50_us: f64) -> SleepWake {
        SleepWake {
            rate_hz,
            samples: 100,
            p50_us,
            contaminated: false,
        }
    }

    #[test]
    fn pooling_makes_a_sequence_monotone_by_means() {
        // (input, pooled)
        let table: [(&[f64], &[f64]); 5] = [
            (&[], &[]),
            (&[3.0], &[3.0]),
            (&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]),
            (&[1.0, 3.0, 2.0], &[1.0, 2.5, 2.5]),
            (&[4.0, 3.0, 2.0, 5.0], &[3.0, 3.0, 3.0, 5.0]),
        ];
        for (ys, want) in table {
            assert_eq!(pool_adjacent_violators(ys), want, "{ys:?}");
        }
    }

    #[test]
    fn the_curve_is_the_residual_over_the_state_latency_by_sleep_length() {
        // 10 kHz: period 100 us, p50 20 us -> slept 80 us, residual 20 - 12 = 8 us.
        // 100 Hz: period 10 ms, p50 40 us -> slept 9960 us, residual 40 - 12 = 28 us.
        // 10 Hz measured below the twin: residual 0, then pooled with 100 Hz.
        let pts = [
            (point(100, 40.0), 12.0),
            (point(10_000, 20.0), 12.0),
            (point(10, 10.0), 12.0),
        ];
        let c = curve(&pts, 1_000).expect("three points");
        let got: Vec<(u64, u64)> = c.points.iter().map(|p| (p.slept_ns, p.exit_ns)).collect();
        assert_eq!(
            got,
            vec![(80_000, 9_000), (9_960_000, 15_000), (99_990_000, 15_000)]
        );
        assert!(curve(&[], 1_000).is_none());
        // A point the twin could not value is left out.
        assert!(curve(&[(point(100, f64::NAN), 1.0)], 1_000).is_none());
    }

    #[test]
    fn every_rate_gets_enough_frames_in_at_least_a_second() {
        for r in RATES_HZ {
            let d = point_duration(r);
            assert!(d >= MIN_POINT);
            assert!(
                d.as_secs_f64() * f64::from(r) >= f64::from(MIN_FRAMES) - 1e-9,
                "{r}"
            );
        }
        assert_eq!(point_duration(10), Duration::from_secs(4));
    }
}

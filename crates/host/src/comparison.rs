//! The one comparison of a measured run with the twin's prediction of it, figure by figure:
//! the rows built from two reports and the bands they are judged in, for the table `host run
//! --twin` prints, the fit-quality lines of `host calibrate`, and the kernel-versus-twin rows
//! of `vm compare` (docs/architecture.md).
//!
//! A [`Row`] (the schema's data: measured, predicted, band) is one figure, per CPU or for the
//! whole run. Rows are built from two [`Report`]s by [`cpu_rows`], [`workload_rows`] and
//! [`noise_rows`] ([`compare_reports`] for all of them), so every front end compares the same
//! fields the same way; the bands are chosen by the caller ([`Bands`], one [`row`] at a time).
//! This module lives in the host lab because every front end that compares is the host lab's
//! or sits on it (`host run --twin`, `host calibrate`, `vm compare`); the renderers need only
//! the rows.
//!
//! # Bands
//!
//! * LOC/s in a guest kernel under QEMU (`vm compare`, [`Bands::Vm`]): a CPU at ≥ 100 LOC/s
//!   within ±15 %, one below 20 LOC/s within 10 LOC/s, one in between within ±25 % or
//!   5 LOC/s, whichever is wider ([`loc_band_vm`]); the reasons are in docs/vm-validation.md.
//! * Anything else, and everything on the twin of this host ([`Bands::Host`]): within
//!   [`HOST_TOLERANCE`] (20 %, the miss issue 15 asks `host calibrate` to flag), or within an
//!   absolute floor per kind of figure where 20 % of a small value is below what one window
//!   can resolve: [`LOC_FLOOR_PER_S`] LOC/s, [`SHARE_FLOOR_PCT`] points of a share of the
//!   window.
//! * Noise-made figures on the twin of this host are shown with their ratio and not judged:
//!   noise ns/s, the longest detour, a bsp job's p99 / max iteration, mean excess and late
//!   share (the twin's noise sources are not calibrated against this host, docs/noise.md). A
//!   bsp job's mean iteration, mostly its compute part, gets the 20 % band. A bsp job is
//!   compared only with the twin's job on the same CPUs with the same barrier.

use ticklab_schema::comparison::{Band, Figure, Row};
use ticklab_schema::report::{CpuReport, Report, WorkloadResult};

/// The relative miss `host calibrate` and `host run --twin` flag: 20 % (issue 15).
pub const HOST_TOLERANCE: f64 = 0.20;
/// Below this difference a LOC/s figure is not flagged: 2 interrupts per second, what a few
/// background timers of a quiet CPU move from one 10 s window to the next (E).
pub const LOC_FLOOR_PER_S: f64 = 2.0;
/// Below this difference a share of the window (busy %, tick-stopped %, idle residency %) is
/// not flagged: 2 points (E: /proc/stat's 4 ms ticks over a few seconds, and other tasks on a
/// shared host, move a share by about that much).
pub const SHARE_FLOOR_PCT: f64 = 2.0;

/// A CPU at or above this many LOC/s is "ticking" in the VM lab's band.
pub const VM_TICKING_LOC_PER_S: f64 = 100.0;
/// A ticking CPU's twin value must be within this relative error (VM lab).
pub const VM_TICKING_TOLERANCE: f64 = 0.15;
/// A CPU below this many LOC/s is "quiet" in the VM lab's band.
pub const VM_QUIET_LOC_PER_S: f64 = 20.0;
/// A quiet CPU's twin value must be within this many LOC/s (VM lab).
pub const VM_QUIET_TOLERANCE_LOC_PER_S: f64 = 10.0;
/// A CPU in between (quiet ≤ LOC/s < ticking) must be within this relative error (VM lab)…
pub const VM_BETWEEN_TOLERANCE: f64 = 0.25;
/// …or within this many LOC/s, whichever is wider (docs/vm-validation.md, "The bands").
pub const VM_BETWEEN_FLOOR_LOC_PER_S: f64 = 5.0;

/// The VM lab's LOC/s band of a kernel CPU (module docs).
pub fn loc_band_vm(kernel_loc_per_s: f64) -> Band {
    if kernel_loc_per_s >= VM_TICKING_LOC_PER_S {
        Band::Within {
            rel: VM_TICKING_TOLERANCE,
            abs: 0.0,
        }
    } else if kernel_loc_per_s < VM_QUIET_LOC_PER_S {
        Band::Within {
            rel: 0.0,
            abs: VM_QUIET_TOLERANCE_LOC_PER_S,
        }
    } else {
        Band::Within {
            rel: VM_BETWEEN_TOLERANCE,
            abs: VM_BETWEEN_FLOOR_LOC_PER_S,
        }
    }
}

/// How rows are judged: which band each figure gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bands {
    /// The twin of this host (`host run --twin`, `host calibrate`).
    Host,
    /// A guest kernel under QEMU (`vm compare`): LOC/s by [`loc_band_vm`], the rest shown.
    Vm,
}

impl Bands {
    /// The band of `figure` whose measured value is `measured`.
    pub fn band(self, figure: &Figure, measured: f64) -> Band {
        match (self, figure) {
            (Bands::Vm, Figure::LocPerS) => loc_band_vm(measured),
            (Bands::Vm, _) => Band::Shown,
            (Bands::Host, Figure::LocPerS) => Band::Within {
                rel: HOST_TOLERANCE,
                abs: LOC_FLOOR_PER_S,
            },
            (Bands::Host, f) if f.is_share() => Band::Within {
                rel: HOST_TOLERANCE,
                abs: SHARE_FLOOR_PCT,
            },
            (Bands::Host, Figure::IdleEntriesPerS) => Band::Shown,
            // Noise time is not calibrated against this host: shown with its ratio. So are a
            // bsp job's noise-made figures (its tail, excess and late share); its mean
            // iteration, mostly the compute part, gets the 20 % band.
            (
                Bands::Host,
                Figure::NoiseNsPerS
                | Figure::MaxDetourUs
                | Figure::BspExcessUs
                | Figure::BspLatePct,
            ) => Band::Shown,
            (Bands::Host, Figure::BspIterationUs { stat }) if stat != "mean" => Band::Shown,
            (Bands::Host, Figure::NoiseCountPerS { .. } | Figure::SoftirqPerS { .. }) => {
                Band::Within {
                    rel: HOST_TOLERANCE,
                    abs: LOC_FLOOR_PER_S,
                }
            }
            (Bands::Host, _) => Band::Within {
                rel: HOST_TOLERANCE,
                abs: 0.0,
            },
        }
    }
}

/// A row judged by `bands`: its band is the one `bands` gives `figure` at the measured
/// value ([`Band::Shown`] when nothing was measured).
pub fn row(
    cpu: Option<u32>,
    figure: Figure,
    measured: Option<f64>,
    predicted: Option<f64>,
    bands: Bands,
) -> Row {
    let band = measured.map_or(Band::Shown, |m| bands.band(&figure, m));
    Row {
        cpu,
        figure,
        measured,
        predicted,
        band,
    }
}

/// Per-second rate of `count` over `seconds`.
pub fn rate(count: u64, seconds: f64) -> f64 {
    count as f64 / seconds.max(1e-9)
}

/// `ns` as a share of a window of `window_ns`, %.
pub fn pct(ns: Option<u64>, window_ns: u64) -> Option<f64> {
    ns.map(|n| n as f64 * 100.0 / (window_ns.max(1) as f64))
}

/// Idle-state entries per second of one CPU (all states).
pub fn idle_entries_per_s(c: &CpuReport, seconds: f64) -> f64 {
    rate(c.idle_states.iter().map(|s| s.usage).sum(), seconds)
}

/// The per-CPU rows of two reports, CPU by CPU (CPUs present in both), in this order per
/// CPU: LOC/s, tick stopped %, busy %, then each idle state either side names (residency %),
/// then idle entries/s when the measured side reports any idle state.
pub fn cpu_rows(measured: &Report, predicted: &Report, bands: Bands) -> Vec<Row> {
    let (ms, ps) = (measured.seconds(), predicted.seconds());
    let measured_has_states = measured.cpus.iter().any(|c| !c.idle_states.is_empty());
    let mut rows = Vec::new();
    for m in &measured.cpus {
        let Some(p) = predicted.cpus.iter().find(|p| p.cpu == m.cpu) else {
            continue;
        };
        let cpu = Some(m.cpu);
        rows.push(row(
            cpu,
            Figure::LocPerS,
            Some(rate(m.loc, ms)),
            Some(rate(p.loc, ps)),
            bands,
        ));
        rows.push(row(
            cpu,
            Figure::TickStoppedPct,
            pct(m.tick_stopped_ns, measured.duration_ns),
            pct(p.tick_stopped_ns, predicted.duration_ns),
            bands,
        ));
        rows.push(row(
            cpu,
            Figure::BusyPct,
            pct(m.busy_ns, measured.duration_ns),
            pct(p.busy_ns, predicted.duration_ns),
            bands,
        ));
        let mut names: Vec<&str> = Vec::new();
        for s in m.idle_states.iter().chain(&p.idle_states) {
            if !names.contains(&s.name.as_str()) {
                names.push(&s.name);
            }
        }
        let residency = |c: &CpuReport, name: &str, window: u64| {
            c.idle_states
                .iter()
                .find(|s| s.name == name)
                .and_then(|s| pct(Some(s.time_ns), window))
        };
        for name in names {
            rows.push(row(
                cpu,
                Figure::IdleStatePct {
                    state: name.to_string(),
                },
                residency(m, name, measured.duration_ns),
                residency(p, name, predicted.duration_ns),
                bands,
            ));
        }
        if measured_has_states {
            rows.push(row(
                cpu,
                Figure::IdleEntriesPerS,
                Some(idle_entries_per_s(m, ms)),
                Some(idle_entries_per_s(p, ps)),
                bands,
            ));
        }
    }
    rows
}

/// The rows of the workload results both reports carry: per frame worker (matched by group
/// name and CPU) wake-up p50 / p99 / max and jitter max; per ping-pong (same method and
/// CPUs) ns per round trip; per syscall loop ns per call. A result only one side has gives
/// rows with the other side `None`.
// Over 100 lines because it is one match over the workload kinds, each arm pairing the measured
// result with the twin's and writing its rows; the kinds' figures read in one place.
pub fn workload_rows(measured: &Report, predicted: &Report, bands: Bands) -> Vec<Row> {
    let mut rows = Vec::new();
    for w in &measured.workloads {
        match w {
            WorkloadResult::Frames(g) => {
                let pg = predicted.workloads.iter().find_map(|x| match x {
                    WorkloadResult::Frames(p) if p.group == g.group => Some(p),
                    _ => None,
                });
                for r in &g.rows {
                    let pr = pg.and_then(|p| p.rows.iter().find(|x| x.cpu == r.cpu));
                    let cpu = Some(r.cpu);
                    // p50 / p99 per CPU come from the histograms when kept; the group's
                    // percentiles otherwise (one worker per CPU: the same distribution when
                    // the group has one CPU).
                    let single = g.rows.len() == 1;
                    let group_pct =
                        |p: Option<&ticklab_schema::report::Percentiles>,
                         f: fn(&ticklab_schema::report::Percentiles) -> f64| {
                            if single { p.map(f) } else { None }
                        };
                    rows.push(row(
                        cpu,
                        Figure::WakeupUs { stat: "p50".into() },
                        group_pct(g.wakeup.as_ref(), |p| p.p50_us),
                        group_pct(pg.and_then(|p| p.wakeup.as_ref()), |p| p.p50_us),
                        bands,
                    ));
                    rows.push(row(
                        cpu,
                        Figure::WakeupUs { stat: "p99".into() },
                        group_pct(g.wakeup.as_ref(), |p| p.p99_us),
                        group_pct(pg.and_then(|p| p.wakeup.as_ref()), |p| p.p99_us),
                        bands,
                    ));
                    rows.push(row(
                        cpu,
                        Figure::WakeupUs { stat: "max".into() },
                        r.wakeup.as_ref().map(|x| x.max_us),
                        pr.and_then(|x| x.wakeup.as_ref()).map(|x| x.max_us),
                        bands,
                    ));
                    rows.push(row(
                        cpu,
                        Figure::JitterMaxUs,
                        (r.frames > 0).then_some(r.max_us),
                        pr.filter(|x| x.frames > 0).map(|x| x.max_us),
                        bands,
                    ));
                }
            }
            WorkloadResult::PingPong(p) => {
                let pp = predicted.workloads.iter().find_map(|x| match x {
                    WorkloadResult::PingPong(q) if q.method == p.method && q.cpus == p.cpus => {
                        Some(q)
                    }
                    _ => None,
                });
                rows.push(row(
                    None,
                    Figure::PingPongNs {
                        what: format!("{} {},{}", p.method, p.cpus.0, p.cpus.1),
                    },
                    (p.round_trips > 0).then_some(p.ns_per_round_trip),
                    pp.filter(|q| q.round_trips > 0)
                        .map(|q| q.ns_per_round_trip),
                    bands,
                ));
            }
            WorkloadResult::Syscall(c) => {
                let pc = predicted.workloads.iter().find_map(|x| match x {
                    WorkloadResult::Syscall(q) => Some(q),
                    _ => None,
                });
                rows.push(row(
                    c.cpu,
                    Figure::SyscallNs,
                    (c.calls > 0).then_some(c.ns_per_call),
                    pc.filter(|q| q.calls > 0).map(|q| q.ns_per_call),
                    bands,
                ));
            }
            WorkloadResult::Bsp(b) => {
                // The same job: same CPUs, same barrier (the twin spins only).
                let pb = predicted.workloads.iter().find_map(|x| match x {
                    WorkloadResult::Bsp(q) if q.cpus == b.cpus && q.barrier == b.barrier => Some(q),
                    _ => None,
                });
                let has = |r: &ticklab_schema::bsp::BspReport| r.iterations > 0;
                let m = Some(b).filter(|r| has(r));
                let p = pb.filter(|r| has(r));
                let late = |r: &ticklab_schema::bsp::BspReport| {
                    100.0 * r.late_iterations as f64 / r.iterations as f64
                };
                let stats: [(&str, BspFigure); 3] = [
                    ("mean", |r| r.mean_ns / 1e3),
                    ("p99", |r| r.p99_ns as f64 / 1e3),
                    ("max", |r| r.max_ns as f64 / 1e3),
                ];
                for (stat, f) in stats {
                    rows.push(row(
                        None,
                        Figure::BspIterationUs { stat: stat.into() },
                        m.map(f),
                        p.map(f),
                        bands,
                    ));
                }
                rows.push(row(
                    None,
                    Figure::BspExcessUs,
                    m.map(|r| r.excess_mean_ns / 1e3),
                    p.map(|r| r.excess_mean_ns / 1e3),
                    bands,
                ));
                rows.push(row(
                    None,
                    Figure::BspLatePct,
                    m.map(late),
                    p.map(late),
                    bands,
                ));
            }
            WorkloadResult::Hogs { .. } => {}
        }
    }
    rows
}

/// One figure of a bsp report, in the row's unit.
type BspFigure = fn(&ticklab_schema::bsp::BspReport) -> f64;

/// Every row of a measured report beside its prediction: [`cpu_rows`] then
/// [`workload_rows`].
pub fn compare_reports(measured: &Report, predicted: &Report, bands: Bands) -> Vec<Row> {
    let mut rows = cpu_rows(measured, predicted, bands);
    rows.extend(workload_rows(measured, predicted, bands));
    rows.extend(noise_rows(measured, predicted, bands));
    rows
}

/// The noise rows: per CPU of the measured report's noise, noise ns/s, the longest detour,
/// the interference count per second of each class either side names (the hardware class
/// counts detours), and the runs per second of each softirq vector either side names. The
/// predicted side is `None` where the other report has no noise accounting or not that CPU,
/// and for a vector the predicting side does not name (the twin runs `TIMER` and RCU's step
/// only: a host's `SCHED` or `HRTIMER` row is measured against nothing, not against 0); a
/// measured report without noise gives no rows.
pub fn noise_rows(measured: &Report, predicted: &Report, bands: Bands) -> Vec<Row> {
    use ticklab_schema::noise::{CpuNoise, NoiseClass, NoiseSource};
    let Some(m) = &measured.noise else {
        return Vec::new();
    };
    let per_s = |n: u64, c: &CpuNoise| n as f64 * 1e9 / c.runtime_ns.max(1) as f64;
    let class_count =
        |c: &CpuNoise, class: NoiseClass| NoiseSource::class_interference(&c.sources, class);
    let mut rows = Vec::new();
    for mc in &m.cpus {
        let pc = predicted
            .noise
            .as_ref()
            .and_then(|p| p.cpus.iter().find(|c| c.cpu == mc.cpu));
        let cpu = Some(mc.cpu);
        rows.push(row(
            cpu,
            Figure::NoiseNsPerS,
            Some(per_s(mc.noise_ns, mc)),
            pc.map(|p| per_s(p.noise_ns, p)),
            bands,
        ));
        rows.push(row(
            cpu,
            Figure::MaxDetourUs,
            Some(mc.max_detour_ns as f64 / 1e3),
            pc.map(|p| p.max_detour_ns as f64 / 1e3),
            bands,
        ));
        let mut classes: Vec<NoiseClass> = mc
            .sources
            .iter()
            .chain(pc.iter().flat_map(|p| &p.sources))
            .map(|s| s.class)
            .collect();
        classes.sort();
        classes.dedup();
        for class in classes {
            rows.push(row(
                cpu,
                Figure::NoiseCountPerS { class },
                Some(per_s(class_count(mc, class), mc)),
                pc.map(|p| per_s(class_count(p, class), p)),
                bands,
            ));
        }
        let vector_count = |c: &CpuNoise, name: &str| {
            c.sources
                .iter()
                .find(|s| s.class == NoiseClass::Softirq && s.name == name)
                .map(|s| s.count)
        };
        let mut vectors: Vec<&str> = mc
            .sources
            .iter()
            .chain(pc.iter().flat_map(|p| &p.sources))
            .filter(|s| s.class == NoiseClass::Softirq)
            .map(|s| s.name.as_str())
            .collect();
        vectors.sort_unstable();
        vectors.dedup();
        for vector in vectors {
            rows.push(row(
                cpu,
                Figure::SoftirqPerS {
                    vector: vector.to_string(),
                },
                Some(per_s(vector_count(mc, vector).unwrap_or(0), mc)),
                pc.and_then(|p| Some(per_s(vector_count(p, vector)?, p))),
                bands,
            ));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_schema::comparison::Verdict;

    /// The softirq rows: one per vector either side names, counted nested or not; a vector
    /// the predicting side does not name is measured against nothing.
    #[test]
    fn softirq_vectors_are_compared_one_for_one() {
        use ticklab_schema::noise::{CpuNoise, NoiseClass, NoiseMethod, NoiseReport, NoiseSource};
        use ticklab_schema::report::Source;
        let src = |class, name: &str, count, nested| NoiseSource {
            class,
            name: name.into(),
            count,
            noise_ns: Some(0),
            max_ns: Some(0),
            nested,
        };
        let report = |sources: Vec<NoiseSource>| {
            let mut r = Report::new(Source::Twin { seed: 1 }, "t", "m", "", 250, 1_000_000_000);
            r.noise = Some(NoiseReport {
                method: NoiseMethod::Twin,
                threshold_ns: 1_000,
                cpus: vec![CpuNoise {
                    cpu: 1,
                    runtime_ns: 2_000_000_000,
                    noise_ns: 0,
                    available_pct: 100.0,
                    max_detour_ns: 0,
                    detours: 0,
                    histogram: None,
                    sources,
                }],
            });
            r
        };
        let measured = report(vec![
            src(NoiseClass::Irq, "local_timer", 500, false),
            src(NoiseClass::Softirq, "TIMER", 30, false),
            src(NoiseClass::Softirq, "RCU", 20, false),
            src(NoiseClass::Softirq, "SCHED", 34, false),
        ]);
        let predicted = report(vec![
            src(NoiseClass::Irq, "local_timer", 500, false),
            src(NoiseClass::Softirq, "TIMER", 90, false),
            src(NoiseClass::Softirq, "RCU", 22, true),
        ]);
        let rows: Vec<(String, Option<f64>, Option<f64>, Verdict)> =
            noise_rows(&measured, &predicted, Bands::Host)
                .into_iter()
                .filter(|r| matches!(r.figure, Figure::SoftirqPerS { .. }))
                .map(|r| (r.figure.name(), r.measured, r.predicted, r.verdict()))
                .collect();
        assert_eq!(
            rows,
            vec![
                ("softirq RCU/s".into(), Some(10.0), Some(11.0), Verdict::Ok),
                (
                    "softirq SCHED/s".into(),
                    Some(17.0),
                    None,
                    Verdict::NotCompared
                ),
                (
                    "softirq TIMER/s".into(),
                    Some(15.0),
                    Some(45.0),
                    Verdict::Miss
                ),
            ]
        );
    }

    #[test]
    fn vm_loc_bands_table() {
        // (kernel, twin, within)
        let cases = [
            (250.0, 250.0, Some(true)),
            (250.0, 287.5, Some(true)),
            (250.0, 290.0, Some(false)),
            (100.0, 84.0, Some(false)),
            (0.0, 9.9, Some(true)),
            (5.0, 15.5, Some(false)),
            (19.9, 30.0, Some(false)),
            // Between 20 and 100 LOC/s: ±25 % or ±5 LOC/s, whichever is wider.
            (20.0, 25.0, Some(true)),
            (20.0, 25.1, Some(false)),
            (80.0, 100.0, Some(true)),
            (80.0, 100.1, Some(false)),
            (20.0, 90.0, Some(false)),
            (99.9, 0.0, Some(false)),
        ];
        for (k, t, within) in cases {
            assert_eq!(loc_band_vm(k).within(k, t), within, "{k} vs {t}");
        }
    }

    #[test]
    fn host_bands_flag_a_miss_above_twenty_percent_or_the_floor() {
        // (figure, measured, predicted, verdict)
        let cases = [
            (Figure::LocPerS, 65.8, 26.9, Verdict::Miss),
            (Figure::LocPerS, 250.0, 245.0, Verdict::Ok),
            (Figure::LocPerS, 3.0, 4.5, Verdict::Ok),
            (Figure::LocPerS, 3.0, 5.5, Verdict::Miss),
            (Figure::BusyPct, 32.5, 6.5, Verdict::Miss),
            (Figure::BusyPct, 0.5, 1.9, Verdict::Ok),
            (Figure::SyscallNs, 100.0, 120.0, Verdict::Ok),
            (Figure::SyscallNs, 100.0, 120.1, Verdict::Miss),
            (Figure::IdleEntriesPerS, 10.0, 100.0, Verdict::Shown),
        ];
        for (f, m, p, v) in cases {
            let row = row(Some(0), f.clone(), Some(m), Some(p), Bands::Host);
            assert_eq!(row.verdict(), v, "{f:?} {m} {p}");
            assert_eq!(row.ratio(), Some(p / m));
        }
        let missing = row(None, Figure::SyscallNs, Some(1.0), None, Bands::Host);
        assert_eq!(
            (missing.verdict(), missing.ratio()),
            (Verdict::NotCompared, None)
        );
        let zero = row(None, Figure::LocPerS, Some(0.0), Some(1.0), Bands::Host);
        assert_eq!((zero.verdict(), zero.ratio()), (Verdict::Ok, None));
    }
}

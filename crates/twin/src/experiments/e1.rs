//! E1: `nohz_full_aggressive` on a laptop (Dell XPS 13 7390, HZ=1000, `nohz_full=all`), with
//! and without the 2023 proposal, idle and with 1, 2, 4 and 8 hogs.
//!
//! The published table (docs/experiments.md E1, from the RFC) is a calibration target for the
//! laptop's power figures and background wakeup rates (marked CAL(E1) where they are set); the
//! mechanisms — the housekeeping CPU that never stops its tick, the package state that needs
//! every core idle, hog placement — produce the rest.

use super::{BandCheck, within};
use crate::sim::{SimError, simulate};
use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::xps13_7390;
use ticklab_schema::report::Report;
use ticklab_schema::scenario::{Kernel, Run, Scenario, default_background};
use ticklab_schema::workload::{TaskGroup, Workload};

pub use ticklab_schema::experiment::e1::{
    LOADS, Mode, PUBLISHED, Results, Row, WARMUP_NS, load_label, published,
};

/// The E1 scenario for one (mode, load).
pub fn scenario(mode: Mode, hogs: u32, run: Run) -> Scenario {
    let workload = if hogs == 0 {
        Workload::default()
    } else {
        Workload {
            groups: vec![TaskGroup::Hogs {
                count: hogs,
                cpus: None,
            }],
        }
    };
    Scenario {
        name: format!("e1 {} {}", mode.name(), load_label(hogs)),
        machine: xps13_7390(),
        // The RFC was posted in May 2023, against 6.4-rc; era switches of 6.3 apply.
        kernel: Kernel::new("6.3", 1000, NohzBuild::Full, mode.cmdline()),
        workload,
        background: default_background(),
        run,
    }
}

/// The E1 row of one (mode, load) point, read from its report.
pub fn row(mode: Mode, hogs: u32, r: &Report) -> Row {
    let (pi, pw) = published(mode, hogs);
    let tk = r
        .timekeeping
        .clone()
        .unwrap_or(ticklab_schema::report::TimekeepingReport {
            max_jiffies_gap_ns: 0,
            max_jiffies_catch_up: 0,
            max_reader_staleness_ns: 0,
            mean_coarse_staleness_ns: 0.0,
            duty_handovers: 0,
        });
    let e = r.energy.as_ref();
    let h = r.hrtimer.as_ref();
    Row {
        mode,
        load: load_label(hogs),
        irq_per_s: r.loc_per_s(),
        watts: e.map_or(0.0, |e| e.watts),
        published_irq_per_s: pi,
        published_watts: pw,
        max_jiffies_gap_ms: tk.max_jiffies_gap_ns as f64 / 1e6,
        max_reader_staleness_ms: tk.max_reader_staleness_ns as f64 / 1e6,
        mean_coarse_staleness_ms: tk.mean_coarse_staleness_ns / 1e6,
        hrtimer_hangs: h.map_or(0, |h| h.nr_hangs),
        max_irq_us: h.map_or(0.0, |h| h.max_irq_ns as f64 / 1e3),
        package_idle_fraction: e.map_or(0.0, |e| e.package_idle_fraction),
    }
}

/// Runs every (mode, load) point, in parallel across `threads` OS threads (each run stays
/// single-threaded and deterministic). `progress(done_points)` is called as points finish.
pub fn run(
    run: Run,
    threads: usize,
    progress: impl Fn(usize) + Sync,
) -> Result<Vec<(Row, Report)>, SimError> {
    let points: Vec<(Mode, u32)> = Mode::ALL
        .iter()
        .flat_map(|&m| LOADS.iter().map(move |&l| (m, l)))
        .collect();
    let results = crate::sweep::parallel_map(
        &points,
        threads,
        |&(mode, hogs)| {
            simulate(&scenario(mode, hogs, run), |_| {}).map(|r| (row(mode, hogs, &r), r))
        },
        &progress,
    );
    results.into_iter().collect()
}

/// Runs every point ([`run`]) and checks the bands ([`check`]): the whole experiment as
/// [`Results`].
pub fn results(
    run_cfg: Run,
    threads: usize,
    progress: impl Fn(usize) + Sync,
) -> Result<Results, SimError> {
    let rows: Vec<Row> = run(run_cfg, threads, progress)?
        .into_iter()
        .map(|(row, _)| row)
        .collect();
    Ok(Results {
        seed: run_cfg.seed,
        duration_ns: run_cfg.duration_ns,
        checks: check(&rows),
        rows,
    })
}

/// The acceptance bands of the E1 issue, checked on a full set of rows.
pub fn check(rows: &[Row]) -> Vec<BandCheck> {
    let get = |mode: Mode, load: &str| rows.iter().find(|r| r.mode == mode && r.load == load);
    let mut out = Vec::new();
    for r in rows {
        let irq_band = match (r.mode, r.load.as_str()) {
            (Mode::NohzFull, _) | (Mode::Aggressive, "8") => 0.10,
            _ => 0.35,
        };
        out.push(within(
            format!("irq/s {} {}", r.mode.name(), r.load),
            r.irq_per_s,
            r.published_irq_per_s,
            irq_band,
        ));
        out.push(within(
            format!("W {} {}", r.mode.name(), r.load),
            r.watts,
            r.published_watts,
            0.30,
        ));
    }
    for load in ["idle", "1", "2"] {
        if let (Some(n), Some(a)) = (get(Mode::NohzFull, load), get(Mode::Aggressive, load)) {
            let ratio = a.watts / n.watts;
            out.push(BandCheck {
                what: format!("W aggressive / nohz_full, {load}"),
                value: ratio,
                target: 0.75,
                band: "<= 0.75".into(),
                ok: ratio <= 0.75,
            });
        }
    }
    if let (Some(n), Some(a)) = (get(Mode::NohzFull, "8"), get(Mode::Aggressive, "8")) {
        out.push(within(
            "W aggressive vs nohz_full, 8".into(),
            a.watts,
            n.watts,
            0.10,
        ));
    }
    out
}

//! Parallelism across independent sweep points. Each run stays single-threaded and
//! deterministic; only whole runs are spread over threads (a rayon pool of the size asked
//! for), and results come back in input order whatever the scheduling.
//!
//! [`parallel_map`] is the one parallel runner of the project (`compare`, the experiments and
//! `ticklab sweep` all use it); [`run_grid`] runs the points × seeds of a sweep grid
//! (`ticklab_sweep::grid`) that a [`Shard`] owns and turns each report into a
//! [`SweepRow`].

use crate::sim::{SimError, simulate};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use ticklab_sweep::grid::Point;
use ticklab_sweep::{Metrics, SWEEP_SCHEMA_VERSION, Shard, SweepRow, SweepSetup};

/// Maps `f` over `items` on up to `threads` threads, preserving order.
/// `progress(done)` is called after each item completes.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
    progress: &(impl Fn(usize) + Sync),
) -> Vec<R> {
    let done = AtomicUsize::new(0);
    let threads = threads.clamp(1, items.len().max(1));
    let work = || {
        items
            .par_iter()
            // One item per task: items are whole runs of very different lengths, so the
            // pool should hand them out one by one.
            .with_max_len(1)
            .map(|item| {
                let r = f(item);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1);
                r
            })
            .collect()
    };
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(work),
        // No thread could be started: run on this one, in order.
        Err(_) => items
            .iter()
            .map(|item| {
                let r = f(item);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1);
                r
            })
            .collect(),
    }
}

/// Why a sweep stopped: a run the twin refused, or the caller's `on_row` refusing a row
/// ([`run_grid_each`]; `E` is its error, never made by [`run_grid`]).
#[derive(Debug, thiserror::Error)]
pub enum SweepError<E = std::convert::Infallible> {
    /// The twin refused the run of this point (its scenario's name) and seed.
    #[error("{scenario} seed={seed}: {source}")]
    Run {
        /// The point's scenario name.
        scenario: String,
        /// The seed.
        seed: u64,
        /// The twin's error (boxed: a sweep's `Result` stays small).
        #[source]
        source: Box<SimError>,
    },
    /// `on_row` refused a finished row (the caller's error, as it gave it).
    #[error(transparent)]
    Row(E),
}

/// One run of a sweep: a point and a seed, with its index in the whole sweep.
#[derive(Debug, Clone, Copy)]
struct GridRun<'a> {
    run: u64,
    point: &'a Point,
    seed: u64,
}

/// The runs of `points` × `seeds` (seeds innermost) that `shard` owns, for the planner of a
/// progress bar; [`run_grid`] runs exactly these.
pub fn shard_runs(nr_points: usize, nr_seeds: usize, shard: Shard) -> u64 {
    let total = (nr_points * nr_seeds) as u64;
    (0..total).filter(|&r| shard.owns(r)).count() as u64
}

/// The estimated events of the runs of a sweep that `shard` owns (every point once per seed
/// it runs with), for the compute limit
/// ([`RunOptions::check_events`](crate::RunOptions::check_events)).
pub fn estimated_events(points: &[Point], seeds: &[u64], shard: Shard) -> f64 {
    let mut run = 0u64;
    let mut events = 0.0;
    for p in points {
        let per_run = p.scenario.estimated_events();
        for _ in seeds {
            if shard.owns(run) {
                events += per_run;
            }
            run += 1;
        }
    }
    events
}

/// Runs every (point, seed) of the sweep `sweep_id` that `shard` owns on `threads` threads
/// and returns its rows in run order: the same bytes whatever `threads` is. An error names
/// the point and seed that failed.
pub fn run_grid(
    sweep_id: &str,
    points: &[Point],
    seeds: &[u64],
    shard: Shard,
    threads: usize,
    progress: &(impl Fn(usize) + Sync),
) -> Result<Vec<SweepRow>, SweepError> {
    run_grid_each(
        sweep_id,
        points,
        seeds,
        shard,
        threads,
        progress,
        &|_| true,
        &|_| Ok(()),
    )
}

/// [`run_grid`] for a sweep that keeps its finished work: only the runs `wanted` accepts
/// (asked once when the runs are listed, so a resumed sweep skips the runs it has, and again
/// as each run starts, so a stop request lets no new run begin), and `on_row` sees each row
/// as its run finishes, in completion order (`ticklab sweep` appends it to its journal; an
/// `Err` ends the sweep with that error). Returns the rows of the runs that ran, in run order.
#[allow(clippy::too_many_arguments)]
pub fn run_grid_each<E: Send>(
    sweep_id: &str,
    points: &[Point],
    seeds: &[u64],
    shard: Shard,
    threads: usize,
    progress: &(impl Fn(usize) + Sync),
    wanted: &(impl Fn(u64) -> bool + Sync),
    on_row: &(impl Fn(&SweepRow) -> Result<(), E> + Sync),
) -> Result<Vec<SweepRow>, SweepError<E>> {
    let runs_total = (points.len() * seeds.len()) as u64;
    let runs: Vec<GridRun<'_>> = points
        .iter()
        .flat_map(|p| seeds.iter().map(move |&s| (p, s)))
        .enumerate()
        .map(|(i, (point, seed))| GridRun {
            run: i as u64,
            point,
            seed,
        })
        .filter(|r| shard.owns(r.run) && wanted(r.run))
        .collect();
    let one = |r: &GridRun<'_>| -> Result<Option<SweepRow>, SweepError<E>> {
        if !wanted(r.run) {
            return Ok(None);
        }
        let mut s = r.point.scenario.clone();
        s.run.seed = r.seed;
        let report = simulate(&s, |_| {}).map_err(|source| SweepError::Run {
            scenario: s.name.clone(),
            seed: r.seed,
            source: Box::new(source),
        })?;
        let row = SweepRow {
            schema_version: SWEEP_SCHEMA_VERSION,
            sweep: sweep_id.to_string(),
            run: r.run,
            runs: runs_total,
            point: r.point.index,
            params: r.point.params.clone(),
            seed: r.seed,
            setup: Some(SweepSetup {
                machine: s.machine.name.clone(),
                kernel: s.kernel.version.clone(),
                hz: s.kernel.hz,
            }),
            metrics: Metrics::from_report(&report),
        };
        on_row(&row).map_err(SweepError::Row)?;
        Ok(Some(row))
    };
    let rows: Vec<Option<SweepRow>> = parallel_map(&runs, threads, one, progress)
        .into_iter()
        .collect::<Result<_, _>>()?;
    Ok(rows.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_sweep::grid::{Grid, Seeds};

    #[test]
    fn order_is_kept() {
        let items: Vec<u64> = (0..50).collect();
        let out = super::parallel_map(&items, 3, |x| x * x, &|_| {});
        assert_eq!(out, items.iter().map(|x| x * x).collect::<Vec<_>>());
    }

    #[test]
    fn progress_counts_every_item() {
        let items: Vec<u64> = (0..20).collect();
        let seen = AtomicUsize::new(0);
        let _ = parallel_map(&items, 2, |x| *x, &|done| {
            seen.fetch_max(done, Ordering::Relaxed);
        });
        assert_eq!(seen.load(Ordering::Relaxed), 20);
    }

    #[test]
    fn grid_rows_are_the_same_on_any_threads_and_shards_partition_them() {
        let base = crate::experiments::e1::scenario(
            ticklab_schema::experiment::e1::Mode::NohzFull,
            0,
            ticklab_schema::scenario::Run {
                duration_ns: 20_000_000,
                warmup_ns: 5_000_000,
                seed: 1,
            },
        );
        let sets: Vec<String> = ["workload=hogs:0..2", "hz=250", "hz=1000"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let grid = Grid::from_sets(&sets, Seeds::Count(2), 1).unwrap_or_else(|e| panic!("{e}"));
        let points = grid.points(&base).unwrap_or_else(|e| panic!("{e}"));
        let id = grid.id(&base);
        let run = |shard, threads| {
            run_grid(&id, &points, grid.seeds(), shard, threads, &|_| {})
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let one = run(Shard::ALL, 1);
        assert_eq!(one.len(), 12);
        assert_eq!(run(Shard::ALL, 3), one);
        let mut pieces: Vec<SweepRow> = (0..3)
            .flat_map(|i| run(Shard::new(i, 3).unwrap_or(Shard::ALL), 2))
            .collect();
        pieces.sort_by_key(|r| r.run);
        assert_eq!(pieces, one);
        // Seeds differ, points differ: the rows are not all alike.
        assert_ne!(one[0].metrics, one[1].metrics);
        assert_eq!(
            shard_runs(points.len(), 2, Shard::new(1, 5).unwrap_or(Shard::ALL)),
            3
        );
    }
}

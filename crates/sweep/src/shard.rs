//! Shards: a deterministic slice of a sweep's runs, so a cluster's job array (Slurm's
//! `SLURM_ARRAY_TASK_ID`, a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`) can split one
//! sweep over machines and `ticklab merge` can put the pieces back together.
//!
//! Shard `I/N` (0 ≤ I < N, the index base both engines use) owns the runs whose index is `I`
//! modulo `N`: round-robin, so each shard gets a share of every part of the grid (cheap idle
//! points and expensive loaded ones alike) and the shards take about as long as each other.

use super::row::SweepRow;
use std::fmt;
use std::str::FromStr;

/// One slice of a sweep's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: u64,
    count: u64,
}

impl Shard {
    /// The whole sweep (`0/1`).
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`; `None` unless `index < count`.
    pub fn new(index: u64, count: u64) -> Option<Shard> {
        (index < count).then_some(Shard { index, count })
    }

    /// Whether run `run` of the sweep belongs to this shard.
    pub fn owns(self, run: u64) -> bool {
        run % self.count == self.index
    }

    /// This shard's index.
    pub fn index(self) -> u64 {
        self.index
    }

    /// How many shards the sweep is split into.
    pub fn count(self) -> u64 {
        self.count
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Why a shard (`--shard`) was refused: the text as given; a shard is `I/N` with I < N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: expected I/N with 0 <= I < N, e.g. 0/4")]
pub struct ShardError(pub String);

impl FromStr for Shard {
    type Err = ShardError;

    /// Reads `I/N`, e.g. `0/4` … `3/4`.
    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let err = || ShardError(s.to_string());
        let (i, n) = s.trim().split_once('/').ok_or_else(err)?;
        let i: u64 = i.trim().parse().map_err(|_| err())?;
        let n: u64 = n.trim().parse().map_err(|_| err())?;
        Shard::new(i, n).ok_or_else(err)
    }
}

/// Why shards' rows do not merge into one sweep: which runs, of which sweep, and what is
/// wrong with them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// Nothing was given.
    #[error("no rows to merge")]
    NoRows,
    /// A row of another sweep (another identity or run count) than the first row's.
    #[error("rows of two sweeps: {sweep} ({runs} runs) and {other} ({other_runs} runs)")]
    TwoSweeps {
        /// The first row's sweep.
        sweep: String,
        /// Its run count.
        runs: u64,
        /// The other row's sweep.
        other: String,
        /// Its run count.
        other_runs: u64,
    },
    /// One run in two rows.
    #[error("run {0} appears twice (a shard given twice?)")]
    Twice(u64),
    /// Runs without a row: a shard's output is missing or cut short.
    #[error(
        "{missing} of the sweep's {runs} runs are missing (runs {}{}): is a shard's output \
         missing?",
        list(.first_missing),
        if *.missing > 10 { ", ..." } else { "" }
    )]
    Missing {
        /// Runs in the sweep.
        runs: u64,
        /// How many runs have no row.
        missing: u64,
        /// The first missing runs (at most 10).
        first_missing: Vec<u64>,
    },
    /// The rows' point indices do not divide the runs into points of equal seeds.
    #[error(
        "{runs} runs do not split into {points} points of equal seeds: a row's point was \
         changed"
    )]
    Points {
        /// Runs in the sweep.
        runs: u64,
        /// Points the rows name (the largest index + 1).
        points: u64,
    },
    /// A row that is not where its run index puts it.
    #[error(transparent)]
    RunIndex(#[from] RunIndexError),
}

/// `1, 2, 3`.
fn list(runs: &[u64]) -> String {
    let runs: Vec<String> = runs.iter().map(u64::to_string).collect();
    runs.join(", ")
}

/// Why a row is not the run its index says ([`check_run_index`]): the run, and which of its
/// fields disagrees with what the sweep and the index put there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunIndexError {
    /// The row is of another sweep (identity or run count).
    #[error("run {run}: of sweep {sweep} ({runs} runs), not of {expected} ({expected_runs} runs)")]
    OtherSweep {
        /// The row's run index.
        run: u64,
        /// The row's sweep.
        sweep: String,
        /// The row's run count.
        runs: u64,
        /// The sweep expected.
        expected: String,
        /// Its run count.
        expected_runs: u64,
    },
    /// The run index is past the sweep's runs (or the sweep runs no seed).
    #[error("run {run} is outside the sweep's {runs} runs")]
    Outside {
        /// The row's run index.
        run: u64,
        /// Runs in the sweep.
        runs: u64,
    },
    /// The row's point is not the one its run index puts it at.
    #[error("run {run}: point {point} where its run index puts point {expected}")]
    Point {
        /// The row's run index.
        run: u64,
        /// The row's point.
        point: u64,
        /// The point of the run index.
        expected: u64,
    },
    /// The row's seed is not the one its run index puts it at.
    #[error("run {run}: seed {seed} where its run index puts seed {expected}")]
    Seed {
        /// The row's run index.
        run: u64,
        /// The row's seed.
        seed: u64,
        /// The seed of the run index.
        expected: u64,
    },
}

/// Puts the rows of a sweep's shards back together: run order, every run exactly once, all
/// of one sweep. The result is what the unsharded sweep returns. An error says what is wrong
/// (rows of two sweeps, a run twice, runs missing: a shard's output is missing or cut short).
pub fn merge(mut rows: Vec<SweepRow>) -> Result<Vec<SweepRow>, MergeError> {
    let Some(first) = rows.first() else {
        return Err(MergeError::NoRows);
    };
    let (sweep, runs) = (first.sweep.clone(), first.runs);
    if let Some(r) = rows.iter().find(|r| r.sweep != sweep || r.runs != runs) {
        return Err(MergeError::TwoSweeps {
            sweep,
            runs,
            other: r.sweep.clone(),
            other_runs: r.runs,
        });
    }
    rows.sort_by_key(|r| r.run);
    if let Some(w) = rows.windows(2).find(|w| w[0].run == w[1].run) {
        return Err(MergeError::Twice(w[0].run));
    }
    if let Some(r) = rows.iter().find(|r| r.run >= runs) {
        return Err(RunIndexError::Outside { run: r.run, runs }.into());
    }
    let have = rows.len() as u64;
    if have != runs {
        let first_missing: Vec<u64> = (0..runs)
            .filter(|r| rows.binary_search_by_key(r, |x| x.run).is_err())
            .take(10)
            .collect();
        return Err(MergeError::Missing {
            runs,
            missing: runs - have,
            first_missing,
        });
    }
    // Every run is there once; now each row must sit where its run index puts it: point
    // `run / seeds`, the seed of its seed column (a hand-edited seed or point is refused).
    let points = rows.iter().map(|r| r.point).max().map_or(0, |p| p + 1);
    if points == 0 || runs % points != 0 {
        return Err(MergeError::Points { runs, points });
    }
    let per_point = (runs / points) as usize;
    let seeds: Vec<u64> = rows[..per_point].iter().map(|r| r.seed).collect();
    for r in &rows {
        check_run_index(r, &sweep, runs, &seeds)?;
    }
    Ok(rows)
}

/// Checks that `row` is run `row.run` of the sweep `sweep` of `runs` runs whose points each
/// run `seeds` (seeds innermost): the identity, the run count, the point index and the seed
/// all agree with the run index. `sweep --resume` checks the rows it keeps with it, `merge`
/// every row.
pub fn check_run_index(
    row: &SweepRow,
    sweep: &str,
    runs: u64,
    seeds: &[u64],
) -> Result<(), RunIndexError> {
    let n = seeds.len() as u64;
    if row.sweep != sweep || row.runs != runs {
        return Err(RunIndexError::OtherSweep {
            run: row.run,
            sweep: row.sweep.clone(),
            runs: row.runs,
            expected: sweep.to_string(),
            expected_runs: runs,
        });
    }
    if n == 0 || row.run >= runs {
        return Err(RunIndexError::Outside { run: row.run, runs });
    }
    let (point, seed) = (row.run / n, seeds[(row.run % n) as usize]);
    if row.point != point {
        return Err(RunIndexError::Point {
            run: row.run,
            point: row.point,
            expected: point,
        });
    }
    if row.seed != seed {
        return Err(RunIndexError::Seed {
            run: row.run,
            seed: row.seed,
            expected: seed,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Metrics, SWEEP_SCHEMA_VERSION};

    fn row(sweep: &str, run: u64, runs: u64) -> SweepRow {
        SweepRow {
            schema_version: SWEEP_SCHEMA_VERSION,
            sweep: sweep.into(),
            run,
            runs,
            point: run,
            params: Vec::new(),
            seed: 1,
            setup: None,
            metrics: Metrics::default(),
        }
    }

    #[test]
    fn merge_table() {
        // (rows as (sweep, run, runs), the runs merged or a word of the error)
        type Case<'a> = (&'a [(&'a str, u64, u64)], Result<&'a [u64], &'a str>);
        let cases: &[Case<'_>] = &[
            (&[("a", 2, 3), ("a", 0, 3), ("a", 1, 3)], Ok(&[0, 1, 2])),
            (&[], Err("no rows")),
            (&[("a", 0, 2), ("b", 1, 2)], Err("two sweeps")),
            (&[("a", 0, 2), ("a", 1, 3)], Err("two sweeps")),
            (&[("a", 0, 2), ("a", 0, 2)], Err("twice")),
            (&[("a", 0, 3), ("a", 2, 3)], Err("runs 1)")),
            (&[("a", 0, 1), ("a", 5, 1)], Err("outside")),
        ];
        for (rows, want) in cases {
            let rows = rows.iter().map(|&(s, r, n)| row(s, r, n)).collect();
            match (merge(rows), want) {
                (Ok(got), Ok(w)) => {
                    assert_eq!(got.iter().map(|r| r.run).collect::<Vec<_>>(), *w)
                }
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{e}"),
                (got, want) => panic!("{got:?} vs {want:?}"),
            }
        }
    }

    #[test]
    fn merge_checks_each_seed_and_point_against_its_run_index() {
        // Two points of three seeds (7, 8, 9).
        let good: Vec<SweepRow> = (0..6)
            .map(|run| SweepRow {
                point: run / 3,
                seed: 7 + run % 3,
                ..row("a", run, 6)
            })
            .collect();
        assert!(merge(good.clone()).is_ok());
        let mut seed = good.clone();
        seed[4].seed = 99;
        let e = merge(seed).unwrap_err().to_string();
        assert!(e.contains("run 4: seed 99") && e.contains("seed 8"), "{e}");
        let mut point = good.clone();
        point[2].point = 1;
        let e = merge(point).unwrap_err().to_string();
        assert!(e.contains("run 2: point 1"), "{e}");
        let mut odd = good;
        odd[5].point = 3;
        assert!(merge(odd).is_err());
    }

    #[test]
    fn parse_table() {
        // (input, (index, count) or None)
        let cases = [
            ("0/1", Some((0, 1))),
            ("3/4", Some((3, 4))),
            (" 1 / 2 ", Some((1, 2))),
            ("4/4", None),
            ("0/0", None),
            ("1", None),
            ("-1/4", None),
            ("a/b", None),
        ];
        for (input, want) in cases {
            let got = input.parse::<Shard>().ok().map(|s| (s.index(), s.count()));
            assert_eq!(got, want, "{input:?}");
        }
    }

    #[test]
    fn shards_partition_the_runs() {
        for n in 1..6 {
            for run in 0..50 {
                let owners = (0..n)
                    .filter(|&i| Shard::new(i, n).is_some_and(|s| s.owns(run)))
                    .count();
                assert_eq!(owners, 1, "run {run} of {n} shards");
            }
        }
    }
}

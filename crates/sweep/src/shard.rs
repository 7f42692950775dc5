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

impl FromStr for Shard {
    type Err = String;

    /// Reads `I/N`, e.g. `0/4` … `3/4`.
    fn from_str(s: &str) -> Result<Shard, String> {
        let err = || format!("{s:?}: expected I/N with 0 <= I < N, e.g. 0/4");
        let (i, n) = s.trim().split_once('/').ok_or_else(err)?;
        let i: u64 = i.trim().parse().map_err(|_| err())?;
        let n: u64 = n.trim().parse().map_err(|_| err())?;
        Shard::new(i, n).ok_or_else(err)
    }
}

/// Puts the rows of a sweep's shards back together: run order, every run exactly once, all
/// of one sweep. The result is what the unsharded sweep returns. An error says what is wrong
/// (rows of two sweeps, a run twice, runs missing: a shard's output is missing or cut short).
pub fn merge(mut rows: Vec<SweepRow>) -> Result<Vec<SweepRow>, String> {
    let Some(first) = rows.first() else {
        return Err("no rows to merge".into());
    };
    let (sweep, runs) = (first.sweep.clone(), first.runs);
    if let Some(r) = rows.iter().find(|r| r.sweep != sweep || r.runs != runs) {
        return Err(format!(
            "rows of two sweeps: {sweep} ({runs} runs) and {} ({} runs)",
            r.sweep, r.runs
        ));
    }
    rows.sort_by_key(|r| r.run);
    if let Some(w) = rows.windows(2).find(|w| w[0].run == w[1].run) {
        return Err(format!(
            "run {} appears twice (a shard given twice?)",
            w[0].run
        ));
    }
    if let Some(r) = rows.iter().find(|r| r.run >= runs) {
        return Err(format!("run {} is outside the sweep's {runs} runs", r.run));
    }
    let have = rows.len() as u64;
    if have != runs {
        let missing: Vec<String> = (0..runs)
            .filter(|r| rows.binary_search_by_key(r, |x| x.run).is_err())
            .take(10)
            .map(|r| r.to_string())
            .collect();
        return Err(format!(
            "{} of the sweep's {runs} runs are missing (runs {}{}): is a shard's output missing?",
            runs - have,
            missing.join(", "),
            if runs - have > 10 { ", ..." } else { "" }
        ));
    }
    // Every run is there once; now each row must sit where its run index puts it: point
    // `run / seeds`, the seed of its seed column (a hand-edited seed or point is refused).
    let points = rows.iter().map(|r| r.point).max().map_or(0, |p| p + 1);
    if points == 0 || runs % points != 0 {
        return Err(format!(
            "{runs} runs do not split into {points} points of equal seeds: a row's point was \
             changed"
        ));
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
) -> Result<(), String> {
    let n = seeds.len() as u64;
    if row.sweep != sweep || row.runs != runs {
        return Err(format!(
            "run {}: of sweep {} ({} runs), not of {sweep} ({runs} runs)",
            row.run, row.sweep, row.runs
        ));
    }
    if n == 0 || row.run >= runs {
        return Err(format!(
            "run {} is outside the sweep's {runs} runs",
            row.run
        ));
    }
    let (point, seed) = (row.run / n, seeds[(row.run % n) as usize]);
    if row.point != point {
        return Err(format!(
            "run {}: point {} where its run index puts point {point}",
            row.run, row.point
        ));
    }
    if row.seed != seed {
        return Err(format!(
            "run {}: seed {} where its run index puts seed {seed}",
            row.run, row.seed
        ));
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
                (Err(e), Err(w)) => assert!(e.contains(w), "{e}"),
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
        let e = merge(seed).unwrap_err();
        assert!(e.contains("run 4: seed 99") && e.contains("seed 8"), "{e}");
        let mut point = good.clone();
        point[2].point = 1;
        let e = merge(point).unwrap_err();
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

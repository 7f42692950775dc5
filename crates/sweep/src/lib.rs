//! ticklab's sweeps: one scenario run at every point of a grid of parameter values, each with
//! several seeds, and what comes out of it.
//!
//! * A [`SweepParam`] is one swept parameter at one point: its [`ParamKey`] (`hz`,
//!   `workload`, `cost.tick_handler_ns`, ...), the value as the user wrote it, and the number
//!   it stands for where it has one (so a plot can put it on an axis without reading text).
//! * A [`SweepRow`] is one run: the point's parameters, the seed and every [`Metric`] of
//!   the run's report ([`Metrics::from_report`]), machine-wide and per CPU. Rows carry their
//!   index in the whole sweep and the sweep's identity, so shard outputs can be merged back
//!   into exactly what one unsharded run writes.
//! * A [`SweepSummary`] folds the rows of one point over its seeds: [`Stats`] (mean, min,
//!   max and the 95 % confidence interval of the mean) per metric.
//!
//! The grid itself (which keys, which values, which seeds) and how a point becomes a scenario
//! is [`grid`]. A [`Shard`] is a deterministic slice of a sweep's runs, and [`merge`] puts
//! the shards' rows back together; [`read_rows`] reads rows back from JSON lines. Both JSON
//! lines and CSV are written by `ticklab-report`'s `sweep` module.
//!
//! This crate is the sweep's whole vocabulary, types and behaviour: it builds on the shared
//! schema (a point is a `Scenario`, a row's metrics are read from a `Report`), the twin runs
//! the points (`ticklab_twin::sweep`), `ticklab-report` renders the rows and summaries, and
//! the CLI wires them (`ticklab sweep`, `merge`, `plot`, `report`).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod grid;
mod metrics;
mod read;
mod row;
mod shard;
mod stats;

pub use metrics::{CpuMetric, CpuMetrics, Metric, Metrics};
pub use read::read_rows;
pub use row::{
    CpuSummary, ParamKey, ParamKeyError, SWEEP_SCHEMA_VERSION, SweepParam, SweepRow, SweepSetup,
    SweepSummary,
};
pub use shard::{MergeError, RunIndexError, Shard, ShardError, check_run_index, merge};
pub use stats::{Stats, t_975};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_table() {
        // (input, key name or None)
        let cases = [
            ("hz", Some("hz")),
            ("kernel-version", Some("kernel-version")),
            ("kernel_version", Some("kernel-version")),
            ("cost.tick_handler_ns", Some("cost.tick_handler_ns")),
            ("cost.", None),
            ("seed", None),
            ("HZ", None),
            ("", None),
        ];
        for (input, want) in cases {
            assert_eq!(
                ParamKey::parse(input).ok().map(|k| k.name()),
                want.map(String::from),
                "{input:?}"
            );
        }
        let e = ParamKey::parse("hzz").unwrap_err().to_string();
        assert!(e.contains("\"hzz\"") && e.contains("workload"), "{e}");
    }

    fn row(point: u64, seed: u64, irq: f64) -> SweepRow {
        let mut m = Metrics::default();
        m.aggregate.insert(Metric::IrqPerS, irq);
        SweepRow {
            schema_version: SWEEP_SCHEMA_VERSION,
            sweep: "x".into(),
            run: point * 2 + seed,
            runs: 4,
            point,
            params: vec![SweepParam {
                key: ParamKey::Hz,
                value: "100".into(),
                number: Some(100.0),
            }],
            seed,
            setup: None,
            metrics: m,
        }
    }

    #[test]
    fn summary_folds_seeds_per_point_in_order() {
        let rows = [
            row(1, 0, 10.0),
            row(0, 0, 1.0),
            row(1, 1, 14.0),
            row(0, 1, 3.0),
        ];
        let s = SweepSummary::of_rows(&rows);
        assert_eq!(s.iter().map(|s| s.point).collect::<Vec<_>>(), [1, 0]);
        let irq = s[0].aggregate[&Metric::IrqPerS];
        assert_eq!((irq.n, irq.mean, irq.min, irq.max), (2, 12.0, 10.0, 14.0));
        assert_eq!(s[0].seeds, [0, 1]);
        assert!(!s[0].aggregate.contains_key(&Metric::Watts));
    }

    #[test]
    fn row_json_roundtrips() {
        let r = row(0, 3, 1036.0 + 1.0 / 3.0);
        let text = serde_json::to_string(&r).unwrap_or_default();
        assert!(text.contains("\"key\":\"hz\""), "{text}");
        let back: SweepRow = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, r);
    }
}

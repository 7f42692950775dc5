//! The `ticklab bench` table: the twin's speed on a few experiment points.
//!
//! Layout (the header from [`bench_header`], then one [`bench_row`] per point as it finishes):
//!
//! ```text
//! point                   events    x real        M events/s wall  M events/s thread CPU
//!                                   (best)          best / median          best / median
//! e1 nohz_full idle      1234567     51234       123.45 / 120.00        130.00 / 125.00
//! ```
//!
//! `x real` is simulated time over the best wall time; the rates are events over the best and
//! the median time (the median of an even count is the upper one). Wall time includes waiting
//! for a CPU, thread CPU time does not: on a shared machine the second is the steadier one.

/// One measured point: what ran, how many events it simulated, and how long each repeat took.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchPoint {
    /// Name of the point (`e1 nohz_full idle`).
    pub name: String,
    /// Events one run simulates (the same in every repeat: the twin is deterministic).
    pub events: u64,
    /// Simulated time of one run, ns.
    pub simulated_ns: u64,
    /// Wall time of each repeat, s (at least one).
    pub wall_s: Vec<f64>,
    /// CPU time of the measuring thread in each repeat, s (as many as `wall_s`).
    pub thread_cpu_s: Vec<f64>,
}

/// The two header lines.
pub fn bench_header() -> String {
    format!(
        "{:<18} {:>11} {:>9} {:>22} {:>22}\n{:<18} {:>11} {:>9} {:>22} {:>22}\n",
        "point",
        "events",
        "x real",
        "M events/s wall",
        "M events/s thread CPU",
        "",
        "",
        "(best)",
        "best / median",
        "best / median"
    )
}

/// One point's line.
pub fn bench_row(p: &BenchPoint) -> String {
    debug_assert!(!p.wall_s.is_empty() && p.wall_s.len() == p.thread_cpu_s.len());
    let best_wall = p.wall_s.iter().copied().fold(f64::MAX, f64::min);
    let real = p.simulated_ns as f64 / 1e9 / best_wall;
    format!(
        "{:<18} {:>11} {:>9.0} {:>22} {:>22}\n",
        p.name,
        p.events,
        real,
        rates(p.events, &p.wall_s),
        rates(p.events, &p.thread_cpu_s)
    )
}

/// The whole table: header and one line per point.
pub fn bench_table(points: &[BenchPoint]) -> String {
    points.iter().fold(bench_header(), |s, p| s + &bench_row(p))
}

/// `best / median` in millions of events per second.
fn rates(events: u64, secs: &[f64]) -> String {
    let mut secs = secs.to_vec();
    secs.sort_by(f64::total_cmp);
    let best = events as f64 / secs[0] / 1e6;
    let median = events as f64 / secs[secs.len() / 2] / 1e6;
    format!("{best:>10.2} / {median:<9.2}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_table_snapshot() {
        let points = [
            BenchPoint {
                name: "e1 nohz_full idle".into(),
                events: 1_234_567,
                simulated_ns: 60_000_000_000,
                wall_s: vec![0.012, 0.010, 0.011],
                thread_cpu_s: vec![0.0095, 0.0099, 0.0097],
            },
            BenchPoint {
                name: "e2 skew".into(),
                events: 13_000_000,
                simulated_ns: 60_000_000_000,
                wall_s: vec![0.35, 0.30],
                thread_cpu_s: vec![0.29, 0.28],
            },
        ];
        insta::assert_snapshot!(bench_table(&points));
    }
}

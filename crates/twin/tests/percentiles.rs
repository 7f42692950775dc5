//! The frame groups' percentiles agree with their rows: never above the largest sample, never
//! below the smallest (issue 33: `p999_us 9.407` above `max_us 9.405`).

use ticklab_schema::report::WorkloadResult;
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::Workload;

/// Few frames, so that p99.9 is the largest sample itself and the histogram's bucket edge
/// would show above it.
#[test]
fn frame_percentiles_lie_between_the_rows_min_and_max() {
    let base =
        "machine = \"kvm-guest-2\"\n[kernel]\nversion = \"6.10\"\nhz = 1000\nnohz = \"idle\"\n";
    for (workload, seed) in [
        ("frames:1000@1:loop=1000", 1),
        ("frames:960@0-1:loop=500000", 7),
    ] {
        let mut s = Scenario::from_toml(base, "percentiles").expect("the base parses");
        s.workload = Workload::parse(workload, 2).expect("the workload parses");
        s.run.duration_ns = 300_000_000;
        s.run.warmup_ns = 10_000_000;
        s.run.seed = seed;
        let r = ticklab_twin::simulate(&s, |_| {}).expect("runs");
        let mut groups = 0;
        for w in &r.workloads {
            let WorkloadResult::Frames(g) = w else {
                continue;
            };
            groups += 1;
            let (min, max) = g.jitter_extremes_us().expect("frames ran");
            for (name, p) in [("p50", g.p50_us), ("p99", g.p99_us), ("p99.9", g.p999_us)] {
                assert!(
                    min <= p && p <= max,
                    "{workload}: jitter {name} {p} outside [{min}, {max}]"
                );
            }
            let wake = g.wakeup.expect("the twin measures wake-ups");
            let (min, max) = g.wakeup_extremes_us().expect("wake-ups ran");
            for (name, p) in [
                ("p50", wake.p50_us),
                ("p99", wake.p99_us),
                ("p99.9", wake.p999_us),
            ] {
                assert!(
                    min <= p && p <= max,
                    "{workload}: wake-up {name} {p} outside [{min}, {max}]"
                );
            }
        }
        assert_eq!(groups, 1, "{workload}");
    }
}

//! `host irqs` agrees with a plain reading of the same two /proc/interrupts snapshots.

use std::collections::BTreeMap;
use std::time::Duration;
use ticklab_host::probe::{HostRoot, irqs};

/// A deliberately simple reader: header → CPU names; `NAME: n n n ...` → counts.
fn plain(text: &str) -> (Vec<String>, BTreeMap<String, Vec<u64>>) {
    let mut lines = text.lines();
    let cpus: Vec<String> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(|s| s.trim_start_matches("CPU").to_string())
        .collect();
    let mut rows = BTreeMap::new();
    for l in lines {
        let mut parts = l.split_whitespace();
        let name = parts.next().unwrap().trim_end_matches(':').to_string();
        let counts: Vec<u64> = parts
            .take(cpus.len())
            .map_while(|p| p.parse().ok())
            .collect();
        if counts.len() == cpus.len() {
            rows.insert(name, counts);
        }
    }
    (cpus, rows)
}

#[test]
fn rates_match_a_plain_reading() {
    let root = HostRoot::live();
    let (a, b) = irqs::sample_window(&root, Duration::from_millis(300)).unwrap();
    let secs = b.at.duration_since(a.at).as_secs_f64();
    let (cpus_a, rows_a) = plain(&a.text);
    let (cpus_b, rows_b) = plain(&b.text);
    assert_eq!(cpus_a, cpus_b, "CPU hotplug during the test");
    for all in [false, true] {
        let rates = irqs::rates_between(&a, &b, all);
        assert!((rates.elapsed_s - secs).abs() < 1e-12);
        assert_eq!(
            rates.cpus.iter().map(u32::to_string).collect::<Vec<_>>(),
            cpus_b
        );
        let mut checked = 0;
        for r in rates.rows.iter().filter(|r| !r.per_cpu.is_empty()) {
            let (Some(ra), Some(rb)) = (rows_a.get(&r.row), rows_b.get(&r.row)) else {
                panic!("row {} missing from the plain reading", r.row);
            };
            for (i, rate) in r.per_cpu.iter().enumerate() {
                let want = (rb[i] - ra[i]) as f64 / secs;
                assert!(
                    (rate - want).abs() < 1e-9,
                    "{} cpu{i}: {rate} vs {want}",
                    r.row
                );
            }
            checked += 1;
        }
        assert!(checked > 0, "no per-CPU rows compared (all={all})");
        if all {
            assert_eq!(checked, rows_b.len(), "--all must cover every per-CPU row");
        }
    }
}

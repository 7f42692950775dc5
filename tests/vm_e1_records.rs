//! E1 on a real `nohz_full_aggressive` kernel (issue 24), from recorded boots: the guest's
//! measurements of `scripts/vm-e1.sh` (2026-12-04, 8 vCPUs, HZ=1000, TCG, 5 s, idle and one
//! hog, with and without the flag) in `tests/fixtures/vm-e1/`, re-twinned by this build
//! (`vm table --retwin`). The twin of each guest must stay within ±15 % of the kernel's total
//! LOC/s, and its aggressive / nohz_full ratio within ±20 % of the kernel's. The same records
//! without the guest's kernel-thread counts put the aggressive rows far below: the check
//! fails if the twin stops taking the guest's kernel threads as background.

use serde_json::Value;

mod common;
use common::stdout_of;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vm-e1");

/// Total LOC per second of the kernel and of its twin in a `vm compare --json` record.
fn totals(record: &Value) -> (f64, f64) {
    let per_s = |r: &Value| {
        let secs = r["duration_ns"].as_f64().unwrap() / 1e9;
        let loc: f64 = r["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["loc"].as_f64().unwrap())
            .sum();
        loc / secs
    };
    (per_s(&record["kernel"]), per_s(&record["twin"]))
}

/// The records `names`, each edited by `edit`, re-twinned in a directory of their own (`tag`);
/// (kernel, twin) LOC/s by record.
fn retwinned(tag: &str, names: &[&str], edit: impl Fn(&mut Value)) -> Vec<(f64, f64)> {
    let dir = std::env::temp_dir().join(format!("ticklab-vm-e1-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for name in names {
        let text = std::fs::read_to_string(format!("{FIXTURES}/{name}.json")).unwrap();
        let mut v: Value = serde_json::from_str(&text).unwrap();
        edit(&mut v);
        let f = dir.join(format!("{name}.json"));
        std::fs::write(&f, serde_json::to_string(&v).unwrap()).unwrap();
        files.push(f.display().to_string());
    }
    let config = format!("{FIXTURES}/6.1-hz1000-full+nohz_full_aggressive.config");
    let mut args = vec!["vm", "table", "--retwin", "--kernel-config", &config];
    args.extend(files.iter().map(String::as_str));
    stdout_of(&args);
    let out = files
        .iter()
        .map(|f| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            totals(&v)
        })
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    out
}

const NAMES: [&str; 4] = [
    "nohz_full-idle",
    "aggressive-idle",
    "nohz_full-hogs1",
    "aggressive-hogs1",
];

#[test]
fn the_twin_of_each_e1_guest_is_within_its_band_and_so_is_the_ratio() {
    let rows = retwinned("as-recorded", &NAMES, |_| {});
    for (name, (kernel, twin)) in NAMES.iter().zip(&rows) {
        let err = twin / kernel - 1.0;
        assert!(
            err.abs() <= 0.15,
            "{name}: kernel {kernel:.1}, twin {twin:.1} LOC/s"
        );
    }
    for pair in rows.chunks(2) {
        let (k_full, t_full) = pair[0];
        let (k_aggr, t_aggr) = pair[1];
        let ratio = (t_aggr / t_full) / (k_aggr / k_full);
        assert!(
            (0.8..=1.2).contains(&ratio),
            "twin ratio / kernel ratio {ratio:.2} (kernel {k_aggr:.1}/{k_full:.1}, twin {t_aggr:.1}/{t_full:.1})"
        );
    }
}

#[test]
fn without_the_guests_kernel_threads_the_aggressive_twin_falls_short() {
    let rows = retwinned(
        "no-kthreads",
        &["aggressive-idle", "aggressive-hogs1"],
        |v| {
            v["kernel"].as_object_mut().unwrap().remove("kthread_runs");
        },
    );
    for (kernel, twin) in rows {
        assert!(
            twin < 0.6 * kernel,
            "kernel {kernel:.1}, twin {twin:.1} LOC/s: the threads were expected to matter"
        );
    }
}

//! Acceptance test of `host calibrate` (host-lab issue, item 6): the twin loaded with the
//! scenario calibrated on this host (idle and one hog) predicts the per-CPU LOC/s measured
//! with a hog on every CPU within ±20 %.
//!
//! Bounded: a 20 s calibration budget, a 5 s measurement, simulations of a few seconds of
//! machine time. It is `#[ignore]`d (run it with `cargo test --release --test calibrate_live
//! -- --ignored`) because it needs Linux with a `LOC` row in `/proc/interrupts`, and fails
//! saying so where that is missing. The ±20 % band is the only assertion on numbers. Steal
//! time in the calibration is tolerated, a refusal for other load is retried (the comment at
//! the retry loop says why).

use std::time::{Duration, Instant};

use ticklab_host::calibrate::{self, loc_per_s};
use ticklab_host::harness::{self, RunConfig, Stop};
use ticklab_host::procfs::{IrqKind, parse_interrupts};
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::Workload;

fn skip_reason() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some("not Linux".into());
    }
    let text = match std::fs::read_to_string("/proc/interrupts") {
        Ok(t) => t,
        Err(e) => return Some(format!("/proc/interrupts unreadable: {e}")),
    };
    match parse_interrupts(&text) {
        Ok(i) if i.row_of(IrqKind::LocalTimer).is_some() => None,
        Ok(_) => Some("/proc/interrupts has no LOC row".into()),
        Err(e) => Some(format!("/proc/interrupts does not parse: {e}")),
    }
}

#[test]
#[ignore = "needs a live Linux host with a LOC row in /proc/interrupts (x86); takes about 30 s"]
fn calibrated_twin_predicts_hogs_on_every_cpu() {
    if let Some(why) = skip_reason() {
        panic!("cannot calibrate this host: {why}");
    }
    let started = Instant::now();
    let stop = Stop::new();
    let sim = |s: &Scenario| {
        ticklab_twin::simulate(s, |_| {}).map_err(ticklab_host::calibrate::SimulatorError::new)
    };
    let mut progress = |line: &str| eprintln!("[{:5.1} s] {line}", started.elapsed().as_secs_f64());
    // Contamination is the host's state, not the code's, and the two kinds are treated
    // apart (docs/host-lab.md, "Contaminated phases"):
    //
    // * other load (a kernel thread, writeback after the builds before this test, a
    //   package's post-install work) brings interrupts of its own, so calibrate refuses it
    //   and the calibration is retried, up to three attempts, each refusal printed; the
    //   third fails the test.
    // * steal time is taken by the hypervisor's other guests: no rerun on this guest can
    //   wait it out (CI on a shared host met 5-11 % in single phases of every attempt, three
    //   in a row), and it moves no interrupt count, which is all this test judges. It is
    //   tolerated (`--tolerate-steal`) and printed.
    let mut attempt = 1;
    let cal = loop {
        let tolerate = calibrate::Tolerate::Steal;
        match calibrate::calibrate(
            Duration::from_secs(20),
            &stop,
            &sim,
            &mut progress,
            tolerate,
        ) {
            Err(e @ calibrate::CalibrateError::Contaminated(_)) if attempt < 3 => {
                eprintln!("calibration attempt {attempt} refused: {e}");
                attempt += 1;
                std::thread::sleep(Duration::from_secs(5));
            }
            other => break other.expect("calibration"),
        }
    };
    for c in &cal.measurements.contaminated {
        eprintln!("fitted although contaminated: {}: {}", c.phase, c.why);
    }
    eprintln!("{}", ticklab_report::calibrate::scenario_file(&cal));

    // The file must load back as the same scenario (comments are ignored).
    let loaded = Scenario::from_toml(
        &ticklab_report::calibrate::scenario_file(&cal),
        "calibrated.toml",
    )
    .expect("reload");
    assert_eq!(loaded.machine, cal.scenario.machine);
    assert_eq!(loaded.background, cal.scenario.background);

    let nr = cal.measurements.nr_cpus;
    let spec = format!("hogs:{nr}");
    let workload = Workload::parse(&spec, nr).unwrap();
    let config = RunConfig {
        duration: Duration::from_secs(5),
        ..RunConfig::default()
    };
    let host = harness::run_workload(&workload, &config, &stop).expect("host run");
    for w in &host.report.warnings {
        eprintln!("host run warning: {w}");
    }
    let measured = loc_per_s(&host.report);

    let mut twin = loaded;
    twin.workload = workload;
    twin.run.duration_ns = 20_000_000_000;
    let predicted = loc_per_s(&ticklab_twin::simulate(&twin, |_| {}).expect("twin"));

    eprintln!("{spec}: CPU  measured LOC/s  predicted LOC/s  error");
    let mut bad = Vec::new();
    for c in 0..nr as usize {
        let err = (predicted[c] - measured[c]) / measured[c];
        eprintln!(
            "{spec}: {c:>3}  {:>14.1}  {:>15.1}  {:+6.1} %",
            measured[c],
            predicted[c],
            err * 100.0
        );
        if err.abs() > 0.20 {
            bad.push(c);
        }
    }
    eprintln!("total {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        bad.is_empty(),
        "CPUs {bad:?} outside ±20 %: measured {measured:?}, predicted {predicted:?}"
    );
}

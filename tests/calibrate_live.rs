//! Acceptance test of `host calibrate` (host-lab issue, item 6): the twin loaded with the
//! scenario calibrated on this host (idle and one hog) predicts the per-CPU LOC/s measured
//! with a hog on every CPU within ±20 %.
//!
//! Bounded: a 20 s calibration budget, a 5 s measurement, simulations of a few seconds of
//! machine time. It is `#[ignore]`d (run it with `cargo test --release --test calibrate_live
//! -- --ignored`) because it needs Linux with a `LOC` row in `/proc/interrupts`, and fails
//! saying so where that is missing. The ±20 % band is the only assertion on numbers. A
//! calibration refused for steal time alone is retried forced (the comment at the retry
//! loop says why); one refused for other load is retried as it is.

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
    // A phase that other load contaminated (a kernel thread, a package's post-install work
    // on a freshly set-up CI machine) makes calibrate refuse, as it should; that is the
    // host's state, not the code's, so the calibration is retried up to three times, each
    // refusal printed. The third refusal fails the test.
    //
    // Steal time is different: the hypervisor's other guests take it, a rerun on this guest
    // cannot wait it out (CI on a shared host met 6-9 % in three attempts in a row), and it
    // moves no interrupt count, which is all this test judges. A refusal for steal alone is
    // printed and the next attempt is forced; that attempt must then have been contaminated
    // by steal and nothing else, or the test fails.
    let mut attempt = 1;
    let mut force = false;
    let cal = loop {
        match calibrate::calibrate(Duration::from_secs(20), &stop, &sim, &mut progress, force) {
            Err(e @ calibrate::CalibrateError::Contaminated(_)) if attempt < 3 => {
                eprintln!("calibration attempt {attempt} refused: {e}");
                force = e.steal_only();
                if force {
                    eprintln!("steal time only: attempt {} is forced", attempt + 1);
                }
                attempt += 1;
                std::thread::sleep(Duration::from_secs(5));
            }
            other => break other.expect("calibration"),
        }
    };
    for c in &cal.measurements.contaminated {
        eprintln!("fitted although contaminated: {}: {}", c.phase, c.why);
    }
    let other_load: Vec<_> = cal
        .measurements
        .contaminated
        .iter()
        .filter(|c| c.by != calibrate::Contaminant::Steal)
        .collect();
    assert!(
        other_load.is_empty(),
        "the forced calibration met other load, not only steal: {other_load:?}"
    );
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

//! `ticklab host haltpoll-sweep` — E3's live part: the futex ping-pong at several
//! `guest_halt_poll_ns` values on this guest ([`ticklab_host::harness::haltpoll_sweep`]), the
//! twin calibrated at `guest_halt_poll_ns=0` only by `host calibrate`'s KVM fitting
//! ([`ticklab_host::calibrate::fit_kvm`], model [`ticklab_twin::experiments::e3::HostTwin`])
//! and its predictions for the other values with their errors, rendered by
//! [`ticklab_report::e3::live_report`]. `host calibrate` runs the same two measurements and
//! fits the wake-up in its scenario's own model instead
//! ([`ticklab_host::calibrate::fit_scenario`]).
//!
//! Needs root (the parameter is written through sysfs); every value is restored after its
//! point, on error and on Ctrl-C, and a record under /run covers a killed run. SIGINT or
//! SIGTERM ends the sweep with the points done so far and exit code 130.

use std::path::Path;
use std::time::Duration;

use clap::Args;
use ticklab_host::calibrate::{KvmGuestCosts, KvmMeasurements, fit_kvm};
use ticklab_host::harness::Stop;
use ticklab_host::harness::haltpoll_sweep::{self, IdleSetup, SweepConfig};
use ticklab_host::harness::sysfs_params::current_values;
use ticklab_schema::experiment::e3::LiveSweep;
use ticklab_twin::experiments::e3::HostTwin;

use crate::args::{DurationArg, parse_duration_arg};
use crate::error::{input_error, interrupted, library_error};
use crate::host_run_cmd::restore_leftover_params;

/// `host haltpoll-sweep` arguments.
#[derive(Debug, Args)]
pub(crate) struct SweepArgs {
    /// guest_halt_poll_ns values in ns, comma-separated; 0 (the calibration point) is run
    /// first whether listed or not.
    #[arg(
        long,
        default_value = "0,10000,50000,200000,500000",
        value_delimiter = ','
    )]
    pub(crate) values: Vec<u64>,
    /// Round trips per point (two switches each).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) rounds: u64,
    /// The two CPUs of the ping-pong, `A,B`.
    #[arg(
        short = 'c',
        long,
        default_value = "0,1",
        value_delimiter = ',',
        num_args = 1
    )]
    pub(crate) cpus: Vec<u32>,
    /// Cap on each point's run.
    #[arg(long, default_value = "30s", value_parser = parse_duration_arg)]
    pub(crate) max_point: DurationArg,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the sweep and prints measurement beside prediction.
pub(crate) fn sweep(a: &SweepArgs) -> anyhow::Result<()> {
    let [cpu_a, cpu_b] = a.cpus[..] else {
        return Err(input_error(format!(
            "--cpus: expected two CPUs A,B, found {:?}",
            a.cpus
        )));
    };
    if !ticklab_host::probe::is_root() {
        return Err(input_error(
            "host haltpoll-sweep writes /sys/module/haltpoll/parameters/guest_halt_poll_ns: run it as root"
                .to_string(),
        ));
    }
    let mut values = vec![0];
    values.extend(a.values.iter().copied().filter(|&v| v != 0));
    let sys = Path::new("/sys");
    let stop = Stop::on_signals()?;
    restore_leftover_params()?;
    let idle = IdleSetup::read(sys);
    let params_before = owned(current_values(sys));
    eprintln!(
        "haltpoll-sweep: driver {}, governor {}: {}",
        idle.driver,
        idle.governor,
        idle.verdict()
    );
    let cfg = SweepConfig {
        values_ns: values,
        round_trips: a.rounds,
        cpus: (cpu_a, cpu_b),
        max_point: Duration::from_nanos(a.max_point.ns()),
    };
    let outcome = crate::progress::steps("haltpoll-sweep", |progress| {
        haltpoll_sweep::sweep(&cfg, &stop, progress)
    })
    .map_err(library_error)?;
    let params_after = owned(current_values(sys));
    let mut points = outcome.points;
    let hz = outcome.hz;
    let fitted = match points.first() {
        Some(p0) => fit_kvm(
            &KvmMeasurements {
                idle: idle.clone(),
                hz,
                same_cpu_ns: outcome.same_cpu_ns,
                cross_cpu_ns: p0.ns_per_switch,
                params_before: params_before.clone(),
                params_after: params_after.clone(),
            },
            &twin_model,
        )
        .map_err(|e| e.to_string()),
        None => Err("no point was measured".to_string()),
    };
    let (calibration, twin_err) = match fitted {
        Ok(cal) => {
            for p in &mut points {
                p.predicted_ns = cal.predict(&twin_model, p.guest_halt_poll_ns).ok();
                p.calibration_point = p.guest_halt_poll_ns == 0;
            }
            let mut rows = cal.rows();
            if let Ok(t) = twin(&cal.costs) {
                rows.extend(t.fixed_costs());
            }
            (rows, None)
        }
        Err(e) => (Vec::new(), Some(e)),
    };
    let mut verdict = idle.verdict();
    if let Some(e) = twin_err {
        verdict.push_str(&format!("; no twin: {e}"));
    }
    let live = LiveSweep {
        driver: idle.driver.clone(),
        governor: idle.governor.clone(),
        verdict,
        params_before,
        params_after,
        same_cpu_ns: outcome.same_cpu_ns,
        calibration,
        points,
        interrupted: outcome.interrupted,
    };
    if a.json {
        let doc = ticklab_schema::versioned::Versioned::new(
            ticklab_schema::report::REPORT_SCHEMA_VERSION,
            &live,
        );
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", ticklab_report::e3::live_report(&live));
    }
    match stop.reason() {
        Some(r) => Err(interrupted(
            &r.name(),
            "the points above are the ones completed; the interrupted one was dropped",
        )),
        None => Ok(()),
    }
}

/// The twin of a guest with these costs.
fn twin(c: &KvmGuestCosts) -> Result<HostTwin, String> {
    HostTwin::new(
        c.context_switch_ns,
        c.host_wake_ns,
        &c.driver,
        &c.governor,
        c.hz,
    )
}

/// The twin's two-CPU ns per switch for `c` at `guest_halt_poll_ns` = `ns` (the model of
/// [`fit_kvm`]).
fn twin_model(c: &KvmGuestCosts, ns: u64) -> Result<f64, String> {
    Ok(twin(c)?.predict(ns).ns_per_switch())
}

fn owned(v: Vec<(&'static str, String)>) -> Vec<(String, String)> {
    v.into_iter().map(|(n, x)| (n.to_string(), x)).collect()
}

//! `ticklab host haltpoll-sweep` — E3's live part: the futex ping-pong at several
//! `guest_halt_poll_ns` values on this guest, the twin calibrated at `guest_halt_poll_ns=0`
//! only by `host calibrate`'s KVM fitting and its predictions for the other values with their
//! errors ([`ticklab_host::calibrate::live_sweep`], model
//! [`ticklab_twin::experiments::e3::HostTwin`]), rendered by
//! [`ticklab_report::e3::live_report`]. This file parses, calls and renders. `host calibrate` runs the same two measurements and
//! fits the wake-up in its scenario's own model instead
//! ([`ticklab_host::calibrate::fit_scenario`]).
//!
//! Needs root (the parameter is written through sysfs); every value is restored after its
//! point, on error and on Ctrl-C, and a record under /run covers a killed run. SIGINT or
//! SIGTERM ends the sweep with the points done so far and exit code 130.

use std::path::Path;
use std::time::Duration;

use clap::Args;
use ticklab_host::calibrate::{KvmGuestCosts, SimulatorError, live_sweep};
use ticklab_host::harness::Stop;
use ticklab_host::harness::haltpoll_sweep::SweepConfig;
use ticklab_twin::experiments::e3::HostTwin;
use ticklab_twin::guest::HostTwinError;

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
    let stop = Stop::on_signals()?;
    restore_leftover_params()?;
    let cfg = SweepConfig {
        values_ns: a.values.clone(),
        round_trips: a.rounds,
        cpus: (cpu_a, cpu_b),
        max_point: Duration::from_nanos(a.max_point.ns()),
    };
    // The idle setup's verdict, then one line per point, through the one phase line.
    let live = crate::progress::steps("haltpoll-sweep", |progress| {
        live_sweep(
            &cfg,
            Path::new("/sys"),
            &stop,
            &twin_model,
            &twin_fixed_costs,
            progress,
        )
    })
    .map_err(library_error)?;
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
fn twin(c: &KvmGuestCosts) -> Result<HostTwin, HostTwinError> {
    HostTwin::new(
        c.context_switch_ns,
        c.host_wake_ns,
        &c.driver,
        &c.governor,
        c.hz,
    )
}

/// The costs the twin of a guest with `c` holds without fitting them.
fn twin_fixed_costs(c: &KvmGuestCosts) -> Result<Vec<(String, u64, String)>, SimulatorError> {
    Ok(twin(c).map_err(SimulatorError::new)?.fixed_costs())
}

/// The twin's two-CPU ns per switch for `c` at `guest_halt_poll_ns` = `ns` (the model of
/// `ticklab_host::calibrate::fit_kvm`).
fn twin_model(c: &KvmGuestCosts, ns: u64) -> Result<f64, SimulatorError> {
    Ok(twin(c)
        .map_err(SimulatorError::new)?
        .predict(ns)
        .ns_per_switch())
}

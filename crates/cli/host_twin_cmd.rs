//! The twin of this host: `host run --twin [SCENARIO]` runs the workload here and in the twin
//! and prints them side by side (the shared comparison, [`ticklab_schema::comparison`]), and
//! `host calibrate` fits with the same runner ([`twin_report`]).
//!
//! The scenario: the file given to `--twin` (a `host calibrate` file, or any scenario);
//! without one, [`DEFAULT_CALIBRATION`] in the current directory when it exists; otherwise the
//! twin built from what `host inspect` reads, with preset costs
//! ([`ticklab_host::calibrate::inspected_scenario`]), and a note saying so.

use std::path::Path;

use ticklab_schema::comparison::{Bands, Row, compare_reports};
use ticklab_schema::report::{PingPongReport, Report, Source, WorkloadResult};
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::{PingPongMethod, TaskGroup, Workload};

use crate::error::input_error;

/// The calibration file `--twin` without a value looks for in the current directory.
pub(crate) const DEFAULT_CALIBRATION: &str = "ticklab-calibration.toml";

/// Runs `s` in the twin. A workload of one ping-pong group goes to the E3 guest model
/// (`ticklab_twin::experiments::e3::simulate_pingpong`), which gives the round trip but no
/// per-CPU counters: that report has no CPUs. Every other workload runs in the event loop,
/// with `histogram` buckets kept for frame groups when asked.
pub(crate) fn twin_report(s: &Scenario, histogram: Option<u32>) -> Result<Report, String> {
    if let [
        TaskGroup::PingPong {
            method,
            cpu_a,
            cpu_b,
            ..
        },
    ] = &s.workload.groups[..]
    {
        let o = ticklab_twin::experiments::e3::simulate_pingpong(s)?;
        return Ok(Report {
            schema_version: ticklab_schema::report::REPORT_SCHEMA_VERSION,
            source: Source::Twin { seed: s.run.seed },
            label: s.name.clone(),
            machine: s.machine.name.clone(),
            cmdline: s.kernel.cmdline.clone(),
            hz: s.kernel.hz,
            duration_ns: o.elapsed_ns,
            cpus: Vec::new(),
            energy: None,
            messages: Vec::new(),
            timekeeping: None,
            hrtimer: None,
            locks: None,
            background: Vec::new(),
            workloads: vec![WorkloadResult::PingPong(PingPongReport {
                method: match method {
                    PingPongMethod::Futex => "futex".into(),
                    PingPongMethod::Pipe => "pipe".into(),
                },
                cpus: (*cpu_a, *cpu_b),
                round_trips: o.switches / 2,
                ns_per_switch: o.ns_per_switch(),
                ns_per_round_trip: 2.0 * o.ns_per_switch(),
            })],
            noise: None,
            warnings: vec![
                "the E3 guest model gives the ping-pong's round trip, no per-CPU counters".into(),
            ],
        });
    }
    let mut sim: ticklab_twin::Sim = ticklab_twin::Sim::new(s).map_err(|e| e.to_string())?;
    if let Some(max_us) = histogram {
        sim.set_frame_histogram(max_us);
    }
    sim.run(|_| {});
    Ok(sim.report())
}

/// The twin's scenario for `--twin [SCENARIO]` (module docs), and notes on where it came from.
pub(crate) fn twin_scenario(arg: &str) -> anyhow::Result<(Scenario, Vec<String>)> {
    let path = if arg.is_empty() {
        Path::new(DEFAULT_CALIBRATION)
            .exists()
            .then_some(DEFAULT_CALIBRATION)
    } else {
        Some(arg)
    };
    if let Some(path) = path {
        let text = std::fs::read_to_string(path)
            .map_err(|e| input_error(format!("--twin {path}: cannot read: {e}")))?;
        let s = Scenario::from_toml(&text, path).map_err(|e| input_error(e.to_string()))?;
        return Ok((s, vec![format!("twin scenario: {path}")]));
    }
    let facts = ticklab_host::calibrate::host_facts()?;
    let mut notes = vec![format!(
        "twin scenario: built from host inspect ({DEFAULT_CALIBRATION} not found here)"
    )];
    let s = ticklab_host::calibrate::inspected_scenario(&facts, &mut notes)?;
    Ok((s, notes))
}

/// The twin's run of a measured workload: `spec` on the twin's CPUs for the measured window,
/// then every figure beside its measurement.
pub(crate) fn beside(
    measured: &Report,
    spec: &str,
    scenario: &Scenario,
    histogram: Option<u32>,
) -> anyhow::Result<(Report, Vec<Row>)> {
    let mut s = scenario.clone();
    let nr = s.machine.topology.nr_cpus();
    s.workload = Workload::parse(spec, nr).map_err(|e| {
        input_error(format!(
            "--twin: workload {spec} on the twin's {nr} CPUs: {e}"
        ))
    })?;
    s.run.duration_ns = measured.duration_ns.max(1);
    let twin = twin_report(&s, histogram).map_err(|e| input_error(format!("--twin: {e}")))?;
    let rows = compare_reports(measured, &twin, Bands::Host);
    Ok((twin, rows))
}

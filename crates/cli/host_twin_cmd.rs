//! The twin of this host: `host run --twin [SCENARIO]` runs the workload here and in the twin
//! and prints them side by side (the shared comparison, [`ticklab_host::comparison`]), and
//! `host calibrate` fits with the same runner ([`twin_report`]).
//!
//! The scenario: the file given to `--twin` (a `host calibrate` file, or any scenario);
//! without one, [`DEFAULT_CALIBRATION`] in the current directory when it exists; otherwise the
//! twin built from what `host inspect` reads, with preset costs
//! ([`ticklab_host::calibrate::inspected_scenario`]), and a note saying so.

use std::path::Path;

use ticklab_host::comparison::{Bands, compare_reports};
use ticklab_schema::comparison::Row;
use ticklab_schema::report::Report;
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::{Barrier, TaskGroup, Workload};
use ticklab_twin::{RunOptions, SimError};

use crate::error::{input_error, library_error_naming};

/// The calibration file `--twin` without a value looks for in the current directory.
pub(crate) const DEFAULT_CALIBRATION: &str = "ticklab-calibration.toml";

/// Runs `s` in the twin ([`ticklab_twin::run`], which picks the engine: a lone ping-pong
/// gives the round trip and no per-CPU counters), with `histogram` buckets kept for frame
/// groups when asked. The length is the measured window's, so no compute limit applies.
pub(crate) fn twin_report(
    s: &Scenario,
    histogram: Option<u32>,
    noise: bool,
) -> Result<Report, SimError> {
    let options = RunOptions {
        histogram,
        noise,
        ..RunOptions::unlimited()
    };
    ticklab_twin::run(s, options)
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

/// The line that introduces the twin's figures beside a measurement (its scenario, machine,
/// HZ, build and simulated time), then the scenario's notes and the run's warnings.
pub(crate) fn write_twin_header(
    out: &mut impl std::io::Write,
    scenario: &Scenario,
    notes: &[String],
    report: &Report,
) -> std::io::Result<()> {
    writeln!(
        out,
        "\ntwin of this host: {} ({}, HZ={}, {:?}), {:.3} s simulated",
        scenario.name,
        scenario.machine.name,
        scenario.kernel.hz,
        scenario.kernel.nohz,
        report.seconds()
    )?;
    for n in notes.iter().chain(&report.warnings) {
        writeln!(out, "  {n}")?;
    }
    Ok(())
}

/// The twin's run of a measured workload: `workload` on the twin's CPUs for the measured
/// window, then every figure beside its measurement.
///
/// The workload is placed again on the twin's CPUs from its label (an unpinned group takes
/// the twin's default placement; a CPU the twin lacks is an input error), and the counted
/// groups keep the counts they were given ([`keep_counts`]): the label leaves them out.
pub(crate) fn beside(
    measured: &Report,
    workload: &Workload,
    scenario: &Scenario,
    histogram: Option<u32>,
) -> anyhow::Result<(Report, Vec<Row>)> {
    let mut s = scenario.clone();
    let nr = s.machine.topology.nr_cpus();
    let spec = workload.label();
    s.workload = Workload::parse(&spec, nr).map_err(|e| {
        input_error(format!(
            "--twin: workload {spec} on the twin's {nr} CPUs: {e}"
        ))
    })?;
    keep_counts(&mut s.workload, workload);
    // The run's coordinator polled at the rate its workload needs; the twin charges the same.
    ticklab_host::calibrate::harness_poll_for(&mut s, workload);
    // ... and woke on the CPUs the run counted, not spread evenly over all of them.
    ticklab_host::calibrate::harness_where_measured(&mut s, &measured.coordinator_wakeups);
    // The twin models the spinning barrier only: a futex job is run there spinning, and its
    // rows are not compared (`workload_rows` matches a bsp job by CPUs and barrier), while the
    // CPUs' rows still are.
    for g in &mut s.workload.groups {
        if let TaskGroup::Bsp { barrier, .. } = g {
            *barrier = Barrier::Spin;
        }
    }
    s.run.duration_ns = measured.duration_ns.max(1);
    // The PM QoS limit the run held, held in the twin too.
    s.kernel.cpu_dma_latency_us = measured.cpu_dma_latency_us;
    // A measured noise report is set beside the twin's: keep its noise accounting on.
    let twin = twin_report(&s, histogram, measured.noise.is_some())
        .map_err(|e| library_error_naming("--twin", e))?;
    let rows = compare_reports(measured, &twin, Bands::Host);
    Ok((twin, rows))
}

/// Gives the twin's counted groups (a syscall loop's calls, a ping-pong's round trips) the
/// counts of the same groups in `given`, group by group (both were parsed from one label, so
/// they come in one order). Without it the twin ran the parser's default count: a getpid
/// loop told to run for the whole window beside a hog (`syscall:getpid@0:n=1e11+hogs:1@1`)
/// ran its default 10 000 000 calls in the twin, about 1 s of a 10 s window, and the loop's
/// CPU idled for the rest where the host's stayed busy (issue 30).
pub(crate) fn keep_counts(twin: &mut Workload, given: &Workload) {
    debug_assert_eq!(
        twin.groups.len(),
        given.groups.len(),
        "one label, one group list"
    );
    for (t, g) in twin.groups.iter_mut().zip(&given.groups) {
        match (t, g) {
            (TaskGroup::Syscall { calls, .. }, TaskGroup::Syscall { calls: n, .. }) => *calls = *n,
            (
                TaskGroup::PingPong { round_trips, .. },
                TaskGroup::PingPong { round_trips: n, .. },
            ) => *round_trips = *n,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_twin_keeps_the_counts_the_label_leaves_out() {
        // (spec as given, the twin's count of its counted group)
        let table = [
            ("syscall:getpid@0:n=100000000000+hogs:1@1", 100_000_000_000),
            ("syscall:getpid@0", 10_000_000),
            ("pingpong:futex@0,1:n=200000", 200_000),
            ("hogs:1@1+pingpong:pipe@0,1:n=7", 7),
        ];
        for (spec, want) in table {
            let given = Workload::parse(spec, 2).expect("valid spec");
            let mut twin = Workload::parse(&given.label(), 2).expect("the label parses");
            keep_counts(&mut twin, &given);
            let got = twin.groups.iter().find_map(|g| match g {
                TaskGroup::Syscall { calls, .. } => Some(*calls),
                TaskGroup::PingPong { round_trips, .. } => Some(*round_trips),
                _ => None,
            });
            assert_eq!(got, Some(want), "{spec}");
        }
    }
}

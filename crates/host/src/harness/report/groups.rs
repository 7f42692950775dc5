//! The per-group part of a host run's report: each workload group's result (frame workers,
//! ping-pong, syscall loop, bsp job) from its threads' outputs, and the warnings a group's
//! own numbers call for. [`super::assemble`] wires them into the report.

use ticklab_schema::report::{
    FrameGroupReport, Percentiles, PingPongReport, SyscallReport, WorkloadResult,
};
use ticklab_schema::workload::{TaskGroup, Workload};

use super::super::error::HarnessError;
use super::super::frames::FrameWorkerOutput;
use super::super::pingpong::PingPongOutput;
use super::super::plan::RunConfig;
use super::super::sample::ExpectedBusy;
use super::super::stats::{LatencySummary, merged};
use super::super::stop::Stop;
use super::super::syscall::SyscallOutput;
use super::output::{
    FrameGroupDetails, FrameWorkerDetails, Output, WarningTopic, Warnings, seconds,
};

/// A hog that never got its thread is not in the group's list.
pub(super) fn drop_unspawned_hogs(hog_cpus: &mut [Vec<u32>], outputs: &[Vec<(u32, Output)>]) {
    for (list, outs) in hog_cpus.iter_mut().zip(outputs) {
        if !list.is_empty() {
            let ran: Vec<u32> = outs
                .iter()
                .filter(|(_, o)| matches!(o, Output::Hog | Output::Failed(_)))
                .map(|(cpu, _)| *cpu)
                .collect();
            if ran.len() < list.len() {
                *list = ran;
            }
        }
    }
}

/// What every group's result needs to know about the run.
#[derive(Clone, Copy)]
pub(super) struct GroupContext<'a> {
    pub(super) window_ns: u64,
    pub(super) memory_locked: Option<bool>,
    pub(super) stop: &'a Stop,
}

/// Each group's result (and, for frame groups, its details) from its threads' outputs, in
/// group order; the busy time each thread should account for goes into `expected`. The first
/// thread error fails the run.
#[allow(clippy::too_many_arguments)]
pub(super) fn group_results(
    workload: &Workload,
    config: &RunConfig,
    outputs: Vec<Vec<(u32, Output)>>,
    hog_cpus: &[Vec<u32>],
    ctx: GroupContext<'_>,
    expected: &mut ExpectedBusy,
    warnings: &mut Warnings,
) -> Result<(Vec<WorkloadResult>, Vec<FrameGroupDetails>), HarnessError> {
    let GroupContext {
        window_ns,
        memory_locked,
        stop,
    } = ctx;
    let mut results = Vec::new();
    let mut frame_details = Vec::new();

    for ((g, outs), hog_list) in workload.groups.iter().zip(outputs).zip(hog_cpus) {
        let mut first_error = None;
        let mut frame_outs = Vec::new();
        for (cpu, out) in outs {
            let out = match out {
                Output::Frame(r) => match *r {
                    Ok(f) => {
                        frame_outs.push(f);
                        continue;
                    }
                    Err(e) => Output::Failed(e),
                },
                other => other,
            };
            match out {
                Output::Hog => expected.add(cpu, window_ns),
                Output::Frame(_) => unreachable!("frame outputs are unpacked above"),
                Output::PingPong(Ok(p)) => {
                    results.push(pingpong_result(g, &p, stop, expected, warnings))
                }
                Output::Syscall(Ok(o)) => {
                    results.push(syscall_result(g, &o, stop, expected, warnings))
                }
                Output::Bsp(Ok(crate::harness::bsp::RankOutput::Report(b, elapsed_ns))) => {
                    results.push(bsp_result(g, *b, elapsed_ns, stop, expected, warnings))
                }
                Output::Bsp(Ok(crate::harness::bsp::RankOutput::Rank)) => {}
                Output::PingPong(Err(e))
                | Output::Syscall(Err(e))
                | Output::Bsp(Err(e))
                | Output::Failed(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        match g {
            TaskGroup::Hogs { .. } => results.push(WorkloadResult::Hogs {
                cpus: hog_list.clone(),
            }),
            TaskGroup::Frames {
                name,
                frequency_hz,
                loop_units,
                ..
            } => {
                for f in &frame_outs {
                    expected.add(f.cpu, f.stats.frames().saturating_mul(f.undisturbed_ns));
                    if let Some(text) = cut_warning(name, *frequency_hz, f, stop.is_set()) {
                        warnings.push(WarningTopic::Workload, text);
                    }
                    if f.stats.negative() > 0 {
                        warnings.push(WarningTopic::Workload, format!(
                            "frames {name} CPU {}: {} frames ran faster than the calibrated minimum (negative jitter)",
                            f.cpu,
                            f.stats.negative()
                        ));
                    }
                }
                let (report, details) = frame_group(
                    memory_locked,
                    name,
                    *frequency_hz,
                    *loop_units,
                    config.flier_threshold_us,
                    &frame_outs,
                );
                results.push(WorkloadResult::Frames(report));
                frame_details.push(details);
            }
            _ => {}
        }
    }
    Ok((results, frame_details))
}

/// A ping-pong group's result from its driver's output `p`, with the busy time both CPUs
/// should account for and a warning when the window ended first.
pub(super) fn pingpong_result(
    g: &TaskGroup,
    p: &PingPongOutput,
    stop: &Stop,
    expected: &mut ExpectedBusy,
    warnings: &mut Warnings,
) -> WorkloadResult {
    let TaskGroup::PingPong {
        method,
        cpu_a,
        cpu_b,
        round_trips,
    } = g
    else {
        unreachable!("ping-pong output from a ping-pong group")
    };
    expected.add(*cpu_a, p.elapsed_ns);
    expected.add(*cpu_b, p.elapsed_ns);
    if p.round_trips < *round_trips && !stop.is_set() {
        warnings.push(
            WarningTopic::Workload,
            format!(
                "{}: the window ended after {} of {round_trips} round trips",
                g.label(),
                p.round_trips
            ),
        );
    }
    let ns_per_round_trip = if p.round_trips > 0 {
        p.elapsed_ns as f64 / p.round_trips as f64
    } else {
        0.0
    };
    WorkloadResult::PingPong(PingPongReport {
        method: *method,
        cpus: (*cpu_a, *cpu_b),
        round_trips: p.round_trips,
        ns_per_switch: ns_per_round_trip / 2.0,
        ns_per_round_trip,
    })
}

/// A syscall group's result from its driver's output `o`, with the busy time its CPU should
/// account for and a warning when the window ended first.
pub(super) fn syscall_result(
    g: &TaskGroup,
    o: &SyscallOutput,
    stop: &Stop,
    expected: &mut ExpectedBusy,
    warnings: &mut Warnings,
) -> WorkloadResult {
    let TaskGroup::Syscall { cpu, calls } = g else {
        unreachable!("syscall output from a syscall group")
    };
    match cpu {
        Some(c) => expected.add(*c, o.elapsed_ns),
        None => expected.floating_ns += o.elapsed_ns,
    }
    if o.calls < *calls && !stop.is_set() {
        warnings.push(
            WarningTopic::Workload,
            format!(
                "{}: the window ended after {} of {calls} calls",
                g.label(),
                o.calls
            ),
        );
    }
    WorkloadResult::Syscall(SyscallReport {
        syscall: "getpid".into(),
        cpu: *cpu,
        calls: o.calls,
        ns_per_call: if o.calls > 0 {
            o.elapsed_ns as f64 / o.calls as f64
        } else {
            0.0
        },
        breakdown: None,
    })
}

/// A bsp group's result from rank 0's report `b` over `elapsed_ns`, with the busy time its
/// CPUs should account for (all of it for spinning ranks, the compute parts for sleeping ones)
/// and a warning when the window ended before `iters=`.
pub(super) fn bsp_result(
    g: &TaskGroup,
    b: ticklab_schema::bsp::BspReport,
    elapsed_ns: u64,
    stop: &Stop,
    expected: &mut ExpectedBusy,
    warnings: &mut Warnings,
) -> WorkloadResult {
    let TaskGroup::Bsp {
        iterations,
        barrier,
        ..
    } = g
    else {
        unreachable!("bsp output from a bsp group")
    };
    debug_assert_eq!(
        b.check(),
        Ok(()),
        "the host's bsp report keeps its invariants"
    );
    let busy = match barrier {
        ticklab_schema::workload::Barrier::Spin => elapsed_ns,
        ticklab_schema::workload::Barrier::Futex => b.iterations.saturating_mul(b.work_ns),
    };
    for &cpu in &b.cpus {
        expected.add(cpu, busy);
    }
    if let Some(k) = iterations
        && b.iterations < *k
        && !stop.is_set()
    {
        warnings.push(
            WarningTopic::Workload,
            format!(
                "{}: the window ended after {} of {k} iterations",
                g.label(),
                b.iterations
            ),
        );
    }
    WorkloadResult::Bsp(b)
}

/// What the end of the window did to a frame worker, for the warnings: `None` when every frame
/// due completed. After a stop the frames are counted the same way, and said to be stopped.
pub(super) fn cut_warning(
    group: &str,
    frequency_hz: f64,
    f: &FrameWorkerOutput,
    stopped: bool,
) -> Option<String> {
    let (cut, not_started) = (f.cut.cut, f.cut.not_started);
    if cut == 0 && not_started == 0 {
        return None;
    }
    let due = f.stats.frames() + cut + not_started;
    let by = if stopped {
        "the stop"
    } else {
        "the end of the window"
    };
    let mut text = format!(
        "frames {group} CPU {}: {} of {due} frames completed; {cut} cut by {by}, {not_started} never started",
        f.cpu,
        f.stats.frames()
    );
    let period_ns = 1e9 / frequency_hz;
    if !stopped && f.undisturbed_ns as f64 > period_ns {
        text += &format!(
            " (a frame's work, {} undisturbed, is longer than the {} frame period)",
            seconds(f.undisturbed_ns),
            seconds(period_ns.round() as u64)
        );
    }
    Some(text)
}

/// The frame table of one group, and its host-only details.
pub(super) fn frame_group(
    memory_locked: Option<bool>,
    name: &str,
    frequency_hz: f64,
    loop_units: u64,
    flier_threshold_us: f64,
    outs: &[FrameWorkerOutput],
) -> (FrameGroupReport, FrameGroupDetails) {
    let jitter = merged(outs.iter().map(|o| o.stats.jitter_histogram()));
    let wakeup = merged(outs.iter().map(|o| o.stats.wakeup_histogram()));
    let lock = match memory_locked {
        Some(true) => ", mlockall",
        Some(false) => ", mlockall refused",
        None => "",
    };
    let mut policies: Vec<String> = outs
        .iter()
        .map(|o| format!("{}{lock}", o.policy.describe()))
        .collect();
    policies.sort();
    policies.dedup();
    // Percentiles from the merged histograms; minimum and maximum exact, from the workers'
    // rows: the same numbers the frame table shows (one maximum per quantity), and the
    // percentiles kept between them.
    let mut wake_summary = LatencySummary::from_histogram(&wakeup);
    let worker_wakeups: Vec<LatencySummary> = outs
        .iter()
        .filter(|o| o.stats.frames() > 0)
        .map(|o| o.stats.wakeup_summary())
        .collect();
    if let Some(min) = worker_wakeups
        .iter()
        .map(|w| w.min_us)
        .min_by(f64::total_cmp)
    {
        wake_summary.min_us = min;
    }
    if let Some(max) = worker_wakeups
        .iter()
        .map(|w| w.max_us)
        .max_by(f64::total_cmp)
    {
        wake_summary.max_us = max;
    }
    let mut jitter_summary = LatencySummary::from_histogram(&jitter);
    let extremes: Vec<(i64, i64)> = outs
        .iter()
        .filter_map(|o| o.stats.jitter_extremes_ns())
        .collect();
    if let (Some(min), Some(max)) = (
        extremes.iter().map(|e| e.0).min(),
        extremes.iter().map(|e| e.1).max(),
    ) {
        jitter_summary.min_us = min as f64 / 1e3;
        jitter_summary.max_us = max as f64 / 1e3;
    }
    wake_summary.bound_percentiles();
    jitter_summary.bound_percentiles();
    let mut report = FrameGroupReport {
        jitter_histogram: None,
        group: name.to_string(),
        frequency_hz,
        loop_units,
        flier_threshold_us,
        rows: outs.iter().map(|o| o.stats.row(o.cpu)).collect(),
        p50_us: jitter_summary.p50_us,
        p99_us: jitter_summary.p99_us,
        p999_us: jitter_summary.p999_us,
        policy: (!policies.is_empty()).then(|| policies.join("; ")),
        wakeup: Some(Percentiles {
            p50_us: wake_summary.p50_us,
            p99_us: wake_summary.p99_us,
            p999_us: wake_summary.p999_us,
        }),
        histograms: outs
            .iter()
            .filter_map(|o| o.stats.histograms().cloned())
            .collect(),
    };
    report.bound_percentiles();
    let details = FrameGroupDetails {
        group: name.to_string(),
        wakeup: wake_summary,
        jitter: jitter_summary,
        workers: outs
            .iter()
            .map(|o| FrameWorkerDetails {
                cpu: o.cpu,
                ns_per_unit: o.calibration.ns_per_unit,
                undisturbed_us: o.undisturbed_ns as f64 / 1e3,
                policy: o.policy.describe(),
                negative_jitter_frames: o.stats.negative(),
                wakeup: o.stats.wakeup_summary(),
                frames_cut: o.cut.cut,
                frames_not_started: o.cut.not_started,
            })
            .collect(),
    };
    (report, details)
}

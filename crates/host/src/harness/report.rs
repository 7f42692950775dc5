//! Report assembly: what the threads of a run hand back (`Output`) and the start and end
//! snapshots become one [`HostRun`] — the shared [`Report`] plus the host-only [`RunDetails`].
//!
//! Per group, in workload order: hogs become the list of their CPUs; frame workers' tables
//! are merged into one [`FrameGroupReport`] with its host-only [`FrameGroupDetails`];
//! ping-pong and syscall loops become ns per round trip / per call. Around them: per-CPU
//! interrupts, busy time and idle residency from the snapshots ([`super::sample`]),
//! contamination (CPU time nobody asked for), energy where RAPL exists, HZ, and warnings.
//!
//! Every warning carries a `WarningTopic`, so a caller that wants only some of them (host
//! calibrate drops the energy ones) filters by topic, never by the warning's words.

use ticklab_cmdline::KernelCmdline;
use ticklab_schema::report::{
    Contamination, CpuReport, EnergyReport, REPORT_SCHEMA_VERSION, Report, Source,
};
use ticklab_schema::workload::{TaskGroup, Workload};

use super::error::HarnessError;
use super::os;
use super::plan::RunConfig;
use super::sample::{self, ExpectedBusy, Snapshot};
use super::stop::Stop;
use super::watchdog::{WATCHDOG_GRACE_NS, WatchdogOutcome};

mod groups;
mod output;
use groups::*;
pub use output::{
    FrameGroupDetails, FrameWorkerDetails, HostRun, MIN_RATE_WINDOW_NS, RunDetails, WatchdogDetails,
};
pub(crate) use output::{Output, Warning, WarningTopic, WindowEnd};
use output::{Warnings, seconds};

/// What the coordinator measured and collected, for [`assemble`].
pub(crate) struct AssembleInput<'a> {
    /// The snapshot taken when the gate opened.
    pub(crate) start: Snapshot,
    /// The snapshot taken after every thread was joined.
    pub(crate) end: Snapshot,
    /// The start of the window.
    pub(crate) t0: u64,
    /// How the window ended.
    pub(crate) ended: WindowEnd,
    /// `outputs[i]` = the threads of group `i`, with their CPU.
    pub(crate) outputs: Vec<Vec<(u32, Output)>>,
    /// `hog_cpus[i]` = the CPUs of group `i`'s hogs (empty for other groups).
    pub(crate) hog_cpus: Vec<Vec<u32>>,
    /// Whether `mlockall` succeeded (None when not attempted).
    pub(crate) memory_locked: Option<bool>,
    /// Why memory was not locked, when it was not.
    pub(crate) memory_note: Option<String>,
    /// What the watchdog did (`None`: no frame workers, no watchdog).
    pub(crate) watchdog: Option<WatchdogOutcome>,
    /// What the workload did not get and went on without: threads of hogs and frame groups
    /// that could not be spawned, a bsp job's blame left unnamed (no trace), as warnings.
    pub(crate) skipped: Vec<String>,
    /// The `/dev/cpu_dma_latency` limit held during the run, µs.
    pub(crate) cpu_dma_latency_us: Option<u32>,
    /// Where the coordinator woke after each poll ([`Report::coordinator_wakeups`]).
    pub(crate) coordinator_wakeups: Vec<ticklab_schema::report::CpuWakeups>,
    /// The kernel threads' runs in the window ([`Report::kthread_runs`]).
    pub(crate) kthread_runs: Vec<ticklab_schema::report::KthreadRuns>,
    /// The run's stop flag (set when it was interrupted).
    pub(crate) stop: &'a Stop,
}

/// Builds the [`HostRun`] of a finished (or interrupted) run, and its warnings with their
/// topics (the report's `warnings` are their texts, in the same order). The first error of
/// any thread fails the whole run.
// Over 100 lines: see the comment inside (the parts are functions; the rest is the literal).
pub(crate) fn assemble(
    workload: &Workload,
    config: &RunConfig,
    usable: &[u32],
    input: AssembleInput<'_>,
) -> Result<(HostRun, Vec<Warning>), HarnessError> {
    // About 110 lines: each part is a function of its own (group_results, run_warnings,
    // cpu_figures, kernel_facts); what is left is their wiring and the report's literal.
    let AssembleInput {
        start,
        end,
        t0,
        ended,
        outputs,
        mut hog_cpus,
        memory_locked,
        memory_note,
        watchdog,
        skipped,
        cpu_dma_latency_us,
        coordinator_wakeups,
        kthread_runs,
        stop,
    } = input;
    drop_unspawned_hogs(&mut hog_cpus, &outputs);
    let window_ns = end.at_ns.saturating_sub(start.at_ns);
    let requested_ns = config.duration_ns();
    // The start snapshot precedes t0 and the coordinator sleeps to t0 + duration: a window
    // that elapsed covers the request.
    debug_assert!(
        ended != WindowEnd::Elapsed || window_ns >= requested_ns,
        "an elapsed window of {window_ns} ns is shorter than the {requested_ns} ns requested"
    );
    let mut warnings = Warnings::default();
    let mut expected = ExpectedBusy::default();
    let (results, frame_details) = group_results(
        workload,
        config,
        outputs,
        &hog_cpus,
        GroupContext {
            window_ns,
            memory_locked,
            stop,
        },
        &mut expected,
        &mut warnings,
    )?;

    let interrupted = stop.reason().map(|r| r.name());
    let short_window = short_window(
        workload,
        ended,
        interrupted.as_deref(),
        window_ns,
        requested_ns,
    );
    run_warnings(
        RunEnd {
            memory_locked,
            memory_note: memory_note.as_deref(),
            skipped: &skipped,
            watchdog,
            ended,
            short_window: short_window.as_deref(),
            interrupted: interrupted.as_deref(),
            window_ns,
            t0,
        },
        config,
        &mut warnings,
    );
    let (cpus, energy, contamination) =
        cpu_figures(&start, &end, usable, &expected, window_ns, &mut warnings);

    let (hostname, kernel) = os::uname();
    let (cmdline, hz) = kernel_facts(&start, &end, &mut warnings);
    let run = HostRun {
        report: Report {
            schema_version: REPORT_SCHEMA_VERSION,
            source: Source::Host {
                hostname: hostname.clone(),
                kernel,
            },
            label: workload.label(),
            machine: hostname,
            cmdline,
            hz,
            duration_ns: window_ns,
            cpus,
            energy,
            messages: Vec::new(),
            timekeeping: None,
            hrtimer: None,
            locks: None,
            background: Vec::new(),
            workloads: results,
            noise: None,
            warnings: warnings.texts(),
            cpu_dma_latency_us,
            contamination,
            coordinator_wakeups,
            kthread_runs,
        },
        host_run: RunDetails {
            interrupted,
            requested_duration_ns: requested_ns,
            short_window,
            memory_locked,
            pingpong_mode: config.pingpong_mode.name().into(),
            frame_groups: frame_details,
            watchdog: watchdog.map(|w| WatchdogDetails {
                fifo_priority: w.priority,
                demoted: w.demoted,
            }),
            cpu_dma_latency_us,
        },
    };
    debug_assert_eq!(run.report.warnings.len(), warnings.0.len());
    Ok((run, warnings.0))
}

/// How a run ended, for [`run_warnings`].
struct RunEnd<'a> {
    memory_locked: Option<bool>,
    memory_note: Option<&'a str>,
    skipped: &'a [String],
    watchdog: Option<WatchdogOutcome>,
    ended: WindowEnd,
    short_window: Option<&'a str>,
    interrupted: Option<&'a str>,
    window_ns: u64,
    t0: u64,
}

/// The warnings about the run as a whole: memory not locked, threads skipped, the watchdog's
/// demotions, a window cut short or too short for rates, and (first) an interruption.
fn run_warnings(end: RunEnd<'_>, config: &RunConfig, warnings: &mut Warnings) {
    let RunEnd {
        memory_locked,
        memory_note,
        skipped,
        watchdog,
        ended,
        short_window,
        interrupted,
        window_ns,
        t0,
    } = end;
    if memory_locked == Some(false) {
        warnings.push(
            WarningTopic::Memory,
            format!(
                "{}: frame workers may take page faults",
                memory_note.unwrap_or("mlockall not permitted")
            ),
        );
    }
    for s in skipped {
        warnings.push(WarningTopic::Workload, s.clone());
    }
    if let Some(w) = watchdog
        && w.demoted > 0
    {
        warnings.push(
            WarningTopic::Workload,
            format!(
                "the watchdog switched {} frame worker(s) from SCHED_FIFO to SCHED_OTHER: they \
                 ran {:.1} s past the end of the window or the stop",
                w.demoted,
                WATCHDOG_GRACE_NS as f64 / 1e9
            ),
        );
    }
    if ended == WindowEnd::CountsDone
        && let Some(why) = short_window
    {
        warnings.push(
            WarningTopic::CountsDone,
            format!(
                "window {} of {} requested: {why}; the duration only caps counted groups",
                seconds(window_ns),
                seconds(config.duration_ns())
            ),
        );
    }
    if window_ns < MIN_RATE_WINDOW_NS {
        warnings.push(
            WarningTopic::ShortWindow,
            format!(
                "the window lasted {}, under {} ms: per-second rates (LOC/s, busy %) rest on a \
                 handful of events and are unreliable",
                seconds(window_ns),
                MIN_RATE_WINDOW_NS / 1_000_000
            ),
        );
    }
    if let Some(why) = interrupted {
        warnings.0.insert(
            0,
            Warning {
                topic: WarningTopic::Interrupted,
                text: format!(
                    "interrupted by {why} after {:.3} s of {:.3} s: partial results",
                    os::now_ns().saturating_sub(t0) as f64 / 1e9,
                    config.duration.as_secs_f64()
                ),
            },
        );
    }
}

/// Per-CPU reports between the two snapshots, the contamination check, and the package's
/// energy, with their warnings.
fn cpu_figures(
    start: &Snapshot,
    end: &Snapshot,
    usable: &[u32],
    expected: &ExpectedBusy,
    window_ns: u64,
    warnings: &mut Warnings,
) -> (Vec<CpuReport>, Option<EnergyReport>, Vec<Contamination>) {
    let nohz_full: Vec<u32> = std::fs::read_to_string("/sys/devices/system/cpu/nohz_full")
        .ok()
        .and_then(|t| ticklab_cmdline::parse_cpulist(t.trim(), 1 << 16).ok())
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    let cpus = sample::cpu_reports(start, end, usable, &nohz_full);
    let ns_per_tick = sample::ns_per_user_tick();
    let mut contamination = Vec::new();
    match (&start.stat, &end.stat) {
        (Some(s), Some(e)) => {
            let times = sample::cpu_times(s, e, ns_per_tick);
            contamination = sample::contamination(&times, expected, window_ns, ns_per_tick);
            for c in &contamination {
                warnings.push(WarningTopic::Contamination, c.text());
            }
        }
        _ => warnings.push(
            WarningTopic::Unreadable,
            "/proc/stat unreadable: busy time and contamination not checked",
        ),
    }
    if start.interrupts.is_none() || end.interrupts.is_none() {
        warnings.push(
            WarningTopic::Unreadable,
            "/proc/interrupts unreadable: interrupt counts are zero",
        );
    }
    let busy_sum: f64 = cpus
        .iter()
        .filter_map(|c| c.busy_ns)
        .map(|b| b as f64 / window_ns.max(1) as f64)
        .sum();
    let energy = match (start.energy_uj, end.energy_uj) {
        (Some(a), Some(b)) => {
            let max = std::fs::read_to_string(format!("{}/max_energy_range_uj", sample::RAPL_ZONE))
                .ok()
                .and_then(|t| t.trim().parse().ok());
            let e = sample::energy_between(a, b, max, window_ns, busy_sum);
            if e.is_some() {
                warnings.push(
                    WarningTopic::Energy,
                    "package_idle_fraction is a lower bound (1 − Σ CPU busy fraction), not a package C-state counter",
                );
            }
            e
        }
        _ => {
            warnings.push(
                WarningTopic::Energy,
                format!(
                    "no RAPL package counter ({}/energy_uj): energy not measured",
                    sample::RAPL_ZONE
                ),
            );
            None
        }
    };
    (cpus, energy, contamination)
}

/// The kernel's part of `/proc/cmdline` and HZ from the two snapshots, with their warnings.
fn kernel_facts(start: &Snapshot, end: &Snapshot, warnings: &mut Warnings) -> (String, u32) {
    // The report's command line is the kernel's: what follows a bare `--` goes to init and
    // is not a kernel parameter (docs/kernel-behaviour.md §4.9).
    let cmdline = std::fs::read_to_string("/proc/cmdline")
        .map(|s| KernelCmdline::split_init_args(&s).0.to_string())
        .unwrap_or_default();
    let skew_tick = match skew_tick(&cmdline) {
        Ok(on) => on,
        Err(e) => {
            warnings.push(
                WarningTopic::Hz,
                format!("/proc/cmdline not understood ({e}): skew_tick taken as off for HZ"),
            );
            false
        }
    };
    let hz = sample::hz_between(start, end, skew_tick);
    if hz.hz.is_none() {
        warnings.push(
            WarningTopic::Hz,
            format!("HZ unknown (reported as 0): {}", hz.basis),
        );
    }
    let hz = hz.hz.unwrap_or(0);
    (cmdline, hz)
}

/// Why a window of `window_ns` is shorter than the `requested_ns` asked for, or `None` when it
/// covers the request. A stopped run is always short (`interrupted by <why>`), even if the
/// stop came after the duration elapsed; so is any window below the request, whatever ended it.
fn short_window(
    workload: &Workload,
    ended: WindowEnd,
    interrupted: Option<&str>,
    window_ns: u64,
    requested_ns: u64,
) -> Option<String> {
    match ended {
        WindowEnd::Stopped => Some(format!(
            "interrupted by {}",
            interrupted.unwrap_or("a failed start")
        )),
        _ if window_ns >= requested_ns => None,
        WindowEnd::CountsDone => {
            let counted: Vec<String> = workload
                .groups
                .iter()
                .filter(|g| super::plan::is_counted(g))
                .map(TaskGroup::label)
                .collect();
            Some(format!(
                "the counted groups finished first ({})",
                counted.join(", ")
            ))
        }
        WindowEnd::Elapsed => Some("the window ended early for no known reason".into()),
    }
}

/// Whether the boot line turns on `skew_tick` (any non-zero value does: per-CPU tick offsets,
/// so tick alignment may only compare a CPU with itself).
/// The line is read with the running release's grammar (`uname -r`).
pub(crate) fn skew_tick(cmdline: &str) -> Result<bool, ticklab_cmdline::CmdlineError> {
    let release = os::uname().1;
    let line = KernelCmdline::parse_for_release(cmdline, os::possible_cpu_count(), Some(&release))?;
    Ok(line.skew_tick.is_some_and(|s| s != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_window_always_has_a_reason() {
        let w = Workload::parse("syscall:getpid@0:n=1000+pingpong:pipe@0,1:n=5", 2).unwrap();
        let idle = Workload::default();
        let s = 1_000_000_000;
        // (workload, how it ended, interruption, window, requested, reason)
        type Case<'a> = (
            &'a Workload,
            WindowEnd,
            Option<&'a str>,
            u64,
            u64,
            Option<&'a str>,
        );
        let table: [Case<'_>; 6] = [
            (&idle, WindowEnd::Elapsed, None, s + 3, s, None),
            (&w, WindowEnd::Elapsed, None, s, s, None),
            (&w, WindowEnd::CountsDone, None, s + 1, s, None),
            (
                &w,
                WindowEnd::CountsDone,
                None,
                3_000_000,
                s,
                Some("the counted groups finished first (syscall:getpid@0, pingpong:pipe@0,1)"),
            ),
            (
                &idle,
                WindowEnd::Stopped,
                Some("SIGINT"),
                5,
                s,
                Some("interrupted by SIGINT"),
            ),
            (
                &idle,
                WindowEnd::Elapsed,
                None,
                5,
                s,
                Some("the window ended early for no known reason"),
            ),
        ];
        for (i, (w, ended, why, window, requested, want)) in table.into_iter().enumerate() {
            let got = short_window(w, ended, why, window, requested);
            assert_eq!(got.as_deref(), want, "case {i}");
        }
        assert_eq!(seconds(595_434), "0.595 ms");
        assert_eq!(seconds(5_000_123_000), "5.000 s");
    }

    #[test]
    fn skew_tick_is_on_for_any_non_zero_value() {
        // (boot line, skew_tick on)
        for (line, on) in [
            ("", false),
            ("quiet", false),
            ("skew_tick=1", true),
            ("ro skew_tick=2 quiet", true),
            ("skew_tick=-1", true),
            ("skew_tick=0", false),
            ("BOOT_IMAGE=/vmlinuz skew_tick=1 nohz_full=1", true),
        ] {
            assert_eq!(skew_tick(line).unwrap(), on, "{line:?}");
        }
        assert!(skew_tick("skew_tick=yes").is_err());
    }
}

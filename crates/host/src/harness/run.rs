//! The orchestrator: validate a workload, start every group's threads together, keep the
//! window, stop, collect, and assemble one [`Report`].
//!
//! Timeline of a run:
//!
//! ```text
//! spawn threads ─ each pins, sets its policy, calibrates ─ gate (ready)
//!   main: snapshot /proc, t0 = now + 2 ms ─ gate (go) ─ all groups run from t0
//!   window: hogs and frames run for the duration; counted groups (ping-pong, syscall) run to
//!           their count — if nothing time-based runs, the window ends when they finish, and
//!           the duration is then only a cap
//!   end: window_over is raised, threads are joined, snapshot /proc again
//! ```
//!
//! A [`Stop`] (Ctrl-C, SIGTERM or [`Stop::request`]) ends every loop early; the report is then
//! built from what was measured and says so in [`RunDetails::interrupted`] and in its warnings.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use ticklab_schema::report::{
    FrameGroupReport, PingPongReport, REPORT_SCHEMA_VERSION, Report, Source, SyscallReport,
    WorkloadResult,
};
use ticklab_schema::workload::{PingPongMethod, TaskGroup, Workload};

use super::frames::{self, FramePlan, FrameWorkerOutput};
use super::hogs;
use super::os;
use super::pingpong::{self, PingPongMode, PingPongPlan};
use super::sample::{self, ExpectedBusy, Snapshot};
use super::stats::{LatencySummary, merged, percentile_ns};
use super::stop::Stop;
use super::syscall;
use super::{HarnessError, os_error};
use ticklab_schema::frames::FrameClock;

/// How often the coordinator thread wakes while timed workloads (hogs, frames) run: it only
/// watches for the end of the window and for a stop request (a signal also interrupts its
/// sleep). Its wake-ups land on the measured CPUs, so this is deliberately coarse (10/s).
pub const COORDINATOR_POLL_NS: u64 = 100_000_000;
/// How often it wakes while a counted workload (ping-pong, syscall loop) may finish early.
pub const COORDINATOR_POLL_COUNTED_NS: u64 = 5_000_000;

/// Highest frame rate a frame group may ask for.
pub const MAX_FRAME_HZ: f64 = 100_000.0;

/// Time between the go signal and the first frame, so every worker is asleep before t0.
const LEAD_NS: u64 = 2_000_000;

/// Start line shared by all threads of a run: each worker calls [`Gate::wait`] once when it is
/// set up, and gets t0 when the coordinator opens the gate.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<(usize, Option<u64>)>,
    changed: Condvar,
}

impl Gate {
    /// Called by workers: "I am ready"; returns t0 once the coordinator has set it.
    pub(crate) fn wait(&self) -> u64 {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0 += 1;
        self.changed.notify_all();
        loop {
            if let Some(t0) = st.1 {
                return t0;
            }
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Called by the coordinator: waits until `workers` threads are ready, runs `at_start`
    /// (the snapshot), then releases everyone with t0 = now + lead.
    fn open(&self, workers: usize, at_start: impl FnOnce() -> Snapshot) -> (Snapshot, u64) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.0 < workers {
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        let snap = at_start();
        let t0 = os::now_ns() + LEAD_NS;
        st.1 = Some(t0);
        self.changed.notify_all();
        (snap, t0)
    }
}

/// How to run a workload on this host.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// Window length for hogs and frames; a cap for counted groups.
    pub duration: Duration,
    /// Frames with jitter strictly above this are fliers, µs.
    pub flier_threshold_us: f64,
    /// SCHED_FIFO priority for frame workers; `None` to use timer slack 1 ns only.
    pub fifo_priority: Option<i32>,
    /// `mlockall` when a frame group runs (if permitted).
    pub lock_memory: bool,
    /// Ping-pong side B as a process or a thread.
    pub pingpong_mode: PingPongMode,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            duration: Duration::from_secs(10),
            flier_threshold_us: 10.0,
            fifo_priority: Some(50),
            lock_memory: true,
            pingpong_mode: PingPongMode::Processes,
        }
    }
}

/// Host-only details of a frame worker that the shared report has no field for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameWorkerDetails {
    /// CPU.
    pub cpu: u32,
    /// Calibrated minimum cost of one work unit, ns.
    pub ns_per_unit: f64,
    /// Undisturbed frame duration (LOOP × ns_per_unit), µs.
    pub undisturbed_us: f64,
    /// Scheduling policy this worker got.
    pub policy: String,
    /// Frames whose jitter came out below zero (work ran faster than calibrated).
    pub negative_jitter_frames: u64,
    /// Wake-up latency of this worker.
    pub wakeup: LatencySummary,
}

/// Host-only details of a frame group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameGroupDetails {
    /// Group name.
    pub group: String,
    /// Wake-up latency (wake − frame start) over all workers.
    pub wakeup: LatencySummary,
    /// Jitter over all workers.
    pub jitter: LatencySummary,
    /// Per worker.
    pub workers: Vec<FrameWorkerDetails>,
}

/// What the shared schema has no field for (yet): interruption, calibration, wake-up latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDetails {
    /// `Some("SIGINT")` etc. when the run was stopped early; the report is then partial.
    pub interrupted: Option<String>,
    /// The duration asked for, ns.
    pub requested_duration_ns: u64,
    /// Whether `mlockall` succeeded (None when not attempted).
    pub memory_locked: Option<bool>,
    /// Ping-pong side B: `processes` or `threads`.
    pub pingpong_mode: String,
    /// Frame groups, in workload order.
    pub frame_groups: Vec<FrameGroupDetails>,
}

/// A finished (or interrupted) host run: the shared [`Report`] plus host-only details.
///
/// Serialises as the report's JSON with one extra top-level key, `host_run`, so anything that
/// reads a [`Report`] reads this too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRun {
    /// The shared report.
    #[serde(flatten)]
    pub report: Report,
    /// Host-only details.
    pub host_run: RunDetails,
}

/// Checks a workload against this host before anything starts: every CPU online and allowed,
/// frame rates in (0, 100 kHz], counts above zero. Errors are [`HarnessError::Input`].
pub fn validate(workload: &Workload, config: &RunConfig) -> Result<Vec<u32>, HarnessError> {
    let input = |m: String| Err(HarnessError::Input(m));
    let allowed = os::allowed_cpus().map_err(|e| os_error("sched_getaffinity", e))?;
    let usable = match os::online_cpus() {
        Some(online) => online.intersection(&allowed),
        None => allowed,
    };
    let usable_list = usable.to_cpulist();
    let check = |cpu: u32, group: &TaskGroup| {
        if usable.contains(cpu) {
            Ok(())
        } else {
            Err(HarnessError::Input(format!(
                "workload {}: CPU {cpu} is not online or not allowed for this process (usable CPUs: {usable_list})",
                group.label()
            )))
        }
    };
    if config.duration.is_zero() {
        return input("duration: must be longer than zero".into());
    }
    if !(config.flier_threshold_us >= 0.0 && config.flier_threshold_us.is_finite()) {
        return input(format!(
            "flier threshold: expected a non-negative number of µs, found {}",
            config.flier_threshold_us
        ));
    }
    if let Some(p) = config.fifo_priority
        && !(1..=99).contains(&p)
    {
        return input(format!("SCHED_FIFO priority: expected 1–99, found {p}"));
    }
    for g in &workload.groups {
        match g {
            TaskGroup::Hogs { count, cpus } => {
                if *count == 0 {
                    return input(format!("workload {}: zero hogs", g.label()));
                }
                if let Some(c) = cpus {
                    for cpu in c.iter() {
                        check(cpu, g)?;
                    }
                }
            }
            TaskGroup::Frames {
                frequency_hz, cpus, ..
            } => {
                if !(*frequency_hz > 0.0 && *frequency_hz <= MAX_FRAME_HZ) {
                    return input(format!(
                        "workload {}: frame rate {frequency_hz} Hz is outside (0, {MAX_FRAME_HZ}] Hz",
                        g.label()
                    ));
                }
                if cpus.is_empty() {
                    return input(format!(
                        "workload {}: no CPUs for the frame workers",
                        g.label()
                    ));
                }
                for cpu in cpus.iter() {
                    check(cpu, g)?;
                }
            }
            TaskGroup::PingPong {
                cpu_a,
                cpu_b,
                round_trips,
                ..
            } => {
                if *round_trips == 0 {
                    return input(format!("workload {}: zero round trips (n=0)", g.label()));
                }
                check(*cpu_a, g)?;
                check(*cpu_b, g)?;
            }
            TaskGroup::Syscall { cpu, calls } => {
                if *calls == 0 {
                    return input(format!("workload {}: zero calls (n=0)", g.label()));
                }
                if let Some(c) = cpu {
                    check(*c, g)?;
                }
            }
        }
    }
    Ok(usable.iter().collect())
}

/// What one spawned thread returns.
enum Output {
    Hog,
    Frame(Box<Result<FrameWorkerOutput, HarnessError>>),
    PingPong(Result<pingpong::PingPongOutput, HarnessError>),
    Syscall(Result<syscall::SyscallOutput, HarnessError>),
    Failed(HarnessError),
}

/// Runs `workload` on this host and returns its report.
///
/// The calling thread coordinates (it sleeps through the window); every group gets its own
/// pinned threads. `stop` ends the run early with a partial, marked report.
pub fn run_workload(
    workload: &Workload,
    config: &RunConfig,
    stop: &Stop,
) -> Result<HostRun, HarnessError> {
    let usable = validate(workload, config)?;
    let duration_ns = config.duration.as_nanos() as u64;
    let flier_ns = (config.flier_threshold_us * 1e3).round() as i64;

    // Where every thread goes; explicit placements first, so default hogs can avoid them.
    let mut taken: Vec<u32> = Vec::new();
    for g in &workload.groups {
        match g {
            TaskGroup::Hogs { cpus: Some(c), .. } | TaskGroup::Frames { cpus: c, .. } => {
                taken.extend(c.iter())
            }
            TaskGroup::PingPong { cpu_a, cpu_b, .. } => taken.extend([*cpu_a, *cpu_b]),
            TaskGroup::Syscall { cpu: Some(c), .. } => taken.push(*c),
            _ => {}
        }
    }
    // Default placements also avoid each other, group by group.
    let mut hog_cpus: Vec<Vec<u32>> = Vec::new();
    for g in &workload.groups {
        let placed: Vec<u32> = match g {
            TaskGroup::Hogs { cpus: Some(c), .. } => c.iter().collect(),
            TaskGroup::Hogs { count, cpus: None } => {
                let p = hogs::default_placement(*count, &usable, &taken);
                taken.extend(&p);
                p
            }
            _ => Vec::new(),
        };
        hog_cpus.push(placed);
    }

    let has_frames = workload
        .groups
        .iter()
        .any(|g| matches!(g, TaskGroup::Frames { .. }));
    let timed = workload
        .groups
        .iter()
        .any(|g| matches!(g, TaskGroup::Frames { .. } | TaskGroup::Hogs { .. }));
    let counted = workload
        .groups
        .iter()
        .any(|g| matches!(g, TaskGroup::PingPong { .. } | TaskGroup::Syscall { .. }));
    // The coordinator's own wake-ups are load on the machine being measured: poll coarsely
    // unless it must notice a counted workload finishing.
    let poll_ns = if counted {
        COORDINATOR_POLL_COUNTED_NS
    } else {
        COORDINATOR_POLL_NS
    };
    let memory_locked = (has_frames && config.lock_memory).then(|| os::lock_memory().is_ok());

    let gate = Gate::default();
    let window_over = Stop::new();
    let abort = Stop::new();
    let counted_left = AtomicU64::new(
        workload
            .groups
            .iter()
            .filter(|g| matches!(g, TaskGroup::PingPong { .. } | TaskGroup::Syscall { .. }))
            .count() as u64,
    );

    let (start, t0, outputs, end, spawn_error) = std::thread::scope(|s| {
        let (gate, window_over, abort, counted_left) = (&gate, &window_over, &abort, &counted_left);
        // handles[i] = the threads of group i, with their CPU.
        type Job<'a> = Box<dyn FnOnce() -> Output + Send + 'a>;
        let mut handles: Vec<Vec<(u32, std::thread::ScopedJoinHandle<'_, Output>)>> = Vec::new();
        let mut spawned = 0usize;
        let mut spawn_error = None;
        for (g, hog_list) in workload.groups.iter().zip(&hog_cpus) {
            let mut jobs: Vec<(u32, String, Job<'_>)> = Vec::new();
            match g {
                TaskGroup::Hogs { .. } => {
                    for &cpu in hog_list {
                        jobs.push((
                            cpu,
                            format!("ticklab-hog-cpu{cpu}"),
                            Box::new(move || match hogs::hog(cpu, gate, stop, window_over) {
                                Ok(_) => Output::Hog,
                                Err(e) => Output::Failed(e),
                            }),
                        ));
                    }
                }
                TaskGroup::Frames {
                    name,
                    frequency_hz,
                    loop_units,
                    cpus,
                } => {
                    let plan = FramePlan {
                        frequency_hz: *frequency_hz,
                        loop_units: *loop_units,
                        frames: FrameClock::new(*frequency_hz).frames_in(duration_ns),
                        flier_threshold_ns: flier_ns,
                        fifo_priority: config.fifo_priority,
                    };
                    for cpu in cpus.iter() {
                        jobs.push((
                            cpu,
                            format!("ticklab-frames-{name}-cpu{cpu}"),
                            Box::new(move || {
                                Output::Frame(Box::new(frames::worker(
                                    cpu, plan, gate, stop, abort,
                                )))
                            }),
                        ));
                    }
                }
                TaskGroup::PingPong {
                    method,
                    cpu_a,
                    cpu_b,
                    round_trips,
                } => {
                    let plan = PingPongPlan {
                        method: *method,
                        cpu_a: *cpu_a,
                        cpu_b: *cpu_b,
                        round_trips: *round_trips,
                        mode: config.pingpong_mode,
                    };
                    jobs.push((
                        *cpu_a,
                        format!("ticklab-ping-cpu{cpu_a}"),
                        Box::new(move || {
                            let r = pingpong::driver(plan, gate, stop, window_over);
                            counted_left.fetch_sub(1, Ordering::AcqRel);
                            Output::PingPong(r)
                        }),
                    ));
                }
                TaskGroup::Syscall { cpu, calls } => {
                    let (cpu, calls) = (*cpu, *calls);
                    jobs.push((
                        cpu.unwrap_or(u32::MAX),
                        "ticklab-syscall".into(),
                        Box::new(move || {
                            let r = syscall::driver(cpu, calls, gate, stop, window_over);
                            counted_left.fetch_sub(1, Ordering::AcqRel);
                            Output::Syscall(r)
                        }),
                    ));
                }
            }
            let mut mine = Vec::new();
            for (cpu, name, job) in jobs {
                if spawn_error.is_some() {
                    break;
                }
                match std::thread::Builder::new().name(name).spawn_scoped(s, job) {
                    Ok(h) => {
                        spawned += 1;
                        mine.push((cpu, h));
                    }
                    Err(e) => spawn_error = Some(os_error("spawning a harness thread", e)),
                }
            }
            handles.push(mine);
        }
        if spawn_error.is_some() {
            // Release the threads that did start straight into a stopped run.
            abort.request();
            window_over.request();
        }
        let (start, t0) = gate.open(spawned, Snapshot::take);
        let end_at = t0 + duration_ns;
        while spawn_error.is_none() {
            let now = os::now_ns();
            if stop.is_set()
                || now >= end_at
                || (!timed && counted_left.load(Ordering::Acquire) == 0)
            {
                break;
            }
            os::sleep_until((now + poll_ns).min(end_at));
        }
        window_over.request();
        let outputs: Vec<Vec<(u32, Output)>> = handles
            .into_iter()
            .map(|group| {
                group
                    .into_iter()
                    .map(|(cpu, h)| {
                        let out = h.join().unwrap_or_else(|_| {
                            Output::Failed(HarnessError::Panicked(format!("thread for CPU {cpu}")))
                        });
                        (cpu, out)
                    })
                    .collect()
            })
            .collect();
        (start, t0, outputs, Snapshot::take(), spawn_error)
    });
    if memory_locked == Some(true) {
        os::unlock_memory();
    }
    if let Some(e) = spawn_error {
        return Err(e);
    }
    assemble(
        workload,
        config,
        &usable,
        AssembleInput {
            start,
            end,
            t0,
            outputs,
            hog_cpus,
            memory_locked,
            stop,
        },
    )
}

struct AssembleInput<'a> {
    start: Snapshot,
    end: Snapshot,
    t0: u64,
    outputs: Vec<Vec<(u32, Output)>>,
    hog_cpus: Vec<Vec<u32>>,
    memory_locked: Option<bool>,
    stop: &'a Stop,
}

fn assemble(
    workload: &Workload,
    config: &RunConfig,
    usable: &[u32],
    input: AssembleInput<'_>,
) -> Result<HostRun, HarnessError> {
    let AssembleInput {
        start,
        end,
        t0,
        outputs,
        hog_cpus,
        memory_locked,
        stop,
    } = input;
    let window_ns = end.at_ns.saturating_sub(start.at_ns);
    let mut warnings = Vec::new();
    let mut results = Vec::new();
    let mut frame_details = Vec::new();
    let mut expected = ExpectedBusy::default();

    for ((g, outs), hog_list) in workload.groups.iter().zip(outputs).zip(&hog_cpus) {
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
                        warnings.push(format!(
                            "{}: the window ended after {} of {round_trips} round trips",
                            g.label(),
                            p.round_trips
                        ));
                    }
                    let ns_per_round_trip = if p.round_trips > 0 {
                        p.elapsed_ns as f64 / p.round_trips as f64
                    } else {
                        0.0
                    };
                    results.push(WorkloadResult::PingPong(PingPongReport {
                        method: match method {
                            PingPongMethod::Futex => "futex".into(),
                            PingPongMethod::Pipe => "pipe".into(),
                        },
                        cpus: (*cpu_a, *cpu_b),
                        round_trips: p.round_trips,
                        ns_per_switch: ns_per_round_trip / 2.0,
                        ns_per_round_trip,
                    }));
                }
                Output::Syscall(Ok(o)) => {
                    let TaskGroup::Syscall { cpu, calls } = g else {
                        unreachable!("syscall output from a syscall group")
                    };
                    match cpu {
                        Some(c) => expected.add(*c, o.elapsed_ns),
                        None => expected.floating_ns += o.elapsed_ns,
                    }
                    if o.calls < *calls && !stop.is_set() {
                        warnings.push(format!(
                            "{}: the window ended after {} of {calls} calls",
                            g.label(),
                            o.calls
                        ));
                    }
                    results.push(WorkloadResult::Syscall(SyscallReport {
                        syscall: "getpid".into(),
                        cpu: *cpu,
                        calls: o.calls,
                        ns_per_call: if o.calls > 0 {
                            o.elapsed_ns as f64 / o.calls as f64
                        } else {
                            0.0
                        },
                    }));
                }
                Output::PingPong(Err(e)) | Output::Syscall(Err(e)) | Output::Failed(e) => {
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
                    expected.add(f.cpu, f.stats.frames() * f.undisturbed_ns);
                    if f.stats.negative() > 0 {
                        warnings.push(format!(
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

    if memory_locked == Some(false) {
        warnings.push("mlockall not permitted: frame workers may take page faults".into());
    }
    let interrupted = stop.reason().map(|r| r.name());
    if let Some(why) = &interrupted {
        warnings.insert(
            0,
            format!(
                "interrupted by {why} after {:.3} s of {:.3} s: partial results",
                os::now_ns().saturating_sub(t0) as f64 / 1e9,
                config.duration.as_secs_f64()
            ),
        );
    }

    let nohz_full: Vec<u32> = std::fs::read_to_string("/sys/devices/system/cpu/nohz_full")
        .ok()
        .and_then(|t| ticklab_cmdline::parse_cpulist(t.trim(), 1 << 16).ok())
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    let cpus = sample::cpu_reports(&start, &end, usable, &nohz_full);
    let ns_per_tick = sample::ns_per_user_tick();
    match (&start.stat, &end.stat) {
        (Some(s), Some(e)) => {
            let times = sample::cpu_times(s, e, ns_per_tick);
            warnings.extend(sample::contamination_warnings(
                &times,
                &expected,
                window_ns,
                ns_per_tick,
            ));
        }
        _ => warnings.push("/proc/stat unreadable: busy time and contamination not checked".into()),
    }
    if start.interrupts.is_none() || end.interrupts.is_none() {
        warnings.push("/proc/interrupts unreadable: interrupt counts are zero".into());
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
                    "package_idle_fraction is a lower bound (1 − Σ CPU busy fraction), not a package C-state counter".into(),
                );
            }
            e
        }
        _ => {
            warnings.push(format!(
                "no RAPL package counter ({}/energy_uj): energy not measured",
                sample::RAPL_ZONE
            ));
            None
        }
    };

    let (hostname, kernel) = os::uname();
    let cmdline = std::fs::read_to_string("/proc/cmdline")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let hz = sample::hz_between(
        &start,
        &end,
        cmdline.split_whitespace().any(|w| w == "skew_tick=1"),
    );
    if hz.hz.is_none() {
        warnings.push(format!("HZ unknown (reported as 0): {}", hz.basis));
    }
    let hz = hz.hz.unwrap_or(0);
    Ok(HostRun {
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
            warnings,
        },
        host_run: RunDetails {
            interrupted,
            requested_duration_ns: config.duration.as_nanos() as u64,
            memory_locked,
            pingpong_mode: config.pingpong_mode.name().into(),
            frame_groups: frame_details,
        },
    })
}

/// The frame table of one group, and its host-only details.
fn frame_group(
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
    let q = |p| percentile_ns(&jitter, p) as f64 / 1e3;
    let mut wake_summary = LatencySummary::from_histogram(&wakeup);
    if let Some(min) = outs
        .iter()
        .filter(|o| o.stats.frames() > 0)
        .map(|o| o.stats.wakeup_summary().min_us)
        .min_by(f64::total_cmp)
    {
        wake_summary.min_us = min;
    }
    let report = FrameGroupReport {
        group: name.to_string(),
        frequency_hz,
        loop_units,
        flier_threshold_us,
        rows: outs.iter().map(|o| o.stats.row(o.cpu)).collect(),
        p50_us: q(50.0),
        p99_us: q(99.0),
        p999_us: q(99.9),
        policy: (!policies.is_empty()).then(|| policies.join("; ")),
    };
    let details = FrameGroupDetails {
        group: name.to_string(),
        wakeup: wake_summary,
        jitter: LatencySummary::from_histogram(&jitter),
        workers: outs
            .iter()
            .map(|o| FrameWorkerDetails {
                cpu: o.cpu,
                ns_per_unit: o.calibration.ns_per_unit,
                undisturbed_us: o.undisturbed_ns as f64 / 1e3,
                policy: o.policy.describe(),
                negative_jitter_frames: o.stats.negative(),
                wakeup: o.stats.wakeup_summary(),
            })
            .collect(),
    };
    (report, details)
}

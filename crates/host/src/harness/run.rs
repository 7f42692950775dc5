//! The orchestrator: start every group's threads together, keep the window, stop, collect,
//! and hand everything to [`report::assemble`](super::report) for one [`HostRun`].
//!
//! Timeline of a run:
//!
//! ```text
//! validate, place (plan.rs)
//! spawn threads ─ each pins, sets its policy, calibrates ─ gate (ready)
//!   main: snapshot /proc, t0 = now + 2 ms ─ gate (go) ─ all groups run from t0
//!   window: hogs and frames run for the duration; counted groups (ping-pong, syscall) run to
//!           their count — if only counted groups run, the window ends when they finish, and
//!           the duration is then only a cap (the report says the window was cut, and why);
//!           an idle workload (no group) sleeps through the whole duration like a timed one
//!   end: window_over is raised, threads are joined, snapshot /proc again
//! assemble the report (report.rs)
//! ```
//!
//! A [`Stop`] (Ctrl-C, SIGTERM or [`Stop::request`]) ends every loop early; the report is then
//! built from what was measured and says so in
//! [`RunDetails::interrupted`](super::RunDetails::interrupted) and in its warnings.

use std::sync::atomic::{AtomicU64, Ordering};

use ticklab_schema::frames::FrameClock;
use ticklab_schema::report::count_wakeup;
use ticklab_schema::workload::{TaskGroup, Workload};

use super::bsp::{self, BspBarrier, RankOutput};
use super::bsp_blame;
use super::error::{HarnessError, os_error};
use super::frames::{self, FramePlan};
use super::gate::Gate;
use super::hogs;
use super::kthreads::Kthreads;
use super::os;
use super::pingpong::{self, PingPongPlan};
use super::plan::{RunConfig, hog_placement, is_counted, validate};
use super::pm_qos::CpuDmaLatency;
use super::report::{AssembleInput, HostRun, Output, Warning, WindowEnd, assemble};
use super::sample::Snapshot;
use super::stop::Stop;
use super::syscall;
use super::watchdog::Watchdog;

/// How often the coordinator thread wakes while timed workloads (hogs, frames) run: it only
/// watches for the end of the window and for a stop request (a signal also interrupts its
/// sleep). Its wake-ups land on the measured CPUs, so this is deliberately coarse (10/s).
pub const COORDINATOR_POLL_NS: u64 = 100_000_000;
/// How often it wakes while a counted workload (ping-pong, syscall loop) may finish early.
pub const COORDINATOR_POLL_COUNTED_NS: u64 = 5_000_000;

/// The coordinator's poll period during `workload`: [`COORDINATOR_POLL_COUNTED_NS`] when a
/// counted group (ping-pong, syscall loop, bsp job with `iters=`) may finish before the window
/// ends, else [`COORDINATOR_POLL_NS`]. The one rule for the run and for the twins that charge
/// its wake-ups (of this host, of a guest).
pub fn coordinator_poll_ns(workload: &Workload) -> u64 {
    if workload.groups.iter().any(is_counted) {
        COORDINATOR_POLL_COUNTED_NS
    } else {
        COORDINATOR_POLL_NS
    }
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
    run_with_warnings(workload, config, stop).map(|(run, _)| run)
}

/// [`run_workload`], also returning the report's warnings with their topics.
///
/// Long (about 200 lines) on purpose: the coordinator's one `std::thread::scope`, in which the
/// watchdog and every worker are spawned, the gate opened, the window waited for and the
/// threads joined, all borrowing the scope; each group's jobs ([`group_jobs`]), the joins
/// ([`join_all`]) and the report ([`assemble`]) are their own functions.
pub(crate) fn run_with_warnings(
    workload: &Workload,
    config: &RunConfig,
    stop: &Stop,
) -> Result<(HostRun, Vec<Warning>), HarnessError> {
    let usable = validate(workload, config)?;
    let duration_ns = config.duration_ns();
    let hog_cpus = hog_placement(workload, &usable);

    let has_frames = workload
        .groups
        .iter()
        .any(|g| matches!(g, TaskGroup::Frames { .. }));
    let timed = workload.groups.iter().any(|g| !is_counted(g));
    let counted = workload.groups.iter().any(is_counted);
    // Only a run made of counted groups alone may end before the duration: idle (no group at
    // all) and anything with hogs or frames keep the whole window.
    let counted_only = counted && !timed;
    debug_assert!(
        !counted_only || !workload.is_idle(),
        "idle has no counted group"
    );
    // The coordinator's own wake-ups are load on the machine being measured: poll coarsely
    // unless it must notice a counted workload finishing.
    let poll_ns = coordinator_poll_ns(workload);
    // Held from before the threads start to after they are joined; dropped on every path.
    let pm_qos = config
        .cpu_dma_latency_us
        .map(CpuDmaLatency::hold)
        .transpose()?;
    let memory_lock = (has_frames && config.lock_memory).then(os::lock_memory);
    let memory_locked = memory_lock.as_ref().map(Result::is_ok);
    let memory_note = memory_lock.and_then(Result::err).map(|e| e.to_string());

    let gate = Gate::default();
    let dog = Watchdog::default();
    // With frame workers (the only SCHED_FIFO threads) the watchdog runs and takes the
    // signals: block them here, before any thread of the run exists (they inherit the mask).
    let saved_mask = has_frames.then(os::block_stop_signals);
    let window_over = Stop::new();
    let abort = Stop::new();
    let counted_left =
        AtomicU64::new(workload.groups.iter().filter(|g| is_counted(g)).count() as u64);
    // Each bsp group's barrier, allocated before any thread starts (index: group).
    let barriers: Vec<Option<BspBarrier>> = workload
        .groups
        .iter()
        .map(|g| match g {
            TaskGroup::Bsp {
                cpus,
                work_ns,
                iterations,
                barrier,
                ..
            } => Some(BspBarrier::new(
                &cpus.iter().collect::<Vec<u32>>(),
                *work_ns,
                *iterations,
                *barrier,
            )),
            _ => None,
        })
        .collect();

    // The ranks' CPUs traced for the blame (docs/noise.md, "The host lab"), before any thread.
    let blame_trace = bsp_blame::start(workload, config.duration);

    let scoped = std::thread::scope(|s| {
        let (gate, window_over, abort, counted_left) = (&gate, &window_over, &abort, &counted_left);
        let dog = &dog;
        // Spawned first, so it holds the signals before any worker starts; it learns the
        // window's end when the gate opens.
        let watchdog = if has_frames {
            let priority = config.fifo_priority.map(|p| (p + 1).min(99));
            match std::thread::Builder::new()
                .name("ticklab-watchdog".into())
                .spawn_scoped(s, move || dog.run(priority, stop))
            {
                Ok(h) => Some(h),
                Err(e) => {
                    return Err(os_error("spawning the watchdog thread", e));
                }
            }
        } else {
            None
        };
        let mut skipped: Vec<String> = Vec::new();
        let shared = Shared {
            gate,
            stop,
            window_over,
            abort,
            counted_left,
            dog,
        };
        // handles[i] = the threads of group i, with their CPU.
        let mut handles: Vec<Vec<(u32, std::thread::ScopedJoinHandle<'_, Output>)>> = Vec::new();
        let mut spawned = 0usize;
        let mut spawn_error = None;
        for ((g, hog_list), job) in workload.groups.iter().zip(&hog_cpus).zip(&barriers) {
            let jobs = group_jobs(g, hog_list, job.as_ref(), config, &shared);
            // Hogs and frame workers are one thread per CPU: a run may go on without some
            // of them when the system is out of threads (EAGAIN: RLIMIT_NPROC, memory), with
            // a warning; a counted group is one thread and cannot.
            let optional = matches!(g, TaskGroup::Hogs { .. } | TaskGroup::Frames { .. });
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
                    Err(e) if optional && e.kind() == std::io::ErrorKind::WouldBlock => {
                        skipped.push(format!(
                            "{} CPU {cpu}: no thread ({e}); the group ran without it",
                            g.label()
                        ));
                    }
                    Err(e) => spawn_error = Some(os_error("spawning a harness thread", e)),
                }
            }
            if optional && mine.is_empty() && spawn_error.is_none() {
                spawn_error = Some(HarnessError::Os {
                    what: format!("spawning any thread of {}", g.label()),
                    source: std::io::Error::from(std::io::ErrorKind::WouldBlock),
                });
            }
            handles.push(mine);
        }
        if spawn_error.is_some() {
            // Release the threads that did start straight into a stopped run.
            abort.request();
            window_over.request();
        }
        // The kernel threads are read outside the window: before the start snapshot, after
        // the end one.
        let ((kthreads_start, start), t0) =
            gate.open(spawned, || (Kthreads::take(), Snapshot::take()));
        let end_at = t0.saturating_add(duration_ns);
        dog.set_window_end(end_at);
        // Where each poll woke this thread, as the kernel says (the VM lab's twin places the
        // coordinator there); a row per CPU, made on its first wake-up there.
        let mut coordinator_wakeups = Vec::new();
        let ended = loop {
            let seen = dog.coordinator.generation();
            if spawn_error.is_some() || stop.is_set() {
                break WindowEnd::Stopped;
            }
            let now = os::now_ns();
            if now >= end_at {
                break WindowEnd::Elapsed;
            }
            if counted_only && counted_left.load(Ordering::Acquire) == 0 {
                break WindowEnd::CountsDone;
            }
            // Woken early by the watchdog when it takes a signal, or by a signal here.
            dog.coordinator
                .wait_until(seen, (now + poll_ns).min(end_at));
            if let Some(cpu) = os::current_cpu() {
                count_wakeup(&mut coordinator_wakeups, cpu);
            }
        };
        window_over.request();
        let outputs = join_all(handles);
        let end = Snapshot::take();
        let kthread_runs = Kthreads::take().runs_since(&kthreads_start);
        dog.finish();
        let watchdog = watchdog.map(|h| h.join().unwrap_or_default());
        Ok((
            start,
            t0,
            outputs,
            end,
            ended,
            spawn_error,
            watchdog,
            skipped,
            coordinator_wakeups,
            kthread_runs,
        ))
    });
    if let Some(mask) = saved_mask {
        // A signal that arrived after the watchdog ended is delivered here, to the handler.
        os::restore_signal_mask(mask);
    }
    if memory_locked == Some(true) {
        os::unlock_memory();
    }
    let cpu_dma_latency_us = pm_qos.map(|held| held.us);
    let (
        start,
        t0,
        mut outputs,
        end,
        ended,
        spawn_error,
        watchdog,
        mut skipped,
        coordinator_wakeups,
        kthread_runs,
    ) = scoped?;
    if let Some(e) = spawn_error {
        return Err(e);
    }
    if let Some(why) = name_bsp_blame(blame_trace, &barriers, &mut outputs) {
        skipped.push(why);
    }
    assemble(
        workload,
        config,
        &usable,
        AssembleInput {
            start,
            end,
            t0,
            ended,
            outputs,
            hog_cpus,
            memory_locked,
            memory_note,
            watchdog,
            skipped,
            cpu_dma_latency_us,
            coordinator_wakeups,
            kthread_runs,
            stop,
        },
    )
}

/// Replaces each bsp group's report in `outputs` by one whose late iterations are blamed on
/// the traced sources; returns why not when the ranks' CPUs could not be traced (the blame's
/// class then stays unknown).
fn name_bsp_blame(
    trace: Option<Result<bsp_blame::BlameTrace, bsp_blame::BlameUnnamed>>,
    barriers: &[Option<BspBarrier>],
    outputs: &mut [Vec<(u32, Output)>],
) -> Option<String> {
    let reports = match trace?.and_then(|t| t.finish(barriers)) {
        Ok(r) => r,
        Err(why) => {
            return Some(format!(
                "bsp blame: sources not named ({why}): the class of each late iteration's \
                 blame is unknown"
            ));
        }
    };
    for (group, report) in outputs.iter_mut().zip(reports) {
        let Some(report) = report else { continue };
        for (_, out) in group.iter_mut() {
            if let Output::Bsp(Ok(RankOutput::Report(b, _))) = out {
                **b = report.clone();
            }
        }
    }
    None
}

/// A job of the run: one thread's work, returning its output.
type Job<'a> = Box<dyn FnOnce() -> Output + Send + 'a>;

/// What every thread of a run shares with the coordinator.
#[derive(Clone, Copy)]
struct Shared<'a> {
    gate: &'a Gate,
    stop: &'a Stop,
    window_over: &'a Stop,
    abort: &'a Stop,
    counted_left: &'a AtomicU64,
    dog: &'a Watchdog,
}

/// The threads of group `g` (its hogs on `hog_list`, its barrier `job` if a bsp group), each
/// with its CPU and thread name.
// Over 100 lines because it is one match over the group kinds, each arm building that kind's
// threads (hogs, frame workers, ping-pong pair, syscall loop, bsp ranks) from the shared state.
fn group_jobs<'a>(
    g: &'a TaskGroup,
    hog_list: &'a [u32],
    job: Option<&'a BspBarrier>,
    config: &'a RunConfig,
    shared: &Shared<'a>,
) -> Vec<(u32, String, Job<'a>)> {
    let Shared {
        gate,
        stop,
        window_over,
        abort,
        counted_left,
        dog,
    } = *shared;
    let duration_ns = config.duration_ns();
    let flier_ns = (config.flier_threshold_us * 1e3).round() as i64;
    let mut jobs: Vec<(u32, String, Job<'a>)> = Vec::new();
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
            // The frames that start inside the window: at least frame 0, since
            // validate refused a zero window.
            let frames = FrameClock::new(*frequency_hz).frames_in(duration_ns);
            debug_assert!(frames >= 1, "a validated window holds frame 0");
            let plan = FramePlan {
                frequency_hz: *frequency_hz,
                loop_units: *loop_units,
                frames,
                window_ns: duration_ns,
                flier_threshold_ns: flier_ns,
                fifo_priority: config.fifo_priority,
                histogram_us: config.histogram_us,
            };
            for cpu in cpus.iter() {
                jobs.push((
                    cpu,
                    format!("ticklab-frames-{name}-cpu{cpu}"),
                    Box::new(move || {
                        Output::Frame(Box::new(frames::worker(cpu, plan, gate, stop, abort, dog)))
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
        TaskGroup::Bsp { iterations, .. } => {
            let job = job.expect("run_with_warnings makes a barrier for every bsp group");
            let counted = iterations.is_some();
            for (r, &cpu) in job.cpus().iter().enumerate() {
                jobs.push((
                    cpu,
                    format!("ticklab-bsp-rank{r}"),
                    Box::new(move || {
                        let out = bsp::rank(job, r as u32, gate, stop, window_over);
                        if counted && r == 0 {
                            counted_left.fetch_sub(1, Ordering::AcqRel);
                        }
                        Output::Bsp(out)
                    }),
                ));
            }
        }
    }
    jobs
}

/// Every thread's output, group by group; a thread that panicked is a failed output.
fn join_all(
    handles: Vec<Vec<(u32, std::thread::ScopedJoinHandle<'_, Output>)>>,
) -> Vec<Vec<(u32, Output)>> {
    handles
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
        .collect()
}

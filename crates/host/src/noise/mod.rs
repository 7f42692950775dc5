//! `host noise`: what the kernel takes from a busy, pinned task, per CPU and per source, with
//! rtla osnoise's definitions (docs/noise.md).
//!
//! [`run_noise`] starts a private tracefs instance when it can (root, tracefs, the sampler's
//! trace clock), reads `/proc/interrupts`, `/proc/softirqs` and `/proc/stat`, runs one
//! sampler per CPU (`sampler`) from one start line for the window (or until the [`Stop`]
//! is set: the report is then partial and says so), reads the counters again, and attributes
//! the detours (`attribution`): by the trace's events inside each detour, or without a
//! trace by per-CPU count deltas. It returns the shared [`Report`] with
//! [`Report::noise`] filled, and the host-only [`HostNoiseDetails`].
//!
//! Map: `sampler.rs` (the loop and its clock), `attribution.rs` (events → runs → sources),
//! this file (the orchestration and the report).

pub(crate) mod attribution;
pub(crate) mod sampler;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use ticklab_cmdline::KernelCmdline;
use ticklab_schema::histogram::{DEFAULT_HISTOGRAM_US, LatencyHistogram};
use ticklab_schema::host_noise::{DetourRecord, HostNoiseCpu, HostNoiseDetails, LONGEST_KEPT};
use ticklab_schema::noise::{CpuNoise, NoiseMethod, NoiseReport};
use ticklab_schema::report::{Report, Source};

use crate::harness::error::HarnessError;
use crate::harness::os;
use crate::harness::placement::CpuPlacement;
use crate::harness::sample::{self, ExpectedBusy, Snapshot};
use crate::harness::stop::Stop;
use crate::probe::tracefs::{TraceError, TraceSession};
use crate::procfs::{Interrupts, parse_interrupts};

use attribution::{
    Detour, SoftirqContext, attribute, count_events, from_count_deltas, runs_from_trace,
    trace_events,
};
use sampler::{Clock, ClockPair, Live, SamplerOutput, SamplerSpec, ns_per_count};

/// What to measure.
#[derive(Debug, Clone)]
pub struct NoiseConfig {
    /// The CPUs to sample, one thread each.
    pub cpus: Vec<u32>,
    /// The window.
    pub duration: Duration,
    /// Gaps above this are detours, ns.
    pub threshold_ns: u64,
    /// SCHED_FIFO priority of the samplers, if asked.
    pub fifo_priority: Option<i32>,
    /// Whether to attribute with tracefs when possible (else count deltas only).
    pub trace: bool,
    /// Whether to mlockall when permitted.
    pub lock_memory: bool,
}

/// A measured noise run.
#[derive(Debug, Clone)]
pub struct HostNoise {
    /// The shared report; [`Report::noise`] is `Some`.
    pub report: Report,
    /// The host-only rest.
    pub details: HostNoiseDetails,
    /// Each CPU's detours (start and length, ns from its sampler's first read), for the
    /// trace file, with the sources inside each; at most `sampler::MAX_KEPT` per CPU.
    pub detours: Vec<CpuDetours>,
}

/// One CPU's detours, for `--trace`.
#[derive(Debug, Clone)]
pub struct CpuDetours {
    /// The CPU.
    pub cpu: u32,
    /// The sampler's first read, ns on `CLOCK_MONOTONIC_RAW`.
    pub start_ns: u64,
    /// The detours, in order.
    pub detours: Vec<DetourRecord>,
}

/// Checks a request against this host before anything runs (bad input).
pub fn validate(config: &NoiseConfig) -> Result<(), HarnessError> {
    if config.cpus.is_empty() {
        return Err(HarnessError::Input("-c: no CPU to sample".into()));
    }
    if config.threshold_ns == 0 {
        return Err(HarnessError::Input(
            "--threshold 0: expected at least 1 ns (a gap above it is a detour)".into(),
        ));
    }
    if let Some(p) = config.fifo_priority
        && !(1..=99).contains(&p)
    {
        return Err(HarnessError::Input(format!(
            "--priority {p}: expected a SCHED_FIFO priority from 1 to 99"
        )));
    }
    let placement = CpuPlacement::live();
    for &cpu in &config.cpus {
        placement
            .check(cpu)
            .map_err(|e| HarnessError::Input(format!("-c: {e}")))?;
    }
    if config.duration < Duration::from_millis(10) {
        return Err(HarnessError::Input(format!(
            "-D {:?}: expected at least 10ms",
            config.duration
        )));
    }
    Ok(())
}

/// Why a run is not traced (it falls back to count deltas; a bsp job's blame stays unnamed).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoTrace {
    /// `--no-trace`.
    #[error("tracing not asked for (--no-trace)")]
    NotAsked,
    /// The trace instance did not start (not root, no tracefs, no such events).
    #[error(transparent)]
    Start(#[from] TraceError),
    /// The instance runs on another trace clock than the samplers' (named).
    #[error(
        "the trace clock {clock} is missing, so trace times and the sampler's cannot be matched"
    )]
    ClockMissing {
        /// The trace clock the samplers' clock needs.
        clock: &'static str,
    },
}

/// Starts tracing for the samplers' clock; `Err` says why the run falls back to count deltas.
fn start_trace(config: &NoiseConfig, clock: Clock) -> Result<TraceSession, NoTrace> {
    if !config.trace {
        return Err(NoTrace::NotAsked);
    }
    trace_sources(&config.cpus, config.duration, clock)
}

/// Starts a private tracefs instance recording the events [`attribution::runs_from_trace`]
/// reads on `cpus`, for about `duration`, with the trace clock whose timestamps are `clock`'s
/// readings (host noise's samplers, and the bsp ranks' blame: `harness::bsp_blame`). `Err`
/// says why not (not root, no tracefs, no such trace clock).
pub(crate) fn trace_sources(
    cpus: &[u32],
    duration: Duration,
    clock: Clock,
) -> Result<TraceSession, NoTrace> {
    let events = trace_events();
    let names: Vec<&str> = events.iter().map(String::as_str).collect();
    // About 100 bytes per event, a few thousand events per second on a busy CPU.
    let kb = (duration.as_secs().saturating_mul(512)).clamp(4096, 131_072) as u32;
    let session = TraceSession::start_with_clock(&names, kb, Some(cpus), &[clock.trace_clock()])?;
    if session.clock != clock.trace_clock() {
        return Err(NoTrace::ClockMissing {
            clock: clock.trace_clock(),
        });
    }
    Ok(session)
}

/// Whether this kernel is PREEMPT_RT: `/sys/kernel/realtime` reads 1 (the RT patch set and
/// mainline since PREEMPT_RT was merged), or the version string says so (`uname -v`).
fn preempt_rt() -> bool {
    let flag = std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|t| t.trim() == "1");
    flag || std::fs::read_to_string("/proc/sys/kernel/version")
        .is_ok_and(|v| v.split_whitespace().any(|w| w == "PREEMPT_RT"))
}

impl SoftirqContext {
    /// The context of the running kernel's softirqs: in threads on PREEMPT_RT.
    pub(crate) fn of_this_kernel() -> SoftirqContext {
        if preempt_rt() {
            SoftirqContext::InThreads
        } else {
            SoftirqContext::Own
        }
    }
}

/// `/proc/interrupts`, parsed.
fn read_interrupts() -> Option<Interrupts> {
    let t = std::fs::read_to_string("/proc/interrupts").ok()?;
    parse_interrupts(&t).ok()
}

/// `/proc/softirqs`, parsed by the `/proc/interrupts` parser (same layout).
fn read_softirqs() -> Option<Interrupts> {
    let t = std::fs::read_to_string("/proc/softirqs").ok()?;
    parse_interrupts(&t).ok()
}

/// One sampled CPU's totals so far, as [`run_noise`] reports them once a second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuNoiseSoFar {
    /// The CPU.
    pub cpu: u32,
    /// Detours so far.
    pub detours: u64,
    /// Their summed length, us.
    pub noise_us: f64,
    /// The longest, us.
    pub max_us: f64,
}

/// What [`run_noise`] reports about once a second while its samplers run.
#[derive(Debug, Clone, PartialEq)]
pub struct NoiseSoFar {
    /// Time since the samplers started.
    pub elapsed: Duration,
    /// The window asked for.
    pub window: Duration,
    /// Each sampled CPU, in the configuration's order.
    pub cpus: Vec<CpuNoiseSoFar>,
}

/// Runs the samplers and attributes their detours (module docs). `progress` gets the totals
/// so far about once a second.
pub fn run_noise(
    config: &NoiseConfig,
    stop: &Stop,
    progress: &mut dyn FnMut(&NoiseSoFar),
) -> Result<HostNoise, HarnessError> {
    validate(config)?;
    let clock = Clock::native();
    let mut warnings: Vec<String> = Vec::new();
    let trace = start_trace(config, clock);
    let method_note = trace.as_ref().err().map(|e| {
        format!(
            "no tracefs attribution ({e}): sources from /proc/interrupts and /proc/softirqs deltas"
        )
    });
    let memory = lock_memory(config);
    let w = sample_window(config, clock, stop, progress)?;
    let interrupted = stop.reason().map(|r| r.name());
    let npc = ns_per_count(w.begin, w.finish).unwrap_or(w.npc0);
    let clock_text = clock_words(clock, npc);
    let (trace_text, overruns) = read_trace_once(trace, &mut warnings);
    let softirqs = SoftirqContext::of_this_kernel();
    let method = if trace_text.is_some() {
        NoiseMethod::Tracefs
    } else {
        NoiseMethod::CountDeltas
    };

    let ns_per_tick = sample::ns_per_user_tick();
    let times = match (&w.start.stat, &w.end.stat) {
        (Some(s), Some(e)) => Some(sample::cpu_times(s, e, ns_per_tick)),
        _ => None,
    };
    let window_ns = w.end.at_ns.saturating_sub(w.start.at_ns);
    let inputs = AttributionInputs {
        npc,
        trace_text: trace_text.as_deref(),
        softirqs,
        window: &w,
        times: times.as_ref(),
    };
    let mut cpus = Vec::new();
    let mut cpu_details = Vec::new();
    let mut all_detours = Vec::new();
    for o in &w.outputs {
        let (c, details, detours) = attribute_cpu(o, &inputs, &mut warnings);
        cpus.push(c);
        cpu_details.push(details);
        all_detours.push(detours);
    }

    // The contamination warnings of `host run`: each sampler explains its whole CPU.
    if let Some(t) = &times {
        let mut expected = ExpectedBusy::default();
        for &cpu in &config.cpus {
            expected.add(cpu, window_ns);
        }
        warnings.extend(sample::contamination_warnings(
            t,
            &expected,
            window_ns,
            ns_per_tick,
        ));
    } else {
        warnings.push("/proc/stat unreadable: contamination and steal not checked".into());
    }
    if let Some(why) = &interrupted {
        warnings.insert(
            0,
            format!(
                "interrupted by {why} after {:.3} s of {:.3} s: partial results",
                w.t0.elapsed().as_secs_f64(),
                config.duration.as_secs_f64()
            ),
        );
    }
    let report = host_report(config, &w, window_ns, method, cpus, warnings);
    Ok(HostNoise {
        report,
        details: HostNoiseDetails {
            clock: clock_text,
            method_note,
            softirqs_in_threads: softirqs == SoftirqContext::InThreads,
            interrupted,
            memory,
            trace_overruns: overruns,
            cpus: cpu_details,
        },
        detours: all_detours,
    })
}

/// What the sampled window left: every sampler's output and the readings that bracket it.
struct SampledWindow {
    /// The clock's ns per count measured over 20 ms before the start.
    npc0: f64,
    /// /proc/softirqs before and after.
    soft_start: Option<Interrupts>,
    soft_end: Option<Interrupts>,
    /// /proc/interrupts before and after (the LOC cross-check's window).
    irq_start: Option<Interrupts>,
    irq_end: Option<Interrupts>,
    /// The loop clock just before and after the two /proc/interrupts readings.
    loc_from: u64,
    loc_to: u64,
    /// The /proc/stat and clock snapshots around the run.
    start: Snapshot,
    end: Snapshot,
    begin: ClockPair,
    finish: ClockPair,
    /// When the samplers were released.
    t0: std::time::Instant,
    /// One per sampled CPU, in the configuration's order.
    outputs: Vec<SamplerOutput>,
}

/// Spawns a pinned sampler per CPU, releases them together, reports progress a second until
/// the window ends or a stop, joins them and takes the closing readings (and unlocks memory).
fn sample_window(
    config: &NoiseConfig,
    clock: Clock,
    stop: &Stop,
    progress: &mut dyn FnMut(&NoiseSoFar),
) -> Result<SampledWindow, HarnessError> {
    // The clock's rate before the start, for the threshold and the window in counts.
    let pre = ClockPair::now(clock);
    std::thread::sleep(Duration::from_millis(20));
    let pre_end = ClockPair::now(clock);
    let npc0 = ns_per_count(pre, pre_end).unwrap_or(1.0);
    let threshold_counts = (config.threshold_ns as f64 / npc0).floor().max(1.0) as u64;
    let window_counts = (config.duration.as_nanos() as f64 / npc0) as u64;

    let soft_start = read_softirqs();
    let start = Snapshot::take();
    let begin = ClockPair::now(clock);
    let barrier = Arc::new(Barrier::new(config.cpus.len() + 1));
    let saved = os::block_stop_signals();
    let mut handles = Vec::new();
    let mut lives = Vec::new();
    for &cpu in &config.cpus {
        let spec = SamplerSpec {
            cpu,
            clock,
            threshold_counts,
            window_counts,
            fifo: config.fifo_priority,
        };
        let (b, s) = (barrier.clone(), stop.clone());
        let live = Arc::new(Live::default());
        lives.push((cpu, live.clone()));
        let h = std::thread::Builder::new()
            .name(format!("noise-{cpu}"))
            .spawn(move || sampler::sample(&spec, &b, &s, &live))
            .map_err(|e| crate::harness::error::os_error("spawn a sampler thread", e))?;
        handles.push(h);
    }
    os::restore_signal_mask(saved);
    // The LOC cross-check's window: these two clock reads bracket the two readings.
    let loc_from = clock.read();
    let irq_start = read_interrupts();
    barrier.wait();
    let t0 = std::time::Instant::now();
    coordinate(config, stop, t0, &lives, npc0, progress);
    if stop.is_set() {
        stop.request();
    }
    let mut outputs: Vec<SamplerOutput> = Vec::new();
    let mut failures = Vec::new();
    for (h, &cpu) in handles.into_iter().zip(&config.cpus) {
        match h.join() {
            Ok(Ok(o)) => outputs.push(o),
            Ok(Err(e)) => failures.push(e),
            Err(_) => return Err(HarnessError::Panicked(format!("sampler on CPU {cpu}"))),
        }
    }
    let irq_end = read_interrupts();
    let loc_to = clock.read();
    let finish = ClockPair::now(clock);
    let end = Snapshot::take();
    let soft_end = read_softirqs();
    if config.lock_memory {
        os::unlock_memory();
    }
    if let Some(e) = failures.into_iter().next() {
        return Err(e);
    }
    Ok(SampledWindow {
        npc0,
        soft_start,
        soft_end,
        irq_start,
        irq_end,
        loc_from,
        loc_to,
        start,
        end,
        begin,
        finish,
        t0,
        outputs,
    })
}

/// Locks the process's memory when asked (page faults would be noise of ticklab's own), and
/// says how that went.
fn lock_memory(config: &NoiseConfig) -> String {
    if config.lock_memory {
        match os::lock_memory() {
            Ok(()) => "locked (mlockall)".to_string(),
            Err(why) => why.to_string(),
        }
    } else {
        "not locked (--no-mlock)".to_string()
    }
}

/// The clock the samplers read, with its rate over the run for the TSC.
fn clock_words(clock: Clock, npc: f64) -> String {
    match clock {
        Clock::Tsc => format!(
            "{}, {:.3} MHz (CLOCK_MONOTONIC_RAW over the run: the kernel's own TSC conversion)",
            clock.name(),
            1e3 / npc
        ),
        Clock::MonoRaw => clock.name().to_string(),
    }
}

/// The coordinator's wait: a progress report a second (each sampler's live totals) until the
/// window ends or a stop.
fn coordinate(
    config: &NoiseConfig,
    stop: &Stop,
    t0: std::time::Instant,
    lives: &[(u32, Arc<Live>)],
    npc0: f64,
    progress: &mut dyn FnMut(&NoiseSoFar),
) {
    loop {
        let left = config.duration.saturating_sub(t0.elapsed());
        if left.is_zero() {
            break;
        }
        if stop.sleep(left.min(Duration::from_secs(1))) {
            break;
        }
        progress(&NoiseSoFar {
            elapsed: t0.elapsed(),
            window: config.duration,
            cpus: lives
                .iter()
                .map(|(cpu, l)| CpuNoiseSoFar {
                    cpu: *cpu,
                    detours: l.detours.load(Ordering::Relaxed),
                    noise_us: l.noise.load(Ordering::Relaxed) as f64 * npc0 / 1e3,
                    max_us: l.max.load(Ordering::Relaxed) as f64 * npc0 / 1e3,
                })
                .collect(),
        });
    }
}

/// The trace, read once everything stopped (then the session is closed); warnings for an
/// unreadable trace or lost events.
fn read_trace_once(
    trace: Result<TraceSession, NoTrace>,
    warnings: &mut Vec<String>,
) -> (Option<String>, u64) {
    let (trace_text, overruns) = match &trace {
        Ok(s) => {
            let _ = s.stop();
            match s.read_trace() {
                Ok(t) => (Some(t), s.overruns()),
                Err(e) => {
                    warnings.push(format!("trace unreadable ({e}): no sources per detour"));
                    (None, 0)
                }
            }
        }
        Err(_) => (None, 0),
    };
    drop(trace);
    if overruns > 0 {
        warnings.push(format!(
            "{overruns} trace events lost to ring-buffer overruns: some sources are missing"
        ));
    }
    (trace_text, overruns)
}

/// What attributing one CPU's detours needs besides its sampler's output.
struct AttributionInputs<'a> {
    /// ns per loop-clock count over the run.
    npc: f64,
    /// The trace, when tracefs attribution ran.
    trace_text: Option<&'a str>,
    softirqs: SoftirqContext,
    window: &'a SampledWindow,
    /// Each CPU's /proc/stat times over the run, when readable.
    times: Option<&'a std::collections::BTreeMap<u32, sample::CpuTime>>,
}

/// One CPU's noise (summary, sources, histogram), its measured details (cross-checks, the
/// longest detours) and its detours in the clock's time.
fn attribute_cpu(
    o: &SamplerOutput,
    inp: &AttributionInputs<'_>,
    warnings: &mut Vec<String>,
) -> (CpuNoise, HostNoiseCpu, CpuDetours) {
    let (npc, w) = (inp.npc, inp.window);
    let to_ns = |c: u64| ((c as i128 - o.first as i128) as f64 * npc).round() as i64;
    let runtime = (o.last.saturating_sub(o.first) as f64 * npc).round() as u64;
    let detours: Vec<Detour> = o
        .detours
        .iter()
        .map(|&(s, g)| Detour {
            start: to_ns(s),
            ns: ((g as f64 * npc).round() as u64).max(1),
        })
        .collect();
    let kept_all = o.detours.len() as u64 == o.count;
    if !kept_all {
        warnings.push(format!(
            "CPU {}: {} detours, only the first {} kept with their times: sources and the \
             histogram cover those",
            o.cpu,
            o.count,
            o.detours.len()
        ));
    }
    let noise_ns = ((o.noise as f64 * npc).round() as u64).min(runtime);
    let max_ns = ((o.max as f64 * npc).round() as u64).min(noise_ns);
    let (sources, inside) = match inp.trace_text {
        Some(t) => {
            let runs = runs_from_trace(t, o.cpu, o.tid, inp.softirqs, to_ns);
            let a = attribute(&detours, &runs, runtime);
            (a.sources, Some(a.inside))
        }
        None => (
            from_count_deltas(
                o.cpu,
                w.irq_start.as_ref().zip(w.irq_end.as_ref()),
                w.soft_start.as_ref().zip(w.soft_end.as_ref()),
                inp.softirqs,
                o.involuntary_switches,
            ),
            None,
        ),
    };
    let histogram = kept_all.then(|| {
        let mut h = LatencyHistogram::new(DEFAULT_HISTOGRAM_US);
        for (k, d) in detours.iter().enumerate() {
            h.record(k as u64, d.ns as i64);
        }
        h
    });
    let records: Vec<DetourRecord> = detours
        .iter()
        .enumerate()
        .map(|(i, d)| DetourRecord {
            at_ns: d.start.max(0) as u64,
            ns: d.ns,
            sources: inside.as_ref().map(|v| v[i].clone()).unwrap_or_default(),
        })
        .collect();
    let mut longest = records.clone();
    longest.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.at_ns.cmp(&b.at_ns)));
    longest.truncate(LONGEST_KEPT);
    let c = CpuNoise {
        cpu: o.cpu,
        runtime_ns: runtime,
        noise_ns,
        available_pct: CpuNoise::available_pct(runtime, noise_ns),
        max_detour_ns: max_ns,
        detours: if noise_ns == 0 { 0 } else { o.count },
        histogram: histogram.filter(|h| h.samples() == o.count && noise_ns > 0),
        sources,
    };
    debug_assert!(c.check().is_ok(), "{:?}", c.check());
    let loc_delta = w
        .irq_start
        .as_ref()
        .zip(w.irq_end.as_ref())
        .and_then(|(a, b)| loc_of(b, o.cpu)?.checked_sub(loc_of(a, o.cpu)?));
    let loc_traced = inp
        .trace_text
        .map(|t| count_events(t, o.cpu, "local_timer_entry", w.loc_from, w.loc_to));
    let details = HostNoiseCpu {
        cpu: o.cpu,
        policy: o.policy.clone(),
        loop_ns: runtime as f64 / o.reads.max(1) as f64,
        loc_delta,
        loc_traced,
        steal_ns: inp.times.and_then(|t| t.get(&o.cpu)).map(|t| t.steal_ns),
        longest,
    };
    let detours = CpuDetours {
        cpu: o.cpu,
        start_ns: w.begin.ns + to_ns(o.first).max(0) as u64,
        detours: records,
    };
    (c, details, detours)
}

/// The run's report: this host's identity, boot line and HZ, the per-CPU counters and the
/// noise section.
fn host_report(
    config: &NoiseConfig,
    w: &SampledWindow,
    window_ns: u64,
    method: NoiseMethod,
    cpus: Vec<CpuNoise>,
    warnings: Vec<String>,
) -> Report {
    let (hostname, kernel) = os::uname();
    let cmdline = std::fs::read_to_string("/proc/cmdline")
        .map(|s| KernelCmdline::split_init_args(&s).0.to_string())
        .unwrap_or_default();
    let skew = crate::harness::report::skew_tick(&cmdline).unwrap_or(false);
    let hz = sample::hz_between(&w.start, &w.end, skew).hz.unwrap_or(0);
    let nohz_full: Vec<u32> = std::fs::read_to_string("/sys/devices/system/cpu/nohz_full")
        .ok()
        .and_then(|t| ticklab_cmdline::parse_cpulist(t.trim(), 1 << 16).ok())
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    Report {
        cpus: sample::cpu_reports(&w.start, &w.end, &config.cpus, &nohz_full),
        noise: Some(NoiseReport {
            method,
            threshold_ns: config.threshold_ns,
            cpus,
        }),
        warnings,
        ..Report::new(
            Source::Host {
                hostname: hostname.clone(),
                kernel,
            },
            format!("noise on CPU {}", cpulist(&config.cpus)),
            hostname,
            cmdline,
            hz,
            window_ns,
        )
    }
}

/// The local timer count of `cpu` in a `/proc/interrupts` reading.
fn loc_of(i: &Interrupts, cpu: u32) -> Option<u64> {
    let row = i.row_of(crate::procfs::IrqKind::LocalTimer)?;
    i.count(row, cpu)
}

/// `0-2,5` for a list of CPUs.
fn cpulist(cpus: &[u32]) -> String {
    let set: ticklab_cmdline::CpuSet = cpus.iter().copied().collect();
    set.to_string()
}

//! The twin of the guest: the same vCPUs, kernel build, boot line and workload, and only the
//! background that actually runs in ticklab's initramfs.
//!
//! Nothing here is fitted to a guest's measurement. The background is a list of the timers
//! a bare 6.1 kernel arms by itself plus ticklab's own coordinator; each entry names the
//! kernel constant behind its period (tag `C`, docs/costs.md legend) and was identified —
//! which timers exist, not how often they fire — from a trace of an idle guest
//! (docs/vm-validation.md, "What runs in the guest"). The laptop-calibrated user-space
//! sources of [`ticklab_schema::scenario::default_background`] are left out: no daemon runs
//! in the initramfs.
//!
//! The machine is [`machine::kvm_guest`] with the guest's vCPU count and the cpuidle driver
//! the guest reported: with no driver (TCG offers none; `idle=poll`; `cpuidle.off=1`) the
//! idle CPU halts with its tick stopped and no governor. Costs stay the KVM guest's
//! estimates: under TCG only counts are compared, never costs (crate docs).

use std::collections::BTreeMap;

use ticklab_cmdline::CpuSet;
use ticklab_host::harness::{COORDINATOR_POLL_NS, coordinator_poll_ns};
use ticklab_schema::machine::{self, Machine};
use ticklab_schema::report::{CpuWakeups, KthreadRuns, Report, WorkloadResult};
use ticklab_schema::scenario::{
    BackgroundSource, Placement, Run, Scenario, TimerKind, default_background, tick_nsec,
};
use ticklab_schema::workload::{TaskGroup, Workload};

use crate::kconfig::{BuiltTimers, KernelConfig};
use crate::qemu::Accel;

/// What the twin of one guest boot needs.
#[derive(Debug, Clone)]
pub struct GuestPoint<'a> {
    /// The guest kernel's build options.
    pub config: &'a KernelConfig,
    /// The user's boot line (ticklab's fixed console parameters are not tick-relevant and are
    /// left out).
    pub cmdline: &'a str,
    /// vCPUs.
    pub vcpus: u32,
    /// The workload, parsed for `vcpus` CPUs.
    pub workload: &'a Workload,
    /// The measured window, ns.
    pub duration_ns: u64,
    /// The guest registered a cpuidle driver (its report has idle states).
    pub guest_has_cpuidle_driver: bool,
    /// The accelerator (named in the machine's description).
    pub accel: Accel,
    /// The guest's own report: where its hogs actually ran.
    pub guest: &'a Report,
}

/// The workload as it ran in the guest: each hog group pinned to the CPUs the guest's report
/// names (the host lab places unpinned hogs itself; the twin must run them where they ran).
pub fn workload_as_run(workload: &Workload, guest: &Report) -> Workload {
    let mut ran = guest.workloads.iter().filter_map(|w| match w {
        WorkloadResult::Hogs { cpus } => Some(cpus),
        _ => None,
    });
    let mut w = workload.clone();
    for g in &mut w.groups {
        if let TaskGroup::Hogs { count, cpus } = g
            && let Some(on) = ran.next()
        {
            let mut set = CpuSet::new();
            for &c in on {
                set.insert(c);
            }
            *count = on.len() as u32;
            *cpus = Some(set);
        }
    }
    w
}

/// The CPUs a workload keeps busy (hogs, frame workers, pinned ping-pong and syscall tasks).
fn busy_cpus(workload: &Workload) -> CpuSet {
    let mut busy = CpuSet::new();
    for g in &workload.groups {
        match g {
            TaskGroup::Hogs { cpus: Some(c), .. } | TaskGroup::Frames { cpus: c, .. } => {
                busy = busy.union(c);
            }
            TaskGroup::PingPong { cpu_a, cpu_b, .. } => {
                busy.insert(*cpu_a);
                busy.insert(*cpu_b);
            }
            TaskGroup::Syscall { cpu: Some(c), .. } => busy.insert(*c),
            TaskGroup::Bsp { cpus: c, .. } => busy = busy.union(c),
            TaskGroup::Hogs { cpus: None, .. } | TaskGroup::Syscall { cpu: None, .. } => {}
        }
    }
    busy
}

/// Where ticklab's coordinator thread sleeps and wakes. Its sleep is an unpinned hrtimer,
/// which a nohz_full CPU hands to a housekeeping CPU (timer migration to a `HK_TYPE_TIMER`
/// CPU), and its wake-up runs it on an idle CPU of its scheduling domain (its previous CPU
/// when idle, else an idle sibling). So: among CPUs that are neither nohz_full nor
/// `isolcpus=`-isolated from the domains, the first that runs no workload task, else the
/// first of them (the hrtimer fires there even beside a hog); CPU 0 if there is none.
pub fn coordinator_cpu(
    vcpus: u32,
    workload: &Workload,
    nohz_full: &CpuSet,
    isolated_domain: &CpuSet,
) -> u32 {
    let busy = busy_cpus(workload);
    let candidates: Vec<u32> = (0..vcpus)
        .filter(|&c| !nohz_full.contains(c) && !isolated_domain.contains(c))
        .collect();
    candidates
        .iter()
        .copied()
        .find(|&c| !busy.contains(c))
        .or_else(|| candidates.first().copied())
        .unwrap_or(0)
}

/// Where the guest's own report shows the coordinator ran. Which idle CPU a forked task
/// lands on depends on what else ran at fork time, so the guest's placement is taken as
/// measured, as the hogs' is:
///
/// * the CPU most of its polls woke on, as the guest's harness asked the kernel after each
///   one (`sched_getcpu`, [`Report::coordinator_wakeups`]), taken as reported;
/// * in a report written before that was recorded, a guess from busy time: among the CPUs
///   [`coordinator_cpu`] could choose that run no workload task, the one with the most busy
///   time (the coordinator is the only task that wakes on them in a bare initramfs). The
///   guess fails where another CPU's interrupts outweigh ten polls a second: under TCG a
///   `nohz_full` guest's CPU 0 keeps ticking for timekeeping, and its 250 ticks a second
///   took more busy time than the coordinator on the CPU it really ran on.
///
/// `None` when the report has neither.
pub fn observed_coordinator_cpu(
    guest: &Report,
    workload: &Workload,
    nohz_full: &CpuSet,
    isolated_domain: &CpuSet,
) -> Option<u32> {
    if let Some(cpu) = ticklab_schema::report::modal_cpu(&guest.coordinator_wakeups) {
        return Some(cpu);
    }
    let busy = busy_cpus(workload);
    guest
        .cpus
        .iter()
        .filter(|c| {
            !nohz_full.contains(c.cpu) && !isolated_domain.contains(c.cpu) && !busy.contains(c.cpu)
        })
        .filter_map(|c| c.busy_ns.map(|b| (b, c.cpu)))
        // The most busy; the lowest CPU number on a tie.
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
        .map(|(_, cpu)| cpu)
}

/// The guest as a twin machine (see the module documentation).
pub fn guest_machine(vcpus: u32, accel: Accel, cpuidle_driver: bool) -> Machine {
    let mut m = machine::kvm_guest(vcpus);
    m.name = format!("qemu-{}-{vcpus}", accel.name());
    m.description = format!(
        "QEMU {} guest, {vcpus} vCPUs, {}",
        accel.name().to_uppercase(),
        if cpuidle_driver {
            "cpuidle-haltpoll"
        } else {
            "no cpuidle driver (HLT)"
        }
    );
    if !cpuidle_driver {
        m.cpuidle_driver = "none".into();
    }
    m
}

/// One wheel timer of the bare kernel: one stream, on a housekeeping CPU.
fn kernel_wheel(
    name: &str,
    period_ns: u64,
    wakes_task: bool,
    provenance: &str,
) -> BackgroundSource {
    BackgroundSource {
        name: name.into(),
        kind: TimerKind::Wheel,
        placement: Placement::Housekeeping,
        period_ns: Some(period_ns),
        rate_hz: None,
        deferrable: false,
        slack_ns: 0,
        wakes_task,
        follows_task: false,
        timer_migrates: false,
        hard: false,
        task_ns: None,
        relative: false,
        provenance: provenance.into(),
        cpus: None,
    }
}

const MS: u64 = 1_000_000;

/// The timers that run in the guest: the kernel's own (watchdog and vmstat as in every
/// scenario, then the periodic work a bare 6.1 kernel queues), each only when the build has
/// it (`timers`: a trimmed `vm build` kernel has no networking, PSI, memory cgroups or
/// compaction), and ticklab's coordinator.
pub fn guest_background(
    workload: &Workload,
    hz: u32,
    coordinator_cpu: u32,
    timers: &BuiltTimers,
) -> Vec<BackgroundSource> {
    let mut v: Vec<BackgroundSource> = default_background()
        .into_iter()
        .filter(|s| {
            (s.name == "watchdog_timer_fn" && timers.softlockup) || s.name == "vmstat_update"
        })
        .map(|mut s| {
            // The soft-lockup watchdog arms its hrtimer HRTIMER_MODE_REL_HARD (kernel/watchdog.c).
            s.hard = s.name == "watchdog_timer_fn";
            s
        })
        .collect();
    if timers.compaction {
        v.push(kernel_wheel(
            "kcompactd (process_timeout)",
            500 * MS,
            true,
            "C: kcompactd sleeps HPAGE_FRAG_CHECK_INTERVAL_MSEC = 500 ms between proactive \
             compaction checks (docs/vm-validation.md)",
        ));
    }
    if timers.psi {
        v.push(kernel_wheel(
            "psi_avgs_work",
            2000 * MS + tick_nsec(hz),
            false,
            "C: PSI_FREQ = 2*HZ+1 jiffies (docs/vm-validation.md)",
        ));
    }
    if timers.memcg {
        v.push(kernel_wheel(
            "flush_memcg_stats_dwork",
            2000 * MS,
            false,
            "C: FLUSH_TIME = 2*HZ (docs/vm-validation.md)",
        ));
    }
    for (table, built) in [("arp", timers.inet), ("ndisc", timers.ipv6)] {
        if built {
            v.push(kernel_wheel(
                &format!("neigh_managed_work ({table})"),
                5000 * MS,
                false,
                "C: neighbour table probe interval 5 s, one per table (docs/vm-validation.md)",
            ));
        }
    }
    let mut on = CpuSet::new();
    on.insert(coordinator_cpu);
    v.push(BackgroundSource {
        name: COORDINATOR_SOURCE.into(),
        kind: TimerKind::Hrtimer,
        // One instance, on the CPU of [`coordinator_cpu`].
        placement: Placement::PerCpu,
        period_ns: Some(coordinator_poll_ns(workload)),
        rate_hz: None,
        deferrable: false,
        // C: default timer slack of a SCHED_OTHER task, 50 µs.
        slack_ns: 50_000,
        wakes_task: true,
        follows_task: false,
        // The coordinator is pinned, its `clock_nanosleep` is not: on a nohz_full CPU the
        // kernel queues the sleep on timer-housekeeping CPU 0 while CPU 0's next event comes
        // first (docs/kernel-behaviour.md §12.12).
        timer_migrates: true,
        hard: false,
        task_ns: None,
        // It waits until its own clock reading plus the poll, taken after each wake-up.
        relative: true,
        provenance: "C: host run's coordinator poll (COORDINATOR_POLL_NS, \
                     COORDINATOR_POLL_COUNTED_NS in crates/host/src/harness/run.rs)"
            .into(),
        cpus: Some(on),
    });
    v
}

/// The name of ticklab's coordinator among the guest's background sources.
pub const COORDINATOR_SOURCE: &str = "ticklab coordinator (hrtimer_wakeup)";

/// The coordinator's source, placed on the CPU most of its polls woke on, becomes one
/// source per CPU they woke on, at each CPU's share of the poll
/// ([`BackgroundSource::split_by_wakeups`]), when the guest counted them on more than one
/// CPU: a coordinator that moved between CPUs mid-window (22 polls on CPU 0 and 28 on CPU 3
/// in a 4-vCPU idle boot) gave the modal CPU all of them and the other none.
fn split_coordinator(background: &mut Vec<BackgroundSource>, wakeups: &[CpuWakeups]) {
    if wakeups.iter().filter(|w| w.wakeups > 0).count() < 2 {
        return;
    }
    let Some(i) = background.iter().position(|b| b.name == COORDINATOR_SOURCE) else {
        return;
    };
    let base = background[i].clone();
    let poll = base.period_ns.unwrap_or(COORDINATOR_POLL_NS);
    background.splice(i..=i, base.split_by_wakeups(poll, wakeups));
}

/// How many times a CPU was woken for its kernel threads ([`kthread_wakeups`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KthreadWakeups {
    /// The count.
    count: u64,
    /// Counted from the CPU's trips to idle (else it is the threads' runs).
    trips: bool,
}

/// How many times `cpu` was woken to run its kernel threads (`runs` runs in all): its trips to
/// idle in the window ([`CpuReport::idle_entries`](ticklab_schema::report::CpuReport::idle_entries),
/// one per stretch of work) less the coordinator's wake-ups there, at most `runs`, where the
/// guest counted them and no workload task runs there (`busy`); else one per run. Threads
/// that wake one another on the same CPU (the end of a grace period wakes RCU's offload
/// leader, which wakes the callback thread) run in one stretch: the trips count it once, the
/// runs once per thread.
fn kthread_wakeups(guest: &Report, cpu: u32, runs: u64, busy: &CpuSet) -> KthreadWakeups {
    let trips = guest
        .cpus
        .iter()
        .find(|c| c.cpu == cpu)
        .and_then(|c| c.idle_entries)
        .filter(|_| !busy.contains(cpu));
    let coordinator = guest
        .coordinator_wakeups
        .iter()
        .find(|w| w.cpu == cpu)
        .map_or(0, |w| w.wakeups);
    match trips {
        Some(t) => KthreadWakeups {
            count: t.saturating_sub(coordinator).min(runs),
            trips: true,
        },
        None => KthreadWakeups {
            count: runs,
            trips: false,
        },
    }
}

/// The guest's own kernel threads as background, one source per CPU they ran on
/// ([`Report::kthread_runs`]): RCU's grace-period and offload threads, workqueue workers and
/// the like, which the guest counted and the twin has no rule for. On a `nohz_full=all` guest
/// they all run on the one housekeeping CPU. Each time they wake it from idle it takes an
/// interrupt and, by the idle-loop rule, keeps its tick for a period, and that running tick is
/// the near event that pulls the coordinator's sleeps there (timer migration). Without them
/// the twin's housekeeping CPU is quieter than the kernel's.
///
/// Per CPU, the source's rate is the wake-ups its threads took ([`kthread_wakeups`]: the
/// CPU's trips to idle less the coordinator's where the guest counted them, else one per run)
/// less one per expiry in the window of the twin's own kernel timers there, whose work also
/// runs in a kernel thread (the watchdog's stopper, only outside `nohz_full`; vmstat's worker,
/// unless trips are counted, since a deferrable timer makes no trip of its own; an unpinned
/// timer such as kcompactd's, taken off the housekeeping CPUs with the most runs first). Its
/// wake-ups are Poisson, of a wheel timer (kernel threads sleep with `schedule_timeout`), and
/// each one's task runs the threads' CPU time (`/proc/PID/sched`, when the guest has it) over
/// the wake-ups: one wake-up runs every thread it woke. Measured per boot, as the
/// coordinator's CPU is; nothing here is fitted.
///
/// An unbound thread's runs go to the CPU it last ran on (on a `nohz_full=all` guest unbound
/// threads may use only the housekeeping CPU). Without the trips, threads that wake one
/// another are taken as independent wake-ups, and the twin errs high where the kernel's chains
/// share one. At most `room` sources: the CPUs with the most wake-ups first.
fn kthread_background(
    guest: &Report,
    preempt_rt: bool,
    background: &[BackgroundSource],
    nohz_full: &CpuSet,
    busy: &CpuSet,
    duration_ns: u64,
    room: usize,
) -> Vec<BackgroundSource> {
    if duration_ns == 0 {
        return Vec::new();
    }
    let window_s = duration_ns as f64 / 1e9;
    let mut by_cpu: BTreeMap<u32, Vec<&KthreadRuns>> = BTreeMap::new();
    for k in guest
        .kthread_runs
        .iter()
        .filter(|k| !(preempt_rt && is_softirq_thread(&k.comm)))
    {
        by_cpu.entry(k.cpu).or_default().push(k);
    }
    let min_rate = 1e9 / ticklab_schema::validate::MAX_PERIOD_NS as f64;
    // The twin's kernel timers whose work runs in a kernel thread: the coordinator is a user
    // thread.
    let kernel_timers = || {
        background
            .iter()
            .filter(|b| !b.name.starts_with(COORDINATOR_SOURCE))
    };
    let unpinned_on = unpinned_timers_by_cpu(
        kernel_timers()
            .filter(|b| b.placement == Placement::Housekeeping)
            .map(|b| b.rate_per_cpu() * window_s)
            .sum(),
        &by_cpu,
        nohz_full,
    );
    let mut out = Vec::new();
    for (cpu, threads) in by_cpu {
        let runs: u64 = threads.iter().map(|k| k.runs).sum();
        let wake = kthread_wakeups(guest, cpu, runs, busy);
        let explained: f64 = kernel_timers()
            .filter(|b| b.cpus.as_ref().is_none_or(|on| on.contains(cpu)))
            // A deferrable timer never wakes an idle CPU: its work makes no trip of its own.
            .filter(|b| !(wake.trips && b.deferrable))
            .filter(|b| match b.placement {
                Placement::PerCpu => true,
                Placement::WatchdogCpus => !nohz_full.contains(cpu),
                Placement::Housekeeping => false,
            })
            .map(|b| b.rate_per_cpu() * window_s)
            .sum::<f64>()
            + unpinned_on.get(&cpu).copied().unwrap_or(0.0);
        let rate_hz = (wake.count as f64 - explained) / window_s;
        if rate_hz >= min_rate {
            out.push(kthread_source(
                cpu, &threads, runs, wake, rate_hz, explained, window_s,
            ));
        }
    }
    if out.len() > room {
        // The busiest CPUs keep theirs (a stable sort: CPU order among equals).
        out.sort_by(|a, b| b.rate_per_cpu().total_cmp(&a.rate_per_cpu()));
        out.truncate(room);
        out.sort_by_key(|b| b.cpus.as_ref().and_then(CpuSet::first));
    }
    out
}

/// A CPU's softirq thread (`ksoftirqd/N`, and `ktimers/N` of the RT tree): on PREEMPT_RT it
/// runs the softirqs the CPU's interrupts raise, so its runs follow the interrupts the twin
/// takes itself (`ticklab_twin::kernel::softirq`) rather than wake-ups of their own.
fn is_softirq_thread(comm: &str) -> bool {
    comm.starts_with("ksoftirqd/") || comm.starts_with("ktimers/")
}

/// How long the guest's softirq threads ran per run, over every CPU: what the twin's softirq
/// thread runs on a PREEMPT_RT guest. `None` when they were not timed.
fn softirq_thread_ns(guest: &Report) -> Option<u64> {
    let (runs, ns) = guest
        .kthread_runs
        .iter()
        .filter(|k| is_softirq_thread(&k.comm))
        .filter_map(|k| k.run_ns.map(|ns| (k.runs, ns)))
        .fold((0u64, 0u64), |(r, n), (kr, kn)| (r + kr, n + kn));
    (runs > 0).then(|| (ns / runs).clamp(1, ticklab_schema::validate::MAX_COST_NS))
}

/// The expiries in the window of the twin's unpinned kernel timers (`total`, one stream on
/// some housekeeping CPU each), taken off the housekeeping CPUs with the most kernel-thread
/// runs first, each at most its runs: how many each CPU's threads owe them.
fn unpinned_timers_by_cpu(
    mut total: f64,
    by_cpu: &BTreeMap<u32, Vec<&KthreadRuns>>,
    nohz_full: &CpuSet,
) -> BTreeMap<u32, f64> {
    let mut busiest: Vec<(u64, u32)> = by_cpu
        .iter()
        .filter(|(cpu, _)| !nohz_full.contains(**cpu))
        .map(|(&cpu, t)| (t.iter().map(|k| k.runs).sum(), cpu))
        .collect();
    busiest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut on = BTreeMap::new();
    for (runs, cpu) in busiest {
        let take = total.min(runs as f64);
        total -= take;
        on.insert(cpu, take);
    }
    on
}

/// One CPU's kernel-thread source ([`kthread_background`]), named `kernel threads (CPU n)`:
/// `rate_hz` wake-ups of a wheel timer, each running the threads' CPU time (`runs` runs in
/// all) over `wake`'s count when the guest timed them.
fn kthread_source(
    cpu: u32,
    threads: &[&KthreadRuns],
    runs: u64,
    wake: KthreadWakeups,
    rate_hz: f64,
    explained: f64,
    window_s: f64,
) -> BackgroundSource {
    // One wake-up runs all the threads it woke: the mean run times the runs per wake-up.
    let timed: Vec<&&KthreadRuns> = threads.iter().filter(|k| k.run_ns.is_some()).collect();
    let timed_runs: u64 = timed.iter().map(|k| k.runs).sum();
    let task_ns = (timed_runs > 0).then(|| {
        let ns: u64 = timed.iter().filter_map(|k| k.run_ns).sum();
        let per_run = ns as f64 / timed_runs as f64;
        let per_wake = per_run * runs as f64 / wake.count.max(1) as f64;
        (per_wake.round() as u64).clamp(1, ticklab_schema::validate::MAX_COST_NS)
    });
    let mut named: Vec<&&KthreadRuns> = threads.iter().collect();
    named.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.comm.cmp(&b.comm)));
    let list = named
        .iter()
        .map(|k| format!("{} {}", k.comm, k.runs))
        .collect::<Vec<_>>()
        .join(", ");
    let counted = if wake.trips {
        format!(
            "in {} wake-ups (the CPU's trips to idle, /proc/schedstat, less the coordinator's)",
            wake.count
        )
    } else {
        "each its own wake-up (no idle count)".to_string()
    };
    BackgroundSource {
        name: format!("kernel threads (CPU {cpu})"),
        kind: TimerKind::Wheel,
        placement: Placement::PerCpu,
        period_ns: None,
        rate_hz: Some(rate_hz),
        deferrable: false,
        slack_ns: 0,
        wakes_task: true,
        follows_task: false,
        timer_migrates: false,
        hard: false,
        relative: false,
        task_ns,
        provenance: format!(
            "M: the guest's kernel threads ran {runs} times on CPU {cpu} in {window_s:.1} s \
             ({list}; /proc/PID/status), {counted}, less {explained:.1} expiries of the twin's \
             own kernel timers there"
        ),
        cpus: Some(CpuSet::from_iter([cpu])),
    }
}

/// Why the twin of the guest is not run for `workload`, or `None` when it is. A ping-pong
/// pair is refused: the event loop, whose per-CPU counters the comparison reads, has no
/// ping-pong tasks, and the twin's ping-pong engine (`ticklab_twin::guest`) models a KVM
/// guest's round trip (its exits and halt polling), gives no per-CPU counts, and under TCG
/// the rate of round trips, hence of wake-ups, is the emulator's speed.
pub fn refused(workload: &Workload) -> Option<&'static str> {
    workload
        .groups
        .iter()
        .any(|g| matches!(g, TaskGroup::PingPong { .. }))
        .then_some(
            "ping-pong: not modelled by the twin's event loop; its round-trip rate under TCG is \
             the emulator's speed",
        )
}

/// The guest's syscall loop as it ran: the calls it made, each taking the time the guest
/// measured per call (`ns_per_call`, the emulator's speed under TCG). The twin's loop then runs
/// over the same part of the window as the guest's, so the counts on its CPU compare; the
/// cost itself is never compared (crate docs).
fn syscall_as_run(workload: &mut Workload, machine: &mut Machine, guest: &Report) {
    let Some(ran) = guest.workloads.iter().find_map(|w| match w {
        WorkloadResult::Syscall(s) => Some(s),
        _ => None,
    }) else {
        return;
    };
    for g in &mut workload.groups {
        if let TaskGroup::Syscall { calls, .. } = g
            && ran.calls > 0
            && ran.ns_per_call.is_finite()
            && ran.ns_per_call >= 1.0
        {
            *calls = ran.calls;
            machine.costs.syscall_ns = ran.ns_per_call.round() as u64;
        }
    }
}

/// How long a woken background task ran in the guest, per wake-up: the busy time the guest
/// measured on the coordinator's CPU over the task wake-ups the twin's background makes there
/// in the window (the coordinator's polls, plus every per-CPU source that wakes a task).
/// `None` when the guest has no busy time for that CPU, a workload task runs there, or the CPU
/// was busy for more than half of the gaps between wake-ups (then it was not idle in between,
/// and its busy time says nothing about one wake-up).
///
/// Like the syscall loop's speed ([`syscall_as_run`]), this is the emulator's speed taken as
/// run, not fitted: under TCG a wake-up keeps the coordinator's vCPU out of idle for two to
/// three milliseconds where the preset says 30 µs, and a CPU that leaves idle restarts its
/// tick, so the longer it stays out the likelier a tick falls inside (docs/vm-validation.md,
/// "The coordinator's CPU"). The busy time also holds the handling of that CPU's other
/// interrupts, which the twin charges on its own; it is not subtracted (the guest's other
/// CPUs give no clean price for one interrupt: their busy time holds kworker runs too), so
/// the run taken is an upper bound and the twin errs high on that CPU.
fn background_task_as_run(
    guest: &Report,
    cpu: u32,
    workload: &Workload,
    background: &[BackgroundSource],
    duration_ns: u64,
) -> Option<u64> {
    if busy_cpus(workload).contains(cpu) || duration_ns == 0 {
        return None;
    }
    let busy_ns = guest.cpus.iter().find(|c| c.cpu == cpu)?.busy_ns?;
    let here: Vec<&BackgroundSource> = background
        .iter()
        .filter(|b| b.wakes_task)
        .filter(|b| match &b.cpus {
            Some(on) => on.contains(cpu),
            None => matches!(b.placement, Placement::PerCpu),
        })
        .collect();
    let window_s = duration_ns as f64 / 1e9;
    // Tasks that run a length of their own (the guest's kernel threads) take theirs out of the
    // busy time; the rest is the tasks that run the machine's length.
    let own_ns: f64 = here
        .iter()
        .filter_map(|b| b.task_ns.map(|t| t as f64 * b.rate_per_cpu() * window_s))
        .sum();
    let per_s: f64 = here
        .iter()
        .filter(|b| b.task_ns.is_none())
        .map(|b| b.rate_per_cpu())
        .sum();
    let wakeups = per_s * window_s;
    if wakeups < 1.0 {
        return None;
    }
    let run_ns = (busy_ns as f64 - own_ns).max(0.0) / wakeups;
    let gap_ns = 1e9 / per_s;
    (run_ns < 0.5 * gap_ns).then(|| run_ns.round().max(1.0) as u64)
}

/// The tick configuration the guest kernel (`config`, `vcpus` CPUs) makes of `cmdline`, as the
/// boot-line model resolves it; `None` for a line it cannot parse.
pub fn guest_tick_config(
    config: &KernelConfig,
    cmdline: &str,
    vcpus: u32,
) -> Option<ticklab_cmdline::TickConfig> {
    let kernel = ticklab_cmdline::Kernel {
        build: config.build(),
        nr_cpus: vcpus,
    };
    kernel.resolve(cmdline).ok().map(|r| r.config)
}

/// The twin scenario of one guest boot. Seed 1; a 1 s warm-up stands for the guest's settle
/// time before the window.
pub fn guest_scenario(p: &GuestPoint<'_>) -> Scenario {
    let mut workload = workload_as_run(p.workload, p.guest);
    let mut machine = guest_machine(p.vcpus, p.accel, p.guest_has_cpuidle_driver);
    syscall_as_run(&mut workload, &mut machine, p.guest);
    // A boot line the kernel cannot parse never reaches here (the CLI checks it first); an
    // unparsable one would isolate nothing.
    let (nohz_full, isolated) = guest_tick_config(p.config, p.cmdline, p.vcpus)
        .map(|c| (c.nohz_full, c.isolated_domain))
        .unwrap_or_default();
    let coordinator = observed_coordinator_cpu(p.guest, &workload, &nohz_full, &isolated)
        .unwrap_or_else(|| coordinator_cpu(p.vcpus, &workload, &nohz_full, &isolated));
    let mut background = guest_background(&workload, p.config.hz, coordinator, &p.config.timers);
    split_coordinator(&mut background, &p.guest.coordinator_wakeups);
    let room = ticklab_schema::validate::MAX_BACKGROUND_SOURCES.saturating_sub(background.len());
    let busy = busy_cpus(&workload);
    let rt = p.config.preempt_rt;
    let kthreads = kthread_background(
        p.guest,
        rt,
        &background,
        &nohz_full,
        &busy,
        p.duration_ns,
        room,
    );
    if rt {
        machine.costs.softirq_thread_ns = softirq_thread_ns(p.guest);
    }
    background.extend(kthreads);
    if let Some(run_ns) =
        background_task_as_run(p.guest, coordinator, &workload, &background, p.duration_ns)
    {
        machine.costs.background_task_ns = run_ns;
    }
    Scenario {
        name: format!("twin of the guest: {:?}", p.cmdline),
        machine,
        kernel: p.config.twin_kernel(p.cmdline),
        background,
        workload,
        run: Run {
            duration_ns: p.duration_ns,
            warmup_ns: 1_000_000_000,
            seed: 1,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_host::harness::COORDINATOR_POLL_COUNTED_NS;

    fn config() -> KernelConfig {
        KernelConfig::parse(
            "# Linux/x86 6.1.192 Kernel Configuration\nCONFIG_HZ=250\nCONFIG_NO_HZ_FULL=y\n\
             CONFIG_HIGH_RES_TIMERS=y\nCONFIG_SOFTLOCKUP_DETECTOR=y\nCONFIG_COMPACTION=y\n\
             CONFIG_PSI=y\nCONFIG_MEMCG=y\nCONFIG_INET=y\nCONFIG_IPV6=y\n",
            "t",
        )
        .unwrap()
    }

    #[test]
    fn scenario_takes_everything_from_the_guest() {
        let c = config();
        let w = Workload::parse("hogs:1@1", 2).unwrap();
        let guest = guest_report(&[1]);
        let s = guest_scenario(&GuestPoint {
            config: &c,
            cmdline: "nohz_full=1",
            vcpus: 2,
            workload: &w,
            duration_ns: 5_000_000_000,
            guest_has_cpuidle_driver: false,
            accel: Accel::Tcg,
            guest: &guest,
        });
        assert_eq!(s.machine.topology.nr_cpus(), 2);
        assert_eq!(s.machine.cpuidle_driver, "none");
        assert_eq!((s.kernel.hz, s.kernel.version.as_str()), (250, "6.1.192"));
        assert_eq!(s.kernel.cmdline, "nohz_full=1");
        assert_eq!(s.run.duration_ns, 5_000_000_000);
        assert!(
            s.background
                .iter()
                .all(|b| b.name != "user_hrtimers" && b.name != "kernel_housekeeping_timers"),
            "no laptop-calibrated source in a bare initramfs"
        );
        assert!(s.background.iter().all(|b| b.provenance.starts_with("C:")));
    }

    /// A guest report whose one hog group ran on `hogs`.
    /// A housekeeping CPU row of a guest report: `loc` interrupts and `busy` ns.
    fn guest_cpu(n: u32, loc: u64, busy: Option<u64>) -> ticklab_schema::report::CpuReport {
        ticklab_schema::report::CpuReport {
            cpu: n,
            role: ticklab_schema::report::CpuRole::Housekeeping,
            loc,
            res: None,
            cal: None,
            iwi: 0,
            ticks: None,
            tick_stopped_ns: None,
            busy_ns: busy,
            idle_states: Vec::new(),
            steal_ns: None,
            idle_entries: None,
        }
    }

    fn guest_report(hogs: &[u32]) -> Report {
        Report {
            workloads: vec![WorkloadResult::Hogs {
                cpus: hogs.to_vec(),
            }],
            ..Report::new(
                ticklab_schema::report::Source::Host {
                    hostname: "(none)".into(),
                    kernel: "6.1.0-57-amd64".into(),
                },
                "guest",
                "(none)",
                "",
                250,
                5_000_000_000,
            )
        }
    }

    #[test]
    fn hogs_run_where_the_guest_ran_them_and_the_coordinator_on_a_free_cpu() {
        let none = CpuSet::new();
        let set = |l: &str| {
            if l.is_empty() {
                none.clone()
            } else {
                ticklab_cmdline::parse_cpulist(l, 2).unwrap()
            }
        };
        // (spec, where the guest's hogs ran, nohz_full, isolated, coordinator CPU)
        let cases: [(&str, &[u32], &str, &str, u32); 7] = [
            ("idle", &[], "", "", 0),
            ("hogs:1@0", &[0], "", "", 1),
            ("hogs:1", &[1], "", "", 0),
            ("hogs:2", &[0, 1], "", "", 0),
            ("hogs:1@0", &[0], "", "1", 0),
            ("hogs:1@0", &[0], "1", "", 0),
            ("idle", &[], "0-1", "", 0),
        ];
        for (spec, ran, full, isolated, want) in cases {
            let w = Workload::parse(spec, 2).unwrap();
            let as_run = workload_as_run(&w, &guest_report(ran));
            let got = coordinator_cpu(2, &as_run, &set(full), &set(isolated));
            assert_eq!(
                got, want,
                "{spec} on {ran:?}, nohz_full {full:?}, isolated {isolated:?}"
            );
        }
        let as_run = workload_as_run(&Workload::parse("hogs:1", 2).unwrap(), &guest_report(&[1]));
        assert!(matches!(
            &as_run.groups[0],
            TaskGroup::Hogs { count: 1, cpus: Some(c) } if c.contains(1) && !c.contains(0)
        ));
    }

    #[test]
    fn coordinator_sits_where_the_guest_shows_it_busy() {
        let cpu = |n: u32, busy: Option<u64>| guest_cpu(n, 0, busy);
        let none = CpuSet::new();
        // (busy ns per CPU, coordinator wake-ups reported as (cpu, polls), hogs ran on,
        // vCPUs, nohz_full) -> coordinator CPU
        type Case<'a> = (
            &'a [Option<u64>],
            &'a [(u32, u64)],
            &'a [u32],
            &'a str,
            Option<u32>,
        );
        let ms = |n: u64| Some(n * 1_000_000);
        let cases: &[Case] = &[
            // Old reports: the busiest free CPU.
            (&[Some(1_000), ms(50)], &[], &[], "", Some(1)),
            (&[ms(50), Some(1_000)], &[], &[], "", Some(0)),
            (&[Some(7), Some(7)], &[], &[], "", Some(0)),
            // A hog's CPU and a nohz_full CPU are never the coordinator's.
            (&[Some(1_000), ms(5_000)], &[], &[1], "", Some(0)),
            (&[Some(1_000), ms(50)], &[], &[], "1", Some(0)),
            // No busy times: the rule decides.
            (&[None, None], &[], &[], "", None),
            (&[Some(1), Some(1)], &[], &[0, 1], "", None),
            // 4 vCPUs, nohz_full=1, idle, as the 6.1 guest under TCG: CPU 0's timekeeping
            // ticks outweigh the coordinator's polls on CPU 2; the guess says 0.
            (&[ms(60), Some(0), ms(12), ms(1)], &[], &[], "1", Some(0)),
            // With the guest's report the CPU it woke on wins over any busy time...
            (
                &[ms(60), Some(0), ms(12), ms(1)],
                &[(2, 50)],
                &[],
                "1",
                Some(2),
            ),
            // ... the CPU most polls woke on, the lowest on a tie ...
            (
                &[ms(60), Some(0), ms(12), ms(1)],
                &[(0, 3), (3, 47)],
                &[],
                "1",
                Some(3),
            ),
            (
                &[ms(60), Some(0), ms(12), ms(1)],
                &[(2, 25), (3, 25)],
                &[],
                "1",
                Some(2),
            ),
            // ... and is taken as reported even where the rule would not put it.
            (&[Some(1_000), ms(50)], &[(1, 50)], &[], "1", Some(1)),
            (&[Some(1), Some(1)], &[(1, 50)], &[0, 1], "", Some(1)),
        ];
        for (busy, wakeups, ran, full, want) in cases {
            let vcpus = busy.len() as u32;
            let mut g = guest_report(ran);
            g.cpus = busy
                .iter()
                .enumerate()
                .map(|(i, b)| cpu(i as u32, *b))
                .collect();
            g.coordinator_wakeups = wakeups
                .iter()
                .map(|&(cpu, wakeups)| ticklab_schema::report::CpuWakeups { cpu, wakeups })
                .collect();
            let spec = match ran.len() {
                0 => "idle".to_string(),
                n => format!("hogs:{n}"),
            };
            let w = workload_as_run(&Workload::parse(&spec, vcpus).unwrap(), &g);
            let full_set = if full.is_empty() {
                none.clone()
            } else {
                ticklab_cmdline::parse_cpulist(full, vcpus).unwrap()
            };
            assert_eq!(
                observed_coordinator_cpu(&g, &w, &full_set, &none),
                *want,
                "busy {busy:?}, wake-ups {wakeups:?}, hogs on {ran:?}, nohz_full {full:?}"
            );
        }
    }

    #[test]
    fn background_follows_the_build() {
        let names = |timers: &BuiltTimers| -> Vec<String> {
            let w = Workload::parse("idle", 2).unwrap();
            guest_background(&w, 1000, 0, timers)
                .into_iter()
                .map(|b| b.name)
                .collect()
        };
        // Debian's 6.1: every source.
        assert_eq!(names(&config().timers).len(), 8);
        // A trimmed guest kernel with only the watchdog: watchdog, vmstat, coordinator.
        let trimmed = BuiltTimers {
            softlockup: true,
            ..BuiltTimers::default()
        };
        assert_eq!(
            names(&trimmed),
            [
                "watchdog_timer_fn",
                "vmstat_update",
                "ticklab coordinator (hrtimer_wakeup)"
            ]
        );
        // Without the soft-lockup detector, no watchdog hrtimer.
        assert!(!names(&BuiltTimers::default()).contains(&"watchdog_timer_fn".to_string()));
    }

    #[test]
    fn coordinator_polls_faster_for_counted_workloads() {
        let period = |spec: &str| {
            let w = Workload::parse(spec, 2).unwrap();
            guest_background(&w, 250, 0, &config().timers)
                .into_iter()
                .find(|b| b.name.starts_with("ticklab coordinator"))
                .and_then(|b| b.period_ns)
        };
        assert_eq!(period("idle"), Some(COORDINATOR_POLL_NS));
        assert_eq!(period("hogs:2"), Some(COORDINATOR_POLL_NS));
        assert_eq!(
            period("syscall:getpid@0:n=1000"),
            Some(COORDINATOR_POLL_COUNTED_NS)
        );
    }

    #[test]
    fn the_coordinator_runs_as_long_as_the_guest_shows() {
        const S5: u64 = 5_000_000_000;
        // (workload, per CPU (LOC, busy ns), coordinator CPU, window) -> run per wake-up.
        // 50 polls in 5 s.
        type Case<'a> = (&'a str, &'a [(u64, Option<u64>)], u32, u64, Option<u64>);
        let cases: &[Case] = &[
            // 105 ms over 50 polls.
            (
                "idle",
                &[(50, Some(25_000_000)), (125, Some(105_000_000))],
                1,
                S5,
                Some(2_100_000),
            ),
            // The other CPU's hog changes nothing.
            (
                "hogs:1@0",
                &[(1250, Some(S5)), (125, Some(105_000_000))],
                1,
                S5,
                Some(2_100_000),
            ),
            // 5 ms polls with a counted workload: 1000 in 5 s.
            (
                "syscall:getpid@0:n=1000",
                &[(1250, Some(S5)), (1000, Some(500_000_000))],
                1,
                S5,
                Some(500_000),
            ),
            // A workload task on the coordinator's CPU: its busy time is the task's.
            ("hogs:1@1", &[(50, Some(1)), (1250, Some(S5))], 1, S5, None),
            // No busy time reported.
            ("idle", &[(50, None), (125, None)], 1, S5, None),
            // Busy for more than half of each 100 ms gap: not idle between the polls.
            (
                "idle",
                &[(50, Some(25_000_000)), (125, Some(3_000_000_000))],
                1,
                S5,
                None,
            ),
            // An empty window.
            ("idle", &[(50, Some(1)), (125, Some(1))], 1, 0, None),
        ];
        for (spec, cpus, coordinator, window, want) in cases {
            let w = Workload::parse(spec, 2).unwrap();
            let mut g = guest_report(&[]);
            g.cpus = cpus
                .iter()
                .enumerate()
                .map(|(i, (loc, busy))| guest_cpu(i as u32, *loc, *busy))
                .collect();
            let background = guest_background(&w, 250, *coordinator, &config().timers);
            assert_eq!(
                background_task_as_run(&g, *coordinator, &w, &background, *window),
                *want,
                "{spec}, {cpus:?}, coordinator on {coordinator}, window {window}"
            );
        }
    }

    #[test]
    fn the_coordinator_sleeps_relative_to_its_wake_up() {
        let w = Workload::parse("idle", 2).unwrap();
        let c = guest_background(&w, 250, 0, &config().timers)
            .into_iter()
            .find(|b| b.name.starts_with("ticklab coordinator"))
            .unwrap();
        assert!(c.relative && c.wakes_task && c.kind == TimerKind::Hrtimer);
    }

    #[test]
    fn a_coordinator_that_moved_is_split_by_its_wake_ups() {
        let w = Workload::parse("idle", 4).unwrap();
        let wake = |cpu, wakeups| CpuWakeups { cpu, wakeups };
        // (wake-ups per CPU, expected (CPU, period) of the coordinator's sources)
        type Case = (Vec<CpuWakeups>, Vec<(u32, u64)>);
        let cases: Vec<Case> = vec![
            (vec![wake(3, 50)], vec![(3, COORDINATOR_POLL_NS)]),
            (
                vec![wake(0, 22), wake(3, 28)],
                vec![
                    (0, COORDINATOR_POLL_NS * 50 / 22),
                    (3, COORDINATOR_POLL_NS * 50 / 28),
                ],
            ),
            (vec![], vec![(3, COORDINATOR_POLL_NS)]),
        ];
        for (wakeups, want) in cases {
            let mut b = guest_background(&w, 250, 3, &config().timers);
            split_coordinator(&mut b, &wakeups);
            let got: Vec<(u32, u64)> = b
                .iter()
                .filter(|s| s.name.starts_with(COORDINATOR_SOURCE))
                .map(|s| {
                    assert!(s.timer_migrates && s.relative && s.wakes_task, "{s:?}");
                    (
                        s.cpus.as_ref().and_then(|c| c.first()).unwrap(),
                        s.period_ns.unwrap(),
                    )
                })
                .collect();
            assert_eq!(got, want, "{wakeups:?}");
        }
    }

    /// A `vm build` guest's build: HZ=1000, nohz_full, the watchdog, nothing else that arms a
    /// timer.
    fn tiny_config() -> KernelConfig {
        KernelConfig::parse(
            "# Linux/x86 6.1.192 Kernel Configuration\nCONFIG_HZ=1000\nCONFIG_NO_HZ_FULL=y\n\
             CONFIG_SOFTLOCKUP_DETECTOR=y\n",
            "t",
        )
        .unwrap()
    }

    fn kt(comm: &str, cpu: u32, runs: u64, run_ns: Option<u64>) -> KthreadRuns {
        KthreadRuns {
            comm: comm.into(),
            cpu,
            bound: true,
            runs,
            run_ns,
        }
    }

    /// An idle 8-vCPU guest of the tiny build, every CPU housekeeping: (all CPUs, none busy,
    /// the guest's timers with the coordinator on CPU 6).
    fn idle_eight_cpus() -> (CpuSet, CpuSet, Vec<BackgroundSource>) {
        let w = Workload::parse("idle", 8).unwrap();
        let all = ticklab_cmdline::parse_cpulist("0-7", 8).unwrap();
        (
            all,
            CpuSet::new(),
            guest_background(&w, 1000, 6, &tiny_config().timers),
        )
    }

    #[test]
    fn the_guests_kernel_threads_become_one_source_per_cpu() {
        const S5: u64 = 5_000_000_000;
        let (all, none, background) = idle_eight_cpus();
        let mut g = guest_report(&[]);
        g.kthread_runs = vec![
            kt("rcu_sched", 0, 13, Some(448_092)),
            kt("migration/0", 0, 1, Some(106_641)),
            kt("rcuog/4", 0, 11, Some(333_395)),
            kt("kworker/u16:1-events_unbound", 0, 37, Some(2_998_244)),
            // Fewer runs than vmstat's expiries there: nothing left to add.
            kt("kworker/3:1-mm_percpu_wq", 3, 1, Some(124_800)),
            // No /proc/PID/sched: the machine's run length.
            kt("ksoftirqd/5", 5, 40, None),
        ];
        let got = kthread_background(&g, false, &background, &all, &none, S5, 64);
        let rows: Vec<(String, f64, Option<u64>)> = got
            .iter()
            .map(|b| {
                assert!(
                    b.wakes_task && b.kind == TimerKind::Wheel && !b.deferrable,
                    "{b:?}"
                );
                assert!(b.provenance.starts_with("M:"), "{b:?}");
                b.validate("background[0]", 8).unwrap();
                (b.name.clone(), b.rate_hz.unwrap(), b.task_ns)
            })
            .collect();
        // CPU 0: 62 runs less vmstat's 5 expiries (the watchdog is not on a nohz_full CPU);
        // 3 886 372 ns over the 62 timed runs. CPU 5: 40 runs less 5.
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[0].0, "kernel threads (CPU 0)");
        assert!(close(rows[0].1, 57.0 / 5.0), "{rows:?}");
        assert_eq!(rows[0].2, Some(3_886_372 / 62));
        assert_eq!(rows[1].0, "kernel threads (CPU 5)");
        assert!(close(rows[1].1, 35.0 / 5.0), "{rows:?}");
        assert_eq!(rows[1].2, None);
        // With CPU 0 a housekeeping CPU the watchdog's stopper runs are taken off too.
        let only = ticklab_cmdline::parse_cpulist("1-7", 8).unwrap();
        let got = kthread_background(&g, false, &background, &only, &none, S5, 64);
        assert!(
            close(got[0].rate_hz.unwrap(), (62.0 - 5.0 - 1.25) / 5.0),
            "{got:?}"
        );
        // Room for one: the busiest CPU keeps its source.
        let got = kthread_background(&g, false, &background, &all, &none, S5, 1);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].name, "kernel threads (CPU 0)");
        // No kernel-thread counts (an older report), or an empty window: nothing.
        assert!(
            kthread_background(&guest_report(&[]), false, &background, &all, &none, S5, 64)
                .is_empty()
        );
        assert!(kthread_background(&g, false, &background, &all, &none, 0, 64).is_empty());
    }

    /// On PREEMPT_RT the softirq threads' runs follow the interrupts the twin takes itself
    /// (its softirq rule): they make no source, and their mean run is the twin's softirq
    /// thread's.
    #[test]
    fn on_preempt_rt_the_softirq_threads_are_the_twins_own() {
        const S5: u64 = 5_000_000_000;
        let (all, none, background) = idle_eight_cpus();
        let mut g = guest_report(&[]);
        g.kthread_runs = vec![
            kt("rcuc/0", 0, 20, Some(600_000)),
            kt("ksoftirqd/0", 0, 1000, Some(27_000_000)),
            kt("ktimers/0", 0, 40, Some(1_400_000)),
            kt("ksoftirqd/5", 5, 40, Some(1_000_000)),
        ];
        let names = |rt: bool| -> Vec<String> {
            kthread_background(&g, rt, &background, &all, &none, S5, 64)
                .into_iter()
                .map(|b| b.name)
                .collect()
        };
        assert_eq!(
            names(false),
            ["kernel threads (CPU 0)", "kernel threads (CPU 5)"]
        );
        let rt = kthread_background(&g, true, &background, &all, &none, S5, 64);
        assert_eq!(rt.len(), 1, "{rt:?}");
        // CPU 0: rcuc's 20 runs less vmstat's 5 expiries, at rcuc's own length.
        assert!((rt[0].rate_hz.unwrap() - 15.0 / 5.0).abs() < 1e-9, "{rt:?}");
        assert_eq!(rt[0].task_ns, Some(30_000));
        // 29.4 ms over 1080 runs.
        assert_eq!(softirq_thread_ns(&g), Some(29_400_000 / 1080));
        g.kthread_runs.retain(|k| !is_softirq_thread(&k.comm));
        assert_eq!(softirq_thread_ns(&g), None);
    }

    #[test]
    fn an_unpinned_kernel_timer_is_taken_off_the_busiest_housekeeping_cpu() {
        const S5: u64 = 5_000_000_000;
        // config() has kcompactd (500 ms), PSI and memcg (2 s) and two neighbour tables (5 s):
        // 10 + 2.5 + 2.5 + 1 + 1 = 17 expiries in 5 s on some housekeeping CPU.
        let w = Workload::parse("idle", 2).unwrap();
        let background = guest_background(&w, 250, 1, &config().timers);
        let mut g = guest_report(&[]);
        g.kthread_runs = vec![
            kt("kcompactd0", 0, 20, None),
            kt("kworker/1:0", 1, 10, None),
        ];
        let got = kthread_background(
            &g,
            false,
            &background,
            &CpuSet::new(),
            &CpuSet::new(),
            S5,
            64,
        );
        // CPU 0 (the busiest): 20 - 17 - 5 (vmstat) - 1.25 (watchdog) < 0: nothing. CPU 1:
        // 10 - 5 - 1.25.
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].name, "kernel threads (CPU 1)");
        assert!(
            (got[0].rate_hz.unwrap() - 3.75 / 5.0).abs() < 1e-9,
            "{got:?}"
        );
    }

    #[test]
    fn a_cpus_trips_to_idle_count_its_kernel_threads_wake_ups() {
        const S5: u64 = 5_000_000_000;
        let tiny = tiny_config();
        let w = Workload::parse("hogs:1@1", 4).unwrap();
        let all = ticklab_cmdline::parse_cpulist("0-3", 4).unwrap();
        let background = guest_background(&w, 1000, 3, &tiny.timers);
        let mut g = guest_report(&[1]);
        // The aggressive idle boot of 2026-12-04 (5 s), folded onto 4 CPUs.
        g.kthread_runs = vec![
            kt("rcu_sched", 0, 23, Some(804_868)),
            kt("rcuog/0", 0, 10, Some(356_743)),
            kt("rcuos/3", 0, 9, Some(262_230)),
            kt("kworker/u16:1-events_unbound", 0, 37, Some(3_837_290)),
            kt("kworker/1:1", 1, 30, Some(300_000)),
            kt("kworker/3:1", 3, 4, Some(40_000)),
        ];
        let trips = [42, 7, 0, 53];
        g.cpus = (0..4)
            .map(|c| {
                let mut r = guest_cpu(c, 0, None);
                r.idle_entries = Some(trips[c as usize]);
                r
            })
            .collect();
        g.coordinator_wakeups = vec![CpuWakeups {
            cpu: 3,
            wakeups: 50,
        }];
        let got = kthread_background(&g, false, &background, &all, &busy_cpus(&w), S5, 64);
        let rows: Vec<(String, f64, Option<u64>)> = got
            .iter()
            .map(|b| (b.name.clone(), b.rate_hz.unwrap(), b.task_ns))
            .collect();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // CPU 0: 42 trips (of 79 runs), vmstat deferrable so not taken off, the watchdog not
        // on a nohz_full CPU; each wake-up runs 79 runs' time over 42.
        assert_eq!(rows[0].0, "kernel threads (CPU 0)");
        assert!(close(rows[0].1, 42.0 / 5.0), "{rows:?}");
        let per_run = (804_868 + 356_743 + 262_230 + 3_837_290) as f64 / 79.0;
        assert_eq!(rows[0].2, Some((per_run * 79.0 / 42.0).round() as u64));
        // CPU 1 runs the hog: its trips say nothing, so its 30 runs count, less vmstat's 5.
        assert_eq!(rows[1].0, "kernel threads (CPU 1)");
        assert!(close(rows[1].1, 25.0 / 5.0), "{rows:?}");
        assert!(rows[1].2 == Some(10_000), "{rows:?}");
        // CPU 3: 53 trips less the coordinator's 50 leaves 3 of its 4 runs.
        assert_eq!(rows[2].0, "kernel threads (CPU 3)");
        assert!(close(rows[2].1, 3.0 / 5.0), "{rows:?}");
        assert_eq!(rows.len(), 3, "{rows:?}");
        for b in &got {
            b.validate("background[0]", 4).unwrap();
        }
        assert!(
            got[0].provenance.contains("in 42 wake-ups"),
            "{}",
            got[0].provenance
        );
        assert!(
            got[1].provenance.contains("no idle count"),
            "{}",
            got[1].provenance
        );
    }
}

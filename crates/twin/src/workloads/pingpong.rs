//! The ping-pong workload in a KVM guest: two tasks that wake each other through a futex (the
//! `contextswitch` benchmark of E3) or a pipe, on two vCPUs or on one
//! (docs/experiments.md E3; the workload spec `pingpong:futex|pipe@A,B[:n=ROUNDS]`, the same
//! definition the host lab runs).
//!
//! # Design note
//!
//! The run is a chain of steps, each from one task's *wake point* (where it wakes the other)
//! to the other's, and the model walks it in order ([`GuestPingPong::run`]) instead of
//! queuing events. What a step holds is the loop the tasks run ([`PingPongLoop`]):
//!
//! * [`PingPongLoop::Blocking`] (the host lab's harness, `perf bench sched pipe`): a strict
//!   alternation. Task A wakes B, finishes its syscall, waits, and its vCPU goes idle; B's
//!   vCPU leaves its idle state, B is switched in, returns to user space and reaches its own
//!   wake point. Two switches per round trip.
//! * [`PingPongLoop::Timectxsw`] (the `contextswitch` benchmark's `timectxsw`, E3's published
//!   figures, docs/costs.md §12.2): after waking the other, a task does not sleep; it spins
//!   (`sched_yield`, and a `FUTEX_WAIT` that fails while the word still holds its own value)
//!   until the other task has written the word, then queues itself and switches out. The
//!   writer retries `FUTEX_WAKE` (with a `sched_yield` between tries) until it finds the
//!   spinner queued, so the wake lands a retry pass after the queueing, while the sleeper is
//!   still switching out; `try_to_wake_up` (4.x) then waits for the switch-out to finish
//!   (`p->on_cpu`), and NEED_RESCHED reaches the sleeper's idle task after it has begun its
//!   idle entry (its polling flag set first thing, the tick-stop decision next), so no IPI is
//!   needed. The benchmark counts four switches per round trip (it divides by
//!   `iterations << 2`), so its "switch" is half of one wake.
//!
//! In both, each
//! vCPU's idle loop, governor and host halt-polling window is advanced to the moment it is
//! woken. This is a dedicated model of the two vCPUs, not the general event loop of
//! `crate::sim`; it models no other timers and no other tasks. The guest tick does land: at
//! every multiple of the tick period while a vCPU's tick runs, the host's timer for the
//! guest's TSC deadline forces an external-interrupt exit, the guest runs its tick handler and
//! re-arms the deadline (an MSR-write exit). A tick in a busy stretch delays it; a tick while
//! the vCPU idle-polls with the tick kept costs CPU and exits but no delay (docs/model.md,
//! "Why a dedicated model").
//!
//! What one wake costs depends on the target's idle state at the wake point:
//!
//! * **polling flag set** (spinning in a poll, or still on the way into HLT): the waker only
//!   sets NEED_RESCHED, no IPI; a spinning target notices after one cache-line transfer, a
//!   target on its way into HLT aborts the HLT at its last check;
//! * **halted**: the waker writes the ICR (an MSR-write exit on the waker); the IPI is
//!   pending at the target when that exit's handler has run. The target went through its HLT
//!   exit into the host; the host polls for its window (if on and not switched off by the
//!   guest), else the vCPU thread blocked, its host CPU went idle under the host's governor
//!   ([`HostCpuIdle`]), and the wake costs that state's exit (plus an IPI only if the state
//!   does not keep the polling flag) and the host switch to the vCPU thread
//!   ([`KvmCosts::host_switch_ns`]). A host poller notices the pending interrupt after one
//!   cache-line transfer, as a guest poller does. Then the VM entry, the injected interrupt
//!   (guest interrupt entry/exit), the idle exit.
//!
//! Critical path: only what happens between the waker's wake point and the woken task's
//! next wake point counts. The waker's ICR exit after the IPI is pending, and the sleeper's
//! HLT exit (long before it is woken), run in parallel with the other vCPU. In `timectxsw`
//! the path also holds the spinner's notice of the word (half its spin pass, the mean over
//! the pass's phase), the writer's retry until the spinner is queued, and the wait for the
//! spinner's switch-out.
//!
//! On every idle exit a stopped tick is restarted, and every tick stop or restart programs the
//! TSC deadline: an MSR-write exit each. The time around the wake point splits the guest's
//! one-way context switch (`Costs::context_switch_ns`, a pipe ping-pong half round trip, which
//! includes both syscalls) in two halves: switch in → wake point, and wake point → idle. That
//! even split is an estimate (**E**). The pipe variant is costed like the futex one: no
//! published figure separates them.
//!
//! Where the tick stops is the kernel's rule ([`IdleEntryTick`]): before 4.17 every idle
//! entry stopped it at the top of the idle loop, `idle=poll` included; from 4.17 the path (or
//! its governor) decides and `idle=poll` keeps it. On the 2017 guest-polling path, whether
//! its poll comes before or after that stop is an unverified reading of the patch
//! ([`GuestPollPlacement`](crate::kernel::idle::GuestPollPlacement)): before it, a wake
//! landing in the poll skips the stop and the restart, and the wake's path is the one today's
//! haltpoll driver walks.
//!
//! Every cost on the critical path is added to its [`PathTerm`] as the walk takes it
//! ([`CriticalPath`]), so that a run's terms add up to its elapsed time and a report can print
//! each row's decomposition.
//!
//! Accounting: guest busy is time outside the idle task; host CPU is every nanosecond a
//! vCPU thread is not blocked (guest code, polling on either side, exits, host scheduling).
//! Both are given as a percentage of one CPU summed over the two vCPUs (the published "CPU %"
//! convention).

use ticklab_schema::machine::Costs;
use ticklab_schema::workload::TaskGroup;

use crate::kernel::cpuidle::SelectInput;
use crate::kernel::cpuidle::guest_idle::{GuestIdle, GuestIdlePath, IdleStep};
use crate::kernel::idle::{IdleEntryTick, NoDriverTick};
use crate::kernel::kvm::{
    ExitReason, HostCpuIdle, HostHaltPoll, HostHaltPollParams, HostIdleParams, KvmCosts,
    VcpuHostTime,
};
use crate::kernel::sched::wake_needs_ipi;
use crate::workloads::critical_path::{CriticalPath, PathTerm};

/// The syscalls of `timectxsw`'s spin and retry passes (docs/costs.md §12.2: **M** on this
/// project's host, a KVM guest, used as the estimate for the 2017 guest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpinCosts {
    /// `sched_yield()` with no other task runnable on the CPU.
    pub sched_yield_ns: u64,
    /// `FUTEX_WAIT` on a shared word that no longer holds the expected value (EAGAIN).
    pub futex_wait_fail_ns: u64,
    /// `FUTEX_WAKE` on a shared word with no waiter queued.
    pub futex_wake_none_ns: u64,
}

impl SpinCosts {
    /// The figures measured on this project's host, medians of nine runs of
    /// `scripts/timectxsw-probe.sh` (docs/costs.md §12.2).
    pub const fn measured_here() -> SpinCosts {
        SpinCosts {
            sched_yield_ns: 154,
            futex_wait_fail_ns: 162,
            futex_wake_none_ns: 119,
        }
    }

    /// One pass of the spinner's loop: `sched_yield` and a failing `FUTEX_WAIT`.
    pub fn spin_pass_ns(&self) -> u64 {
        self.sched_yield_ns + self.futex_wait_fail_ns
    }

    /// One pass of the writer's retry loop: a `FUTEX_WAKE` that finds no waiter and
    /// `sched_yield`.
    pub fn retry_pass_ns(&self) -> u64 {
        self.futex_wake_none_ns + self.sched_yield_ns
    }
}

/// The loop the two tasks run (see the module's design note).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PingPongLoop {
    /// Each task waits as soon as it has woken the other: a strict alternation (the host
    /// lab's harness, `perf bench sched pipe`).
    Blocking,
    /// The `contextswitch` benchmark's `timectxsw`: spin until the word changes, retry the
    /// wake until the other is queued.
    Timectxsw(SpinCosts),
}

impl PingPongLoop {
    /// Switches per round trip as the loop's benchmark counts them: two for a blocking
    /// ping-pong, four for `timectxsw` (`iterations << 2`).
    pub fn switches_per_round_trip(self) -> u64 {
        match self {
            PingPongLoop::Blocking => 2,
            PingPongLoop::Timectxsw(_) => 4,
        }
    }
}

/// A KVM guest of two vCPUs, each pinned 1:1 on an otherwise idle host CPU (an assumption:
/// the publication gives neither the vCPU count nor the placement).
#[derive(Debug, Clone)]
pub struct GuestSetup {
    /// The loop the two tasks run.
    pub benchmark: PingPongLoop,
    /// The guest's own (native) code costs.
    pub costs: Costs,
    /// The host's exit and wake-up costs.
    pub kvm: KvmCosts,
    /// Host halt polling.
    pub host_poll: HostHaltPollParams,
    /// The host CPU's idle states and governor rule (where a blocked vCPU's CPU goes).
    pub host_idle: HostIdleParams,
    /// The guest's idle path.
    pub idle: GuestIdlePath,
    /// The guest's tick period (`TICK_NSEC`).
    pub tick_period_ns: u64,
    /// The idle loop's tick rule on the HLT path (no cpuidle driver), by kernel version
    /// ([`NoDriverTick`]).
    pub no_driver_tick: NoDriverTick,
    /// Where the idle loop stops the tick, by kernel version ([`IdleEntryTick`]).
    pub idle_entry_tick: IdleEntryTick,
    /// vCPUs beyond the two of the ping-pong, with nothing to run. They cost host CPU only:
    /// under `idle=poll` each spins all the time; on every other path it halts once and its
    /// thread blocks (the timers such a vCPU would still take are not modelled).
    pub idle_vcpus: u32,
}

/// What a ping-pong run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct PingPongOutcome {
    /// Round trips run.
    pub round_trips: u64,
    /// Context switches as the loop's benchmark counts them
    /// ([`PingPongLoop::switches_per_round_trip`] per round trip).
    pub switches: u64,
    /// From the first to the last wake point.
    pub elapsed_ns: u64,
    /// VM exits by reason, indexed by [`ExitReason::index`].
    pub exits: [u64; 4],
    /// Wakes that needed no IPI (the target's polling flag was set).
    pub ipis_skipped: u64,
    /// Wakes whose target the host had been polling for.
    pub host_polled_wakes: u64,
    /// Wakes whose target's thread had blocked.
    pub blocked_wakes: u64,
    /// Blocked wakes whose host CPU needed a reschedule IPI.
    pub host_ipis: u64,
    /// Host idle state entries while vCPU threads were blocked, summed over both host CPUs:
    /// (state name, entries).
    pub host_idle_usage: Vec<(String, u64)>,
    /// Per vCPU: where its thread's host CPU time went.
    pub host: [VcpuHostTime; 2],
    /// Host CPU burnt by the idle vCPUs ([`GuestSetup::idle_vcpus`]), summed.
    pub idle_vcpus_host_ns: u64,
    /// The critical path, term by term; its total is `elapsed_ns`.
    pub critical_path: CriticalPath,
}

impl PingPongOutcome {
    /// Nanoseconds per context switch.
    pub fn ns_per_switch(&self) -> f64 {
        self.elapsed_ns as f64 / self.switches.max(1) as f64
    }

    /// Nanoseconds per round trip.
    pub fn ns_per_round_trip(&self) -> f64 {
        self.elapsed_ns as f64 / self.round_trips.max(1) as f64
    }

    /// VM exits of one reason per switch.
    pub fn exits_per_switch(&self, r: ExitReason) -> f64 {
        self.exits[r.index()] as f64 / self.switches.max(1) as f64
    }

    /// Guest busy time, % of one CPU summed over the vCPUs.
    pub fn guest_busy_pct(&self) -> f64 {
        let busy: u64 = self.host.iter().map(|h| h.guest_busy_ns).sum();
        100.0 * busy as f64 / self.elapsed_ns.max(1) as f64
    }

    /// Host CPU the vCPU threads consumed, % of one CPU summed over the vCPUs (the idle
    /// ones included).
    pub fn host_cpu_pct(&self) -> f64 {
        let cpu: u64 =
            self.host.iter().map(VcpuHostTime::host_cpu_ns).sum::<u64>() + self.idle_vcpus_host_ns;
        100.0 * cpu as f64 / self.elapsed_ns.max(1) as f64
    }

    /// Host CPU spent in host halt polling, % of one CPU.
    pub fn host_poll_pct(&self) -> f64 {
        let p: u64 = self.host.iter().map(|h| h.host_poll_ns).sum();
        100.0 * p as f64 / self.elapsed_ns.max(1) as f64
    }
}

/// Where a vCPU is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Running a task since `since`; it goes idle at `idle_at` (`u64::MAX`: not yet known).
    Running { since: u64, idle_at: u64 },
    /// In a poll step begun at `step_at`: the tick work ends and spinning starts at
    /// `poll_from`; the limit runs out at `until`. The polling flag is set throughout.
    Poll {
        step_at: u64,
        poll_from: u64,
        until: u64,
    },
    /// In a halt step begun at `step_at`; HLT executes at `hlt_at` (flag set until then).
    Halt { step_at: u64, hlt_at: u64 },
}

/// One vCPU.
#[derive(Debug, Clone)]
struct Vcpu {
    idle: GuestIdle,
    host: HostHaltPoll,
    host_cpu: HostCpuIdle,
    time: VcpuHostTime,
    tick_stopped: bool,
    phase: Phase,
    /// Time the thread spent blocked in the host (neither guest nor host CPU).
    blocked_ns: u64,
    /// Exit time inside the current busy period (not guest busy time).
    busy_exits_ns: u64,
    /// When its task last reached its wake point (a `timectxsw` task spins from there).
    wake_point: u64,
}

/// The two-vCPU guest running one ping-pong.
#[derive(Debug, Clone)]
pub struct GuestPingPong {
    setup: GuestSetup,
    vcpus: [Vcpu; 2],
    exits: [u64; 4],
    ipis_skipped: u64,
    host_polled_wakes: u64,
    blocked_wakes: u64,
    host_ipis: u64,
    host_polling: bool,
    path: CriticalPath,
}

impl GuestPingPong {
    /// A guest with both vCPUs idle at time 0; `None` if the idle path names an unknown
    /// governor.
    pub fn new(setup: GuestSetup) -> Option<Self> {
        let vcpu = || -> Option<Vcpu> {
            Some(Vcpu {
                idle: GuestIdle::new(setup.idle.clone())?,
                host: HostHaltPoll::new(setup.host_poll),
                host_cpu: HostCpuIdle::new(setup.host_idle.clone()),
                time: VcpuHostTime::default(),
                tick_stopped: false,
                phase: Phase::Running {
                    since: 0,
                    idle_at: u64::MAX,
                },
                blocked_ns: 0,
                busy_exits_ns: 0,
                wake_point: 0,
            })
        };
        let host_polling = !setup.idle.disables_host_polling();
        Some(GuestPingPong {
            vcpus: [vcpu()?, vcpu()?],
            setup,
            exits: [0; 4],
            ipis_skipped: 0,
            host_polled_wakes: 0,
            blocked_wakes: 0,
            host_ipis: 0,
            host_polling,
            path: CriticalPath::default(),
        })
    }

    fn exit(&mut self, v: usize, r: ExitReason, ns: u64) {
        self.exits[r.index()] += 1;
        self.vcpus[v].time.exits_ns += ns;
    }

    /// The ticks of `v` at multiples of the tick period in (`from`, `to`]: each an
    /// external-interrupt exit and a TSC-deadline re-arm exit; returns their count and the
    /// guest time they take in all (exits, interrupt entry and exit, tick handler).
    fn ticks(&mut self, v: usize, from: u64, to: u64) -> (u64, u64) {
        let p = self.setup.tick_period_ns.max(1);
        let n = (to / p).saturating_sub(from / p);
        let (kvm, c) = (self.setup.kvm, &self.setup.costs);
        let each =
            kvm.ext_int_exit_ns + c.irq_entry_exit_ns + c.tick_handler_ns + kvm.msr_write_exit_ns;
        for _ in 0..n {
            self.exit(v, ExitReason::ExternalInterrupt, kvm.ext_int_exit_ns);
            self.exit(v, ExitReason::MsrTscDeadline, kvm.msr_write_exit_ns);
        }
        (n, n * each)
    }

    /// A busy stretch of `v` from `from` that would end at `to`: its ticks push the end back
    /// (a tick falling in that extension is not counted; at HZ=250 that is one in ~10⁶).
    fn busy_until(&mut self, v: usize, from: u64, to: u64) -> u64 {
        let (n, ns) = self.ticks(v, from, to);
        let kvm = self.setup.kvm;
        self.vcpus[v].busy_exits_ns += n * (kvm.ext_int_exit_ns + kvm.msr_write_exit_ns);
        to + ns
    }

    /// Starts one step of `v`'s idle loop at `t`.
    fn begin_step(&mut self, v: usize, t: u64, after_poll_timeout: bool) {
        let tick = self.setup.tick_period_ns;
        let c = &self.setup.costs;
        let (tick_stop_ns, msr) = (c.tick_stop_ns, self.setup.kvm.msr_write_exit_ns);
        let cpu = &mut self.vcpus[v];
        let input = SelectInput {
            // A quiet guest: no timer but the tick.
            sleep_length_ns: u64::MAX,
            delta_next_ns: if cpu.tick_stopped {
                u64::MAX
            } else {
                tick - t % tick
            },
            tick_stopped: cpu.tick_stopped,
            latency_req_ns: u64::MAX,
            tick_period_ns: tick,
            // The ping-pong keeps each vCPU about half busy, far above 1/64 of capacity.
            utilized: true,
        };
        let step = cpu.idle.step(&input, after_poll_timeout);
        // Without a cpuidle driver the idle loop's own rule decides. Under
        // `NoDriverTick::AfterIdleTick` an entry stops the tick only after an idle pass the tick
        // ended; this model wakes vCPUs by IPI only (a tick landing in a halt is not simulated,
        // about one in 40 passes at HZ=250 and 10 µs halts), so the tick stays on.
        let hlt_rule =
            matches!(self.setup.idle, GuestIdlePath::Hlt).then_some(self.setup.no_driver_tick);
        let path_stops = match step {
            IdleStep::Poll { stop_tick, .. } | IdleStep::Halt { stop_tick } => {
                stop_tick && hlt_rule.is_none_or(|r| r.stops_tick(cpu.tick_stopped, false))
            }
        };
        let stop = !cpu.tick_stopped
            && self.setup.idle_entry_tick.stops_tick(
                self.setup.idle.at_idle_enter(after_poll_timeout),
                path_stops,
            );
        let mut now = t;
        if stop {
            cpu.tick_stopped = true;
            now += tick_stop_ns + msr;
            self.exit(v, ExitReason::MsrTscDeadline, msr);
        }
        self.vcpus[v].phase = match step {
            IdleStep::Poll { limit_ns, .. } => Phase::Poll {
                step_at: t,
                poll_from: now,
                until: now.saturating_add(limit_ns.max(1)),
            },
            IdleStep::Halt { .. } => Phase::Halt {
                step_at: t,
                hlt_at: now,
            },
        };
    }

    /// Brings `v` up to time `t`: a pending idle entry, poll steps that ran out.
    fn advance(&mut self, v: usize, t: u64) {
        if let Phase::Running { since, idle_at } = self.vcpus[v].phase
            && idle_at <= t
        {
            let cpu = &mut self.vcpus[v];
            cpu.time.guest_busy_ns += (idle_at - since) - std::mem::take(&mut cpu.busy_exits_ns);
            self.begin_step(v, idle_at, false);
        }
        while let Phase::Poll {
            step_at,
            poll_from,
            until,
        } = self.vcpus[v].phase
            && until <= t
        {
            if !self.vcpus[v].tick_stopped {
                self.ticks(v, poll_from, until);
            }
            self.vcpus[v].idle.reflect(until - step_at, true);
            self.begin_step(v, until, true);
        }
    }

    /// The IPI reaches vCPU `x`, halted since `hlt_at` (its idle step began at `step_at`),
    /// sent at `t`: the host's halt poll sees it within its window, or the vCPU thread has
    /// blocked and the host CPU wakes it (from its own idle state if it got there). Returns
    /// when the woken task runs in the guest.
    fn wake_from_halt(&mut self, x: usize, t: u64, step_at: u64, hlt_at: u64) -> u64 {
        let kvm = self.setup.kvm;
        let notice = self.setup.costs.cacheline_local_ns;
        let irq = self.setup.costs.irq_entry_exit_ns;
        let pending = t + kvm.icr_delivery_ns;
        let in_host = hlt_at + kvm.exit_entry_ns / 2;
        let window = if self.host_polling {
            self.vcpus[x].host.window_ns()
        } else {
            0
        };
        let poll_end = in_host + window;
        self.path.add(PathTerm::IcrDelivery, kvm.icr_delivery_ns);
        let running = if pending <= poll_end {
            // The host poller sees the pending interrupt one line transfer later.
            let back = pending.max(in_host) + if window > 0 { notice } else { 0 };
            self.path
                .add(PathTerm::HltExitWait, in_host.saturating_sub(pending));
            self.path
                .add(PathTerm::HostPollNotice, back - pending.max(in_host));
            self.vcpus[x].time.host_poll_ns += back - in_host;
            if window > 0 {
                self.host_polled_wakes += 1;
            }
            back
        } else {
            self.blocked_wakes += 1;
            let blocked = poll_end + kvm.host_block_ns;
            let cpu = &mut self.vcpus[x];
            // The host CPU idles from the block until NEED_RESCHED reaches it.
            let out_of_idle = if pending > blocked {
                cpu.host_cpu.enter(blocked);
                let w = cpu.host_cpu.wake(pending, &kvm);
                self.host_ipis += u64::from(w.ipi);
                let ipi_ns = if w.ipi { kvm.host_ipi_ns } else { 0 };
                self.path.add(PathTerm::HostIpi, ipi_ns);
                self.path.add(PathTerm::HostIdleExit, w.latency_ns - ipi_ns);
                pending + w.latency_ns
            } else {
                self.path.add(PathTerm::HostBlockWait, blocked - pending);
                blocked
            };
            self.path.add(PathTerm::HostSwitch, kvm.host_switch_ns);
            cpu.blocked_ns += out_of_idle - blocked.min(out_of_idle);
            cpu.time.host_poll_ns += window;
            cpu.time.host_sched_ns += kvm.host_block_ns + kvm.host_switch_ns;
            out_of_idle + kvm.host_switch_ns
        };
        self.vcpus[x].host.after_halt(running - in_host);
        self.exit(x, ExitReason::Hlt, kvm.exit_entry_ns);
        let r = running + kvm.exit_entry_ns / 2 + irq;
        self.path.add(PathTerm::VmEntry, kvm.exit_entry_ns / 2);
        self.path.add(PathTerm::GuestIrq, irq);
        self.vcpus[x].idle.reflect(r - step_at, false);
        r
    }

    /// Where a wake issued at `t` finds vCPU `x` (already advanced to `t`): whether the waker
    /// must send an IPI, and when the woken task is back in the guest, out of its idle state.
    /// Adds the target's side of the critical path.
    fn reach(&mut self, x: usize, t: u64) -> (bool, u64) {
        let notice = self.setup.costs.cacheline_local_ns;
        // The waker sets NEED_RESCHED; it writes the ICR only if the target's idle task has
        // cleared its polling flag, i.e. HLT has executed (the kernel's rule).
        let ipi = match self.vcpus[x].phase {
            Phase::Halt { hlt_at, .. } => wake_needs_ipi(t < hlt_at),
            Phase::Poll { .. } => wake_needs_ipi(true),
            // Not idle: there is no one to wake.
            Phase::Running { .. } => false,
        };
        let resume = match self.vcpus[x].phase {
            // Not asleep yet: its wait finds the word changed and returns without sleeping.
            Phase::Running { since, idle_at } => {
                // Invariant: a task is woken only after it woke the other one, which set when
                // it goes idle.
                debug_assert!(idle_at != u64::MAX, "woken before its own wake point");
                self.ipis_skipped += 1;
                let r = idle_at.max(t);
                self.path.add(PathTerm::NotYetIdle, r - t);
                // It never went idle: its busy time runs on.
                let cpu = &mut self.vcpus[x];
                cpu.time.guest_busy_ns += (r - since) - std::mem::take(&mut cpu.busy_exits_ns);
                r
            }
            Phase::Poll {
                step_at, poll_from, ..
            } => {
                self.ipis_skipped += 1;
                let r = t.max(poll_from) + notice;
                self.path
                    .add(PathTerm::IdleEntryWait, poll_from.saturating_sub(t));
                self.path.add(PathTerm::GuestPollNotice, notice);
                if !self.vcpus[x].tick_stopped {
                    // Ticks while polling with the tick kept: CPU and exits, no delay.
                    self.ticks(x, poll_from, r);
                }
                self.vcpus[x].idle.reflect(r - step_at, false);
                r
            }
            Phase::Halt { step_at, hlt_at } if !ipi => {
                // Flag still set: the last check before HLT sees NEED_RESCHED.
                self.ipis_skipped += 1;
                self.path.add(PathTerm::IdleEntryWait, hlt_at - t);
                self.vcpus[x].idle.reflect(hlt_at - step_at, false);
                hlt_at
            }
            Phase::Halt { step_at, hlt_at } => self.wake_from_halt(x, t, step_at, hlt_at),
        };
        (ipi, resume)
    }

    /// The idle exit of `x` at `resume`: a stopped tick is restarted, the woken task is
    /// switched in and runs to its own wake point, which is returned.
    fn switch_in(&mut self, x: usize, resume: u64) -> u64 {
        let (restart, exit) = (
            self.setup.costs.tick_restart_ns,
            self.setup.kvm.msr_write_exit_ns,
        );
        let half = self.setup.costs.context_switch_ns / 2;
        let mut run_from = resume;
        if self.vcpus[x].tick_stopped {
            self.vcpus[x].tick_stopped = false;
            run_from += restart + exit;
            self.path.add(PathTerm::TickRestart, restart);
            self.path.add(PathTerm::TickRestartExit, exit);
            self.exit(x, ExitReason::MsrTscDeadline, exit);
        }
        self.vcpus[x].phase = Phase::Running {
            since: run_from,
            idle_at: u64::MAX,
        };
        let next = self.busy_until(x, run_from, run_from + half);
        self.path.add(PathTerm::HalfSwitch, half);
        self.path.add(PathTerm::BusyTicks, next - run_from - half);
        self.vcpus[x].wake_point = next;
        next
    }

    /// The waker on `w` reaches its wake point at `t` ([`PingPongLoop::Blocking`]). Returns
    /// when the woken task on the other vCPU reaches its own wake point.
    fn wake(&mut self, w: usize, t: u64) -> u64 {
        let x = 1 - w;
        self.advance(x, t);
        let (ipi, resume) = self.reach(x, t);
        let kvm = self.setup.kvm;
        // The waker finishes its syscall (with the ICR exit if it sent an IPI) and waits.
        let mut idle_at = t + self.setup.costs.context_switch_ns / 2;
        if ipi {
            idle_at += kvm.msr_write_exit_ns;
            self.exit(w, ExitReason::MsrIcr, kvm.msr_write_exit_ns);
            self.vcpus[w].busy_exits_ns += kvm.msr_write_exit_ns;
        }
        let idle_at = self.busy_until(w, t, idle_at);
        if let Phase::Running {
            idle_at: ref mut at,
            ..
        } = self.vcpus[w].phase
        {
            *at = idle_at;
        }
        self.switch_in(x, resume)
    }

    /// Runs a workload group of the spec `pingpong:futex|pipe@A,B:n=ROUNDS` (the definition
    /// the host lab runs): A = B puts both tasks on one vCPU; the guest has two vCPUs, so A
    /// and B must be 0 or 1. The pipe variant is costed like the futex one.
    pub fn run_group(self, group: &TaskGroup) -> Result<PingPongOutcome, PingPongGroupError> {
        let TaskGroup::PingPong {
            cpu_a,
            cpu_b,
            round_trips,
            ..
        } = group
        else {
            return Err(PingPongGroupError::NotPingPong {
                group: group.label(),
            });
        };
        if *cpu_a > 1 || *cpu_b > 1 {
            return Err(PingPongGroupError::NoSuchVcpu {
                group: group.label(),
            });
        }
        Ok(self.run(*round_trips, cpu_a == cpu_b))
    }

    /// Runs `round_trips` round trips between vCPU 0 and vCPU 1 (or on vCPU 0 alone when
    /// `same_cpu`), and returns what was measured.
    pub fn run(mut self, round_trips: u64, same_cpu: bool) -> PingPongOutcome {
        let benchmark = self.setup.benchmark;
        let switches = round_trips * benchmark.switches_per_round_trip();
        if same_cpu {
            // One vCPU switches between the tasks directly (in `timectxsw`, four real
            // switches per round trip: the yields hand the CPU over); the other idles
            // throughout.
            let switching = switches * self.setup.costs.context_switch_ns;
            let elapsed = self.busy_until(0, 0, switching);
            self.path.add(PathTerm::SameCpuSwitch, switching);
            self.path.add(PathTerm::BusyTicks, elapsed - switching);
            self.vcpus[0].time.guest_busy_ns =
                elapsed - std::mem::take(&mut self.vcpus[0].busy_exits_ns);
            self.vcpus[1].phase = Phase::Running {
                since: 0,
                idle_at: 0,
            };
            self.advance(1, elapsed);
            let idle_host = match self.vcpus[1].phase {
                Phase::Poll { .. } => elapsed,
                Phase::Halt { hlt_at, .. } => hlt_at.min(elapsed),
                Phase::Running { .. } => 0,
            };
            self.vcpus[1].time.guest_idle_ns = idle_host;
            return self.outcome(round_trips, switches, elapsed);
        }
        // vCPU 1's task starts asleep; vCPU 0's task reaches its first wake point at 0.
        self.vcpus[1].phase = Phase::Running {
            since: 0,
            idle_at: 0,
        };
        self.advance(1, 0);
        self.vcpus[0].phase = Phase::Running {
            since: 0,
            idle_at: u64::MAX,
        };
        let mut t = 0;
        let mut w = 0;
        for _ in 0..2 * round_trips {
            t = match benchmark {
                PingPongLoop::Blocking => self.wake(w, t),
                PingPongLoop::Timectxsw(spin) => self.handshake(w, t, spin),
            };
            w = 1 - w;
        }
        match benchmark {
            // Close the busy period of the task that holds the last wake point.
            PingPongLoop::Blocking => {
                if let Phase::Running { since, .. } = self.vcpus[w].phase {
                    self.vcpus[w].time.guest_busy_ns += t.saturating_sub(since);
                }
            }
            // Both tasks are running: one holds the last wake point, the other spins.
            PingPongLoop::Timectxsw(_) => {
                for cpu in &mut self.vcpus {
                    if let Phase::Running { since, .. } = cpu.phase {
                        cpu.time.guest_busy_ns += t.saturating_sub(since)
                            - std::mem::take(&mut cpu.busy_exits_ns).min(t.saturating_sub(since));
                    }
                }
            }
        }
        // Guest idle time is what remains of each vCPU's time once busy, exits, host work
        // and blocked time are taken out.
        for cpu in &mut self.vcpus {
            let time = &mut cpu.time;
            let accounted =
                time.guest_busy_ns + time.exits_ns + time.host_poll_ns + time.host_sched_ns;
            time.guest_idle_ns = t.saturating_sub(accounted + cpu.blocked_ns);
        }
        self.outcome(round_trips, switches, t)
    }

    fn host_idle_usage(&self) -> Vec<(String, u64)> {
        let states = &self.setup.host_idle.states;
        states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n = self.vcpus.iter().map(|v| v.host_cpu.usage()[i]).sum();
                (s.name.to_string(), n)
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    fn outcome(&self, round_trips: u64, switches: u64, elapsed_ns: u64) -> PingPongOutcome {
        // Invariant: the critical path is the whole run.
        debug_assert_eq!(self.path.total_ns(), elapsed_ns, "{:?}", self.path);
        let spinning = matches!(self.setup.idle, GuestIdlePath::IdlePoll);
        PingPongOutcome {
            round_trips,
            switches,
            elapsed_ns,
            exits: self.exits,
            ipis_skipped: self.ipis_skipped,
            host_polled_wakes: self.host_polled_wakes,
            blocked_wakes: self.blocked_wakes,
            host_ipis: self.host_ipis,
            host_idle_usage: self.host_idle_usage(),
            host: [self.vcpus[0].time, self.vcpus[1].time],
            idle_vcpus_host_ns: if spinning {
                u64::from(self.setup.idle_vcpus) * elapsed_ns
            } else {
                0
            },
            critical_path: self.path,
        }
    }
}

/// Why [`GuestPingPong::run_group`] refused a workload group; each names the group by its
/// label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PingPongGroupError {
    /// The group is not a ping-pong.
    #[error("{group}: not a ping-pong group")]
    NotPingPong {
        /// The group's label.
        group: String,
    },
    /// A task is placed on a vCPU the two-vCPU guest does not have.
    #[error("{group}: the modelled guest has vCPUs 0 and 1")]
    NoSuchVcpu {
        /// The group's label.
        group: String,
    },
}

mod handshake;
#[cfg(test)]
mod tests;

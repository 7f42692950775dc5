//! The syscall loop (docs/experiments.md E4): one task calling `getpid()` `calls` times,
//! timed as a whole, like E4's test program and the host lab's harness.
//!
//! Each call is a user → kernel → user round trip: the entry/exit and the call itself
//! (`Costs::syscall_ns`) plus two context-tracking transitions
//! (`kernel::context_tracking`). The event loop does not step call by call: between
//! two events on the loop's CPU the calls run back to back, so the loop is a known amount of
//! work whose end is one event (`SLOT_TASK`). Everything that lands in between delays that end
//! by exactly its own duration, and is booked here by kind:
//! * interrupts (ticks, the residual 1 Hz tick, background timers), with their own
//!   context-tracking transitions when the CPU is nohz_full (an interrupt in this loop is
//!   taken from user mode: the kernel part of a call runs with interrupts masked except for
//!   the few instructions of `getpid` itself, so a pending interrupt is taken after the
//!   return to user);
//! * vtime accounting passes of pending time on a nohz_full CPU, one per TICK_NSEC boundary
//!   the loop's run time crosses (counted on the wall-time grid when the loop's end event
//!   comes, so the count is exact whatever the number of events);
//! * other tasks that preempt the loop (a woken background task and its two context
//!   switches).
//!
//! So `elapsed = calls × per_call + interrupts + flushes + preemption`, exactly, and the
//! per-call breakdown in the report adds up to the measured ns per call.

use crate::engine::Time;
use crate::kernel::context_tracking::TransitionCost;
use ticklab_cmdline::CpuSet;
use ticklab_schema::machine::Topology;
use ticklab_schema::report::SyscallBreakdown;

/// Where an unpinned task runs, as the scheduler places it: only on CPUs outside the
/// `isolcpus=` domain-isolated set (isolated CPUs are left out of scheduler domains and of the
/// default affinity); among those, by the hog preference ([`super::default_hog_cpus`]: idle
/// cores first, non-housekeeping threads first). A pinned task runs where it is pinned.
/// `None` if every CPU is isolated (the kernel then keeps the boot CPU; the caller reports it).
pub(crate) fn syscall_cpu(
    pinned: Option<u32>,
    topo: &Topology,
    housekeeping: &[bool],
    isolated: &CpuSet,
) -> Option<u32> {
    if let Some(c) = pinned {
        return Some(c);
    }
    super::default_hog_cpus(topo.nr_cpus(), topo, housekeeping)
        .into_iter()
        .find(|&c| !isolated.contains(c))
}

/// What one call costs on the loop's CPU, and the grid its pending vtime is flushed on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopCosts {
    /// The null syscall's entry, body and exit.
    pub(crate) syscall_ns: u64,
    /// One context-tracking transition on this CPU.
    pub(crate) transition: TransitionCost,
    /// One vtime accounting pass on this CPU (0 if none happens).
    pub(crate) flush_cost_ns: u64,
    /// TICK_NSEC.
    pub(crate) tick_nsec: u64,
}

/// One syscall loop at run time.
///
/// Invariant: while the loop runs, its `SLOT_TASK` is `start + calls × per_call_ns +
/// irq_ns + flush_ns + preempted_ns` (the work and everything booked so far).
#[derive(Debug, Clone)]
pub(crate) struct SyscallLoop {
    /// The CPU it runs on.
    pub(crate) cpu: u32,
    /// Pinned (`@CPU`) or placed by the scheduler.
    pub(crate) pinned: bool,
    /// Calls to make.
    pub(crate) calls: u64,
    /// The null syscall's entry, body and exit.
    pub(crate) syscall_ns: u64,
    /// One context-tracking transition on this CPU.
    pub(crate) transition: TransitionCost,
    /// One vtime accounting pass on this CPU (0 if none happens).
    pub(crate) flush_cost_ns: u64,
    /// TICK_NSEC: the grid the pending vtime is flushed on.
    tick_nsec: u64,
    /// When the first call started.
    pub(crate) start: Time,
    /// When the last call returned, once it has.
    pub(crate) finished: Option<Time>,
    /// Time taken by interrupts that landed in the loop.
    pub(crate) irq_ns: u64,
    /// How many.
    pub(crate) interrupts: u64,
    /// Of those, ticks of this CPU's own sched_timer.
    pub(crate) ticks: u64,
    /// vtime accounting passes so far.
    pub(crate) flushes: u64,
    /// Run time up to which flushes have been counted.
    flushed_to: Time,
    /// Time other tasks ran on the CPU while the loop was runnable (with the switches).
    pub(crate) preempted_ns: u64,
    /// Loop work left when it was preempted (0 while it runs).
    pub(crate) remaining_ns: u64,
    /// When it was last preempted.
    pub(crate) preempted_at: Time,
}

impl SyscallLoop {
    /// A loop of `calls` calls on `cpu` starting at `start`.
    pub(crate) fn new(
        cpu: u32,
        pinned: bool,
        calls: u64,
        costs: LoopCosts,
        start: Time,
    ) -> SyscallLoop {
        SyscallLoop {
            cpu,
            pinned,
            calls,
            syscall_ns: costs.syscall_ns,
            transition: costs.transition,
            flush_cost_ns: costs.flush_cost_ns,
            tick_nsec: costs.tick_nsec.max(1),
            start,
            finished: None,
            irq_ns: 0,
            interrupts: 0,
            ticks: 0,
            flushes: 0,
            flushed_to: start,
            preempted_ns: 0,
            remaining_ns: 0,
            preempted_at: 0,
        }
    }

    /// One call undisturbed: the syscall and its two transitions.
    #[inline]
    pub(crate) fn per_call_ns(&self) -> u64 {
        self.syscall_ns
            + crate::kernel::context_tracking::TRANSITIONS_PER_ENTRY * self.transition.total()
    }

    /// When the last call returns if nothing lands in the loop.
    pub(crate) fn undisturbed_end(&self) -> Time {
        self.start
            .saturating_add(self.calls.saturating_mul(self.per_call_ns()))
    }

    /// An interrupt of `irq_ns` landed in the loop (`tick`: the CPU's own sched_timer ran in
    /// it).
    #[inline]
    pub(crate) fn interrupted(&mut self, irq_ns: u64, tick: bool) {
        self.irq_ns += irq_ns;
        self.interrupts += 1;
        self.ticks += u64::from(tick);
    }

    /// The loop's end event came at `t`: the vtime passes owed for the TICK_NSEC boundaries
    /// crossed since the last count. Returns the time they add (0: the loop is done at `t`).
    pub(crate) fn flush_due(&mut self, t: Time) -> u64 {
        if self.flush_cost_ns == 0 {
            return 0;
        }
        let n = t / self.tick_nsec - self.flushed_to / self.tick_nsec;
        self.flushed_to = t;
        self.flushes += n;
        n * self.flush_cost_ns
    }

    /// The last call returned at `t`.
    pub(crate) fn finish(&mut self, t: Time) {
        debug_assert_eq!(
            t - self.start,
            self.calls * self.per_call_ns()
                + self.irq_ns
                + self.flushes * self.flush_cost_ns
                + self.preempted_ns,
            "the loop's time is its calls plus what was booked"
        );
        self.finished = Some(t);
    }

    /// Calls completed by `t` (all of them once finished); the part of a call in progress is
    /// not counted.
    pub(crate) fn calls_done(&self, t: Time) -> u64 {
        if self.finished.is_some() {
            return self.calls;
        }
        // While preempted, the loop's time stopped when it lost the CPU.
        let now = if self.remaining_ns > 0 {
            self.preempted_at
        } else {
            t
        };
        let busy = now.saturating_sub(self.start);
        let other = self.irq_ns + self.flushes * self.flush_cost_ns + self.preempted_ns;
        (busy.saturating_sub(other) / self.per_call_ns().max(1)).min(self.calls)
    }

    /// The per-call breakdown of what the loop measured up to `t` (its end if finished).
    pub(crate) fn breakdown(&self, t: Time) -> SyscallBreakdown {
        let end = self.finished.unwrap_or(t);
        let calls = self.calls_done(end).max(1) as f64;
        let per = |ns: u64| ns as f64 / calls;
        let tr = crate::kernel::context_tracking::TRANSITIONS_PER_ENTRY;
        SyscallBreakdown {
            ran_on: self.cpu,
            pinned: self.pinned,
            finished: self.finished.is_some(),
            elapsed_ns: end.saturating_sub(self.start),
            entry_exit_ns: self.syscall_ns as f64,
            rcu_eqs_ns: (tr * self.transition.rcu_eqs_ns) as f64,
            vtime_ns: (tr * self.transition.vtime_ns) as f64,
            static_key_ns: (tr * self.transition.check_ns) as f64,
            vtime_flush_ns: per(self.flushes * self.flush_cost_ns),
            interrupts_ns: per(self.irq_ns),
            preempted_ns: per(self.preempted_ns),
            interrupts: self.interrupts,
            ticks: self.ticks,
            vtime_flushes: self.flushes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpinned_never_lands_on_an_isolated_cpu() {
        let topo = Topology {
            sockets: 2,
            cores_per_socket: 10,
            threads_per_core: 2,
        };
        let isolated: CpuSet = (2..20).chain(22..40).collect();
        let hk: Vec<bool> = (0..40).map(|c| !isolated.contains(c)).collect();
        // (pinned, isolated set, housekeeping, expected)
        let none = CpuSet::new();
        let all_hk = vec![true; 40];
        let cases = [
            (None, &isolated, &hk, Some(0)),
            (Some(4), &isolated, &hk, Some(4)),
            (Some(20), &isolated, &hk, Some(20)),
            (None, &none, &all_hk, Some(0)),
        ];
        for (pinned, iso, hk, want) in cases {
            let got = syscall_cpu(pinned, &topo, hk, iso);
            assert_eq!(got, want, "{pinned:?}");
            if pinned.is_none() {
                assert!(!iso.contains(got.unwrap()));
            }
        }
        let everything: CpuSet = (0..40).collect();
        assert_eq!(syscall_cpu(None, &topo, &hk, &everything), None);
    }

    #[test]
    fn calls_done_stop_while_preempted() {
        let costs = LoopCosts {
            syscall_ns: 100,
            transition: TransitionCost::default(),
            flush_cost_ns: 0,
            tick_nsec: 4_000_000,
        };
        let mut l = SyscallLoop::new(0, false, 1_000, costs, 0);
        assert_eq!(l.calls_done(50_000), 500);
        l.remaining_ns = 50_000;
        l.preempted_at = 50_000;
        assert_eq!(l.calls_done(80_000), 500, "preempted: no calls");
        l.preempted_ns += 30_000;
        l.remaining_ns = 0;
        assert_eq!(l.calls_done(90_000), 600, "resumed at 80 µs");
    }

    #[test]
    fn time_adds_up() {
        let tr = TransitionCost {
            rcu_eqs_ns: 21,
            vtime_ns: 12,
            check_ns: 0,
        };
        let costs = LoopCosts {
            syscall_ns: 400,
            transition: tr,
            flush_cost_ns: 75,
            tick_nsec: 4_000_000,
        };
        let mut l = SyscallLoop::new(4, true, 1000, costs, 1_000);
        assert_eq!(l.per_call_ns(), 466);
        l.interrupted(2_000, true);
        let end = l.undisturbed_end() + 2_000;
        assert_eq!(l.flush_due(end), 0, "no TICK_NSEC boundary crossed");
        l.finish(end);
        let b = l.breakdown(end);
        let sum = b.per_call_sum();
        assert!((sum - b.elapsed_ns as f64 / 1000.0).abs() < 1e-9);
        assert_eq!(b.interrupts_ns, 2.0);
    }
}

//! Where a softirq raised by a hard interrupt runs (`kernel/softirq.c`), by build.
//!
//! * Without `CONFIG_PREEMPT_RT` it runs at the interrupt's exit, on the interrupted context:
//!   an idle CPU stays in its idle pass, and the pass counts as ended by the tick when the
//!   tick raised it.
//! * With `CONFIG_PREEMPT_RT` the interrupt exit wakes the CPU's softirq thread instead
//!   (`ksoftirqd/N`; the timer softirqs go to `ktimers/N` on the 6.1 RT tree). On an idle CPU
//!   that is a task wake-up: the idle loop is left (`do_idle` returns), the thread runs, and
//!   the next idle entry is a new `do_idle`, whose record of the tick that ended the last pass
//!   starts empty. On kernels whose idle loop keeps a running tick unless the last pass was
//!   ended by the tick ([`crate::kernel::idle::NoDriverTick::AfterIdleTick`]), the tick
//!   therefore survives every tick that raises a softirq: where the periodic load balance is
//!   due on every tick ([`crate::kernel::sched_balance`]: two CPUs at HZ=250), an idle CPU
//!   whose tick is running keeps it running.
//!
//! Which interrupts raise a softirq on PREEMPT_RT: the tick (the periodic balance when due, the
//! TIMER softirq when a wheel timer is), the expiry of an hrtimer not armed
//! `HRTIMER_MODE_HARD` (on PREEMPT_RT `__hrtimer_init` puts every other hrtimer on the soft
//! bases, so its callback runs from `HRTIMER_SOFTIRQ`; the tick and the soft-lockup watchdog
//! are hard, as are the sleeps of real-time tasks), and the idle load balancer's kick
//! (`NohzIdleBalance` in [`crate::kernel::sched_balance`]). The event loop collects them during the
//! interrupt and wakes the thread once at its exit, as `irq_exit` does.
//!
//! Measured in the VM lab (docs/vm-validation.md, "PREEMPT_RT"): in Debian's 6.1 RT guest with
//! 2 vCPUs, idle, `ksoftirqd/0` ran 1262 times in 5 s beside CPU 0's 1280 local timer
//! interrupts.

/// Where the softirqs a hard interrupt raises run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftirqRuns {
    /// At the interrupt's exit (every build without `CONFIG_PREEMPT_RT`).
    IrqExit,
    /// In the CPU's softirq thread, woken at the interrupt's exit (`CONFIG_PREEMPT_RT`).
    Thread,
}

impl SoftirqRuns {
    /// The rule of a build with or without `CONFIG_PREEMPT_RT`.
    pub fn for_build(preempt_rt: bool) -> SoftirqRuns {
        if preempt_rt {
            SoftirqRuns::Thread
        } else {
            SoftirqRuns::IrqExit
        }
    }

    /// Whether a raised softirq runs in the CPU's softirq thread (PREEMPT_RT).
    #[inline]
    pub fn in_thread(self) -> bool {
        self == SoftirqRuns::Thread
    }

    /// Whether a softirq raised by an interrupt taken in the idle loop (`in_idle`) wakes a
    /// task there, ending the idle loop.
    #[inline]
    pub fn wakes_idle_cpu(self, raised: bool, in_idle: bool) -> bool {
        self == SoftirqRuns::Thread && raised && in_idle
    }
}

#[cfg(test)]
mod tests {
    use super::SoftirqRuns::{IrqExit, Thread};
    use super::*;

    #[test]
    fn a_raised_softirq_wakes_an_idle_cpu_only_on_preempt_rt() {
        assert_eq!(SoftirqRuns::for_build(false), IrqExit);
        assert_eq!(SoftirqRuns::for_build(true), Thread);
        // (rule, raised, in the idle loop) -> a task wakes
        for (rule, raised, idle, want) in [
            (IrqExit, true, true, false),
            (IrqExit, true, false, false),
            (Thread, true, true, true),
            (Thread, false, true, false),
            (Thread, true, false, false), // a busy CPU runs the thread after its task: no trip
        ] {
            assert_eq!(
                rule.wakes_idle_cpu(raised, idle),
                want,
                "{rule:?} raised={raised} idle={idle}"
            );
        }
    }
}

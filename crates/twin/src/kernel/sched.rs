//! Scheduler basics: what is runnable on a CPU and whether that needs the tick, how long
//! a busy nohz_full CPU may go without a scheduler tick, and whether waking an idle CPU
//! needs an IPI.

use crate::engine::Time;

/// How long a busy nohz_full CPU may defer its scheduler tick, by kernel version
/// (docs/kernel-behaviour.md §4.5): up to 4.16 `scheduler_tick_max_deferment` allowed one
/// second (HZ jiffies) since the CPU's last scheduler tick, which left a residual 1 Hz tick;
/// from 4.17 a housekeeping CPU runs that tick remotely (`sched_tick_remote`) and the CPU's
/// own tick may stay off (`None`).
pub(crate) fn busy_tick_max_deferment(version: (u32, u32), hz: u32, tick_nsec: u64) -> Option<u64> {
    (version < (4, 17)).then_some(hz as u64 * tick_nsec)
}

/// Whether the scheduler tick of busy nohz_full CPUs is run remotely by a housekeeping CPU
/// once a second (4.17 on, docs/kernel-behaviour.md §4.5).
pub(crate) fn has_remote_tick(version: (u32, u32)) -> bool {
    version >= (4, 17)
}

/// The latest a stopped tick of a busy nohz_full CPU may be programmed: its last scheduler
/// tick plus the deferment limit, if the kernel has one.
#[inline]
pub(crate) fn capped_tick_expiry(expires: Time, last_sched_tick: Time, max: Option<u64>) -> Time {
    match max {
        Some(d) => expires.min(last_sched_tick.saturating_add(d)),
        None => expires,
    }
}

/// A scheduling class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchedClass {
    /// SCHED_OTHER (CFS/EEVDF).
    Fair,
    /// SCHED_FIFO.
    Fifo,
}

/// Runnable tasks on one CPU, by class.
///
/// Invariant: a task leaves only a class it was enqueued in (no count goes below 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RunQueue {
    /// SCHED_OTHER tasks.
    nr_fair: u32,
    /// SCHED_FIFO tasks.
    nr_fifo: u32,
    /// SCHED_RR tasks.
    nr_rr: u32,
    /// SCHED_DEADLINE tasks.
    nr_dl: u32,
}

impl RunQueue {
    fn count(&mut self, class: SchedClass) -> &mut u32 {
        match class {
            SchedClass::Fair => &mut self.nr_fair,
            SchedClass::Fifo => &mut self.nr_fifo,
        }
    }

    /// A task of `class` becomes runnable.
    #[inline]
    pub(crate) fn enqueue(&mut self, class: SchedClass) {
        *self.count(class) += 1;
    }

    /// Runnable tasks of every class, the running one included (`rq->nr_running`).
    #[inline]
    pub(crate) fn nr_running(&self) -> u32 {
        self.nr_fair + self.nr_fifo + self.nr_rr + self.nr_dl
    }

    /// A runnable task of `class` sleeps or exits.
    #[inline]
    pub(crate) fn dequeue(&mut self, class: SchedClass) {
        let n = self.count(class);
        debug_assert!(*n > 0, "dequeue from an empty {class:?} queue");
        *n -= 1;
    }

    /// The SCHED tick-dependency rule (`sched_can_stop_tick`): a deadline task needs the tick;
    /// more than one RR task needs it (one can stop); otherwise any FIFO task can stop; otherwise
    /// more than one fair task needs it.
    #[inline]
    pub(crate) fn can_stop_tick(&self) -> bool {
        if self.nr_dl > 0 {
            return false;
        }
        if self.nr_rr > 0 {
            return self.nr_rr == 1;
        }
        if self.nr_fifo > 0 {
            return true;
        }
        self.nr_fair <= 1
    }
}

/// How many runnable background tasks of one CPU keep their own run length
/// ([`BackgroundRuns`]).
pub(crate) const BACKGROUND_RUNS: usize = 16;

/// The run lengths of the background tasks woken on one CPU and not yet started, oldest
/// first: each source's tasks run their own length (`BackgroundSource::task_ns`, a kernel
/// thread's measured CPU time per run), and the CPU runs its background tasks in wake order.
///
/// A fixed ring, so that a wake-up allocates nothing. More than [`BACKGROUND_RUNS`] waiting at
/// once (only on a CPU kept busy far longer than the sources' periods) drops the newest
/// lengths: those tasks run the machine's `costs.background_task_ns`
/// ([`BackgroundRuns::start`] returns `None` for them).
///
/// Invariant: `len <= BACKGROUND_RUNS`, and the CPU's runnable background tasks are at least
/// `len` (each entry is a task woken and not started).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BackgroundRuns {
    /// The lengths, ns: at most the validated `MAX_COST_NS` (1 s), so they fit 32 bits.
    ns: [u32; BACKGROUND_RUNS],
    head: u8,
    len: u8,
}

impl BackgroundRuns {
    /// A task that will run `ns` was woken. Returns whether its length was kept.
    #[inline]
    pub(crate) fn woken(&mut self, ns: u64) -> bool {
        if self.len as usize == BACKGROUND_RUNS {
            return false;
        }
        let at = (self.head as usize + self.len as usize) % BACKGROUND_RUNS;
        debug_assert!(
            ns <= u64::from(u32::MAX),
            "a validated task length fits 32 bits"
        );
        self.ns[at] = ns.min(u64::from(u32::MAX)) as u32;
        self.len += 1;
        true
    }

    /// The oldest waiting task starts: its run length, or `None` when none was kept.
    #[inline]
    pub(crate) fn start(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let ns = u64::from(self.ns[self.head as usize]);
        self.head = ((self.head as usize + 1) % BACKGROUND_RUNS) as u8;
        self.len -= 1;
        Some(ns)
    }

    /// Tasks waiting with a kept length.
    #[inline]
    pub(crate) fn waiting(&self) -> u32 {
        u32::from(self.len)
    }
}

/// Where a woken fair task runs (the idle-CPU search of `select_idle_sibling`,
/// docs/kernel-behaviour.md §12.11): its previous CPU `prev` if that CPU is idle, else the
/// first idle CPU the task may use, scanning upward from `prev + 1` and wrapping round (one
/// last-level cache: the modelled machines' sockets are not told apart here), else `prev`.
///
/// `allowed(c)` says whether the task may run on `c`, `idle(c)` whether `c` is idle now.
pub(crate) fn select_idle_sibling(
    prev: usize,
    nr_cpus: usize,
    allowed: impl Fn(usize) -> bool,
    idle: impl Fn(usize) -> bool,
) -> usize {
    debug_assert!(prev < nr_cpus, "the previous CPU {prev} exists");
    if idle(prev) {
        return prev;
    }
    (1..nr_cpus)
        .map(|i| (prev + i) % nr_cpus)
        .find(|&c| allowed(c) && idle(c))
        .unwrap_or(prev)
}

/// Whether waking the idle task of another CPU needs a reschedule IPI
/// (`set_nr_and_not_polling` on the `resched_curr` path, `set_nr_if_polling` on the queued
/// wake-up path, `kernel/sched/core.c`): the waker sets NEED_RESCHED in the idle task's
/// flags with one atomic and sends the IPI only if `TIF_POLLING_NRFLAG` was clear. An idle
/// task keeps that flag set while it polls (`idle=poll`, the cpuidle POLL state, the
/// 2017 guest poll, an MWAIT on the flags word) and until the last check before a
/// non-polling instruction such as HLT; the polling CPU then sees the flag on its own, so the
/// waker's whole cost is that one store (docs/costs.md §12).
#[inline]
pub(crate) fn wake_needs_ipi(target_polling: bool) -> bool {
    !target_polling
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_runs_are_first_in_first_out_and_full_drops_the_newest() {
        let mut r = BackgroundRuns::default();
        assert_eq!(r.start(), None);
        for round in 0..3u64 {
            // Wrap the ring: fill it, overfill it, drain it.
            for k in 0..BACKGROUND_RUNS as u64 {
                assert!(r.woken(round * 100 + k));
            }
            assert!(!r.woken(9999), "one more than the ring holds is dropped");
            assert_eq!(r.waiting(), BACKGROUND_RUNS as u32);
            for k in 0..BACKGROUND_RUNS as u64 {
                assert_eq!(r.start(), Some(round * 100 + k));
            }
            assert_eq!(r.start(), None);
            // Interleaved: two in, one out, so the head moves.
            assert!(r.woken(1) && r.woken(2));
            assert_eq!(r.start(), Some(1));
            assert_eq!(r.start(), Some(2));
        }
    }

    #[test]
    fn a_polling_idle_cpu_is_woken_without_an_ipi() {
        // (target's idle task has TIF_POLLING_NRFLAG set, IPI needed)
        for (polling, ipi) in [(true, false), (false, true)] {
            assert_eq!(wake_needs_ipi(polling), ipi, "polling={polling}");
        }
    }

    #[test]
    fn idle_sibling_table() {
        // (prev, idle CPUs, allowed CPUs, expected)
        let table: [(usize, &[usize], &[usize], usize); 6] = [
            (1, &[0, 1], &[0, 1, 2, 3], 1), // prev idle: stay
            (1, &[0], &[0, 1, 2, 3], 0),    // wraps round to 0
            (1, &[0, 3], &[0, 1, 2, 3], 3), // first upward from prev + 1
            (1, &[], &[0, 1, 2, 3], 1),     // nothing idle: stay
            (1, &[3], &[0, 1, 2], 1),       // the idle CPU is not allowed
            (0, &[2], &[0, 2], 2),
        ];
        for (prev, idle, allowed, want) in table {
            let got = select_idle_sibling(prev, 4, |c| allowed.contains(&c), |c| idle.contains(&c));
            assert_eq!(got, want, "prev {prev}, idle {idle:?}, allowed {allowed:?}");
        }
    }

    #[test]
    fn residual_tick_before_4_17_remote_tick_after() {
        // (version, deferment at HZ=250, remote tick)
        let cases = [
            ((3, 10), Some(1_000_000_000), false),
            ((4, 16), Some(1_000_000_000), false),
            ((4, 17), None, true),
            ((5, 15), None, true),
        ];
        for (v, max, remote) in cases {
            assert_eq!(busy_tick_max_deferment(v, 250, 4_000_000), max, "{v:?}");
            assert_eq!(has_remote_tick(v), remote, "{v:?}");
        }
        assert_eq!(capped_tick_expiry(u64::MAX, 7, Some(10)), 17);
        assert_eq!(capped_tick_expiry(12, 7, Some(10)), 12);
        assert_eq!(capped_tick_expiry(u64::MAX, 7, None), u64::MAX);
    }

    #[test]
    fn sched_dependency_table() {
        let rq = |fair, fifo, rr, dl| RunQueue {
            nr_fair: fair,
            nr_fifo: fifo,
            nr_rr: rr,
            nr_dl: dl,
        };
        // (runqueue, can stop)
        let cases = [
            (rq(0, 0, 0, 0), true),
            (rq(1, 0, 0, 0), true),
            (rq(2, 0, 0, 0), false),
            (rq(0, 0, 0, 1), false),
            (rq(0, 0, 1, 0), true),
            (rq(0, 0, 2, 0), false),
            (rq(3, 0, 1, 0), true), // one RR task runs; fair tasks wait behind it
            (rq(0, 2, 0, 0), true),
            (rq(5, 1, 0, 0), true),
        ];
        for (q, want) in cases {
            assert_eq!(q.can_stop_tick(), want, "{q:?}");
        }
    }

    #[test]
    fn enqueue_dequeue_table() {
        let mut q = RunQueue::default();
        // (operation, can stop the tick after)
        let steps = [
            (Some(SchedClass::Fair), true),
            (Some(SchedClass::Fair), false), // two fair tasks
            (Some(SchedClass::Fifo), true),  // a FIFO task runs, fair ones wait
            (None, false),                   // the FIFO task sleeps
        ];
        for (op, want) in steps {
            match op {
                Some(c) => q.enqueue(c),
                None => q.dequeue(SchedClass::Fifo),
            }
            assert_eq!(q.can_stop_tick(), want, "{q:?}");
        }
    }
}

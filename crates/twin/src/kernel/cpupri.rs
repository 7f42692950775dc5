//! The RT scheduler's shared bookkeeping of 3.0 (`kernel/sched_cpupri.c`, `sched_rt.c`), the
//! part an RT wake-up or sleep touches with push/pull on (docs/model.md "E2 mechanisms").
//!
//! `cpupri` maps each CPU to the priority of its highest runnable task and keeps, per
//! priority, a vector: a CPU mask, a count and — in 3.0 — a raw spinlock. When an RT task
//! wakes on an otherwise idle CPU, the run queue's highest priority rises from NORMAL to the
//! task's: `cpupri_set` takes the new vector's lock (sets the CPU's bit, counts it, and on the
//! vector's first member sets its bit in `pri_active`), then the old vector's lock (uncounts,
//! clears). Going back to sleep does the reverse. All workers of one priority share one
//! vector, and every CPU without RT work shares the NORMAL one, so workers woken at the same
//! instant queue on both locks.
//!
//! Push/pull: the sleeping side's `pre_schedule_rt` checks the root domain's RT-overload
//! count (`rt_overloaded`) before pulling. The count is written only when a run queue holds
//! more than one RT task with one of them allowed to migrate; E2's workers are pinned, one per
//! CPU, so the count is never written and the check is a read of a line every CPU shares.
//! No push or pull IPI is ever due (the rules of `push_rt_task`/`pull_rt_task` need a
//! migratable waiting task). The model keeps the read so that a configuration with
//! overload would pay for it, and reports the IPIs it sends (none here).
//!
//! "Push/pull off" (configurations b–d): the cpuset switch of the RT kernels of the era gave
//! the isolated CPUs bookkeeping of their own, so nothing here is shared with them; the twin
//! then leaves this module out for them.

use crate::engine::Time;
use crate::hw::lock::{Acquired, AtomicLine, ContendedLock, LOCKED_OP_NS, TransferCost};
use crate::hw::spinlock::Spinlock;

/// A CPU's place in cpupri.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CpuPrio {
    /// No RT task runnable (`CPUPRI_NORMAL`; 3.0 keeps idle CPUs here too).
    Normal,
    /// An RT task of the workers' priority is runnable.
    Rt,
}

impl CpuPrio {
    fn index(self) -> usize {
        match self {
            CpuPrio::Normal => 0,
            CpuPrio::Rt => 1,
        }
    }
}

/// The root domain's cpupri vectors the model's tasks use, and its RT-overload count.
///
/// Invariant: `counts[v]` is the number of CPUs whose `cpu_prio` is `v`.
#[derive(Debug, Clone)]
pub(crate) struct CpuPri {
    /// One lock (with its count and mask lines) per vector: NORMAL, the workers' RT priority.
    vecs: [ContendedLock; 2],
    counts: [u32; 2],
    /// `pri_active`: written when a vector's count goes 0 ↔ 1.
    pri_active: AtomicLine,
    /// The root domain's `rto_count` (read by the pull check).
    rto_count: AtomicLine,
    cpu_prio: Vec<CpuPrio>,
    /// Per-CPU last-seen write numbers of `pri_active` and `rto_count`.
    seen: Vec<(u64, u64)>,
}

impl CpuPri {
    /// Every CPU at NORMAL; the vector locks are spinlocks of the implementation `spinlock`
    /// (raw spinlocks in 3.0, so they spin on PREEMPT_RT too).
    pub(crate) fn new(nr_cpus: usize, spinlock: Spinlock) -> CpuPri {
        CpuPri {
            vecs: [
                ContendedLock::with_spinlock(spinlock, nr_cpus),
                ContendedLock::with_spinlock(spinlock, nr_cpus),
            ],
            counts: [nr_cpus as u32, 0],
            pri_active: AtomicLine::default(),
            rto_count: AtomicLine::default(),
            cpu_prio: vec![CpuPrio::Normal; nr_cpus],
            seen: vec![(0, 0); nr_cpus],
        }
    }

    /// `cpupri_set(cpu, new)` arriving at `at`: the new vector's lock, then the old one's.
    /// Returns the time spent (waits, transfers, critical sections) and the longest single
    /// wait; `(0, 0)` when the priority does not change.
    pub(crate) fn set(
        &mut self,
        cpu: u32,
        socket: u32,
        new: CpuPrio,
        at: Time,
        cost: TransferCost,
    ) -> (u64, Acquired) {
        let old = self.cpu_prio[cpu as usize];
        let mut worst = Acquired {
            wait_ns: 0,
            contended: false,
        };
        if old == new {
            return (0, worst);
        }
        let mut now = at;
        for (v, delta) in [(new.index(), 1i32), (old.index(), -1)] {
            // Inside: the mask word (its own line, `cpumask_var_t` off-stack with MAXSMP)
            // was written by the previous holder, so it travels like the lock line; then the
            // locked bit operation and the count.
            let lock = &mut self.vecs[v];
            let transfer = lock.ticket_transfer_to(cpu, socket, cost);
            let mut hold = transfer + LOCKED_OP_NS;
            let count = &mut self.counts[v];
            let flips = if delta > 0 { *count == 0 } else { *count == 1 };
            *count = count.wrapping_add_signed(delta);
            if flips {
                // set_bit / clear_bit in pri_active, inside the critical section.
                let got = self.pri_active.write(now, LOCKED_OP_NS, cpu, socket, cost);
                hold += got.wait_ns + LOCKED_OP_NS;
            }
            let got = lock.acquire_after_transfer(now, hold, transfer, cpu, socket, cost);
            if got.wait_ns >= worst.wait_ns {
                worst = got;
            }
            now += got.wait_ns + hold;
        }
        self.cpu_prio[cpu as usize] = new;
        self.check();
        (now - at, worst)
    }

    /// The pull check of a CPU leaving RT at `at` (`rt_overloaded`: a read of `rto_count`).
    /// Returns the time it costs and whether a pull (and its IPIs) is due, which needs an
    /// overloaded run queue: never in a model whose RT tasks are all pinned.
    pub(crate) fn pull_check(
        &mut self,
        cpu: u32,
        socket: u32,
        at: Time,
        cost: TransferCost,
    ) -> (u64, bool) {
        let seen = &mut self.seen[cpu as usize].1;
        let t = self.rto_count.read(at, seen, cpu, socket, cost);
        (t, false)
    }

    #[inline]
    fn check(&self) {
        debug_assert_eq!(
            self.counts[1] as usize,
            self.cpu_prio.iter().filter(|&&p| p == CpuPrio::Rt).count()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COST: TransferCost = crate::hw::lock::TEST_COST;

    /// Longest cpupri_set time of `n` CPUs of one socket waking at the same instant.
    fn storm(n: u32) -> u64 {
        let mut c = CpuPri::new(64, Spinlock::Queued);
        (0..n)
            .map(|cpu| c.set(cpu, 0, CpuPrio::Rt, 1_000, COST).0)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn set_is_a_noop_at_the_same_priority() {
        let mut c = CpuPri::new(4, Spinlock::Queued);
        assert_eq!(c.set(1, 0, CpuPrio::Normal, 0, COST).0, 0);
        assert!(c.set(1, 0, CpuPrio::Rt, 0, COST).0 > 0);
        assert_eq!(c.set(1, 0, CpuPrio::Rt, 10_000, COST).0, 0);
    }

    #[test]
    fn simultaneous_wakers_queue_on_the_vectors() {
        let w: Vec<u64> = [1, 2, 8, 20].iter().map(|&n| storm(n)).collect();
        for p in w.windows(2) {
            assert!(p[1] > p[0], "{w:?}");
        }
        // The lone waker pays its two critical sections and the pri_active bit.
        assert_eq!(w[0], 3 * LOCKED_OP_NS);
    }

    #[test]
    fn the_pull_check_reads_an_unwritten_line_and_sends_nothing() {
        let mut c = CpuPri::new(4, Spinlock::Queued);
        assert_eq!(c.pull_check(2, 1, 100, COST), (0, false));
    }
}

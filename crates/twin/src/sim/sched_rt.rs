//! RT wake-up and sleep bookkeeping (`kernel/sched_rt.c` of 3.0: `inc_rt_prio` /
//! `dec_rt_prio` → `cpupri_set`, and the pull check of `pre_schedule_rt`), and the load
//! average's idle accounting at the switch to idle (`calc_load_account_idle`). The rules are
//! [`crate::kernel::cpupri`] and [`crate::kernel::loadavg`]; this wires them into the paths.

use super::Sim;
use super::observe::{Event, LockId, Observer, SharedLine};
use crate::engine::Time;
use crate::kernel::cpupri::CpuPrio;
use ticklab_schema::experiment::e2::Mechanism;

impl<O: Observer> Sim<O> {
    /// An RT task became runnable on `c` (in the waking hrtimer callback): the run queue's
    /// priority rises, `cpupri_set` moves the CPU to the RT vector.
    pub(super) fn enqueue_rt(&mut self, c: usize, now: Time) -> Time {
        self.cpupri_set(c, CpuPrio::Rt, now)
    }

    /// The RT task on `c` went to sleep: back to the NORMAL vector, then the pull check.
    pub(super) fn dequeue_rt(&mut self, c: usize, now: Time) -> Time {
        let mut now = self.cpupri_set(c, CpuPrio::Normal, now);
        if self.mech.has(Mechanism::Cpupri) {
            let socket = self.cpus[c].socket;
            let (t, pull) = self.cpupri.pull_check(c as u32, socket, now, self.transfer);
            // A pull (and its IPIs) needs an overloaded run queue, which pinned RT tasks
            // never make (`kernel::cpupri`).
            debug_assert!(!pull);
            now += t;
        }
        now
    }

    fn cpupri_set(&mut self, c: usize, prio: CpuPrio, now: Time) -> Time {
        if !self.mech.has(Mechanism::Cpupri) {
            return now;
        }
        let socket = self.cpus[c].socket;
        let (t, worst) = self.cpupri.set(c as u32, socket, prio, now, self.transfer);
        if t == 0 {
            return now;
        }
        self.emit(
            now,
            Event::LockAcquired {
                cpu: c as u32,
                lock: LockId::Line(SharedLine::CpupriVectors),
                wait_ns: worst.wait_ns,
                contended: worst.contended,
            },
        );
        self.emit(
            now + t,
            Event::PathWaited {
                cpu: c as u32,
                wait_ns: worst.wait_ns,
            },
        );
        now + t
    }

    /// `calc_load_account_idle` at the switch to the idle task on `c`.
    pub(super) fn calc_load_account_idle(&mut self, c: usize, now: Time) -> Time {
        if !self.mech.has(Mechanism::LoadFold) {
            return now;
        }
        let socket = self.cpus[c].socket;
        now + self
            .loadavg
            .account_idle(c as u32, socket, now, self.transfer)
    }
}

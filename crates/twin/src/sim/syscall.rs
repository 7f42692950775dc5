//! The syscall path wired to the CPU: the loop of [`crate::workloads::syscall`] runs as the
//! CPU's task, interrupts that land in it and tasks that preempt it delay its end, and its end
//! event settles the vtime passes it owes before the task exits.

use super::observe::Observer;
use super::{Running, SLOT_TASK, Sim};
use crate::engine::{NEVER, Time};
use crate::kernel::sched::SchedClass;

impl<O: Observer> Sim<O> {
    /// The syscall loop on `c` reached its projected end at `t`: book the vtime passes owed
    /// since the last count (which moves the end), or finish and let the task exit.
    pub(super) fn syscall_end(&mut self, c: usize, t: Time) {
        let Some(l) = self.syscall.as_mut() else {
            return;
        };
        let extra = l.flush_due(t);
        if extra > 0 {
            let cpu = &mut self.cpus[c];
            cpu.slots[SLOT_TASK] = t + extra;
            cpu.busy_until(t);
            return;
        }
        l.finish(t);
        let cpu = &mut self.cpus[c];
        cpu.slots[SLOT_TASK] = NEVER;
        cpu.syscall_runnable = false;
        cpu.rq.dequeue(SchedClass::Fair);
        let now = t + self.costs.context_switch_ns;
        if cpu.bg_runnable > 0 || cpu.hogs > 0 || cpu.frame_runnable {
            cpu.running = Running::Idle;
            self.switch_to_next(c, now);
        } else {
            self.enter_idle(c, now);
        }
    }

    /// An interrupt taken at `t` and left at `now` landed in the loop on `c` (its end is
    /// already pushed back by the caller).
    pub(super) fn syscall_interrupted(&mut self, c: usize, t: Time, now: Time) {
        let tick = self.cpus[c].last_sched_tick >= t;
        if let Some(l) = self.syscall.as_mut() {
            l.interrupted(now - t, tick);
        }
    }

    /// Another task takes the CPU from the loop at `now`: keep the loop's work left.
    pub(super) fn syscall_preempted(&mut self, c: usize, now: Time) {
        let cpu = &mut self.cpus[c];
        if let Some(l) = self.syscall.as_mut() {
            l.remaining_ns = cpu.slots[SLOT_TASK].saturating_sub(now).max(1);
            l.preempted_at = now;
        }
        cpu.slots[SLOT_TASK] = NEVER;
    }

    /// The loop gets the CPU back at `now`: its end moves by the time it waited.
    pub(super) fn syscall_resumed(&mut self, c: usize, now: Time) {
        if let Some(l) = self.syscall.as_mut() {
            l.preempted_ns += now - l.preempted_at;
            self.cpus[c].slots[SLOT_TASK] = now + std::mem::take(&mut l.remaining_ns);
        }
    }
}

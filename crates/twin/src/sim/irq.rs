//! The device interrupt: leave the idle state, interrupt entry (jiffies catch-up on a
//! tick-stopped CPU), [`hrtimer_interrupt`](super::Sim), the TIMER softirq, interrupt exit and
//! what runs next.

use super::observe::{Event, Observer};
use super::{Running, SLOT_DEVICE, SLOT_IPI, SLOT_TASK, Sim};
use crate::engine::{NEVER, Time};

impl<O: Observer> Sim<O> {
    /// The clock event device's interrupt on `c` at `t` (`SLOT_DEVICE`).
    pub(super) fn device_interrupt(&mut self, c: usize, t: Time) {
        self.cpus[c].slots[SLOT_DEVICE] = NEVER;
        let was_idle = if self.cpus[c].waking {
            // Second half of a wake-up: the exit latency has passed, the handler runs now.
            self.cpus[c].waking = false;
            true
        } else {
            self.cpus[c].dev.fired();
            let idle = self.cpus[c].idle.is_some();
            if idle {
                let exec = self.idle_wake(c, t, false);
                if exec > t {
                    // The CPU spends the exit latency leaving its C-state; the handler (and
                    // everything it does to shared state) happens at `exec`, as its own event.
                    self.cpus[c].waking = true;
                    self.cpus[c].slots[SLOT_DEVICE] = exec;
                    return;
                }
            }
            idle
        };
        let mut now = t;
        let start = now;
        self.emit(now, Event::IrqEntry { cpu: c as u32 });
        now += self.costs.irq_entry_exit_ns / 2;
        if !was_idle && self.cpus[c].running != Running::Idle {
            // Taken from user mode: the context-tracking transitions of this CPU.
            now += self.ct.entry_exit_ns(self.cpus[c].nohz_full);
        }
        if self.cpus[c].ts.is_stopped() {
            now = self.catch_up_jiffies(c, now);
        }
        now = self.hrtimer_interrupt(c, now);
        if self.cpus[c].timer_softirq {
            now = self.run_timer_softirq(c, now);
        }
        if self.softirq_runs.in_thread() {
            self.invoke_softirq_thread(c, now);
        }
        now += self.costs.irq_entry_exit_ns / 2;
        let irq_ns = now - start;
        self.emit(
            now,
            Event::IrqExit {
                cpu: c as u32,
                irq_ns,
            },
        );
        self.after_interrupt(c, t, now, was_idle);
    }

    /// A reschedule IPI arrives on `c` at `t` (`SLOT_IPI`; a task was queued here from another
    /// CPU): leave the idle state, the handler (interrupt entry and exit, with the jiffies
    /// catch-up of a CPU whose tick was stopped), re-program the device if a timer moved here
    /// is now the first, and run the task. Not a `LOC`.
    pub(super) fn resched_ipi(&mut self, c: usize, t: Time) {
        self.cpus[c].slots[SLOT_IPI] = NEVER;
        let was_idle = if self.cpus[c].ipi_waking {
            // Second half: the exit latency has passed.
            self.cpus[c].ipi_waking = false;
            true
        } else {
            let idle = self.cpus[c].idle.is_some();
            if idle {
                let exec = self.idle_wake(c, t, false);
                if exec > t {
                    self.cpus[c].ipi_waking = true;
                    self.cpus[c].slots[SLOT_IPI] = exec;
                    return;
                }
            }
            idle
        };
        let mut now = t;
        let cpu = c as u32;
        if std::mem::take(&mut self.cpus[c].ipi_call) {
            self.emit(now, Event::CallFunctionIpi { cpu });
        } else {
            self.emit(now, Event::ReschedIpi { cpu });
        }
        now += self.costs.irq_entry_exit_ns / 2;
        if self.cpus[c].ts.is_stopped() {
            now = self.catch_up_jiffies(c, now);
        }
        now += self.costs.irq_entry_exit_ns / 2;
        now = self.reprogram(c, now);
        self.after_interrupt(c, t, now, was_idle);
    }

    /// After the interrupt handler: schedule, re-evaluate the tick, or go back to idle.
    pub(super) fn after_interrupt(&mut self, c: usize, t: Time, mut now: Time, was_idle: bool) {
        if was_idle {
            let cpu = &self.cpus[c];
            if cpu.frame_runnable || cpu.bg_runnable > 0 || cpu.hogs > 0 || cpu.syscall_runnable {
                now = self.idle_exit(c, now);
                self.switch_to_next(c, now);
            } else {
                self.enter_idle(c, now);
            }
            return;
        }
        // Interrupted a running task: it is delayed by the interrupt.
        let irq = now - t;
        let cpu = &mut self.cpus[c];
        if matches!(
            cpu.running,
            Running::Background | Running::Frame | Running::Syscall
        ) && cpu.slots[SLOT_TASK] != NEVER
        {
            cpu.slots[SLOT_TASK] += irq;
        }
        if cpu.running == Running::Syscall {
            self.syscall_interrupted(c, t, now);
        }
        let cpu = &mut self.cpus[c];
        if cpu.frame_runnable && cpu.running != Running::Frame {
            // SCHED_FIFO wake-up preemption of whatever runs; a background task resumes later.
            if cpu.running == Running::Background && cpu.slots[SLOT_TASK] != NEVER {
                cpu.bg_remaining = cpu.slots[SLOT_TASK].saturating_sub(now).max(1);
                cpu.slots[SLOT_TASK] = NEVER;
            }
            if cpu.running == Running::Syscall {
                self.syscall_preempted(c, now);
            }
            now += self.costs.context_switch_ns;
            self.switch_to_next(c, now);
        } else if cpu.running == Running::Syscall && cpu.bg_runnable > 0 {
            // Wakeup preemption of the syscall loop: its work left waits.
            self.syscall_preempted(c, now);
            now += self.costs.context_switch_ns;
            self.switch_to_next(c, now);
        } else if cpu.running == Running::Hog && cpu.bg_runnable > 0 {
            // Wakeup preemption: the short task runs now, the hog waits.
            now += self.costs.context_switch_ns;
            self.switch_to_next(c, now);
        }
        now = self.nohz_full_update(c, now);
        self.emit(now, Event::IrqReturn { cpu: c as u32 });
        self.cpus[c].busy_until(now);
    }
}

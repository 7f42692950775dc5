//! tick-sched wiring (`kernel/time/tick-sched.c`): the tick callback `tick_sched_timer`, tick
//! stop and restart, the nohz_full re-evaluation at interrupt exit, `tick_nohz_idle_exit`, and
//! the jiffies write section. The rules themselves live in [`crate::kernel::tick`] and
//! [`crate::kernel::timekeeping`].

use super::Sim;
use super::observe::{Event, LockId, Observer};
use crate::engine::{NEVER, Time};
use crate::kernel::hrtimer::TimerId;
use crate::kernel::sched::capped_tick_expiry;
use crate::kernel::tick::{NextEventInput, TickAction, TickStop};

impl<O: Observer> Sim<O> {
    /// What `tick_nohz_next_event` looks at on `c`: jiffies, the wheel, the duty.
    pub(super) fn next_event_input(&self, c: usize) -> NextEventInput {
        let cpu = &self.cpus[c];
        let next_wheel = match cpu.wheel.next_expiry(false) {
            Some(j) => self.tk.jiffy_to_mono(j),
            None => NEVER,
        };
        NextEventInput {
            basemono: self.tk.last_jiffies_update(),
            tick_nsec: self.tick_nsec,
            next_wheel,
            needs_tick: cpu.timer_softirq,
            tick_stopped: cpu.ts.is_stopped(),
            is_duty: self.tk.is_duty(cpu.id),
            duty_held: self.tk.duty_held(),
            was_last_holder: self.tk.was_last_holder(cpu.id),
            max_deferment: self.tk.max_deferment_ns(),
        }
    }

    /// The idle-tick gate (`can_stop_idle_tick`); the rule is `NohzMode::can_stop_idle_tick`.
    #[inline]
    pub(super) fn can_stop_idle_tick(&self, c: usize) -> bool {
        self.nohz.can_stop_idle_tick(self.tk.is_duty(c as u32))
    }

    /// Stops (or re-targets) the tick until `expires`; returns the time after the work.
    pub(super) fn tick_stop(&mut self, c: usize, expires: Time, now: Time) -> Time {
        if self.tk.on_tick_stop(c as u32) {
            self.emit(now, Event::DutyChanged { to: self.tk.duty() });
        }
        let cpu = &mut self.cpus[c];
        match cpu.ts.stop(&mut cpu.hrt, expires) {
            TickStop::Unchanged => return now,
            TickStop::Stopped => self.emit(now, Event::TickStopped { cpu: c as u32 }),
            TickStop::Retargeted => {}
        }
        self.reprogram(c, now)
    }

    /// Restarts the tick on its saved phase; returns the time after the work.
    pub(super) fn tick_restart(&mut self, c: usize, mut now: Time) -> Time {
        now = self.catch_up_jiffies(c, now);
        now += self.costs.tick_restart_ns;
        let cpu = &mut self.cpus[c];
        cpu.ts.restart(&mut cpu.hrt, now, self.tick_nsec);
        self.emit(now, Event::TickRestarted { cpu: c as u32 });
        self.reprogram(c, now)
    }

    /// The tick callback.
    pub(super) fn tick_sched_timer(&mut self, c: usize, id: TimerId, mut now: Time) -> Time {
        let cpu_id = c as u32;
        // Duty: a housekeeping CPU whose tick fires while nobody holds the duty takes it.
        if self.tk.take_duty_if_free(cpu_id, self.cpus[c].housekeeping) {
            self.emit(now, Event::DutyChanged { to: self.tk.duty() });
        }
        // (a) ktime_get: read the timekeeping seqlock; spins while the writer is inside.
        let socket = self.cpus[c].socket;
        let mut seen = self.cpus[c].xtime_seen;
        let spin = self
            .xtime
            .read(now, &mut seen, cpu_id, socket, self.transfer);
        self.cpus[c].xtime_seen = seen;
        let mut waited = spin;
        now += self.costs.xtime_read_ns + spin;
        // (b) the duty CPU's jiffies + wall-time write section (one xtime_lock up to 3.7; from
        // 3.8 jiffies_lock, taken by the duty alone, then the timekeeper seqcount: the same
        // section for the readers, whose wait is only the timekeeper part, modelled as all).
        if self.tk.is_duty(cpu_id) && self.tk.is_due(now) {
            now = self.jiffies_write(c, now);
        }
        // (c) RCU quiescent-state report into the leaf rcu_node (simplification: every tick;
        // the kernel reports once per grace period per CPU, and a busy machine starts grace
        // periods every few ticks).
        let leaf = c / self.rcu_fanout as usize;
        let hold = self.costs.rcu_node_hold_ns;
        let got = self.rcu_leaves[leaf].acquire(now, hold, cpu_id, socket, self.transfer);
        self.emit(
            now,
            Event::LockAcquired {
                cpu: cpu_id,
                lock: LockId::RcuNodeLeaf(leaf as u32),
                wait_ns: got.wait_ns,
                contended: got.contended,
            },
        );
        let wait = got.wait_ns;
        waited += wait;
        now += wait + hold;
        self.emit(
            now,
            Event::LockWaited {
                cpu: cpu_id,
                wait_ns: waited,
            },
        );
        self.emit(now, Event::Tick { cpu: cpu_id });
        let jiffies = self.tk.jiffies();
        let cpu = &mut self.cpus[c];
        now += self.costs.tick_handler_ns;
        cpu.last_sched_tick = now;
        if cpu.wheel.next_expiry(true).is_some_and(|j| j <= jiffies) {
            cpu.timer_softirq = true;
        }
        debug_assert_eq!(id, cpu.ts.sched_timer());
        cpu.ts.rearm(&mut cpu.hrt, now, self.tick_nsec);
        now
    }

    /// The full-dynticks evaluation at interrupt exit on a busy nohz_full CPU.
    pub(super) fn nohz_full_update(&mut self, c: usize, now: Time) -> Time {
        let cpu = &self.cpus[c];
        let action = self.nohz.full_update(
            cpu.nohz_full,
            cpu.rq.can_stop_tick(),
            cpu.ts.is_stopped(),
            || self.next_event_input(c),
        );
        match action {
            TickAction::Keep => now,
            TickAction::Stop(expires) => {
                // Before 4.17 a busy CPU's tick may be deferred one second at most.
                let expires = capped_tick_expiry(
                    expires,
                    self.cpus[c].last_sched_tick,
                    self.busy_tick_max_deferment,
                );
                self.tick_stop(c, expires, now)
            }
            TickAction::Restart => self.tick_restart(c, now),
        }
    }

    /// tick_nohz_idle_exit: leave the idle loop because a task is runnable.
    pub(super) fn idle_exit(&mut self, c: usize, mut now: Time) -> Time {
        if self.cpus[c].ts.is_stopped() {
            if self.cpus[c].nohz_full {
                now = self.nohz_full_update(c, now);
            } else {
                now = self.tick_restart(c, now);
            }
        }
        now + self.costs.context_switch_ns
    }

    /// Jiffies catch-up on interrupt entry / tick restart of a CPU whose tick was stopped.
    pub(super) fn catch_up_jiffies(&mut self, c: usize, mut now: Time) -> Time {
        self.tk.observe_reader(now);
        if self.tk.is_due(now) {
            now = self.jiffies_write(c, now);
        }
        now
    }

    /// The jiffies + wall-time write section on `c` (duty tick or idle-exit catch-up): the
    /// timekeeping seqlock's write side, queued behind any writer inside.
    pub(super) fn jiffies_write(&mut self, c: usize, now: Time) -> Time {
        let n = self.tk.update_jiffies(now);
        let hold = self.costs.jiffies_update_ns + n * self.costs.jiffies_catch_up_per_tick_ns;
        let socket = self.cpus[c].socket;
        let got = self.xtime.write(now, hold, c as u32, socket, self.transfer);
        self.emit(
            now,
            Event::LockAcquired {
                cpu: c as u32,
                lock: LockId::Timekeeping,
                wait_ns: got.wait_ns,
                contended: got.contended,
            },
        );
        let wait = got.wait_ns;
        self.emit(
            now,
            Event::LockWaited {
                cpu: c as u32,
                wait_ns: wait,
            },
        );
        now + wait + hold
    }
}

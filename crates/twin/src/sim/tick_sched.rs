//! tick-sched wiring (`kernel/time/tick-sched.c`): the tick callback `tick_sched_timer`, tick
//! stop and restart, the nohz_full re-evaluation at interrupt exit, `tick_nohz_idle_exit`, and
//! the jiffies write section. The rules themselves live in [`crate::kernel::tick_sched`] and
//! [`crate::kernel::timekeeping`]; the shared lines of the 3.0 era the tick and the nohz
//! transitions touch in [`crate::kernel::rcu`], [`crate::kernel::loadavg`] and
//! [`crate::kernel::nohz_balance`], each switched by a [`Mechanism`] (docs/model.md "E2
//! mechanisms").
//!
//! The tick, in the order of 3.0's `tick_sched_timer`: `ktime_get` (the timekeeping seqlock's
//! read side) → the duty CPU's jiffies update (lockless check, then the write side) →
//! `scheduler_tick` (the load fold every `LOAD_FREQ`, the idle-balance trigger) → RCU (notice
//! a new grace period, report the quiescent state, force those of dyntick-idle CPUs; the RCU
//! softirq's work is charged here, at the end of the same interrupt) → the rest of the tick.

use super::observe::{Event, LockId, Observer, SharedLine};
use super::{Running, Sim};
use crate::engine::{NEVER, Time};
use crate::kernel::hrtimer::TimerId;
use crate::kernel::rcu::{self, RcuLeafStep, RcuTickInput};
use crate::kernel::sched::capped_tick_expiry;
use crate::kernel::tick_sched::{NextEventInput, TickAction, TickStop};
use crate::kernel::timekeeping::RECHECK_NS;
use ticklab_schema::experiment::e2::Mechanism;

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
        let mut now = now;
        match cpu.ts.stop(&mut cpu.hrt, expires) {
            TickStop::Unchanged => return now,
            TickStop::Stopped => {
                self.emit(now, Event::TickStopped { cpu: c as u32 });
                if let Some(b) = &mut self.balance
                    && self.cpus[c].running == Running::Idle
                {
                    b.nohz.enter_idle(c);
                }
                if self.mech.has(Mechanism::NohzEnterExit) {
                    let socket = self.cpus[c].socket;
                    let (t, wait) = self
                        .nohz_balance
                        .enter(c as u32, socket, now, self.transfer);
                    now = self.shared_line_waited(c, SharedLine::NohzMasks, now, t, wait);
                }
            }
            TickStop::Retargeted => {}
        }
        self.reprogram(c, now)
    }

    /// Charges `t` ns of shared-line work of a path other than the tick, starting at `now`,
    /// whose longest wait was `wait`: reports the acquisition and the wait, returns the time
    /// after the work.
    fn shared_line_waited(
        &mut self,
        c: usize,
        line: SharedLine,
        now: Time,
        t: u64,
        wait: u64,
    ) -> Time {
        self.emit(
            now,
            Event::LockAcquired {
                cpu: c as u32,
                lock: LockId::Line(line),
                wait_ns: wait,
                // A wait longer than the dearest line transfer was spent queueing.
                contended: wait > self.transfer.far_ns,
            },
        );
        self.emit(
            now + t,
            Event::PathWaited {
                cpu: c as u32,
                wait_ns: wait,
            },
        );
        now + t
    }

    /// Restarts the tick on its saved phase; returns the time after the work.
    pub(super) fn tick_restart(&mut self, c: usize, mut now: Time) -> Time {
        if self.mech.has(Mechanism::NohzEnterExit) {
            let socket = self.cpus[c].socket;
            let (t, wait) = self.nohz_balance.exit(c as u32, socket, now, self.transfer);
            now = self.shared_line_waited(c, SharedLine::NohzMasks, now, t, wait);
        }
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
        let mut waited = 0;
        if self.mech.has(Mechanism::SeqlockRead) {
            let mut seen = self.cpus[c].xtime_seen;
            let spin = self
                .xtime
                .read(now, &mut seen, cpu_id, socket, self.transfer);
            self.cpus[c].xtime_seen = seen;
            waited = spin;
            now += spin;
        }
        now += self.costs.xtime_read_ns;
        // (b) the duty CPU's jiffies + wall-time write section (one xtime_lock up to 3.7; from
        // 3.8 jiffies_lock, taken by the duty alone, then the timekeeper seqcount: the same
        // section for the readers, whose wait is only the timekeeper part, modelled as all).
        if self.tk.is_duty(cpu_id)
            && self
                .tk
                .quick_check(now, self.mech.has(Mechanism::JiffiesRace))
        {
            now = self.jiffies_write(c, now);
        }
        // (c) scheduler_tick: the load fold and the idle-balance trigger.
        let busy = self.cpus[c].idle.is_none();
        if self.mech.has(Mechanism::LoadFold) {
            let jiffies = self.tk.jiffies();
            let due = jiffies >= self.loadavg.next_fold(cpu_id);
            let t = self
                .loadavg
                .tick(cpu_id, socket, busy, jiffies, now, self.transfer);
            if due {
                self.emit(now, Event::LoadFolded { cpu: cpu_id });
                self.emit(
                    now,
                    Event::LockAcquired {
                        cpu: cpu_id,
                        lock: LockId::Line(SharedLine::CalcLoad),
                        wait_ns: t,
                        contended: t > self.transfer.far_ns,
                    },
                );
                waited += t;
                now += t;
            }
        }
        if self.mech.has(Mechanism::LoadBalanceTrigger) && busy {
            let (t, wait) = self
                .nohz_balance
                .kick_needed(cpu_id, socket, now, self.transfer);
            waited += wait;
            let arrival = now;
            now += t;
            if wait > 0 {
                self.emit(
                    arrival,
                    Event::LockAcquired {
                        cpu: cpu_id,
                        lock: LockId::Line(SharedLine::NohzPicks),
                        wait_ns: wait,
                        contended: wait > self.transfer.far_ns,
                    },
                );
            }
        }
        // (d) RCU grace-period work on the leaf rcu_node lock.
        if self.mech.has(Mechanism::RcuGracePeriod) {
            let (t, wait) = self.rcu_check_callbacks(c, now);
            waited += wait;
            now += t;
        }
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
        if self.balance.is_some() {
            self.softirq_thread_after_tick(c, jiffies, now);
        }
        now
    }

    /// RCU's work in `c`'s tick at `at` (`rcu_check_callbacks` and the RCU softirq): the
    /// sequence on the leaf lock is [`crate::kernel::rcu::RcuState::check_callbacks`]'s; this
    /// reports what it did. Returns the time spent and the wait.
    fn rcu_check_callbacks(&mut self, c: usize, at: Time) -> (u64, u64) {
        let leaf = rcu::leaf_of(c, self.rcu_fanout);
        let tick = RcuTickInput {
            cpu: c,
            socket: self.cpus[c].socket,
            housekeeping: self.cpus[c].housekeeping,
            jiffies: self.tk.jiffies(),
            at,
        };
        let cpus = &self.cpus;
        let done = self.rcu.check_callbacks(
            &mut self.rcu_leaves[leaf],
            tick,
            self.costs.rcu_node_hold_ns,
            self.transfer,
            |i| cpus[i].ts.is_stopped() && cpus[i].idle.is_some(),
        );
        if let Some((t, got)) = done.gp_started {
            self.rcu_leaf_event(c, leaf, got, t);
            self.emit(t, Event::RcuGpStarted { cpu: c as u32 });
        }
        match done.step {
            None => {}
            Some(RcuLeafStep::Acquired { at, got }) => self.rcu_leaf_event(c, leaf, got, at),
            Some(RcuLeafStep::TrylockFailed { at }) => {
                self.emit(at, Event::RcuTrylockFailed { cpu: c as u32 });
            }
        }
        (done.spent_ns, done.wait_ns)
    }

    /// Reports `c`'s acquisition of leaf `leaf`, arriving at `at`.
    fn rcu_leaf_event(&mut self, c: usize, leaf: usize, got: crate::hw::lock::Acquired, at: Time) {
        self.emit(
            at,
            Event::LockAcquired {
                cpu: c as u32,
                lock: LockId::RcuNodeLeaf(leaf as u32),
                wait_ns: got.wait_ns,
                contended: got.contended,
            },
        );
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
        self.cpus[c].ts.idle_loop_left();
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
        if self
            .tk
            .quick_check(now, self.mech.has(Mechanism::JiffiesRace))
        {
            now = self.jiffies_write(c, now);
        }
        now
    }

    /// The jiffies + wall-time write section on `c` (duty tick or idle-exit catch-up) after
    /// its lockless check passed at `now`: the timekeeping seqlock's write side, queued
    /// behind any writer inside; inside, the re-check. A CPU that finds the work done (it
    /// lost the check-then-lock race) leaves after [`RECHECK_NS`]; the one that updates
    /// publishes the new `last_jiffies_update` when it leaves.
    pub(super) fn jiffies_write(&mut self, c: usize, now: Time) -> Time {
        let cpu_id = c as u32;
        let socket = self.cpus[c].socket;
        let inside = now + self.xtime.write_wait(now, cpu_id, socket, self.transfer);
        let before = self.tk.last_jiffies_update();
        let n = self.tk.update_jiffies(inside);
        let mut hold = if n > 0 {
            self.costs.jiffies_update_ns + n * self.costs.jiffies_catch_up_per_tick_ns
        } else {
            RECHECK_NS
        };
        if n > 0 && self.mech.has(Mechanism::LoadFold) {
            // calc_global_load inside do_timer, ten ticks after the fold.
            let j = self.tk.jiffies();
            hold += self
                .loadavg
                .global(cpu_id, socket, j, inside + hold, self.transfer);
        }
        if n > 0 {
            self.tk.publish(before, inside + hold);
        }
        let got = self.xtime.write(now, hold, cpu_id, socket, self.transfer);
        debug_assert_eq!(now + got.wait_ns, inside);
        self.emit(
            now,
            Event::JiffiesWrite {
                cpu: cpu_id,
                wait_ns: got.wait_ns,
                updated: n > 0,
                left_at: inside + hold,
            },
        );
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

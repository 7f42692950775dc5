//! `hrtimer_interrupt` (`kernel/time/hrtimer.c`): the expiry loop, the timer callbacks and the
//! device reprogramming outside the interrupt (`hrtimer_reprogram`). The re-arm/retry/hang rule
//! lives in [`crate::kernel::hrtimer`].

use super::observe::{Callback, Event, Observer};
use super::{Sim, TimerFn};
use crate::engine::{NEVER, Time};
use crate::kernel::hrtimer::{Rearm, TimerId, forward};
use crate::kernel::sched::SchedClass;
use ticklab_schema::report::KernelMessage;

impl<O: Observer> Sim<O> {
    /// `hrtimer_interrupt`: expiry passes until the device takes the programming for the first
    /// timer; the re-arm/retry/hang decision is [`crate::kernel::hrtimer::HrtimerCpuBase::rearm`].
    pub(super) fn hrtimer_interrupt(&mut self, c: usize, mut now: Time) -> Time {
        let cpu_id = c as u32;
        self.emit(now, Event::HrtimerInterrupt { cpu: cpu_id });
        let mut lp = self.cpus[c].hrt.interrupt_enter(now);
        loop {
            self.cpus[c].hrt.pass_begin();
            while let Some(id) = self.cpus[c].hrt.pop_expired(now) {
                now = self.run_hrtimer(c, id, now);
            }
            let cpu = &mut self.cpus[c];
            let next = cpu.hrt.pass_end();
            if next != NEVER {
                now += self.costs.clockevent_program_ns;
            }
            let programmed = cpu.dev.program(next, now, false);
            match cpu.hrt.rearm(&mut lp, programmed.is_ok(), now) {
                Rearm::Armed => {
                    if let Ok(fire) = programmed {
                        cpu.arm_device(fire, self.costs.timer_delivery_jitter_ns);
                    }
                    return now;
                }
                Rearm::Retry => self.emit(now, Event::HrtimerRetry { cpu: cpu_id }),
                Rearm::Hang { hang_ns, expires } => {
                    let fire = cpu.dev.program(expires, now, true).unwrap_or(expires);
                    cpu.arm_device(fire, self.costs.timer_delivery_jitter_ns);
                    self.emit(
                        now,
                        Event::HrtimerHang {
                            cpu: cpu_id,
                            hang_ns,
                        },
                    );
                    if !self.hang_reported {
                        self.hang_reported = true;
                        let text = format!("hrtimer: interrupt took {hang_ns} ns");
                        self.messages.push(if self.nohz.aggressive() {
                            KernelMessage::ticklab(
                                now,
                                format!("{text} (message suppressed by nohz_full_aggressive)"),
                            )
                        } else {
                            KernelMessage::kernel(now, text)
                        });
                    }
                    return now;
                }
            }
        }
    }

    pub(super) fn run_hrtimer(&mut self, c: usize, id: TimerId, mut now: Time) -> Time {
        let func = self.cpus[c].hrt.func(id);
        let callback = match func {
            TimerFn::Tick => Callback::Tick,
            TimerFn::Background(s) => Callback::Source(s),
            TimerFn::Sleeper(i) => Callback::Source(self.sleepers[i.get()].source),
            TimerFn::FrameWake(_) => Callback::FrameWake,
        };
        self.emit(
            now,
            Event::HrtimerExpireEntry {
                cpu: c as u32,
                callback,
            },
        );
        match func {
            TimerFn::Tick => now = self.tick_sched_timer(c, id, now),
            TimerFn::FrameWake(w) if self.cpus[c].frame as usize != w.get() => {
                // The sleeper was queued here by timer migration; the worker runs elsewhere.
                now += self.costs.hrtimer_callback_ns;
                now = self.wake_frame_remote(c, w.get(), now);
            }
            TimerFn::FrameWake(w) => {
                now += self.costs.hrtimer_callback_ns;
                let cpu = &mut self.cpus[c];
                if !cpu.frame_runnable {
                    cpu.frame_runnable = true;
                    cpu.rq.enqueue(SchedClass::Fifo);
                    now = self.enqueue_rt(c, now);
                    let frame = self.workers[w.get()].k;
                    self.emit(
                        now,
                        Event::FrameStarted {
                            cpu: c as u32,
                            frame,
                        },
                    );
                }
            }
            TimerFn::Sleeper(i) => now = self.sleeper_expired(c, id, i.get(), now),
            TimerFn::Background(s) => {
                now += self.costs.hrtimer_callback_ns;
                self.emit(now, Event::SourceExpired { source: s });
                let src = &self.sources[s as usize];
                let (slack, wakes, follows, run_ns) =
                    (src.slack_ns, src.wakes_task, src.follows_task, src.task_ns);
                if self.softirq_runs.in_thread() && !src.hard {
                    self.cpus[c].softirq_raised = true;
                }
                let next = self.source_next_expiry(c, id, s, now);
                let runs_on = if follows {
                    self.wake_follower(c, run_ns, now)
                } else {
                    c
                };
                if runs_on == c {
                    self.cpus[c].hrt.start(id, next, slack);
                    if wakes {
                        self.wake_task(c, run_ns, now);
                    }
                } else {
                    // The task re-arms its timer where it runs.
                    let to = &mut self.cpus[runs_on];
                    let moved = to
                        .free_follow_hrtimer(s)
                        .expect("one spare timer per instance on every CPU");
                    to.hrt.start(moved, next, slack);
                }
            }
        }
        self.emit(now, Event::HrtimerExpireExit { cpu: c as u32 });
        now
    }

    /// Sleeper `i`'s sleep, queued on `c`, expired at `now`: its task wakes at home (by IPI
    /// from another CPU) and arms its next sleep when its run ends ([`Sim::sleeper_ran`]).
    /// Out of line: only the twin of a VM guest has sleepers, and the common arms of
    /// `run_hrtimer` stay small.
    #[inline(never)]
    fn sleeper_expired(&mut self, c: usize, id: TimerId, i: usize, mut now: Time) -> Time {
        now += self.costs.hrtimer_callback_ns;
        let (s, home) = {
            let sl = &self.sleepers[i];
            (sl.source, sl.home as usize)
        };
        self.emit(now, Event::SourceExpired { source: s });
        let next = self.source_next_expiry(c, id, s, now);
        let src = &self.sources[s as usize];
        let run_ns = src.task_ns;
        if self.softirq_runs.in_thread() && !src.hard {
            self.cpus[c].softirq_raised = true;
        }
        let sl = &mut self.sleepers[i];
        debug_assert!(!sl.pending, "sleeper {i} fired while awake");
        (sl.pending, sl.next) = (true, next);
        if c == home {
            self.wake_task(c, run_ns, now);
        } else {
            // `hrtimer_wakeup` on another CPU: the task is queued on its own and a
            // reschedule IPI tells it (its arrival reprograms that CPU's device).
            self.wake_task_remote(home, run_ns, now);
        }
        now
    }

    /// When the timer `id` of background source `s`, which fired on `c` at `now`, fires next:
    /// a periodic source forwards by its period, a relative sleeper sleeps its period from the
    /// end of its run (taken as `now` plus the task's run: setup checks that it wakes a
    /// task), a Poisson source draws from `c`'s stream.
    #[inline]
    fn source_next_expiry(&mut self, c: usize, id: TimerId, s: u16, now: Time) -> Time {
        let src = &self.sources[s as usize];
        let cpu = &mut self.cpus[c];
        match src.period_ns {
            Some(p) if src.relative => now + src.task_ns + p,
            Some(p) => forward(cpu.hrt.soft_expires(id), now, p).expires,
            None => now + cpu.rng.exp_ns(src.mean_ns),
        }
    }

    /// A background task's run ended on `c` at `now`: if a migrating sleeper whose home is `c`
    /// is awake, it arms its next sleep now, where the rule places it. The twin's background
    /// tasks are not told apart, so with several awake on one CPU the lowest-numbered
    /// sleeper takes the first run that ends. A relative sleep counts its period from here.
    /// Returns whether the sleep stayed on `c` (whose device may then need reprogramming).
    #[inline(never)]
    pub(super) fn sleeper_ran(&mut self, c: usize, now: Time) -> bool {
        let Some(i) = self
            .sleepers
            .iter()
            .position(|sl| sl.pending && sl.home as usize == c)
        else {
            return false;
        };
        let s = self.sleepers[i].source as usize;
        let src = &self.sources[s];
        let next = match src.period_ns {
            Some(p) if src.relative => now + p,
            _ => self.sleepers[i].next.max(now),
        };
        let slack = src.slack_ns;
        let on = self.sleep_cpu(c, &self.sleepers[i].timers, next);
        let sl = &mut self.sleepers[i];
        sl.pending = false;
        let timer = sl.timers[on].expect("sleep_cpu picks a CPU the sleeper has a timer on");
        debug_assert!(
            sl.timers
                .iter()
                .enumerate()
                .all(|(x, t)| t.is_none_or(|t| !self.cpus[x].hrt.is_queued(t))),
            "sleeper {i}: one sleep at a time"
        );
        self.cpus[on].hrt.start(timer, next, slack);
        on == c
    }

    /// Reprograms the device for the first hrtimer if it changed (outside the interrupt).
    pub(super) fn reprogram(&mut self, c: usize, mut now: Time) -> Time {
        let cpu = &mut self.cpus[c];
        let Some(next) = cpu.hrt.reprogram_target() else {
            return now;
        };
        if next != NEVER {
            now += self.costs.clockevent_program_ns;
        }
        let fire = match cpu.dev.program(next, now, true) {
            Ok(f) => f,
            Err(_) => now + cpu.dev.min_delta_ns,
        };
        cpu.arm_device(fire, self.costs.timer_delivery_jitter_ns);
        now
    }
}

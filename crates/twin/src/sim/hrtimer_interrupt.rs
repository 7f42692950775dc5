//! `hrtimer_interrupt` (`kernel/time/hrtimer.c`): the expiry loop, the timer callbacks and the
//! device reprogramming outside the interrupt (`hrtimer_reprogram`). The re-arm/retry/hang rule
//! lives in [`crate::kernel::hrtimer`].

use super::{HANG_BACKOFF_CAP_NS, HRTIMER_MAX_PASSES, Sim, TimerFn};
use crate::engine::{NEVER, Time};
use crate::kernel::hrtimer::{TimerId, forward};
use ticklab_schema::report::KernelMessage;

impl Sim {
    /// The hrtimer expiry loop with the re-arm/retry/hang rule.
    pub(super) fn hrtimer_interrupt(&mut self, c: usize, mut now: Time) -> Time {
        let entry = now;
        self.cpus[c].hrt.nr_events += 1;
        let mut passes = 0;
        loop {
            self.cpus[c].hrt.in_hrtirq = true;
            self.cpus[c].hrt.expires_next = NEVER;
            while let Some(id) = self.cpus[c].hrt.pop_expired(now) {
                now = self.run_hrtimer(c, id, now);
            }
            let cpu = &mut self.cpus[c];
            cpu.hrt.in_hrtirq = false;
            let next = cpu.hrt.next_hard_expiry();
            cpu.hrt.expires_next = next;
            if next != NEVER {
                now += self.costs.clockevent_program_ns;
            }
            match cpu.dev.program(next, now, false) {
                Ok(fire) => {
                    cpu.hrt.hang_detected = false;
                    cpu.arm_device(fire, self.costs.timer_delivery_jitter_ns);
                    return now;
                }
                Err(_) => {
                    passes += 1;
                    cpu.hrt.nr_retries += 1;
                    if passes < HRTIMER_MAX_PASSES {
                        continue;
                    }
                    cpu.hrt.nr_hangs += 1;
                    cpu.hrt.hang_detected = true;
                    let delta = now - entry;
                    cpu.hrt.max_hang_time = cpu.hrt.max_hang_time.max(delta);
                    let backoff = delta.min(HANG_BACKOFF_CAP_NS);
                    let fire = cpu
                        .dev
                        .program(now + backoff, now, true)
                        .unwrap_or(now + backoff);
                    cpu.hrt.expires_next = now + backoff;
                    cpu.arm_device(fire, self.costs.timer_delivery_jitter_ns);
                    if !self.hang_reported {
                        self.hang_reported = true;
                        let text = format!("hrtimer: interrupt took {delta} ns");
                        self.messages.push(if self.aggressive {
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
        match func {
            TimerFn::Tick => now = self.tick_sched_timer(c, id, now),
            TimerFn::FrameWake(w) => {
                now += self.costs.hrtimer_callback_ns;
                let cpu = &mut self.cpus[c];
                debug_assert_eq!(cpu.frame, w);
                if !cpu.frame_runnable {
                    cpu.frame_runnable = true;
                    cpu.rq.nr_fifo += 1;
                }
            }
            TimerFn::Background(s) => {
                now += self.costs.hrtimer_callback_ns;
                let src = &mut self.sources[s as usize];
                src.expiries += 1;
                let (period, mean, slack, wakes) =
                    (src.period_ns, src.mean_ns, src.slack_ns, src.wakes_task);
                let cpu = &mut self.cpus[c];
                let soft = cpu.hrt.soft_expires(id);
                let next = match period {
                    Some(p) => forward(soft, now, p).expires,
                    None => now + cpu.rng.exp_ns(mean),
                };
                cpu.hrt.start(id, next, slack);
                if wakes {
                    self.wake_task(c);
                }
            }
        }
        now
    }

    /// Reprograms the device for the first hrtimer if it changed (outside the interrupt).
    pub(super) fn reprogram(&mut self, c: usize, mut now: Time) -> Time {
        let cpu = &mut self.cpus[c];
        if cpu.hrt.in_hrtirq || cpu.hrt.hang_detected {
            return now;
        }
        let next = cpu.hrt.next_hard_expiry();
        if next == cpu.hrt.expires_next {
            return now;
        }
        cpu.hrt.expires_next = next;
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

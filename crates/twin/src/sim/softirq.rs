//! The TIMER softirq (`run_timer_softirq`): expire the timer wheel and re-arm its timers.

use super::Sim;
use super::observe::{Event, Observer, SoftirqVec};
use crate::engine::Time;

impl<O: Observer> Sim<O> {
    /// The TIMER softirq: runs expired wheel timers.
    pub(super) fn run_timer_softirq(&mut self, c: usize, mut now: Time) -> Time {
        let vec = SoftirqVec::Timer;
        self.emit(now, Event::SoftirqEntry { cpu: c as u32, vec });
        let jiffies = self.tk.jiffies();
        let cpu = &mut self.cpus[c];
        cpu.timer_softirq = false;
        let mut expired = std::mem::take(&mut cpu.expired);
        expired.clear();
        cpu.wheel.advance(jiffies, |id| expired.push(id));
        for &wid in &expired {
            now += self.costs.wheel_timer_ns;
            let s = self.cpus[c].wheel_fns[wid.0 as usize];
            self.emit(now, Event::SourceExpired { source: s });
            let src = &self.sources[s as usize];
            let (period, mean, deferrable, wakes, follows, run_ns) = (
                src.period_ns,
                src.mean_ns,
                src.deferrable,
                src.wakes_task,
                src.follows_task,
                src.task_ns,
            );
            let cpu = &mut self.cpus[c];
            let delay_ns = match period {
                Some(p) => p,
                None => cpu.rng.exp_ns(mean),
            };
            let delay_j = delay_ns.div_ceil(self.tick_nsec).max(1);
            let runs_on = if follows {
                self.wake_follower(c, run_ns, now)
            } else {
                c
            };
            if runs_on == c {
                self.cpus[c].wheel.add(wid, jiffies + delay_j, deferrable);
                if wakes {
                    self.wake_task(c, run_ns, now);
                }
            } else {
                // The task re-arms its timer where it runs; wheels share jiffies.
                let to = &mut self.cpus[runs_on];
                let moved = to
                    .free_follow_wheel_timer(s)
                    .expect("one spare timer per instance on every CPU");
                to.wheel.add(moved, jiffies + delay_j, deferrable);
            }
        }
        self.cpus[c].expired = expired;
        self.emit(now, Event::SoftirqExit { cpu: c as u32, vec });
        now
    }
}

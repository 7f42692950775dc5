//! The TIMER softirq (`run_timer_softirq`): expire the timer wheel and re-arm its timers; and
//! on PREEMPT_RT the softirq thread an interrupt wakes and the idle load balancer's kick (the
//! rules are [`crate::kernel::softirq`]'s and [`crate::kernel::sched_balance`]'s).

use super::observe::{Event, Observer, SoftirqVec};
use super::{Running, Sim};
use crate::engine::Time;

impl<O: Observer> Sim<O> {
    /// PREEMPT_RT, at the end of `c`'s tick at `now` (`jiffies` as the tick read them). On an
    /// idle CPU: the softirqs it raised (the periodic balance when due, the TIMER softirq when
    /// a wheel timer is) are marked for the CPU's softirq thread. On a busy CPU: the idle load
    /// balancer's kick, if one is asked for, is a function-call IPI to the kicked CPU whose
    /// softirq wakes its thread. Only called where the balance state is kept.
    #[inline(never)]
    pub(super) fn softirq_thread_after_tick(&mut self, c: usize, jiffies: u64, now: Time) {
        let cpus = &self.cpus;
        let cpu = &cpus[c];
        let in_idle = cpu.running == Running::Idle;
        let timer = cpu.timer_softirq;
        let nr_running = cpu.rq.nr_running();
        let Some(balance) = &mut self.balance else {
            return;
        };
        if in_idle {
            let raised = balance.periodic.tick(c, jiffies, true) | timer;
            self.cpus[c].softirq_raised |= raised;
            return;
        }
        // A busy CPU's own balance runs in its thread after its task: not modelled.
        balance.periodic.tick(c, jiffies, false);
        if let Some(ilb) = balance.kick(c, jiffies, nr_running, |x| cpus[x].idle_for_wakeup()) {
            // The kicked CPU is idle with no IPI on its way: this one is sent now.
            self.wake_task_remote(ilb, self.softirq_thread_ns, now);
            self.cpus[ilb].ipi_call = true;
        }
    }

    /// PREEMPT_RT, at the exit of an interrupt on `c` at `now` (`invoke_softirq`): the softirqs
    /// it raised wake the CPU's softirq thread, which on an idle CPU ends the idle loop.
    #[inline(never)]
    pub(super) fn invoke_softirq_thread(&mut self, c: usize, now: Time) {
        let cpu = &mut self.cpus[c];
        let raised = std::mem::take(&mut cpu.softirq_raised);
        let in_idle = cpu.running == Running::Idle;
        if self.softirq_runs.wakes_idle_cpu(raised, in_idle) {
            self.wake_task(c, self.softirq_thread_ns, now);
        }
    }

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

//! Scheduling: wake-ups, picking what runs next, a task's end, and the frame workers' done /
//! sleep cycle.

use super::observe::{Event, Observer};
use super::{Running, SLOT_IPI, SLOT_TASK, Sim};
use crate::engine::{NEVER, Time};
use crate::kernel::hrtimer::TimerId;
use crate::kernel::sched::{SchedClass, select_idle_sibling};
use ticklab_schema::frames::FrameTiming;

impl<O: Observer> Sim<O> {
    /// A background task that will run `run_ns` becomes runnable on `c` at `now`.
    pub(super) fn wake_task(&mut self, c: usize, run_ns: u64, now: Time) {
        let cpu = &mut self.cpus[c];
        cpu.queue_background(run_ns);
        // On a busy nohz_full CPU with a stopped tick, the SCHED dependency appears: the
        // 0 -> 1 transition kicks the CPU with irq_work (IWI); the restart happens at exit.
        if cpu.nohz_full
            && cpu.running != Running::Idle
            && !cpu.rq.can_stop_tick()
            && cpu.ts.is_stopped()
        {
            self.emit(now, Event::IrqWorkIpi { cpu: c as u32 });
        }
    }

    /// A pinned task on `c` is woken from another CPU's interrupt (its sleep was queued there
    /// by timer migration): it is queued on `c` and a reschedule IPI sent, arriving after
    /// `Costs::ipi_ns` (unless one is already on its way).
    pub(super) fn wake_task_remote(&mut self, c: usize, run_ns: u64, now: Time) {
        self.wake_task(c, run_ns, now);
        self.send_resched_ipi(c, now);
        self.sync(c);
    }

    /// A reschedule IPI sent to `c` at `now` arrives `Costs::ipi_ns` later, unless one is
    /// already on its way (or waking the CPU from its idle state).
    fn send_resched_ipi(&mut self, c: usize, now: Time) {
        let cpu = &mut self.cpus[c];
        if cpu.slots[SLOT_IPI] == NEVER && !cpu.ipi_waking {
            cpu.slots[SLOT_IPI] = now + self.costs.ipi_ns;
        }
    }

    /// The timer of background source `s` (one whose task is not pinned) fired on `c` at
    /// `now` and woke its task: the CPU the task runs on ([`select_idle_sibling`]). When that
    /// is another CPU, the task is queued there and a reschedule IPI sent (it arrives after
    /// `Costs::ipi_ns`); the caller re-arms the timer there, where the task runs. Returns that
    /// CPU, or `c` (the caller wakes the task locally, as for a pinned one).
    pub(super) fn wake_follower(&mut self, c: usize, run_ns: u64, now: Time) -> usize {
        let cpus = &self.cpus;
        let r = select_idle_sibling(
            c,
            cpus.len(),
            |x| cpus[x].user_tasks,
            |x| cpus[x].idle_for_wakeup(),
        );
        if r != c {
            let cpu = &mut self.cpus[r];
            debug_assert!(
                cpu.slots[SLOT_IPI] == NEVER,
                "an idle CPU has no IPI on its way"
            );
            cpu.queue_background(run_ns);
            cpu.slots[SLOT_IPI] = now + self.costs.ipi_ns;
            self.sync(r);
        }
        r
    }

    /// Picks what runs next on `c` at `now`: the frame worker (SCHED_FIFO) first, then a
    /// runnable background task, then the syscall loop, then a hog.
    pub(super) fn switch_to_next(&mut self, c: usize, now: Time) {
        let cpu = &mut self.cpus[c];
        cpu.busy_until(now);
        if cpu.idle.is_some() {
            return;
        }
        let was = cpu.running;
        if cpu.frame_runnable {
            let w = &mut self.workers[cpu.frame as usize];
            if was != Running::Frame {
                // The worker starts running its frame: jitter counts from here.
                w.running = now;
            }
            cpu.running = Running::Frame;
            cpu.slots[SLOT_TASK] = now + self.frame_groups[w.group].work_ns;
        } else if cpu.bg_runnable > 0 {
            cpu.running = Running::Background;
            let run = if cpu.bg_remaining > 0 {
                std::mem::take(&mut cpu.bg_remaining)
            } else {
                cpu.bg_runs.start().unwrap_or(self.costs.background_task_ns)
            };
            cpu.slots[SLOT_TASK] = now + run;
        } else if cpu.syscall_runnable {
            cpu.running = Running::Syscall;
            self.syscall_resumed(c, now);
        } else if cpu.hogs > 0 {
            cpu.running = Running::Hog;
            cpu.slots[SLOT_TASK] = NEVER;
        }
        let to = self.cpus[c].running;
        if to != was {
            self.emit(now, Event::TaskSwitched { cpu: c as u32, to });
        }
    }

    /// The frame worker on `c` finished its frame at `t`: record it, then start the next frame
    /// at once if its start has passed (overrun), else sleep to it. Returns the time after the
    /// sleep call, or `None` if the worker keeps the CPU.
    pub(super) fn frame_done(&mut self, c: usize, t: Time) -> Option<Time> {
        let w = self.cpus[c].frame as usize;
        let worker = &mut self.workers[w];
        let g = &mut self.frame_groups[worker.group];
        let k = worker.k;
        debug_assert_eq!(worker.start, g.start(k));
        debug_assert!(worker.running >= worker.start && t >= worker.running + g.work_ns);
        // docs/experiments.md E2: jitter from the worker's start, wake-up latency up to it, by
        // the rule the host lab uses too. Both are ≥ 0 here (the debug_assert above).
        let timing = FrameTiming {
            start_ns: worker.start,
            running_ns: worker.running,
            done_ns: t,
        };
        let jitter = timing.jitter_ns(g.work_ns) as u64;
        let wakeup = timing.wakeup_ns() as u64;
        let next = k + 1;
        let next_start = g.next_start(k, worker.start, &mut worker.rem);
        worker.start = next_start;
        let overrun = t > next_start;
        if self.window_open {
            worker
                .stats
                .record(k, jitter as i64, overrun, self.flier_ns as i64);
            let wake_overrun = worker.running > next_start;
            worker
                .wake
                .record(k, wakeup as i64, wake_overrun, self.flier_ns as i64);
            if let Some(h) = &mut worker.histograms {
                h.record(k, jitter as i64, wakeup as i64);
            }
            g.hist.record(jitter.max(1));
            g.wake_hist.record(wakeup.max(1));
        }
        worker.k = next;
        self.emit(
            t,
            Event::FrameFinished {
                cpu: c as u32,
                frame: k,
                jitter_ns: jitter,
            },
        );
        let worker = &self.workers[w];
        let g = &self.frame_groups[worker.group];
        let more = next < g.n_frames;
        let work_ns = g.work_ns;
        let timer = worker.timer;
        let cpu = &mut self.cpus[c];
        if more && next_start <= t {
            // Overrun: the next frame is already due; the worker goes straight on.
            cpu.slots[SLOT_TASK] = t + work_ns;
            self.workers[w].running = t;
            self.emit(
                t,
                Event::FrameStarted {
                    cpu: c as u32,
                    frame: next,
                },
            );
            return None;
        }
        cpu.frame_runnable = false;
        cpu.rq.dequeue(SchedClass::Fifo);
        cpu.slots[SLOT_TASK] = NEVER;
        // clock_nanosleep(TIMER_ABSTIME) to the next start, slack 0 (RT task). The sleeper is
        // an unpinned hrtimer: armed on a CPU outside the timers' housekeeping it is queued
        // on the nohz timer target (`kernel::timer_migration`).
        let mut now = t + self.costs.syscall_ns;
        if more {
            let on = self.sleeper_cpu(w, next_start);
            if on == c {
                self.cpus[c].hrt.start(timer, next_start, 0);
                now = self.reprogram(c, now);
            } else if let Some(id) = self.workers[w].remote_timers[on] {
                // The target's device already fires no later (the rule's remote check).
                self.cpus[on].hrt.start(id, next_start, 0);
            }
        }
        now = self.dequeue_rt(c, now);
        Some(now)
    }

    /// The CPU whose hrtimer base takes worker `w`'s sleep to `expires`: its own unless the
    /// timer-migration rule moves it to a CPU the worker has a timer on.
    fn sleeper_cpu(&self, w: usize, expires: Time) -> usize {
        let worker = &self.workers[w];
        let c = worker.cpu as usize;
        if worker.remote_timers.is_empty() {
            return c;
        }
        self.sleep_cpu(c, &worker.remote_timers, expires)
    }

    /// Where a task running on `home` queues its unpinned sleep to `expires`
    /// (`kernel::timer_migration`): `home`, or the CPU the rule picks when the task has a
    /// timer there (`timers`, per CPU). The task is running, so `home` is never idle to the
    /// rule.
    pub(super) fn sleep_cpu(
        &self,
        home: usize,
        timers: &[Option<TimerId>],
        expires: Time,
    ) -> usize {
        let cpus = &self.cpus;
        let on = self.timer_migration.rule().hrtimer_cpu(
            home,
            false,
            expires,
            |x| x != home && cpus[x].idle_for_wakeup(),
            |x| cpus[x].hrt.expires_next(),
        );
        if on != home && timers[on].is_none() {
            debug_assert!(false, "the task on CPU {home}: no timer on CPU {on}");
            return home;
        }
        on
    }

    /// Worker `w`'s sleeper fired on CPU `h`, not its own: `hrtimer_wakeup` wakes it on its
    /// CPU, which a reschedule IPI tells (arriving after `Costs::ipi_ns`).
    pub(super) fn wake_frame_remote(&mut self, h: usize, w: usize, now: Time) -> Time {
        let c = self.workers[w].cpu as usize;
        debug_assert_ne!(c, h);
        let cpu = &mut self.cpus[c];
        if cpu.frame_runnable {
            return now;
        }
        cpu.frame_runnable = true;
        cpu.rq.enqueue(SchedClass::Fifo);
        self.send_resched_ipi(c, now);
        let now = self.enqueue_rt(c, now);
        self.sync(c);
        let frame = self.workers[w].k;
        self.emit(
            now,
            Event::FrameStarted {
                cpu: c as u32,
                frame,
            },
        );
        now
    }

    /// The short task on `c` finished.
    pub(super) fn task_done(&mut self, c: usize, t: Time) {
        if self.cpus[c].running == Running::Syscall {
            self.syscall_end(c, t);
            return;
        }
        let mut t = t;
        if self.cpus[c].running == Running::Frame {
            match self.frame_done(c, t) {
                None => {
                    self.cpus[c].busy_until(t);
                    return;
                }
                Some(now) => t = now,
            }
            let now = t + self.costs.context_switch_ns;
            let cpu = &self.cpus[c];
            if cpu.bg_runnable > 0 || cpu.hogs > 0 || cpu.syscall_runnable {
                self.cpus[c].running = Running::Idle;
                self.switch_to_next(c, now);
            } else {
                self.enter_idle(c, now);
            }
            return;
        }
        let cpu = &mut self.cpus[c];
        cpu.slots[SLOT_TASK] = NEVER;
        if cpu.running == Running::Background {
            cpu.bg_runnable -= 1;
            cpu.rq.dequeue(SchedClass::Fair);
            // A migrating sleeper goes back to sleep: `clock_nanosleep` arms its timer, and
            // the device is set for it if it stayed here and comes first.
            if !self.sleepers.is_empty() && self.sleeper_ran(c, t) {
                t = self.reprogram(c, t);
            }
        }
        let now = t + self.costs.context_switch_ns;
        let cpu = &mut self.cpus[c];
        if cpu.bg_runnable > 0 || cpu.hogs > 0 || cpu.syscall_runnable {
            self.switch_to_next(c, now);
            // The SCHED dependency may have cleared; it takes effect at the next interrupt exit.
        } else {
            self.enter_idle(c, now);
        }
    }
}

//! Window statistics: what the report counts, reset when the measured window opens.

use super::{Sim, StateCounters};
use crate::engine::Time;

impl Sim {
    pub(super) fn open_window(&mut self, at: Time) {
        self.window_open = true;
        if let Some(e) = &mut self.energy {
            e.start_window(at);
        }
        self.tk.start_window(at);
        for cpu in &mut self.cpus {
            cpu.loc = 0;
            cpu.iwi = 0;
            cpu.ts.ticks = 0;
            cpu.ts.stopped_ns = 0;
            cpu.ts.idle_calls = 0;
            cpu.ts.idle_sleeps = 0;
            cpu.busy_ns = 0;
            cpu.max_irq_ns = 0;
            cpu.lock_wait_ns = 0;
            cpu.max_lock_wait_ns = 0;
            if cpu.ts.stopped {
                cpu.ts.stopped_since = at;
            }
            if cpu.idle.is_none() {
                cpu.busy_since = at;
            } else if let Some(stay) = &mut cpu.idle {
                // Residency before the window is not counted.
                stay.since = stay.since.max(at);
            }
            cpu.hrt.nr_events = 0;
            cpu.hrt.nr_retries = 0;
            cpu.hrt.nr_hangs = 0;
            cpu.hrt.max_hang_time = 0;
            for s in &mut cpu.cstates {
                *s = StateCounters::default();
            }
        }
        for s in &mut self.sources {
            s.expiries = 0;
        }
        self.xtime.writer.acquisitions = 0;
        self.xtime.writer.contended = 0;
        self.xtime.writer.wait_ns = 0;
        for l in &mut self.rcu_leaves {
            l.acquisitions = 0;
            l.contended = 0;
            l.wait_ns = 0;
        }
    }

    pub(super) fn account_busy(&mut self, c: usize, now: Time) {
        let cpu = &mut self.cpus[c];
        if self.window_open {
            cpu.busy_ns += now.saturating_sub(cpu.busy_since.max(self.window_start));
        }
        cpu.busy_since = now;
    }

    #[inline]
    pub(super) fn note_lock_wait(&mut self, c: usize, wait: u64) {
        let cpu = &mut self.cpus[c];
        cpu.lock_wait_ns += wait;
        cpu.max_lock_wait_ns = cpu.max_lock_wait_ns.max(wait);
    }
}

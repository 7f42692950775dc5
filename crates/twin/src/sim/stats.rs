//! Window statistics: what the report counts, as one listener of the event loop.
//!
//! [`WindowStats`] hears every [`Event`] and keeps the per-CPU and per-source counters of the
//! measured window; [`WindowStats::reset`] starts the window. Adding a statistic means one
//! field here, one arm in [`Observer::on`] and one line in `report.rs`.

use super::observe::{Event, LockId, Observer, SharedLine};
use crate::engine::Time;

/// One idle state's counters on one CPU (`/sys/devices/system/cpu/cpuN/cpuidle/stateM`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct StateCounters {
    pub(super) usage: u64,
    pub(super) time_ns: u64,
    pub(super) above: u64,
    pub(super) below: u64,
}

/// One CPU's window counters.
///
/// `repr(C)`: what every interrupt updates comes first (one cache line).
#[derive(Debug, Clone, Default)]
#[repr(C, align(64))]
pub(super) struct CpuStats {
    /// Local timer interrupts (LOC).
    pub(super) loc: u64,
    /// Longest interrupt handler (ns).
    pub(super) max_irq_ns: u64,
    /// `hrtimer_interrupt` runs.
    pub(super) nr_events: u64,
    /// Tick handler runs.
    pub(super) ticks: u64,
    /// Time the ticks waited for shared locks/lines (ns).
    pub(super) lock_wait_ns: u64,
    /// Longest such wait in one tick (ns).
    pub(super) max_lock_wait_ns: u64,
    /// Longest wait for a shared lock or line on another path (wake-up, nohz entry/exit).
    pub(super) max_path_wait_ns: u64,
    /// Since when the CPU is busy (valid while not idle).
    pub(super) busy_since: Time,
    /// The CPU is in an idle state.
    idle: bool,
    /// Since when the tick is stopped (`Some` exactly while it is stopped).
    pub(super) stopped_since: Option<Time>,
    /// Stopped-tick time of closed intervals (ns).
    pub(super) stopped_ns: u64,
    /// Busy time of closed intervals (ns).
    pub(super) busy_ns: u64,
    /// irq_work IPIs.
    pub(super) iwi: u64,
    /// Reschedule IPIs (only sent to wake a task whose timer follows it).
    pub(super) res: u64,
    /// Function-call IPIs (the idle load balancer's kicks, PREEMPT_RT only).
    pub(super) cal: u64,
    pub(super) nr_retries: u64,
    pub(super) nr_hangs: u64,
    pub(super) max_hang_time: u64,
    /// Per idle state.
    pub(super) cstates: Vec<StateCounters>,
}

/// The window statistics listener.
#[derive(Debug, Clone)]
pub(super) struct WindowStats {
    /// The measured window has started.
    open: bool,
    /// Its start.
    window_start: Time,
    pub(super) cpus: Vec<CpuStats>,
    /// Expiries per background source.
    pub(super) source_expiries: Vec<u64>,
    /// The timekeeping write lock (`xtime_lock` / `jiffies_lock`).
    pub(super) timekeeping_lock: LockCounters,
    /// Per leaf `rcu_node` lock.
    pub(super) rcu_leaves: Vec<LockCounters>,
    /// Per 3.0-era shared line ([`SharedLine::ALL`] order).
    pub(super) lines: [LockCounters; SharedLine::ALL.len()],
}

/// One lock's acquisitions in the window.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LockCounters {
    pub(super) acquisitions: u64,
    /// Acquisitions that found the lock held.
    pub(super) contended: u64,
    /// Time spent waiting, transfers included (ns).
    pub(super) wait_ns: u64,
}

impl LockCounters {
    #[inline(always)]
    fn count(&mut self, wait_ns: u64, contended: bool) {
        self.acquisitions += 1;
        self.contended += u64::from(contended);
        self.wait_ns += wait_ns;
    }
}

impl WindowStats {
    /// Hints the processor to fetch the line of `cpu`'s counters every interrupt updates
    /// (`engine::prefetch`).
    #[inline]
    pub(super) fn prefetch_cpu(&self, cpu: usize) {
        let c = &self.cpus[cpu];
        crate::engine::prefetch::prefetch_bytes(
            c as *const CpuStats as usize,
            std::mem::offset_of!(CpuStats, idle),
        );
    }
}

impl WindowStats {
    /// Counters for `nr_cpus` CPUs with `nr_states` idle states, `nr_sources` sources and
    /// `nr_rcu_leaves` leaf `rcu_node` locks; the window opens at `window_start`.
    pub(super) fn new(
        nr_cpus: usize,
        nr_states: usize,
        nr_sources: usize,
        nr_rcu_leaves: usize,
        window_start: Time,
    ) -> Self {
        let cpu = CpuStats {
            cstates: vec![StateCounters::default(); nr_states],
            ..CpuStats::default()
        };
        WindowStats {
            open: false,
            window_start,
            cpus: vec![cpu; nr_cpus],
            source_expiries: vec![0; nr_sources],
            timekeeping_lock: LockCounters::default(),
            rcu_leaves: vec![LockCounters::default(); nr_rcu_leaves],
            lines: Default::default(),
        }
    }

    /// Opens the window at `at`: every counter restarts from zero, and open intervals (a
    /// stopped tick, a busy CPU) count from `at`.
    pub(super) fn reset(&mut self, at: Time) {
        self.open = true;
        for s in &mut self.cpus {
            let cstates = std::mem::take(&mut s.cstates);
            *s = CpuStats {
                cstates,
                idle: s.idle,
                busy_since: if s.idle { s.busy_since } else { at },
                stopped_since: s.stopped_since.map(|_| at),
                ..CpuStats::default()
            };
            s.cstates.fill(StateCounters::default());
        }
        self.source_expiries.fill(0);
        self.timekeeping_lock = LockCounters::default();
        self.rcu_leaves.fill(LockCounters::default());
        self.lines = Default::default();
    }

    /// Stopped-tick time of `cpu` in the window up to `end` (ns).
    pub(super) fn tick_stopped_ns(&self, cpu: usize, end: Time) -> u64 {
        let s = &self.cpus[cpu];
        s.stopped_ns
            + s.stopped_since
                .map_or(0, |since| end.saturating_sub(since.max(self.window_start)))
    }

    /// Busy time of `cpu` in the window up to `end` (ns).
    pub(super) fn busy_ns(&self, cpu: usize, end: Time) -> u64 {
        let s = &self.cpus[cpu];
        if s.idle {
            s.busy_ns
        } else {
            s.busy_ns + end.saturating_sub(s.busy_since.max(self.window_start))
        }
    }
}

impl Observer for WindowStats {
    #[inline(always)]
    fn on(&mut self, at: Time, ev: Event) {
        match ev {
            Event::IrqEntry { cpu } => self.cpus[cpu as usize].loc += 1,
            Event::IrqExit { cpu, irq_ns } => {
                let s = &mut self.cpus[cpu as usize];
                s.max_irq_ns = s.max_irq_ns.max(irq_ns);
            }
            Event::HrtimerInterrupt { cpu } => self.cpus[cpu as usize].nr_events += 1,
            Event::HrtimerRetry { cpu } => self.cpus[cpu as usize].nr_retries += 1,
            Event::HrtimerHang { cpu, hang_ns } => {
                let s = &mut self.cpus[cpu as usize];
                // The hang pass was a failed re-arm as well.
                s.nr_retries += 1;
                s.nr_hangs += 1;
                s.max_hang_time = s.max_hang_time.max(hang_ns);
            }
            Event::Tick { cpu } => self.cpus[cpu as usize].ticks += 1,
            Event::TickStopped { cpu } => {
                let s = &mut self.cpus[cpu as usize];
                debug_assert!(s.stopped_since.is_none(), "stopped twice");
                s.stopped_since = Some(at.max(self.window_start));
            }
            Event::TickRestarted { cpu } => {
                let s = &mut self.cpus[cpu as usize];
                let since = s.stopped_since.take();
                debug_assert!(since.is_some(), "restarted a running tick");
                let since = since.unwrap_or(at);
                s.stopped_ns += at.saturating_sub(since.max(self.window_start));
            }
            Event::IdleEntered {
                cpu,
                state,
                idle_poll,
                ..
            } => {
                let s = &mut self.cpus[cpu as usize];
                if !idle_poll {
                    s.cstates[state as usize].usage += 1;
                }
                if self.open {
                    s.busy_ns += at.saturating_sub(s.busy_since.max(self.window_start));
                }
                s.busy_since = at;
                s.idle = true;
            }
            Event::IdleLeft {
                cpu,
                state,
                residency_ns,
                above,
                below,
            } => {
                let s = &mut self.cpus[cpu as usize];
                let k = &mut s.cstates[state as usize];
                k.time_ns += residency_ns;
                k.above += u64::from(above);
                k.below += u64::from(below);
                s.busy_since = at;
                s.idle = false;
            }
            Event::LockWaited { cpu, wait_ns } => {
                let s = &mut self.cpus[cpu as usize];
                s.lock_wait_ns += wait_ns;
                s.max_lock_wait_ns = s.max_lock_wait_ns.max(wait_ns);
            }
            Event::PathWaited { cpu, wait_ns } => {
                let s = &mut self.cpus[cpu as usize];
                s.max_path_wait_ns = s.max_path_wait_ns.max(wait_ns);
            }
            Event::LockAcquired {
                lock,
                wait_ns,
                contended,
                ..
            } => match lock {
                LockId::Timekeeping => self.timekeeping_lock.count(wait_ns, contended),
                LockId::RcuNodeLeaf(leaf) => {
                    self.rcu_leaves[leaf as usize].count(wait_ns, contended)
                }
                LockId::Line(l) => self.lines[l as usize].count(wait_ns, contended),
            },
            Event::SourceExpired { source } => self.source_expiries[source as usize] += 1,
            Event::IrqWorkIpi { cpu } => self.cpus[cpu as usize].iwi += 1,
            Event::ReschedIpi { cpu } => self.cpus[cpu as usize].res += 1,
            Event::CallFunctionIpi { cpu } => self.cpus[cpu as usize].cal += 1,
            Event::DutyChanged { .. }
            | Event::FrameStarted { .. }
            | Event::FrameFinished { .. }
            | Event::RcuGpStarted { .. }
            | Event::RcuTrylockFailed { .. }
            | Event::JiffiesWrite { .. }
            | Event::LoadFolded { .. }
            | Event::TaskSwitched { .. }
            | Event::HrtimerExpireEntry { .. }
            | Event::HrtimerExpireExit { .. }
            | Event::SoftirqEntry { .. }
            | Event::SoftirqExit { .. }
            | Event::IrqReturn { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_counts_open_intervals_from_its_start() {
        // One CPU, two idle states, window from 1000.
        let mut s = WindowStats::new(1, 2, 0, 0, 1000);
        let cpu = 0;
        // Before the window: busy until 100, idle, tick stopped at 200, an interrupt.
        s.on(
            100,
            Event::IdleEntered {
                cpu,
                state: 1,
                actual: 1,
                idle_poll: false,
            },
        );
        s.on(200, Event::TickStopped { cpu });
        s.on(300, Event::IrqEntry { cpu });
        s.reset(1000);
        // In the window: counters restart, the stopped tick counts from 1000.
        assert_eq!(s.cpus[0].loc, 0);
        assert_eq!(s.cpus[0].cstates[1].usage, 0);
        assert_eq!(s.tick_stopped_ns(0, 1500), 500);
        assert_eq!(s.busy_ns(0, 1500), 0, "idle since before the window");
        // (event time, event, busy_ns at 5000, stopped ns at 5000)
        s.on(
            2000,
            Event::IdleLeft {
                cpu,
                state: 1,
                residency_ns: 1000,
                above: false,
                below: true,
            },
        );
        s.on(2100, Event::TickRestarted { cpu });
        s.on(2100, Event::IrqEntry { cpu });
        s.on(2200, Event::IrqExit { cpu, irq_ns: 100 });
        s.on(
            3000,
            Event::IdleEntered {
                cpu,
                state: 0,
                actual: 0,
                idle_poll: false,
            },
        );
        assert_eq!(s.busy_ns(0, 5000), 1000, "busy 2000..3000");
        assert_eq!(s.tick_stopped_ns(0, 5000), 1100, "stopped 1000..2100");
        let c = &s.cpus[0];
        assert_eq!((c.loc, c.max_irq_ns), (1, 100));
        assert_eq!(
            (c.cstates[1].time_ns, c.cstates[1].below, c.cstates[0].usage),
            (1000, 1, 1)
        );
    }

    #[test]
    fn hangs_count_as_retries_too() {
        let mut s = WindowStats::new(1, 1, 0, 0, 0);
        s.reset(0);
        for ev in [
            Event::HrtimerInterrupt { cpu: 0 },
            Event::HrtimerRetry { cpu: 0 },
            Event::HrtimerRetry { cpu: 0 },
            Event::HrtimerHang {
                cpu: 0,
                hang_ns: 700,
            },
        ] {
            s.on(10, ev);
        }
        let c = &s.cpus[0];
        assert_eq!(
            (c.nr_events, c.nr_retries, c.nr_hangs, c.max_hang_time),
            (1, 3, 1, 700)
        );
    }
}

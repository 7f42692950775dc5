//! Report assembly at the end of a run: [`Sim::report`] gathers one section per part of the
//! machine, each from the listener or the kernel module that counted it.

use super::Sim;
use super::observe::{Observer, SharedLine};
use super::stats::{LockCounters, StateCounters};
use crate::engine::Time;
use crate::workloads::frames::group_report;
use ticklab_schema::noise::NoiseReport;
use ticklab_schema::report::{
    BackgroundReport, CpuReport, CpuRole, EnergyReport, HrtimerReport, IdleStateReport, LockName,
    LockReport, LocksReport, Report, Source, SyscallReport, TimekeepingReport, WorkloadResult,
};

impl<O: Observer> Sim<O> {
    /// Builds the report at the end of the run: per-CPU rows, energy, timekeeping, hrtimer
    /// and lock counters, the workloads' results and the background sources' expiries.
    pub fn report(&mut self) -> Report {
        let end = self.end.max(self.now);
        if !self.window_open {
            self.open_window(self.window_start.min(end));
        }
        let duration_ns = end - self.window_start;
        let cpus = (0..self.cpus.len())
            .map(|c| self.cpu_report(c, end))
            .collect();
        let secs = duration_ns as f64 * 1e-9;
        let energy = self
            .energy
            .as_mut()
            .map(|meter| energy_report(meter.finish(end), secs, self.power_limit_w));
        let timekeeping = self.timekeeping_report(end);
        let hrtimer = self.hrtimer_report();
        let Outcomes {
            workloads,
            noise,
            warnings,
        } = self.outcomes(end);
        let locks = self.locks_report();
        let background = self
            .sources
            .iter()
            .zip(&self.stats.source_expiries)
            .filter(|&(_, &n)| n > 0)
            .map(|(s, &n)| BackgroundReport {
                name: s.name.clone(),
                kind: s.kind,
                expiries: n,
            })
            .collect();
        Report {
            cpus,
            energy,
            messages: self.messages.clone(),
            timekeeping: Some(timekeeping),
            hrtimer: Some(hrtimer),
            locks: Some(locks),
            background,
            workloads,
            warnings,
            noise,
            cpu_dma_latency_us: self.cpu_dma_latency_us,
            ..Report::new(
                Source::Twin { seed: self.seed },
                self.scenario_name.clone(),
                self.machine_name.clone(),
                self.cmdline.clone(),
                self.hz,
                duration_ns,
            )
        }
    }

    /// CPU `c`'s row at `end`: its role, interrupt counts, tick and busy time, idle states
    /// (a stay still open at the end counted up to it).
    fn cpu_report(&self, c: usize, end: Time) -> CpuReport {
        let cpu = &self.cpus[c];
        let st = &self.stats.cpus[c];
        let stopped = self.stats.tick_stopped_ns(c, end);
        let busy = self.stats.busy_ns(c, end);
        let mut cstates: Vec<StateCounters> = st.cstates.clone();
        if let Some(stay) = cpu.idle {
            cstates[stay.requested as usize].time_ns += end.saturating_sub(stay.since);
        }
        let role = if !cpu.housekeeping {
            CpuRole::NohzFull
        } else if self.tk.keeps_time(cpu.id) {
            CpuRole::Timekeeping
        } else {
            CpuRole::Housekeeping
        };
        CpuReport {
            cpu: cpu.id,
            role,
            loc: st.loc,
            // Counted only where the twin sends reschedule IPIs: to wake a task whose
            // timer follows it onto another CPU, or a frame worker or a pinned sleeper
            // whose sleep another CPU's hrtimer base took; elsewhere it does not model them.
            res: (self.sources.iter().any(|s| s.follows_task)
                || self.workers.iter().any(|w| !w.remote_timers.is_empty())
                || self
                    .sleepers
                    .iter()
                    .any(|s| s.timers.iter().flatten().count() > 1))
            .then_some(st.res),
            // Only the idle load balancer's kicks, kept on PREEMPT_RT alone.
            cal: self.balance.is_some().then_some(st.cal),
            iwi: st.iwi,
            ticks: Some(st.ticks),
            tick_stopped_ns: Some(stopped),
            busy_ns: Some(busy),
            idle_states: self
                .states
                .iter()
                .zip(&cstates)
                .map(|(s, k)| IdleStateReport {
                    name: s.name.to_string(),
                    usage: k.usage,
                    time_ns: k.time_ns,
                    above: k.above,
                    below: k.below,
                })
                .collect(),
            steal_ns: None,
            idle_entries: None,
        }
    }

    /// Jiffies gaps, catch-ups, reader staleness and duty hand-overs at `end`.
    fn timekeeping_report(&self, end: Time) -> TimekeepingReport {
        let tks = *self.tk.stats();
        TimekeepingReport {
            max_jiffies_gap_ns: tks.max_gap_ns,
            max_jiffies_catch_up: tks.max_catch_up,
            max_reader_staleness_ns: tks.max_reader_staleness_ns,
            mean_coarse_staleness_ns: self.tk.mean_staleness(end),
            duty_handovers: tks.handovers,
        }
    }

    /// `hrtimer_interrupt`'s counters summed over the CPUs, and the worst hang and interrupt.
    fn hrtimer_report(&self) -> HrtimerReport {
        let cpus = &self.stats.cpus;
        HrtimerReport {
            nr_events: cpus.iter().map(|c| c.nr_events).sum(),
            nr_retries: cpus.iter().map(|c| c.nr_retries).sum(),
            nr_hangs: cpus.iter().map(|c| c.nr_hangs).sum(),
            max_hang_time_ns: cpus.iter().map(|c| c.max_hang_time).max().unwrap_or(0),
            max_irq_ns: cpus.iter().map(|c| c.max_irq_ns).max().unwrap_or(0),
        }
    }

    /// The workloads' results at `end` (hogs, frame groups, a BSP job, the syscall loop), the
    /// noise report, and the warnings of a loop the run cut short.
    fn outcomes(&mut self, end: Time) -> Outcomes {
        let mut workloads = Vec::new();
        if !self.hog_cpus.is_empty() {
            workloads.push(WorkloadResult::Hogs {
                cpus: self.hog_cpus.clone(),
            });
        }
        for g in &self.frame_groups {
            workloads.push(WorkloadResult::Frames(group_report(
                g,
                &self.workers,
                self.flier_ns,
                |cpu| {
                    let s = &self.stats.cpus[cpu as usize];
                    s.max_lock_wait_ns.max(s.max_path_wait_ns)
                },
            )));
        }
        let (noise, bsp) = self.noise_report(end);
        if let Some(b) = bsp {
            workloads.push(WorkloadResult::Bsp(b));
        }
        let mut warnings = Vec::new();
        if let Some(l) = &self.syscall {
            let calls = l.calls_done(end);
            let b = l.breakdown(end);
            if !b.finished {
                warnings.push(format!(
                    "syscall loop: the run ended after {calls} of {} calls",
                    l.calls
                ));
            }
            workloads.push(WorkloadResult::Syscall(SyscallReport {
                syscall: "getpid".into(),
                cpu: l.pinned.then_some(l.cpu),
                calls,
                ns_per_call: if calls > 0 {
                    b.elapsed_ns as f64 / calls as f64
                } else {
                    0.0
                },
                breakdown: Some(b),
            }));
        }
        Outcomes {
            workloads,
            noise,
            warnings,
        }
    }

    /// The shared locks and lines: the timekeeping lock (named for its era), the leaf
    /// `rcu_node` locks summed, every shared line touched, and the ticks' lock waits.
    fn locks_report(&self) -> LocksReport {
        let stats = |lock: LockName, l: &LockCounters| LockReport {
            lock,
            acquisitions: l.acquisitions,
            contended: l.contended,
            wait_ns: l.wait_ns,
        };
        let mut leaves = LockCounters::default();
        for l in &self.stats.rcu_leaves {
            leaves.acquisitions += l.acquisitions;
            leaves.contended += l.contended;
            leaves.wait_ns += l.wait_ns;
        }
        let timekeeping_lock = if self.xtime_lock_era {
            LockName::XtimeLock
        } else {
            LockName::JiffiesLock
        };
        let rcu_leaves = LockName::RcuNodeLeaves {
            leaves: self.rcu_leaves.len() as u32,
            fanout: self.rcu_fanout,
        };
        let lines = SharedLine::ALL
            .iter()
            .zip(&self.stats.lines)
            .filter(|(_, l)| l.acquisitions > 0)
            .map(|(&line, l)| {
                let name = match line {
                    SharedLine::CpupriVectors => LockName::CpupriVectors,
                    SharedLine::NohzMasks => LockName::NohzMasks,
                    SharedLine::NohzPicks => LockName::NohzPicks,
                    SharedLine::CalcLoad => LockName::CalcLoad,
                };
                stats(name, l)
            });
        LocksReport {
            locks: [
                stats(timekeeping_lock, &self.stats.timekeeping_lock),
                stats(rcu_leaves, &leaves),
            ]
            .into_iter()
            .chain(lines)
            .collect(),
            tick_wait_ns: self.stats.cpus.iter().map(|c| c.lock_wait_ns).sum(),
            max_tick_wait_ns: self
                .stats
                .cpus
                .iter()
                .map(|c| c.max_lock_wait_ns)
                .max()
                .unwrap_or(0),
        }
    }
}

/// What the workloads produced, for [`Sim::report`].
struct Outcomes {
    workloads: Vec<WorkloadResult>,
    noise: Option<NoiseReport>,
    warnings: Vec<String>,
}

/// The report's energy section from the meter's totals over `secs` (RAPL PL1 applied).
fn energy_report(
    totals: crate::hw::energy::EnergyTotals,
    secs: f64,
    power_limit_w: Option<f64>,
) -> EnergyReport {
    let raw_j = totals.package_j + totals.core_active_j + totals.core_idle_j + totals.wake_j;
    let mut breakdown = vec![
        ("package".to_string(), totals.package_j),
        ("cores_active".to_string(), totals.core_active_j),
        ("cores_idle".to_string(), totals.core_idle_j),
        ("wakeups".to_string(), totals.wake_j),
    ];
    let mut joules = raw_j;
    if let Some(pl) = power_limit_w
        && secs > 0.0
        && raw_j / secs > pl
    {
        // RAPL holds the running average at PL1 by lowering the busy cores' frequency.
        let cut = raw_j - pl * secs;
        breakdown.push(("rapl_pl1_cut".to_string(), -cut));
        joules = pl * secs;
    }
    EnergyReport {
        watts: if secs > 0.0 { joules / secs } else { 0.0 },
        joules,
        package_idle_fraction: if totals.measured_ns > 0 {
            totals.package_idle_ns as f64 / totals.measured_ns as f64
        } else {
            0.0
        },
        breakdown,
        modelled: true,
    }
}

//! Report assembly at the end of a run.

use super::{Sim, StateCounters};
use crate::hw::lock::ContendedLock;
use crate::kernel::timekeeping::Duty;
use crate::workloads::frames::group_report;
use ticklab_schema::report::{
    BackgroundReport, CpuReport, CpuRole, EnergyReport, HrtimerReport, IdleStateReport, LockName,
    LockReport, LocksReport, Report, Source, TimekeepingReport, WorkloadResult,
};

impl Sim {
    /// Builds the report at the end of the run.
    pub fn report(&mut self) -> Report {
        let end = self.end.max(self.now);
        if !self.window_open {
            self.open_window(self.window_start.min(end));
        }
        let duration_ns = end - self.window_start;
        let mut cpus = Vec::with_capacity(self.cpus.len());
        for c in 0..self.cpus.len() {
            let cpu = &self.cpus[c];
            let mut stopped = cpu.ts.stopped_ns;
            if cpu.ts.stopped {
                stopped += end.saturating_sub(cpu.ts.stopped_since.max(self.window_start));
            }
            let mut busy = cpu.busy_ns;
            let mut cstates: Vec<StateCounters> = cpu.cstates.clone();
            match cpu.idle {
                Some(stay) => {
                    cstates[stay.requested as usize].time_ns += end.saturating_sub(stay.since)
                }
                None => busy += end.saturating_sub(cpu.busy_since.max(self.window_start)),
            }
            let role = if !cpu.housekeeping {
                CpuRole::NohzFull
            } else if self.tk.duty == Duty::Cpu(cpu.id) || self.tk.last_holder == Some(cpu.id) {
                CpuRole::Timekeeping
            } else {
                CpuRole::Housekeeping
            };
            cpus.push(CpuReport {
                cpu: cpu.id,
                role,
                loc: cpu.loc,
                res: None,
                cal: None,
                iwi: cpu.iwi,
                ticks: Some(cpu.ts.ticks),
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
            });
        }
        let secs = duration_ns as f64 * 1e-9;
        let energy = self
            .energy
            .as_mut()
            .map(|meter| energy_report(meter.finish(end), secs, self.power_limit_w));
        let tks = self.tk.stats;
        let timekeeping = TimekeepingReport {
            max_jiffies_gap_ns: tks.max_gap_ns,
            max_jiffies_catch_up: tks.max_catch_up,
            max_reader_staleness_ns: tks.max_reader_staleness_ns,
            mean_coarse_staleness_ns: self.tk.mean_staleness(end),
            duty_handovers: tks.handovers,
        };
        let hrtimer = HrtimerReport {
            nr_events: self.cpus.iter().map(|c| c.hrt.nr_events).sum(),
            nr_retries: self.cpus.iter().map(|c| c.hrt.nr_retries).sum(),
            nr_hangs: self.cpus.iter().map(|c| c.hrt.nr_hangs).sum(),
            max_hang_time_ns: self
                .cpus
                .iter()
                .map(|c| c.hrt.max_hang_time)
                .max()
                .unwrap_or(0),
            max_irq_ns: self.cpus.iter().map(|c| c.max_irq_ns).max().unwrap_or(0),
        };
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
            )));
        }
        let stats = |lock: LockName, l: &ContendedLock| LockReport {
            lock,
            acquisitions: l.acquisitions,
            contended: l.contended,
            wait_ns: l.wait_ns,
        };
        let mut leaves = ContendedLock::new();
        for l in &self.rcu_leaves {
            leaves.acquisitions += l.acquisitions;
            leaves.contended += l.contended;
            leaves.wait_ns += l.wait_ns;
        }
        let locks = LocksReport {
            locks: vec![
                stats(
                    if self.xtime_lock_era {
                        LockName::XtimeLock
                    } else {
                        LockName::JiffiesLock
                    },
                    &self.xtime.writer,
                ),
                stats(
                    LockName::RcuNodeLeaves {
                        leaves: self.rcu_leaves.len() as u32,
                        fanout: self.rcu_fanout,
                    },
                    &leaves,
                ),
            ],
            tick_wait_ns: self.cpus.iter().map(|c| c.lock_wait_ns).sum(),
            max_tick_wait_ns: self
                .cpus
                .iter()
                .map(|c| c.max_lock_wait_ns)
                .max()
                .unwrap_or(0),
        };
        let background = self
            .sources
            .iter()
            .filter(|s| s.expiries > 0)
            .map(|s| BackgroundReport {
                name: s.name.clone(),
                kind: s.kind,
                expiries: s.expiries,
            })
            .collect();
        Report {
            schema_version: ticklab_schema::report::REPORT_SCHEMA_VERSION,
            source: Source::Twin { seed: self.seed },
            label: self.scenario_name.clone(),
            machine: self.machine_name.clone(),
            cmdline: self.cmdline.clone(),
            hz: self.hz,
            duration_ns,
            cpus,
            energy,
            messages: self.messages.clone(),
            timekeeping: Some(timekeeping),
            hrtimer: Some(hrtimer),
            locks: Some(locks),
            background,
            workloads,
            warnings: Vec::new(),
        }
    }
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

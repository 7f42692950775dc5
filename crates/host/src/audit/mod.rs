//! `host audit`: is a set of CPUs isolated the way the kernel needs it to be?
//!
//! An engineer who tuned a box for isolated, tickless CPUs runs this first: each check reads
//! one part of `/proc` and `/sys` (through a [`HostRoot`], so fixture trees stand in for a
//! real host), compares it with what the kernel needs for the CPUs under audit, and says
//! [`Status::Pass`], [`Status::Warn`] or [`Status::Fail`] with the evidence it read and the
//! fix (a boot parameter, a sysctl, a sysfs write). A check that cannot apply here (no
//! cpufreq in a guest) is [`Status::NotApplicable`]; one whose file cannot be read is
//! [`Status::Unknown`], with the reason, never a pass.
//!
//! The CPUs audited are the ones named, or else the host's own isolated set
//! ([`isolated_cpus`]: `nohz_full` and `isolated` in sysfs, `nohz_full=` and `isolcpus=` on
//! the boot line). The checks, one file per group:
//!
//! * [`boot_line`] — the kernel was built with what the boot line asks for; the CPUs are
//!   `nohz_full`; the `isolcpus=` flags; RCU callbacks offloaded (`rcu_nocbs`);
//! * [`interrupts`] — device IRQ affinity (`/proc/irq/*/effective_affinity_list`, the default
//!   affinity, `irqaffinity=`) and managed IRQs;
//! * [`timers`] — `timer_migration`, the NMI (hard lockup) watchdog and the soft lockup
//!   watchdog's `watchdog_cpumask`;
//! * [`scheduler`] — RT throttling, kernel threads allowed on the CPUs, the unbound workqueue
//!   cpumask, SMT siblings;
//! * [`power`] — cpufreq governor, `intel_pstate`, C-state limits, `/dev/cpu_dma_latency`;
//! * [`memory`] — transparent hugepages and the `vmstat` interval.
//!
//! [`Audit`]'s `Display` is the report (`screen.rs`); its `Serialize` is `--json`.

pub mod boot_line;
mod check;
mod host;
pub mod interrupts;
pub mod memory;
pub mod power;
pub mod scheduler;
mod screen;
pub mod timers;

pub use check::{AuditError, Check, Status};
pub use host::{AuditHost, Task, isolated_cpus, possible_cpus};

use crate::probe::HostRoot;
use serde::Serialize;
use ticklab_cmdline::CpuSet;

/// Where the audited CPUs came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetSource {
    /// Named by the user (`--cpus`).
    Named,
    /// The host's isolated set ([`isolated_cpus`]).
    Isolated,
}

/// What `host audit` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Audit {
    /// The audited CPUs, as a cpulist.
    pub cpus: String,
    /// Where they came from.
    pub source: TargetSource,
    /// The running kernel's release, if readable.
    pub release: Option<String>,
    /// The kernel's part of the boot line, if readable.
    pub cmdline: Option<String>,
    /// Every check, in report order.
    pub checks: Vec<Check>,
}

impl Audit {
    /// Whether any check failed (the CLI's exit code 3).
    pub fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.status == Status::Fail)
    }

    /// The number of checks with `status`.
    pub fn count(&self, status: Status) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }

    /// The check named `id`, if it ran.
    pub fn check(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }
}

/// Runs every check on `cpus` (or, with `None`, on the host's isolated set).
pub fn audit(root: &HostRoot, cpus: Option<&CpuSet>) -> Result<Audit, AuditError> {
    let host = AuditHost::read(root, cpus)?;
    let checks = vec![
        boot_line::kernel_build(&host),
        boot_line::nohz_full(&host),
        boot_line::isolcpus_flags(&host),
        boot_line::rcu_nocbs(&host),
        interrupts::irq_affinity(&host),
        interrupts::managed_irqs(&host),
        timers::timer_migration(&host),
        timers::nmi_watchdog(&host),
        timers::watchdog_cpumask(&host),
        scheduler::rt_throttling(&host),
        scheduler::kthreads(&host),
        scheduler::workqueue_cpumask(&host),
        scheduler::smt_siblings(&host),
        power::cpufreq_governor(&host),
        power::intel_pstate(&host),
        power::cstate_limits(&host),
        power::cpu_dma_latency(&host),
        memory::transparent_hugepages(&host),
        memory::vmstat_interval(&host),
    ];
    Ok(Audit {
        cpus: host.target.to_cpulist(),
        source: if cpus.is_some() {
            TargetSource::Named
        } else {
            TargetSource::Isolated
        },
        release: host.release.clone(),
        cmdline: host.cmdline_text.clone(),
        checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_order_puts_failures_last_among_verdicts() {
        assert!(Status::Pass < Status::Warn && Status::Warn < Status::Fail);
        let a = Audit {
            cpus: "1".into(),
            source: TargetSource::Named,
            release: None,
            cmdline: None,
            checks: vec![
                Check::new("a", "a", Status::Warn),
                Check::new("b", "b", Status::NotApplicable),
            ],
        };
        assert!(!a.failed());
        assert_eq!(a.count(Status::Warn), 1);
        let mut b = a.clone();
        b.checks.push(Check::new("c", "c", Status::Fail));
        assert!(b.failed());
        assert_eq!(b.check("c").map(|c| c.status), Some(Status::Fail));
    }
}

//! Where a thread's wake-ups ran: a measured run's count per CPU
//! ([`Report::coordinator_wakeups`](crate::report::Report::coordinator_wakeups)), which the
//! scenario's background sources are split by
//! ([`BackgroundSource::split_by_wakeups`](crate::scenario::BackgroundSource::split_by_wakeups)).
//! Its own module so that neither `report` nor `scenario` imports the other for it.
//!
//! It also holds the kernel threads' runs of a measured window ([`KthreadRuns`],
//! [`Report::kthread_runs`](crate::report::Report::kthread_runs)): where the kernel's own
//! work woke a CPU, which a twin of that run gives to its background.

use serde::{Deserialize, Serialize};

/// How many of a thread's wake-ups ran on one CPU ([`Report::coordinator_wakeups`](crate::report::Report::coordinator_wakeups)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuWakeups {
    /// The CPU.
    pub cpu: u32,
    /// Wake-ups that found the thread on it.
    pub wakeups: u64,
}

/// Counts one wake-up on `cpu` in `rows` (kept in CPU order, a CPU's row made on its first
/// wake-up): after the CPUs a thread visits have each been seen once, counting allocates
/// nothing.
pub fn count_wakeup(rows: &mut Vec<CpuWakeups>, cpu: u32) {
    match rows.binary_search_by_key(&cpu, |r| r.cpu) {
        Ok(i) => rows[i].wakeups += 1,
        Err(i) => rows.insert(i, CpuWakeups { cpu, wakeups: 1 }),
    }
    debug_assert!(rows.windows(2).all(|w| w[0].cpu < w[1].cpu), "CPU order");
}

/// The CPU where most of the wake-ups ran (the lowest number on a tie); `None` for no rows.
pub fn modal_cpu(rows: &[CpuWakeups]) -> Option<u32> {
    rows.iter()
        .filter(|r| r.wakeups > 0)
        .max_by(|a, b| a.wakeups.cmp(&b.wakeups).then(b.cpu.cmp(&a.cpu)))
        .map(|r| r.cpu)
}

/// One kernel thread's runs in a measured window ([`Report::kthread_runs`](crate::report::Report::kthread_runs)),
/// from its `/proc/PID/` files read before and after the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KthreadRuns {
    /// Its `comm` (`rcu_sched`, `kworker/u16:1`, ...).
    pub comm: String,
    /// The CPU it last ran on when the window ended.
    pub cpu: u32,
    /// Its allowed CPUs are that one CPU (a per-CPU thread): every run was there. An unbound
    /// thread's runs are put on the CPU it last ran on.
    pub bound: bool,
    /// Times it left a CPU in the window (its voluntary and involuntary context switches): one
    /// per run.
    pub runs: u64,
    /// Its CPU time in the window, ns (`se.sum_exec_runtime` of `/proc/PID/sched`), when the
    /// kernel has that file (`CONFIG_SCHED_DEBUG`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_ns: Option<u64>,
}

impl KthreadRuns {
    /// Its mean CPU time per run, ns, when both are known and it ran.
    pub fn ns_per_run(&self) -> Option<u64> {
        let ns = self.run_ns?;
        (self.runs > 0).then(|| ns / self.runs)
    }
}

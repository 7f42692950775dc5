//! `host irqs`: per-CPU interrupt rates over a window.
//!
//! Two `/proc/interrupts` snapshots, `window` apart on the monotonic clock; the rate of a row
//! on a CPU is the count difference divided by the elapsed time between the two reads. By
//! default the tick-relevant rows (local timer, reschedule, function call, irq_work, by
//! their architecture-neutral [`IrqKind`]) are shown, with `all` every row.
//!
//! The kernel's per-CPU architecture counters are 32-bit; a count that went down between
//! the snapshots is taken as one wrap-around.

use super::HostRoot;
use crate::procfs::interrupts::InterruptsError;
use crate::procfs::{Interrupts, IrqKind, parse_interrupts};
use serde::Serialize;
use std::fmt;
use std::time::{Duration, Instant};

/// The rows shown without `--all`.
pub const DEFAULT_KINDS: [IrqKind; 4] = [
    IrqKind::LocalTimer,
    IrqKind::Reschedule,
    IrqKind::FunctionCall,
    IrqKind::IrqWork,
];

/// One snapshot.
#[derive(Debug, Clone)]
pub struct IrqSnapshot {
    /// The file's text as read.
    pub text: String,
    /// Parsed.
    pub interrupts: Interrupts,
    /// When it was read.
    pub at: Instant,
    /// `/proc/stat` read beside it (for steal time), `None` when unreadable.
    pub stat: Option<crate::procfs::stat::ProcStat>,
}

/// Why `/proc/interrupts` gave no snapshot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IrqsError {
    /// The file could not be read (the probe's reason: absent, not Linux, no permission).
    #[error("{0}")]
    Unreadable(String),
    /// The text does not parse.
    #[error("{0}")]
    Parse(#[from] InterruptsError),
}

/// Reads and parses `/proc/interrupts` once.
pub fn snapshot(root: &HostRoot) -> Result<IrqSnapshot, IrqsError> {
    let text = match root.read("/proc/interrupts") {
        super::Probe::Ok(t) => t,
        super::Probe::NotAvailable(why) => return Err(IrqsError::Unreadable(why)),
    };
    let at = Instant::now();
    let interrupts = parse_interrupts(&text)?;
    let stat = match root.read("/proc/stat") {
        super::Probe::Ok(t) => crate::procfs::stat::parse_stat(&t).ok(),
        super::Probe::NotAvailable(_) => None,
    };
    Ok(IrqSnapshot {
        text,
        interrupts,
        at,
        stat,
    })
}

/// Takes a snapshot, sleeps `window`, takes another.
pub fn sample_window(
    root: &HostRoot,
    window: Duration,
) -> Result<(IrqSnapshot, IrqSnapshot), IrqsError> {
    let before = snapshot(root)?;
    std::thread::sleep(window);
    let after = snapshot(root)?;
    Ok((before, after))
}

/// Rates of one row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateRow {
    /// Display name: the x86 mnemonic for the default kinds (also on arm64), else the row
    /// name as printed.
    pub name: String,
    /// The row's name in the file (`LOC`, `11`, `IPI0`).
    pub row: String,
    /// Description column.
    pub description: String,
    /// Per-CPU interrupts per second, aligned with [`IrqRates::cpus`]; empty for a global
    /// row.
    pub per_cpu: Vec<f64>,
    /// Per-CPU count differences, aligned with [`IrqRates::cpus`].
    pub per_cpu_delta: Vec<u64>,
    /// All CPUs (or the global count), per second.
    pub total: f64,
}

/// The result of a window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IrqRates {
    /// Seconds between the snapshots.
    pub elapsed_s: f64,
    /// CPUs present in both snapshots.
    pub cpus: Vec<u32>,
    /// Rows.
    pub rows: Vec<RateRow>,
    /// Default kinds the architecture does not have (e.g. `TLB` on arm64).
    pub missing: Vec<String>,
    /// Steal time per CPU of [`IrqRates::cpus`], % of the window (`/proc/stat`: the
    /// hypervisor ran something else while the vCPU wanted to run); `None` for a CPU, or
    /// for all, when `/proc/stat` was not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_pct: Option<Vec<Option<f64>>>,
}

fn delta(before: u64, after: u64) -> u64 {
    if after >= before {
        after - before
    } else {
        // One wrap of a 32-bit counter.
        (after + (1u64 << 32)).saturating_sub(before)
    }
}

/// Per-CPU rates between two parsed snapshots taken `elapsed` apart.
pub fn rates(before: &Interrupts, after: &Interrupts, elapsed: Duration, all: bool) -> IrqRates {
    let secs = elapsed.as_secs_f64();
    let cpus: Vec<u32> = after
        .cpus
        .iter()
        .copied()
        .filter(|c| before.cpus.contains(c))
        .collect();
    let row_rates = |name: String,
                     b: &crate::procfs::interrupts::IrqRow,
                     a: &crate::procfs::interrupts::IrqRow| {
        let per_cpu_delta: Vec<u64> = if a.per_cpu.is_empty() {
            Vec::new()
        } else {
            cpus.iter()
                .map(|&c| {
                    delta(
                        before.count(b, c).unwrap_or(0),
                        after.count(a, c).unwrap_or(0),
                    )
                })
                .collect()
        };
        let total_delta = if a.per_cpu.is_empty() {
            delta(b.global.unwrap_or(0), a.global.unwrap_or(0))
        } else {
            per_cpu_delta.iter().sum()
        };
        RateRow {
            name,
            row: a.name.clone(),
            description: a.description.clone(),
            per_cpu: per_cpu_delta.iter().map(|&d| d as f64 / secs).collect(),
            per_cpu_delta,
            total: total_delta as f64 / secs,
        }
    };
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    if all {
        for a in &after.rows {
            if let Some(b) = before.row(&a.name) {
                rows.push(row_rates(a.name.clone(), b, a));
            }
        }
    } else {
        for kind in DEFAULT_KINDS {
            match (before.row_of(kind), after.row_of(kind)) {
                (Some(b), Some(a)) => rows.push(row_rates(kind.mnemonic().to_string(), b, a)),
                _ => missing.push(kind.mnemonic().to_string()),
            }
        }
    }
    IrqRates {
        elapsed_s: secs,
        cpus,
        rows,
        missing,
        steal_pct: None,
    }
}

/// Rates between two snapshots.
pub fn rates_between(before: &IrqSnapshot, after: &IrqSnapshot, all: bool) -> IrqRates {
    let window = after.at.duration_since(before.at);
    let mut r = rates(&before.interrupts, &after.interrupts, window, all);
    if let (Some(a), Some(b)) = (&before.stat, &after.stat) {
        r.steal_pct = Some(crate::harness::sample::steal_pct(a, b, &r.cpus, window));
    }
    r
}

impl fmt::Display for IrqRates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "interrupts per second over {:.3} s (from /proc/interrupts)",
            self.elapsed_s
        )?;
        let per_cpu_rows: Vec<&RateRow> =
            self.rows.iter().filter(|r| !r.per_cpu.is_empty()).collect();
        let name_w = per_cpu_rows
            .iter()
            .map(|r| r.name.len())
            .max()
            .unwrap_or(3)
            .max(8);
        // One line per row, one column per CPU (turbostat-like), plus the total.
        write!(f, "{:<name_w$}", "")?;
        for c in &self.cpus {
            write!(f, " {:>10}", format!("CPU{c}"))?;
        }
        writeln!(f, " {:>10}", "all")?;
        for r in &per_cpu_rows {
            write!(f, "{:<name_w$}", r.name)?;
            for v in &r.per_cpu {
                write!(f, " {v:>10.1}")?;
            }
            write!(f, " {:>10.1}", r.total)?;
            if r.name != r.row || r.row.bytes().all(|b| b.is_ascii_digit()) {
                write!(f, "  {}", r.description)?;
            }
            writeln!(f)?;
        }
        for r in self.rows.iter().filter(|r| r.per_cpu.is_empty()) {
            writeln!(f, "{:<name_w$} {:>10.1} (global)", r.name, r.total)?;
        }
        if let Some(steal) = &self.steal_pct {
            write!(f, "{:<name_w$}", "steal %")?;
            for v in steal {
                match v {
                    Some(v) => write!(f, " {v:>10.1}")?,
                    None => write!(f, " {:>10}", "-")?,
                }
            }
            writeln!(f, "  time the hypervisor ran something else (/proc/stat)")?;
        }
        if !self.missing.is_empty() {
            writeln!(f, "not on this architecture: {}", self.missing.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_from_two_texts() {
        let a = parse_interrupts(
            "   CPU0 CPU1\nLOC: 100 200 Local timer interrupts\nRES: 5 6 Rescheduling interrupts\nERR: 1\n",
        )
        .unwrap();
        let b = parse_interrupts(
            "   CPU0 CPU1\nLOC: 350 210 Local timer interrupts\nRES: 5 8 Rescheduling interrupts\nERR: 3\n",
        )
        .unwrap();
        let r = rates(&a, &b, Duration::from_secs(1), false);
        assert_eq!(r.cpus, vec![0, 1]);
        assert_eq!(r.rows[0].name, "LOC");
        assert_eq!(r.rows[0].per_cpu, vec![250.0, 10.0]);
        assert_eq!(r.rows[1].per_cpu_delta, vec![0, 2]);
        assert_eq!(r.missing, vec!["CAL", "IWI"]);

        let r = rates(&a, &b, Duration::from_millis(500), true);
        let err = r.rows.iter().find(|r| r.name == "ERR").unwrap();
        assert_eq!(err.total, 4.0);
        assert!(err.per_cpu.is_empty());
    }

    #[test]
    fn wrap_and_hotplug() {
        assert_eq!(delta(u64::from(u32::MAX) - 1, 3), 5);
        let a = parse_interrupts("CPU0 CPU1 CPU2\nLOC: 1 1 1 x\n").unwrap();
        let b = parse_interrupts("CPU0 CPU2\nLOC: 3 9 x\n").unwrap();
        let r = rates(&a, &b, Duration::from_secs(2), false);
        assert_eq!(r.cpus, vec![0, 2]);
        assert_eq!(r.rows[0].per_cpu, vec![1.0, 4.0]);
    }
}

//! Checks of device interrupts: which IRQs may fire on the audited CPUs
//! (`/proc/irq/N/effective_affinity_list`, the default affinity, `irqaffinity=`), and the
//! managed IRQs whose affinity the kernel owns (only `isolcpus=managed_irq` moves them).

use super::boot_line::cpus_or_none;
use super::check::{Check, Status};
use super::host::{AuditHost, read_cpulist, read_cpumask};
use crate::probe::Probe;
use ticklab_cmdline::CpuSet;

/// One IRQ of `/proc/irq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqAffinity {
    /// The IRQ number.
    pub irq: u32,
    /// The names of its handlers (the subdirectories of `/proc/irq/N`).
    pub names: Vec<String>,
    /// Where it is delivered: `effective_affinity_list`, else `smp_affinity_list`.
    pub cpus: CpuSet,
    /// Whether the kernel manages its affinity (`IRQD_AFFINITY_MANAGED` in debugfs); `None`
    /// without `/sys/kernel/debug/irq`.
    pub managed: Option<bool>,
}

impl IrqAffinity {
    fn label(&self) -> String {
        if self.names.is_empty() {
            self.irq.to_string()
        } else {
            format!("{} ({})", self.irq, self.names.join(","))
        }
    }
}

/// Every IRQ of `/proc/irq`, by number.
pub fn read_irqs(host: &AuditHost) -> Probe<Vec<IrqAffinity>> {
    let root = &host.root;
    let dir = match std::fs::read_dir(root.path("/proc/irq")) {
        Ok(d) => d,
        Err(e) => return Probe::NotAvailable(crate::probe::explain_io("/proc/irq", &e)),
    };
    let debugfs = root.path("/sys/kernel/debug/irq/irqs").is_dir();
    let mut irqs = Vec::new();
    for entry in dir.flatten() {
        let Some(irq) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let base = format!("/proc/irq/{irq}");
        let cpus = match read_cpulist(root, &format!("{base}/effective_affinity_list")) {
            Probe::Ok(s) => s,
            Probe::NotAvailable(_) => {
                match read_cpulist(root, &format!("{base}/smp_affinity_list")) {
                    Probe::Ok(s) => s,
                    Probe::NotAvailable(_) => continue,
                }
            }
        };
        let mut names: Vec<String> = std::fs::read_dir(entry.path())
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        let managed = debugfs.then(|| {
            root.read(&format!("/sys/kernel/debug/irq/irqs/{irq}"))
                .ok()
                .is_some_and(|t| t.contains("IRQD_AFFINITY_MANAGED"))
        });
        irqs.push(IrqAffinity {
            irq,
            names,
            cpus,
            managed,
        });
    }
    irqs.sort_by_key(|i| i.irq);
    Probe::Ok(irqs)
}

/// At most `n` labels, then how many more.
fn listed(labels: &[String], n: usize) -> String {
    if labels.len() <= n {
        labels.join(", ")
    } else {
        format!("{} and {} more", labels[..n].join(", "), labels.len() - n)
    }
}

/// `irq_affinity`: no device IRQ (other than managed ones) is delivered to the audited CPUs,
/// and new IRQs default elsewhere.
pub fn irq_affinity(host: &AuditHost) -> Check {
    const ID: &str = "irq_affinity";
    const TITLE: &str = "device IRQs kept off the CPUs";
    let irqs = match read_irqs(host) {
        Probe::Ok(i) => i,
        Probe::NotAvailable(why) => return Check::new(ID, TITLE, Status::Unknown).with(why),
    };
    let target = &host.target;
    let hk = host.housekeeping();
    let hitting: Vec<String> = irqs
        .iter()
        .filter(|i| i.managed != Some(true) && !i.cpus.intersection(target).is_empty())
        .map(|i| format!("{} → {}", i.label(), i.cpus.to_cpulist()))
        .collect();
    let default = read_cpumask(&host.root, "/proc/irq/default_smp_affinity");
    let mut check = Check::new(ID, TITLE, Status::Pass).with(format!(
        "{} IRQs in /proc/irq, {} delivered to CPU {}{}",
        irqs.len(),
        hitting.len(),
        target.to_cpulist(),
        if hitting.is_empty() {
            String::new()
        } else {
            format!(": {}", listed(&hitting, 6))
        }
    ));
    let irqaffinity = host.unknown_param("irqaffinity");
    check = check.with(match &irqaffinity {
        Some(v) => format!("irqaffinity={v} on the boot line"),
        None => "no irqaffinity= on the boot line".to_string(),
    });
    let default_hits = match &default {
        Probe::Ok(d) => {
            check = check.with(format!(
                "/proc/irq/default_smp_affinity: CPUs {}",
                cpus_or_none(d)
            ));
            !d.intersection(target).is_empty()
        }
        Probe::NotAvailable(why) => {
            check = check.with(why.clone());
            false
        }
    };
    if hitting.is_empty() && !default_hits {
        return check;
    }
    check.status = if hitting.is_empty() {
        Status::Warn
    } else {
        Status::Fail
    };
    let hk = hk.to_cpulist();
    check.fix(format!(
        "move each: `echo {hk} > /proc/irq/N/smp_affinity_list`; boot with irqaffinity={hk} \
         for the default; tell irqbalance (IRQBALANCE_BANNED_CPULIST={}) or stop it",
        target.to_cpulist()
    ))
}

/// `managed_irqs`: managed IRQs (a multi-queue device's per-CPU queues) are not delivered to
/// the audited CPUs, or `isolcpus=managed_irq` asks the kernel to keep them off.
pub fn managed_irqs(host: &AuditHost) -> Check {
    const ID: &str = "managed_irqs";
    const TITLE: &str = "managed IRQs (isolcpus=managed_irq)";
    let flag = host
        .cmdline
        .ok()
        .and_then(|c| c.isolcpus())
        .is_some_and(|i| i.managed_irq());
    let flag_text = if flag {
        "isolcpus=managed_irq on the boot line"
    } else {
        "no isolcpus=managed_irq on the boot line"
    };
    let fix = format!(
        "boot with isolcpus=managed_irq,{} (their affinity cannot be written)",
        host.target.to_cpulist()
    );
    let irqs = match read_irqs(host) {
        Probe::Ok(i) => i,
        Probe::NotAvailable(why) => return Check::new(ID, TITLE, Status::Unknown).with(why),
    };
    if irqs.iter().all(|i| i.managed.is_none()) && !irqs.is_empty() {
        let check = Check::new(ID, TITLE, Status::Unknown)
            .with("which IRQs are managed shows only in /sys/kernel/debug/irq (CONFIG_GENERIC_IRQ_DEBUGFS, debugfs mounted)")
            .with(flag_text);
        if flag {
            return Check {
                status: Status::Pass,
                ..check
            };
        }
        return check.fix(fix);
    }
    let target = &host.target;
    let hitting: Vec<String> = irqs
        .iter()
        .filter(|i| i.managed == Some(true) && !i.cpus.intersection(target).is_empty())
        .map(|i| format!("{} → {}", i.label(), i.cpus.to_cpulist()))
        .collect();
    let managed = irqs.iter().filter(|i| i.managed == Some(true)).count();
    let check = Check::new(ID, TITLE, Status::Pass)
        .with(format!(
            "{managed} managed IRQs, {} delivered to CPU {}{}",
            hitting.len(),
            target.to_cpulist(),
            if hitting.is_empty() {
                String::new()
            } else {
                format!(": {}", listed(&hitting, 6))
            }
        ))
        .with(flag_text);
    if hitting.is_empty() {
        return check;
    }
    if flag {
        // The kernel keeps a managed IRQ off isolated CPUs unless a queue has no other CPU.
        return Check {
            status: Status::Warn,
            ..check
        }
        .with("with managed_irq the kernel still uses an isolated CPU for a queue whose CPUs are all isolated")
        .fix("give each such queue a housekeeping CPU (fewer isolated CPUs per queue), or move the device's work elsewhere");
    }
    Check {
        status: Status::Fail,
        ..check
    }
    .fix(fix)
}

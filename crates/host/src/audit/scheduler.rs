//! Checks of what the scheduler may put on the audited CPUs: RT throttling, kernel threads
//! allowed there, the unbound workqueue cpumask, and SMT siblings shared with housekeeping.

use super::boot_line::cpus_or_none;
use super::check::{Check, Status};
use super::host::{AuditHost, read_cpulist, read_cpumask, read_int};
use crate::probe::Probe;
use crate::probe::tracefs::cpumask_hex;
use ticklab_cmdline::CpuSet;

/// `rt_throttling`: `kernel.sched_rt_runtime_us` is -1, so a SCHED_FIFO task on an isolated
/// CPU is never throttled.
pub fn rt_throttling(host: &AuditHost) -> Check {
    const ID: &str = "rt_throttling";
    const TITLE: &str = "RT throttling off";
    let root = &host.root;
    let runtime = read_int(root, "/proc/sys/kernel/sched_rt_runtime_us");
    let period = read_int(root, "/proc/sys/kernel/sched_rt_period_us");
    match (runtime, period) {
        (Probe::Ok(-1), _) => Check::new(ID, TITLE, Status::Pass)
            .with("/proc/sys/kernel/sched_rt_runtime_us: -1 (no limit)"),
        (Probe::Ok(r), Probe::Ok(p)) => Check::new(ID, TITLE, Status::Warn)
            .with(format!(
                "kernel.sched_rt_runtime_us={r} of sched_rt_period_us={p}: an RT task that runs \
                 {r} µs in a period is stopped for the remaining {} µs",
                p - r
            ))
            .fix("sysctl kernel.sched_rt_runtime_us=-1 (only for RT tasks known to sleep: it removes the safety net)"),
        (Probe::NotAvailable(why), _) | (_, Probe::NotAvailable(why)) => {
            Check::new(ID, TITLE, Status::Unknown).with(why)
        }
    }
}

/// At most `n` names, then how many more.
fn names(list: &[String], n: usize) -> String {
    if list.len() <= n {
        list.join(", ")
    } else {
        format!("{} and {} more", list[..n].join(", "), list.len() - n)
    }
}

/// `kthreads`: no kernel thread that may run anywhere is allowed on the audited CPUs (a
/// per-CPU kthread bound to one of them is the kernel's own and expected).
pub fn kthreads(host: &AuditHost) -> Check {
    const ID: &str = "kthreads";
    const TITLE: &str = "unbound kernel threads kept off the CPUs";
    let tasks = match &host.tasks {
        Probe::Ok(t) => t,
        Probe::NotAvailable(why) => {
            return Check::new(ID, TITLE, Status::Unknown).with(why.clone());
        }
    };
    let target = &host.target;
    let kthreads: Vec<_> = tasks.iter().filter(|t| t.kthread).collect();
    let bound = kthreads
        .iter()
        .filter(|t| t.allowed.len() == 1 && t.allowed.is_subset(target))
        .count();
    let unbound: Vec<String> = kthreads
        .iter()
        .filter(|t| t.allowed.len() > 1 && !t.allowed.intersection(target).is_empty())
        .map(|t| format!("{}[{}]", t.comm, t.pid))
        .collect();
    let check = Check::new(ID, TITLE, Status::Pass).with(format!(
        "{} kernel threads: {bound} bound to one of CPU {} (per-CPU, expected), {} unbound ones allowed on them{}",
        kthreads.len(),
        target.to_cpulist(),
        unbound.len(),
        if unbound.is_empty() {
            String::new()
        } else {
            format!(": {}", names(&unbound, 8))
        }
    ));
    if unbound.is_empty() {
        return check;
    }
    let hk = cpus_or_none(&host.housekeeping());
    Check {
        status: Status::Warn,
        ..check
    }
    .fix(format!(
        "boot with nohz_full= or isolcpus=domain on the CPUs (kthreadd then starts kernel threads on the housekeeping CPUs); move the running ones with `taskset -pc {hk} PID`"
    ))
}

/// `workqueue_cpumask`: unbound workqueue items do not run on the audited CPUs.
pub fn workqueue_cpumask(host: &AuditHost) -> Check {
    const ID: &str = "workqueue_cpumask";
    const TITLE: &str = "unbound workqueues off the CPUs";
    const PATH: &str = "/sys/devices/virtual/workqueue/cpumask";
    let mask = match read_cpumask(&host.root, PATH) {
        Probe::Ok(m) => m,
        Probe::NotAvailable(_) if !host.root.path(PATH).exists() => {
            return Check::new(ID, TITLE, Status::NotApplicable).with(format!(
                "{PATH} is absent (kernel without unbound workqueue attributes)"
            ));
        }
        Probe::NotAvailable(why) => return Check::new(ID, TITLE, Status::Unknown).with(why),
    };
    let on = mask.intersection(&host.target);
    let check =
        Check::new(ID, TITLE, Status::Pass).with(format!("{PATH}: CPUs {}", cpus_or_none(&mask)));
    if on.is_empty() {
        return check;
    }
    let hk: Vec<u32> = host.housekeeping().iter().collect();
    Check {
        status: Status::Warn,
        ..check
    }
    .with(format!(
        "unbound work items may run on CPU {}",
        on.to_cpulist()
    ))
    .fix(format!(
        "echo {} > {PATH} (or boot with workqueue.unbound_cpus={})",
        cpumask_hex(&hk),
        cpus_or_none(&host.housekeeping())
    ))
}

/// `smt_siblings`: no audited CPU shares its core with a CPU outside the set (whose
/// interrupts and kernel work then share the core's execution units and caches).
pub fn smt_siblings(host: &AuditHost) -> Check {
    const ID: &str = "smt_siblings";
    const TITLE: &str = "SMT siblings isolated too";
    let target = &host.target;
    let mut siblings = CpuSet::new();
    let mut shared = Vec::new();
    for cpu in target.iter() {
        let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
        match read_cpulist(&host.root, &path) {
            Probe::Ok(s) => {
                let outside = s.difference(target);
                if !outside.is_empty() {
                    shared.push(format!(
                        "CPU {cpu} shares its core with CPU {}",
                        outside.to_cpulist()
                    ));
                }
                siblings = siblings.union(&s);
            }
            Probe::NotAvailable(why) => return Check::new(ID, TITLE, Status::Unknown).with(why),
        }
    }
    let smt = host
        .root
        .read_line("/sys/devices/system/cpu/smt/control")
        .ok()
        .map_or_else(
            || "/sys/devices/system/cpu/smt/control unreadable".to_string(),
            |c| format!("/sys/devices/system/cpu/smt/control: {c}"),
        );
    if shared.is_empty() {
        let one = siblings == *target;
        return Check::new(ID, TITLE, Status::Pass)
            .with(if one {
                "each CPU is alone on its core, or its siblings are audited too".to_string()
            } else {
                format!("siblings {}", siblings.to_cpulist())
            })
            .with(smt);
    }
    let mut check = Check::new(ID, TITLE, Status::Warn);
    for s in shared {
        check = check.with(s);
    }
    check.with(smt).fix(format!(
        "isolate the siblings too (CPUs {}), or boot with nosmt",
        siblings.to_cpulist()
    ))
}

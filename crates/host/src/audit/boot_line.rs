//! Checks of the boot line against the build and of what it leaves in force: the kernel was
//! built with what the line asks for, the CPUs are `nohz_full`, the `isolcpus=` flags, and
//! RCU callback offloading.

use super::check::{Check, Status};
use super::host::AuditHost;
use crate::probe::Probe;
use ticklab_cmdline::{CpuSet, IsolcpusFlag, RcuNocbsArg};

/// The build option each isolation parameter needs, for the parameters on this line.
fn asked_features(host: &AuditHost) -> Vec<(&'static str, &'static str)> {
    let Probe::Ok(c) = &host.cmdline else {
        return Vec::new();
    };
    let mut asked = Vec::new();
    if c.nohz_full().is_some() {
        asked.push(("nohz_full=", "NO_HZ_FULL"));
    }
    if let Some(iso) = c.isolcpus() {
        asked.push(("isolcpus=", "CPU_ISOLATION"));
        if iso.nohz() {
            asked.push(("isolcpus=nohz", "NO_HZ_FULL"));
        }
    }
    if c.rcu_nocbs.is_some() {
        asked.push(("rcu_nocbs", "RCU_NOCB_CPU"));
    }
    asked
}

/// `kernel_build`: every isolation parameter on the boot line has its build option.
pub fn kernel_build(host: &AuditHost) -> Check {
    const ID: &str = "kernel_build";
    const TITLE: &str = "kernel built with what the boot line asks";
    if let Probe::NotAvailable(why) = &host.cmdline {
        return Check::new(ID, TITLE, Status::Unknown).with(why.clone());
    }
    let asked = asked_features(host);
    if asked.is_empty() {
        return Check::new(ID, TITLE, Status::Pass)
            .with("the boot line asks for none of nohz_full=, isolcpus=, rcu_nocbs");
    }
    let (k, source) = match &host.kconfig {
        Probe::Ok(k) => k,
        Probe::NotAvailable(why) => {
            return Check::new(ID, TITLE, Status::Unknown)
                .with(format!("build configuration: {why}"));
        }
    };
    let mut check = Check::new(ID, TITLE, Status::Pass);
    let mut missing = Vec::new();
    for (param, option) in &asked {
        let on = k.is_y(option);
        check = check.with(format!(
            "{param} needs CONFIG_{option}: {} ({source})",
            if on { "built" } else { "NOT built" }
        ));
        if !on {
            missing.push(format!("CONFIG_{option}=y"));
        }
    }
    if missing.is_empty() {
        return check;
    }
    missing.dedup();
    check.status = Status::Fail;
    check.fix(format!(
        "the kernel ignores what it was not built for (\"nohz unsupported\" or nothing in the \
         log): boot a kernel built with {}",
        missing.join(" and ")
    ))
}

/// `nohz_full`: every audited CPU is in the `nohz_full` set in force, so a CPU with one task
/// can stop its tick.
pub fn nohz_full(host: &AuditHost) -> Check {
    const ID: &str = "nohz_full";
    const TITLE: &str = "CPUs are nohz_full (tick stops with one task)";
    let target = &host.target;
    let built = host.built("NO_HZ_FULL");
    let set = match (&host.nohz_full, built) {
        (Probe::Ok(s), _) => s.clone(),
        (Probe::NotAvailable(_), Some(false)) => {
            return Check::new(ID, TITLE, Status::Fail)
                .with("kernel built without CONFIG_NO_HZ_FULL: a CPU running a task keeps its tick at HZ")
                .fix(format!(
                    "boot a kernel built with CONFIG_NO_HZ_FULL=y with nohz_full={}",
                    target.to_cpulist()
                ));
        }
        (Probe::NotAvailable(why), _) => {
            return Check::new(ID, TITLE, Status::Unknown).with(why.clone());
        }
    };
    let evidence = format!("/sys/devices/system/cpu/nohz_full: {}", cpus_or_none(&set));
    let outside = target.difference(&set);
    if outside.is_empty() {
        return Check::new(ID, TITLE, Status::Pass).with(evidence);
    }
    Check::new(ID, TITLE, Status::Fail)
        .with(evidence)
        .with(format!(
            "CPU {} not nohz_full: the tick runs at HZ whenever a task runs there",
            outside.to_cpulist()
        ))
        .fix(format!(
            "boot with nohz_full={}",
            set.union(target).to_cpulist()
        ))
}

/// `isolcpus_flags`: the CPUs left the scheduler domains, managed IRQs are kept off them, and
/// no flag is one the kernel skips.
pub fn isolcpus_flags(host: &AuditHost) -> Check {
    const ID: &str = "isolcpus_flags";
    const TITLE: &str = "isolcpus= flags (domain, managed_irq)";
    let c = match &host.cmdline {
        Probe::Ok(c) => c,
        Probe::NotAvailable(why) => {
            return Check::new(ID, TITLE, Status::Unknown).with(why.clone());
        }
    };
    let target = &host.target;
    let suggested = format!("isolcpus=domain,managed_irq,{}", target.to_cpulist());
    let Some(iso) = c.isolcpus() else {
        let isolated = host.isolated.ok().cloned().unwrap_or_default();
        if target.is_subset(&isolated) {
            return Check::new(ID, TITLE, Status::Pass).with(format!(
                "no isolcpus= on the boot line, but /sys/devices/system/cpu/isolated is {}",
                isolated.to_cpulist()
            ));
        }
        return Check::new(ID, TITLE, Status::Warn)
            .with("no isolcpus= on the boot line: the CPUs stay in the scheduler's load-balancing domains, so the balancer may move tasks onto them")
            .fix(format!("boot with {suggested} (or put them in an isolated cpuset partition)"));
    };
    let flags: Vec<String> = iso
        .flags
        .iter()
        .map(|f| match f {
            IsolcpusFlag::Nohz => "nohz".to_string(),
            IsolcpusFlag::Domain => "domain".to_string(),
            IsolcpusFlag::ManagedIrq => "managed_irq".to_string(),
            IsolcpusFlag::Unknown(s) => s.clone(),
        })
        .collect();
    let mut check = Check::new(ID, TITLE, Status::Pass).with(format!(
        "isolcpus= flags [{}] on CPUs {}",
        flags.join(","),
        cpus_or_none(&iso.list.cpus)
    ));
    let mut problems = Vec::new();
    for f in &iso.flags {
        if let IsolcpusFlag::Unknown(s) = f {
            problems.push(format!(
                "flag {s:?} is unknown to the kernel, which skips it"
            ));
        }
    }
    if iso.nohz() && host.built("NO_HZ_FULL") == Some(false) {
        check.status = Status::Fail;
        problems.push(
            "flag nohz on a kernel without CONFIG_NO_HZ_FULL: the kernel prints \"nohz unsupported\" and ignores the whole isolcpus="
                .into(),
        );
    }
    if !iso.domain() {
        problems.push("no domain flag: the CPUs stay in the scheduler domains".into());
    }
    if !iso.managed_irq() {
        problems.push(
            "no managed_irq flag: managed interrupts (multi-queue devices) may target the CPUs"
                .into(),
        );
    }
    let outside = target.difference(&iso.list.cpus);
    if !outside.is_empty() {
        problems.push(format!(
            "CPU {} not in the isolcpus= list",
            outside.to_cpulist()
        ));
    }
    if problems.is_empty() {
        return check;
    }
    if check.status == Status::Pass {
        check.status = Status::Warn;
    }
    for p in problems {
        check = check.with(p);
    }
    check.fix(format!("boot with {suggested}"))
}

/// The CPUs whose RCU callbacks are offloaded: those with an `rcuop/N` kthread (`rcuos`,
/// `rcuob` on older kernels).
fn offloaded_cpus(host: &AuditHost) -> Probe<CpuSet> {
    host.tasks.clone().map(|tasks| {
        let mut set = CpuSet::new();
        for t in tasks.iter().filter(|t| t.kthread) {
            let cpu = ["rcuop/", "rcuos/", "rcuob/"]
                .iter()
                .find_map(|p| t.comm.strip_prefix(p))
                .and_then(|n| n.parse::<u32>().ok());
            if let Some(c) = cpu {
                set.insert(c);
            }
        }
        set
    })
}

/// `rcu_nocbs`: the audited CPUs' RCU callbacks run in `rcuop` kthreads elsewhere, not on
/// the CPUs themselves (a `nohz_full` CPU with callbacks of its own keeps its tick).
pub fn rcu_nocbs(host: &AuditHost) -> Check {
    const ID: &str = "rcu_nocbs";
    const TITLE: &str = "RCU callbacks offloaded (rcu_nocbs)";
    let offloaded = match offloaded_cpus(host) {
        Probe::Ok(s) => s,
        Probe::NotAvailable(why) => return Check::new(ID, TITLE, Status::Unknown).with(why),
    };
    let target = &host.target;
    let asked = match host.cmdline.ok().and_then(|c| c.rcu_nocbs.as_ref()) {
        None => "no rcu_nocbs on the boot line".to_string(),
        Some(RcuNocbsArg::Bare) => "rcu_nocbs (no list) on the boot line".to_string(),
        Some(RcuNocbsArg::List(l)) => format!("rcu_nocbs={} on the boot line", l.text),
    };
    let mut check = Check::new(ID, TITLE, Status::Pass)
        .with(format!(
            "rcuop kthreads (offloaded callbacks) for CPUs: {}",
            cpus_or_none(&offloaded)
        ))
        .with(asked);
    let missing = target.difference(&offloaded);
    if missing.is_empty() {
        return check;
    }
    let nohz = host.nohz_full_set();
    let full_missing = missing.intersection(&nohz);
    check.status = if full_missing.is_empty() {
        Status::Warn
    } else {
        Status::Fail
    };
    check = check.with(format!(
        "CPU {} invokes its own RCU callbacks (softirq on the CPU{})",
        missing.to_cpulist(),
        if full_missing.is_empty() {
            String::new()
        } else {
            format!(
                "; on nohz_full CPU {} pending callbacks also keep the tick",
                full_missing.to_cpulist()
            )
        }
    ));
    match host.built("RCU_NOCB_CPU") {
        Some(false) => check.fix(format!(
            "boot a kernel built with CONFIG_RCU_NOCB_CPU=y (CONFIG_NO_HZ_FULL selects it) with rcu_nocbs={}",
            offloaded.union(target).to_cpulist()
        )),
        _ => check.fix(format!(
            "boot with rcu_nocbs={} (nohz_full= offloads its CPUs by itself on a kernel built with CONFIG_RCU_NOCB_CPU)",
            offloaded.union(target).to_cpulist()
        )),
    }
}

/// A cpulist, or `(none)`.
pub(crate) fn cpus_or_none(s: &CpuSet) -> String {
    if s.is_empty() {
        "(none)".into()
    } else {
        s.to_cpulist()
    }
}

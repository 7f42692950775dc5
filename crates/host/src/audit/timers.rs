//! Checks of periodic kernel timers on the audited CPUs: timer migration, the hard lockup
//! detector's NMI, and the soft lockup detector's hrtimer (`watchdog_cpumask`).

use super::boot_line::cpus_or_none;
use super::check::{Check, Status};
use super::host::{AuditHost, read_cpulist, read_int};
use crate::probe::Probe;

/// `timer_migration`: unpinned timers armed on an idle or isolated CPU may be moved to a
/// busy housekeeping CPU (`kernel.timer_migration=1`); with 0 they stay where armed.
pub fn timer_migration(host: &AuditHost) -> Check {
    const ID: &str = "timer_migration";
    const TITLE: &str = "timer migration on";
    const PATH: &str = "/proc/sys/kernel/timer_migration";
    match read_int(&host.root, PATH) {
        Probe::Ok(1) => Check::new(ID, TITLE, Status::Pass).with(format!("{PATH}: 1")),
        Probe::Ok(v) => Check::new(ID, TITLE, Status::Warn)
            .with(format!(
                "{PATH}: {v}: an unpinned timer stays on the CPU that armed it, isolated or not"
            ))
            .fix("sysctl kernel.timer_migration=1"),
        Probe::NotAvailable(why) if host.root.path(PATH).exists() => {
            Check::new(ID, TITLE, Status::Unknown).with(why)
        }
        Probe::NotAvailable(_) => Check::new(ID, TITLE, Status::NotApplicable).with(format!(
            "{PATH} is absent (a kernel without NO_HZ_COMMON migrates no timers)"
        )),
    }
}

/// The CPUs the lockup detectors run on (`kernel.watchdog_cpumask`), if readable.
fn watchdog_cpus(host: &AuditHost) -> Probe<ticklab_cmdline::CpuSet> {
    read_cpulist(&host.root, "/proc/sys/kernel/watchdog_cpumask")
}

/// `nmi_watchdog`: the hard lockup detector (a perf NMI every `watchdog_thresh` seconds) is
/// off, or kept off the audited CPUs.
pub fn nmi_watchdog(host: &AuditHost) -> Check {
    const ID: &str = "nmi_watchdog";
    const TITLE: &str = "NMI (hard lockup) watchdog off the CPUs";
    const PATH: &str = "/proc/sys/kernel/nmi_watchdog";
    let value = match read_int(&host.root, PATH) {
        Probe::Ok(v) => v,
        Probe::NotAvailable(_) if !host.root.path(PATH).exists() => {
            return Check::new(ID, TITLE, Status::NotApplicable).with(format!(
                "{PATH} is absent (kernel built without the hard lockup detector)"
            ));
        }
        Probe::NotAvailable(why) => return Check::new(ID, TITLE, Status::Unknown).with(why),
    };
    let evidence = format!("{PATH}: {value}");
    if value == 0 {
        return Check::new(ID, TITLE, Status::Pass).with(evidence);
    }
    let on = match watchdog_cpus(host) {
        Probe::Ok(m) => m.intersection(&host.target),
        Probe::NotAvailable(why) => {
            return Check::new(ID, TITLE, Status::Unknown)
                .with(evidence)
                .with(why);
        }
    };
    if on.is_empty() {
        return Check::new(ID, TITLE, Status::Pass)
            .with(evidence)
            .with("watchdog_cpumask leaves the CPUs out");
    }
    Check::new(ID, TITLE, Status::Warn)
        .with(evidence)
        .with(format!(
            "the detector's perf event NMIs CPU {} every watchdog_thresh seconds",
            on.to_cpulist()
        ))
        .fix("sysctl kernel.nmi_watchdog=0 (or boot with nmi_watchdog=0)")
}

/// `watchdog_cpumask`: the soft lockup detector's hrtimer (`watchdog_timer_fn`, every
/// 2 × `watchdog_thresh` / 5 seconds, with a stopper-thread wake-up) does not run on the
/// audited CPUs.
pub fn watchdog_cpumask(host: &AuditHost) -> Check {
    const ID: &str = "watchdog_cpumask";
    const TITLE: &str = "soft lockup watchdog off the CPUs";
    let root = &host.root;
    let watchdog = read_int(root, "/proc/sys/kernel/watchdog");
    let soft = read_int(root, "/proc/sys/kernel/soft_watchdog");
    let (watchdog, soft) = match (watchdog, soft) {
        (Probe::Ok(w), Probe::Ok(s)) => (w, s),
        (Probe::NotAvailable(_), _) if !root.path("/proc/sys/kernel/watchdog").exists() => {
            return Check::new(ID, TITLE, Status::NotApplicable).with(
                "/proc/sys/kernel/watchdog is absent (kernel built without the lockup detectors)",
            );
        }
        (Probe::NotAvailable(why), _) | (_, Probe::NotAvailable(why)) => {
            return Check::new(ID, TITLE, Status::Unknown).with(why);
        }
    };
    let evidence = format!("kernel.watchdog={watchdog} kernel.soft_watchdog={soft}");
    if watchdog == 0 || soft == 0 || host.cmdline.ok().is_some_and(|c| c.nowatchdog) {
        return Check::new(ID, TITLE, Status::Pass).with(evidence);
    }
    let mask = match watchdog_cpus(host) {
        Probe::Ok(m) => m,
        Probe::NotAvailable(why) => {
            return Check::new(ID, TITLE, Status::Unknown)
                .with(evidence)
                .with(why);
        }
    };
    let thresh = read_int(root, "/proc/sys/kernel/watchdog_thresh")
        .ok()
        .copied()
        .unwrap_or(10);
    let check = Check::new(ID, TITLE, Status::Pass)
        .with(evidence)
        .with(format!(
            "/proc/sys/kernel/watchdog_cpumask: {}",
            cpus_or_none(&mask)
        ));
    let on = mask.intersection(&host.target);
    if on.is_empty() {
        return check;
    }
    Check {
        status: Status::Warn,
        ..check
    }
    .with(format!(
        "watchdog_timer_fn fires on CPU {} every {:.1} s (watchdog_thresh {thresh})",
        on.to_cpulist(),
        thresh as f64 * 2.0 / 5.0
    ))
    .fix(format!(
        "sysctl kernel.watchdog_cpumask={} (the default when booted with nohz_full=), or boot with nowatchdog",
        cpus_or_none(&host.housekeeping())
    ))
}

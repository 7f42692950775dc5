//! `host audit` on fixture trees, one test per check.
//!
//! * `x86-kvm-6.18/` — captured on the development host (no isolation on the boot line),
//!   audited as if CPU 1 were meant to be isolated;
//! * `handmade/audit_4cpu_nohz_full/` — a 4-CPU bare-metal host booted with
//!   `nohz_full=2-3 isolcpus=domain,2-3 irqaffinity=0-1`, half tuned (fixtures/README.md
//!   lists what it holds);
//! * `handmade/audit_nohz_unsupported/` — a kernel without `CONFIG_NO_HZ_FULL` booted with
//!   `nohz_full=1 isolcpus=nohz,domain,1`.

use std::path::PathBuf;
use ticklab_cmdline::CpuSet;
use ticklab_host::audit::{Audit, Check, Status, TargetSource, audit};
use ticklab_host::probe::HostRoot;

fn root(rel: &str) -> HostRoot {
    HostRoot::at(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(rel),
    )
}

fn cpus(list: &str) -> CpuSet {
    ticklab_cmdline::parse_cpulist(list, 64).unwrap()
}

/// The captured host, CPU 1 under audit.
fn captured() -> Audit {
    audit(&root("x86-kvm-6.18"), Some(&cpus("1"))).unwrap()
}

/// The tuned 4-CPU host, its own isolated set (2-3).
fn tuned() -> Audit {
    audit(&root("handmade/audit_4cpu_nohz_full"), None).unwrap()
}

fn unsupported() -> Audit {
    audit(&root("handmade/audit_nohz_unsupported"), None).unwrap()
}

fn check<'a>(a: &'a Audit, id: &str) -> &'a Check {
    a.check(id).unwrap_or_else(|| panic!("no check {id}"))
}

/// The check's status, and whether some evidence line contains `needle`.
fn assert_check(a: &Audit, id: &str, status: Status, needle: &str) {
    let c = check(a, id);
    assert_eq!(c.status, status, "{id}: {c:#?}");
    assert!(
        c.evidence.iter().any(|e| e.contains(needle)),
        "{id}: no evidence line with {needle:?}: {:#?}",
        c.evidence
    );
    match status {
        Status::Warn | Status::Fail => assert!(c.fix.is_some(), "{id}: a {status:?} without a fix"),
        Status::Pass => assert!(c.fix.is_none(), "{id}: a pass with a fix"),
        _ => {}
    }
}

#[test]
fn the_isolated_set_is_the_default_target() {
    let t = tuned();
    assert_eq!(
        (t.cpus.as_str(), &t.source),
        ("2-3", &TargetSource::Isolated)
    );
    // Without NO_HZ_FULL the kernel ignored the boot line, which still names the CPU meant.
    assert_eq!(unsupported().cpus, "1");
    let none = audit(&root("x86-kvm-6.18"), None);
    assert_eq!(none, Err(ticklab_host::audit::AuditError::NothingIsolated));
    let offline = audit(&root("x86-kvm-6.18"), Some(&cpus("5")));
    assert!(matches!(
        offline,
        Err(ticklab_host::audit::AuditError::CpuNotOnline { cpu: 5, .. })
    ));
}

#[test]
fn kernel_build() {
    assert_check(&captured(), "kernel_build", Status::Pass, "asks for none");
    assert_check(
        &tuned(),
        "kernel_build",
        Status::Pass,
        "CONFIG_NO_HZ_FULL: built",
    );
    let u = unsupported();
    assert_check(
        &u,
        "kernel_build",
        Status::Fail,
        "CONFIG_NO_HZ_FULL: NOT built",
    );
    assert!(
        check(&u, "kernel_build")
            .fix
            .as_deref()
            .unwrap()
            .contains("CONFIG_NO_HZ_FULL=y")
    );
}

#[test]
fn nohz_full() {
    assert_check(&tuned(), "nohz_full", Status::Pass, "nohz_full: 2-3");
    assert_check(
        &unsupported(),
        "nohz_full",
        Status::Fail,
        "without CONFIG_NO_HZ_FULL",
    );
    // A CPU outside the set on a kernel that has it.
    let a = audit(&root("handmade/audit_4cpu_nohz_full"), Some(&cpus("1-2"))).unwrap();
    assert_check(&a, "nohz_full", Status::Fail, "CPU 1 not nohz_full");
}

#[test]
fn isolcpus_flags() {
    assert_check(&captured(), "isolcpus_flags", Status::Warn, "no isolcpus=");
    assert_check(
        &tuned(),
        "isolcpus_flags",
        Status::Warn,
        "no managed_irq flag",
    );
    assert_check(
        &unsupported(),
        "isolcpus_flags",
        Status::Fail,
        "nohz unsupported",
    );
}

#[test]
fn rcu_nocbs() {
    assert_check(
        &captured(),
        "rcu_nocbs",
        Status::Warn,
        "CPU 1 invokes its own",
    );
    assert_check(&tuned(), "rcu_nocbs", Status::Pass, "for CPUs: 2-3");
}

#[test]
fn irq_affinity() {
    let c = captured();
    assert_check(&c, "irq_affinity", Status::Fail, "26 (ttyS0) → 1");
    // The managed NVMe queue on CPU 2 is the other check's.
    assert_check(
        &tuned(),
        "irq_affinity",
        Status::Pass,
        "3 IRQs in /proc/irq, 0 delivered",
    );
    assert_check(&tuned(), "irq_affinity", Status::Pass, "irqaffinity=0-1");
}

#[test]
fn managed_irqs() {
    assert_check(
        &captured(),
        "managed_irqs",
        Status::Unknown,
        "/sys/kernel/debug/irq",
    );
    assert_check(&tuned(), "managed_irqs", Status::Fail, "40 (nvme0q3) → 2");
}

#[test]
fn timer_migration() {
    assert_check(
        &captured(),
        "timer_migration",
        Status::Pass,
        "timer_migration: 1",
    );
    assert_check(
        &tuned(),
        "timer_migration",
        Status::Warn,
        "timer_migration: 0",
    );
}

#[test]
fn nmi_watchdog() {
    assert_check(&captured(), "nmi_watchdog", Status::Pass, "nmi_watchdog: 0");
    assert_check(&tuned(), "nmi_watchdog", Status::Warn, "NMIs CPU 2-3");
}

#[test]
fn watchdog_cpumask() {
    assert_check(
        &captured(),
        "watchdog_cpumask",
        Status::Warn,
        "fires on CPU 1 every 4.0 s",
    );
    assert_check(
        &tuned(),
        "watchdog_cpumask",
        Status::Warn,
        "watchdog_cpumask: 0-3",
    );
    assert!(
        check(&tuned(), "watchdog_cpumask")
            .fix
            .as_deref()
            .unwrap()
            .contains("watchdog_cpumask=0-1")
    );
}

#[test]
fn rt_throttling() {
    assert_check(
        &captured(),
        "rt_throttling",
        Status::Warn,
        "sched_rt_runtime_us=950000",
    );
    assert_check(&tuned(), "rt_throttling", Status::Pass, "-1 (no limit)");
}

#[test]
fn kthreads() {
    assert_check(&captured(), "kthreads", Status::Warn, "kthreadd[2]");
    let t = tuned();
    assert_check(&t, "kthreads", Status::Warn, "4 bound to one of CPU 2-3");
    assert_check(
        &t,
        "kthreads",
        Status::Warn,
        "1 unbound ones allowed on them: kcompactd0[55]",
    );
}

#[test]
fn workqueue_cpumask() {
    assert_check(
        &captured(),
        "workqueue_cpumask",
        Status::Warn,
        "may run on CPU 1",
    );
    assert!(
        check(&captured(), "workqueue_cpumask")
            .fix
            .as_deref()
            .unwrap()
            .contains("echo 00000001")
    );
    assert_check(
        &tuned(),
        "workqueue_cpumask",
        Status::Pass,
        "cpumask: CPUs 0-1",
    );
}

#[test]
fn smt_siblings() {
    assert_check(&captured(), "smt_siblings", Status::Pass, "notsupported");
    assert_check(
        &tuned(),
        "smt_siblings",
        Status::Warn,
        "CPU 2 shares its core with CPU 0",
    );
}

#[test]
fn cpufreq_governor() {
    assert_check(
        &captured(),
        "cpufreq_governor",
        Status::NotApplicable,
        "no cpufreq",
    );
    assert_check(
        &tuned(),
        "cpufreq_governor",
        Status::Warn,
        "CPU 3: powersave",
    );
}

#[test]
fn intel_pstate() {
    assert_check(&captured(), "intel_pstate", Status::NotApplicable, "absent");
    assert_check(
        &tuned(),
        "intel_pstate",
        Status::Warn,
        "CPU 3: balance_power",
    );
}

#[test]
fn cstate_limits() {
    assert_check(
        &captured(),
        "cstate_limits",
        Status::NotApplicable,
        "no cpuidle driver",
    );
    // C6 is disabled on CPU 3 only; C1E at 10 µs is not deep.
    let t = tuned();
    assert_check(
        &t,
        "cstate_limits",
        Status::Warn,
        "CPU 2 may enter C6 (exit latency 133 µs)",
    );
    assert_eq!(check(&t, "cstate_limits").evidence.len(), 1);
}

#[test]
fn cpu_dma_latency() {
    assert_check(
        &captured(),
        "cpu_dma_latency",
        Status::Pass,
        "a limit would change nothing",
    );
    assert_check(
        &tuned(),
        "cpu_dma_latency",
        Status::Warn,
        "up to 133 µs deep",
    );
}

#[test]
fn transparent_hugepages() {
    assert_check(
        &captured(),
        "transparent_hugepages",
        Status::Pass,
        "enabled: madvise",
    );
    assert_check(
        &tuned(),
        "transparent_hugepages",
        Status::Warn,
        "enabled: always",
    );
}

#[test]
fn vmstat_interval() {
    assert_check(
        &captured(),
        "vmstat_interval",
        Status::Warn,
        "stat_interval: 1 s",
    );
    assert_check(
        &tuned(),
        "vmstat_interval",
        Status::Pass,
        "stat_interval: 10 s",
    );
}

#[test]
fn every_check_runs_once_and_the_report_reads() {
    let t = tuned();
    let mut ids: Vec<&str> = t.checks.iter().map(|c| c.id).collect();
    assert_eq!(ids.len(), 19);
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 19, "a check id is used twice");
    assert!(t.failed());
    insta::assert_snapshot!("audit_4cpu_nohz_full", t.to_string());
}

//! The twin of the guest: the same vCPUs, kernel build, boot line and workload, and only the
//! background that actually runs in ticklab's initramfs.
//!
//! Nothing here is fitted to a guest's measurement. The background is a list of the timers
//! a bare 6.1 kernel arms by itself plus ticklab's own coordinator; each entry names the
//! kernel constant behind its period (tag `C`, docs/costs.md legend) and was identified —
//! which timers exist, not how often they fire — from a trace of an idle guest
//! (docs/vm-validation.md, "What runs in the guest"). The laptop-calibrated user-space
//! sources of [`ticklab_schema::scenario::default_background`] are left out: no daemon runs
//! in the initramfs.
//!
//! The machine is [`machine::kvm_guest`] with the guest's vCPU count and the cpuidle driver
//! the guest reported: with no driver (TCG offers none; `idle=poll`; `cpuidle.off=1`) the
//! idle CPU halts with its tick stopped and no governor. Costs stay the KVM guest's
//! estimates: under TCG only counts are compared, never costs (crate docs).

use ticklab_host::harness::{COORDINATOR_POLL_COUNTED_NS, COORDINATOR_POLL_NS};
use ticklab_schema::machine::{self, Machine};
use ticklab_schema::scenario::{
    BackgroundSource, Placement, Run, Scenario, TimerKind, default_background, tick_nsec,
};
use ticklab_schema::workload::{TaskGroup, Workload};

use crate::kconfig::KernelConfig;
use crate::qemu::Accel;

/// What the twin of one guest boot needs.
#[derive(Debug, Clone)]
pub struct GuestPoint<'a> {
    /// The guest kernel's build options.
    pub config: &'a KernelConfig,
    /// The user's boot line (ticklab's fixed console parameters are not tick-relevant and are
    /// left out).
    pub cmdline: &'a str,
    /// vCPUs.
    pub vcpus: u32,
    /// The workload, parsed for `vcpus` CPUs.
    pub workload: &'a Workload,
    /// The measured window, ns.
    pub duration_ns: u64,
    /// The guest registered a cpuidle driver (its report has idle states).
    pub guest_has_cpuidle_driver: bool,
    /// The accelerator (named in the machine's description).
    pub accel: Accel,
}

/// The guest as a twin machine (see the module documentation).
pub fn guest_machine(vcpus: u32, accel: Accel, cpuidle_driver: bool) -> Machine {
    let mut m = machine::kvm_guest(vcpus);
    m.name = format!("qemu-{}-{vcpus}", accel.name());
    m.description = format!(
        "QEMU {} guest, {vcpus} vCPUs, {}",
        accel.name().to_uppercase(),
        if cpuidle_driver {
            "cpuidle-haltpoll"
        } else {
            "no cpuidle driver (HLT)"
        }
    );
    if !cpuidle_driver {
        m.cpuidle_driver = "none".into();
    }
    m
}

/// One wheel timer of the bare kernel: one stream, on a housekeeping CPU.
fn kernel_wheel(
    name: &str,
    period_ns: u64,
    wakes_task: bool,
    provenance: &str,
) -> BackgroundSource {
    BackgroundSource {
        name: name.into(),
        kind: TimerKind::Wheel,
        placement: Placement::Housekeeping,
        period_ns: Some(period_ns),
        rate_hz: None,
        deferrable: false,
        slack_ns: 0,
        wakes_task,
        provenance: provenance.into(),
        cpus: None,
    }
}

const MS: u64 = 1_000_000;

/// The timers that run in the guest: the kernel's own (watchdog and vmstat as in every
/// scenario, then the periodic work a bare 6.1 kernel queues) and ticklab's coordinator.
pub fn guest_background(workload: &Workload, hz: u32) -> Vec<BackgroundSource> {
    let mut v: Vec<BackgroundSource> = default_background()
        .into_iter()
        .filter(|s| s.name == "watchdog_timer_fn" || s.name == "vmstat_update")
        .collect();
    v.push(kernel_wheel(
        "kcompactd (process_timeout)",
        500 * MS,
        true,
        "C: kcompactd sleeps HPAGE_FRAG_CHECK_INTERVAL_MSEC = 500 ms between proactive \
         compaction checks (docs/vm-validation.md)",
    ));
    v.push(kernel_wheel(
        "psi_avgs_work",
        2000 * MS + tick_nsec(hz),
        false,
        "C: PSI_FREQ = 2*HZ+1 jiffies (docs/vm-validation.md)",
    ));
    v.push(kernel_wheel(
        "flush_memcg_stats_dwork",
        2000 * MS,
        false,
        "C: FLUSH_TIME = 2*HZ (docs/vm-validation.md)",
    ));
    for table in ["arp", "ndisc"] {
        v.push(kernel_wheel(
            &format!("neigh_managed_work ({table})"),
            5000 * MS,
            false,
            "C: neighbour table probe interval 5 s, one per table (docs/vm-validation.md)",
        ));
    }
    let counted = workload
        .groups
        .iter()
        .any(|g| matches!(g, TaskGroup::PingPong { .. } | TaskGroup::Syscall { .. }));
    v.push(BackgroundSource {
        name: "ticklab coordinator (hrtimer_wakeup)".into(),
        kind: TimerKind::Hrtimer,
        placement: Placement::Housekeeping,
        period_ns: Some(if counted {
            COORDINATOR_POLL_COUNTED_NS
        } else {
            COORDINATOR_POLL_NS
        }),
        rate_hz: None,
        deferrable: false,
        // C: default timer slack of a SCHED_OTHER task, 50 µs.
        slack_ns: 50_000,
        wakes_task: true,
        provenance: "C: host run's coordinator poll (COORDINATOR_POLL_NS, \
                     COORDINATOR_POLL_COUNTED_NS in crates/host/src/harness/run.rs)"
            .into(),
        cpus: None,
    });
    v
}

/// The twin scenario of one guest boot. Seed 1; a 1 s warm-up stands for the guest's settle
/// time before the window.
pub fn guest_scenario(p: &GuestPoint<'_>) -> Scenario {
    Scenario {
        name: format!("twin of the guest: {:?}", p.cmdline),
        machine: guest_machine(p.vcpus, p.accel, p.guest_has_cpuidle_driver),
        kernel: p.config.twin_kernel(p.cmdline),
        workload: p.workload.clone(),
        background: guest_background(p.workload, p.config.hz),
        run: Run {
            duration_ns: p.duration_ns,
            warmup_ns: 1_000_000_000,
            seed: 1,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> KernelConfig {
        KernelConfig::parse(
            "# Linux/x86 6.1.192 Kernel Configuration\nCONFIG_HZ=250\nCONFIG_NO_HZ_FULL=y\n\
             CONFIG_HIGH_RES_TIMERS=y\n",
            "t",
        )
        .unwrap()
    }

    #[test]
    fn scenario_takes_everything_from_the_guest() {
        let c = config();
        let w = Workload::parse("hogs:1@1", 2).unwrap();
        let s = guest_scenario(&GuestPoint {
            config: &c,
            cmdline: "nohz_full=1",
            vcpus: 2,
            workload: &w,
            duration_ns: 5_000_000_000,
            guest_has_cpuidle_driver: false,
            accel: Accel::Tcg,
        });
        assert_eq!(s.machine.topology.nr_cpus(), 2);
        assert_eq!(s.machine.cpuidle_driver, "none");
        assert_eq!((s.kernel.hz, s.kernel.version.as_str()), (250, "6.1"));
        assert_eq!(s.kernel.cmdline, "nohz_full=1");
        assert_eq!(s.run.duration_ns, 5_000_000_000);
        assert!(
            s.background
                .iter()
                .all(|b| b.name != "user_hrtimers" && b.name != "kernel_housekeeping_timers"),
            "no laptop-calibrated source in a bare initramfs"
        );
        assert!(s.background.iter().all(|b| b.provenance.starts_with("C:")));
    }

    #[test]
    fn coordinator_polls_faster_for_counted_workloads() {
        let period = |spec: &str| {
            let w = Workload::parse(spec, 2).unwrap();
            guest_background(&w, 250)
                .into_iter()
                .find(|b| b.name.starts_with("ticklab coordinator"))
                .and_then(|b| b.period_ns)
        };
        assert_eq!(period("idle"), Some(COORDINATOR_POLL_NS));
        assert_eq!(period("hogs:2"), Some(COORDINATOR_POLL_NS));
        assert_eq!(
            period("syscall:getpid@0:n=1000"),
            Some(COORDINATOR_POLL_COUNTED_NS)
        );
    }
}

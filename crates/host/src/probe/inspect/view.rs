//! What an inspection holds: [`InspectOptions`], [`Inspection`] and its views. Data only, so
//! that the probes (and `mod.rs`, which re-exports this) do not import each other.

use crate::probe::hz::HzReport;
use crate::probe::{HostRoot, Probe};
use crate::procfs::Cpuidle;
use crate::procfs::timer_list::HandlerMode;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;
use ticklab_cmdline::NohzBuild;

/// How to inspect.
#[derive(Debug, Clone)]
pub struct InspectOptions {
    /// Where `/proc` and `/sys` are.
    pub root: HostRoot,
    /// Gap between two `/proc/timer_list` reads for the jiffies rate; `None` reads once
    /// (fixture trees have a single snapshot).
    pub jiffies_window: Option<Duration>,
}

impl InspectOptions {
    /// The live host, with a 250 ms jiffies window.
    pub fn live() -> Self {
        InspectOptions {
            root: HostRoot::live(),
            jiffies_window: Some(Duration::from_millis(250)),
        }
    }
}

/// Everything `host inspect` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    /// Kernel identity from `/proc/sys/kernel/{ostype,osrelease,version,arch}`.
    pub kernel: Probe<KernelInfo>,
    /// `online` / `possible` CPU lists.
    pub cpus: Probe<CpuLists>,
    /// HZ with its evidence.
    pub hz: HzReport,
    /// Per-CPU tick state from `/proc/timer_list`.
    pub tick: Probe<TickState>,
    /// Boot parameters that matter for the tick, from `/proc/cmdline`.
    pub cmdline: Probe<CmdlineView>,
    /// `/sys/devices/system/cpu/nohz_full`.
    pub nohz_full_sysfs: Probe<String>,
    /// `/sys/devices/system/cpu/isolated`.
    pub isolated_sysfs: Probe<String>,
    /// Where workloads may be placed, and which isolated CPUs are among those CPUs.
    pub placement: Probe<PlacementView>,
    /// Tick-related build options.
    pub build: Probe<BuildView>,
    /// cpuidle driver, governor and states.
    pub cpuidle: Probe<Cpuidle>,
    /// `cpuidle_haltpoll.force` and the cpuidle module parameters.
    pub cpuidle_params: Probe<BTreeMap<String, String>>,
    /// `/sys/module/haltpoll/parameters/*`.
    pub haltpoll: Probe<BTreeMap<String, String>>,
    /// Current and available clocksource.
    pub clocksource: Probe<ClocksourceView>,
    /// Clock event devices (`/sys/devices/system/clockevents/*/current_device`).
    pub clockevents: Probe<BTreeMap<String, String>>,
    /// RAPL powercap zones.
    pub rapl: Probe<Vec<String>>,
    /// Observations that tie the parts together (e.g. why a driver is missing).
    pub notes: Vec<String>,
}

/// Kernel identity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelInfo {
    /// `ostype` (`Linux`).
    pub ostype: String,
    /// `osrelease` (`uname -r`).
    pub release: String,
    /// `version` (`uname -v`).
    pub version: String,
    /// `arch` (`uname -m`), absent on older kernels.
    pub arch: Option<String>,
}

impl KernelInfo {
    /// `(major, minor)` from the release string.
    pub fn major_minor(&self) -> Option<(u32, u32)> {
        ticklab_cmdline::release_version(&self.release)
    }
}

/// CPU lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuLists {
    /// `online`.
    pub online: String,
    /// `possible`.
    pub possible: String,
    /// Number of possible CPUs (highest possible + 1).
    pub nr_possible: u32,
}

/// Tick state of every CPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TickState {
    /// `Timer List Version`.
    pub version: Option<String>,
    /// Broadcast device name, if any.
    pub broadcast_device: Option<String>,
    /// One row per CPU in timer_list.
    pub cpus: Vec<CpuTick>,
}

/// One CPU's tick state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuTick {
    /// CPU number.
    pub cpu: u32,
    /// Clock event device.
    pub device: Option<String>,
    /// Device state name (`oneshot`, `oneshot-stopped`, `periodic`, ...).
    pub device_mode: Option<String>,
    /// Tick device mode (`oneshot` / `periodic`).
    pub tick_mode: Option<String>,
    /// Event handler symbol.
    pub event_handler: Option<String>,
    /// What the handler means.
    pub handler_mode: Option<HandlerMode>,
    /// High-res active.
    pub highres: Option<bool>,
    /// NO_HZ active.
    pub nohz: Option<bool>,
    /// Tick stopped at the time of reading.
    pub tick_stopped: Option<bool>,
    /// The tick hrtimer's callback name, if queued.
    pub tick_timer: Option<String>,
    /// hrtimer callbacks queued on this CPU other than the tick, in queue order.
    pub other_timers: Vec<String>,
}

/// The tick-related parts of the boot line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CmdlineView {
    /// The kernel's part of the line: up to a bare `--`.
    pub line: String,
    /// What follows a bare `--`: init's arguments, which the kernel does not read.
    pub init: Option<String>,
    /// `nohz=` as given.
    pub nohz: Option<bool>,
    /// `nohz_full=` as given (text) and the CPUs it names.
    pub nohz_full: Option<(String, String)>,
    /// `isolcpus=` as given.
    pub isolcpus: Option<String>,
    /// `rcu_nocbs` as given (`""` for the bare flag).
    pub rcu_nocbs: Option<String>,
    /// `skew_tick=`.
    pub skew_tick: Option<i64>,
    /// `highres=`.
    pub highres: Option<bool>,
    /// `idle=`.
    pub idle: Option<String>,
    /// `cpuidle.off=`.
    pub cpuidle_off: Option<bool>,
    /// `cpuidle.governor=`.
    pub cpuidle_governor: Option<String>,
    /// `cpuidle_haltpoll.force=`.
    pub cpuidle_haltpoll_force: Option<bool>,
    /// `clocksource=`.
    pub clocksource: Option<String>,
    /// Effective tick configuration (when the build is known): nohz idle, nohz_full,
    /// housekeeping, rcu_nocbs CPU lists.
    pub effective: Option<EffectiveTick>,
}

/// The effective configuration from `TickConfig::resolve`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectiveTick {
    /// Dyntick-idle active.
    pub nohz_idle: bool,
    /// Effective nohz_full CPUs (cpulist).
    pub nohz_full: String,
    /// Tick housekeeping CPUs (cpulist).
    pub housekeeping: String,
    /// RCU-offloaded CPUs (cpulist).
    pub rcu_nocbs: String,
    /// High-res mode expected.
    pub highres: bool,
    /// Boot messages the kernel would print for this line, then ticklab's remarks
    /// (shown with their `ticklab: ` prefix).
    pub messages: Vec<String>,
}

/// Where `host run` may pin workload threads ([`crate::harness::placement`]): online CPUs in
/// the cpuset of the process's cgroup, whatever affinity it inherited.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlacementView {
    /// CPUs a workload thread may be pinned to (cpulist).
    pub placeable: String,
    /// Online CPUs (cpulist).
    pub online: String,
    /// The cpuset that limits placement, if any.
    pub cpuset: Option<CpusetView>,
    /// Why no cpuset limits placement (when `cpuset` is `None`).
    pub no_cpuset: Option<String>,
    /// The affinity this process inherited (`Cpus_allowed_list`; `isolcpus=` and `taskset`
    /// shrink it): shown, not a limit.
    pub inherited_affinity: Option<String>,
    /// Isolated CPUs: `/sys/devices/system/cpu/isolated` and `nohz_full`, and the boot line's
    /// `isolcpus=` and `nohz_full=` (cpulist, empty when none).
    pub isolated: String,
    /// The isolated CPUs a workload may be pinned to (cpulist).
    pub isolated_placeable: String,
}

/// The cpuset of the process's cgroup.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpusetView {
    /// The process's cgroup (`/proc/self/cgroup`).
    pub cgroup: String,
    /// The file the set was read from (the cgroup's or its nearest ancestor's).
    pub file: String,
    /// The effective CPUs (cpulist).
    pub cpus: String,
}

/// Tick-related build options.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BuildView {
    /// Where they came from.
    pub source: String,
    /// `CONFIG_HZ`.
    pub hz: Option<u32>,
    /// `periodic`, `idle` or `full`.
    pub nohz: Option<NohzBuild>,
    /// `CONFIG_HIGH_RES_TIMERS`.
    pub high_res: bool,
    /// `CONFIG_CPU_IDLE_GOV_HALTPOLL` / `CONFIG_HALTPOLL_CPUIDLE`.
    pub haltpoll: (bool, bool),
}

/// Clocksource.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClocksourceView {
    /// `current_clocksource`.
    pub current: String,
    /// `available_clocksource`.
    pub available: Vec<String>,
}

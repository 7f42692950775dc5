//! `host inspect`: the host's tick configuration on one screen.
//!
//! [`inspect`] gathers every probe into an [`Inspection`]; its `Display` is the screen and its
//! `Serialize` is the `--json` output. Each part is a [`Probe`], so a missing file or a
//! missing privilege shows up as `not available: <why>` next to the rest.

use super::hz::{self, HzReport};
use super::{HostRoot, Probe};
use crate::procfs::timer_list::{
    HandlerMode, TimerList, clockevent_state_name, handler_mode, tick_device_mode_name,
};
use crate::procfs::{Cpuidle, Kconfig, parse_kconfig, parse_timer_list, read_cpuidle};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;
use ticklab_cmdline::parse_cpulist;
use ticklab_cmdline::{
    HousekeepingArg, KernelBuild, KernelCmdline, NohzBuild, RcuNocbsArg, TickConfig,
};

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
        let mut it = self.release.split(|c: char| !c.is_ascii_digit());
        Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
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
    /// The line as read.
    pub line: String,
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

/// Reads every `name` file of a sysfs parameters directory.
fn read_params(root: &HostRoot, dir: &str) -> Probe<BTreeMap<String, String>> {
    let path = root.path(dir);
    let entries = match std::fs::read_dir(&path) {
        Ok(e) => e,
        Err(e) => return Probe::NotAvailable(super::explain_io(dir, &e)),
    };
    let mut out = BTreeMap::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let value = std::fs::read_to_string(e.path())
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|err| format!("<{}>", super::explain_io(&name, &err)));
        out.insert(name, value);
    }
    Probe::Ok(out)
}

fn kernel_info(root: &HostRoot) -> Probe<KernelInfo> {
    let k = "/proc/sys/kernel/";
    let release = root.read_line(&format!("{k}osrelease"));
    release.map(|release| KernelInfo {
        ostype: root
            .read_line(&format!("{k}ostype"))
            .ok()
            .cloned()
            .unwrap_or_default(),
        version: root
            .read_line(&format!("{k}version"))
            .ok()
            .cloned()
            .unwrap_or_default(),
        arch: root.read_line(&format!("{k}arch")).ok().cloned(),
        release,
    })
}

fn cpu_lists(root: &HostRoot) -> Probe<CpuLists> {
    let possible = root.read_line("/sys/devices/system/cpu/possible");
    possible.and_then(|possible| {
        let set = match parse_cpulist(&possible, u32::MAX) {
            Ok(s) => s,
            Err(e) => return Probe::NotAvailable(e.to_string()),
        };
        Probe::Ok(CpuLists {
            online: root
                .read_line("/sys/devices/system/cpu/online")
                .ok()
                .cloned()
                .unwrap_or_default(),
            nr_possible: set.last().map_or(0, |l| l + 1),
            possible,
        })
    })
}

/// Reads the build configuration: `/boot/config-<release>`, else `/proc/config.gz` through
/// `gzip -dc`.
fn kconfig(root: &HostRoot, release: Option<&str>) -> Probe<(Kconfig, String)> {
    if let Some(r) = release {
        let boot = format!("/boot/config-{r}");
        if let Probe::Ok(text) = root.read(&boot) {
            return Probe::Ok((parse_kconfig(&text), boot));
        }
    }
    let gz = "/proc/config.gz";
    let path = root.path(gz);
    if !path.exists() {
        return Probe::NotAvailable(format!(
            "neither /boot/config-{} nor {gz} exists",
            release.unwrap_or("<release>")
        ));
    }
    match std::process::Command::new("gzip")
        .arg("-dc")
        .arg(&path)
        .output()
    {
        Ok(out) if out.status.success() => Probe::Ok((
            parse_kconfig(&String::from_utf8_lossy(&out.stdout)),
            gz.to_string(),
        )),
        Ok(out) => Probe::NotAvailable(format!(
            "gzip -dc {gz} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Probe::NotAvailable(format!("{gz} needs gzip to read: {e}")),
    }
}

fn build_view(k: &Kconfig, source: String) -> BuildView {
    let nohz = if k.is_y("NO_HZ_FULL") {
        Some(NohzBuild::Full)
    } else if k.is_y("NO_HZ_IDLE") {
        Some(NohzBuild::Idle)
    } else if k.is_y("HZ_PERIODIC") {
        Some(NohzBuild::Periodic)
    } else {
        None
    };
    BuildView {
        source,
        hz: k.hz(),
        nohz,
        high_res: k.is_y("HIGH_RES_TIMERS"),
        haltpoll: (k.is_y("CPU_IDLE_GOV_HALTPOLL"), k.is_y("HALTPOLL_CPUIDLE")),
    }
}

fn tick_state(tl: &TimerList) -> TickState {
    let cpus = tl
        .cpus
        .iter()
        .map(|c| {
            let dev = tl.tick_device(c.cpu);
            let handler = dev.and_then(|d| d.event_handler.clone());
            let tick_timer = c.tick_timer().map(|t| t.callback.clone());
            CpuTick {
                cpu: c.cpu,
                device: dev.and_then(|d| d.device.clone()),
                device_mode: dev
                    .and_then(|d| d.mode)
                    .map(|m| clockevent_state_name(m).to_string()),
                tick_mode: dev
                    .and_then(|d| d.tick_mode)
                    .map(|m| tick_device_mode_name(m).to_string()),
                handler_mode: handler.as_deref().map(handler_mode),
                event_handler: handler,
                highres: c.highres,
                nohz: c.nohz,
                tick_stopped: c.tick_stopped,
                other_timers: c
                    .timers()
                    .filter(|t| Some(&t.callback) != tick_timer.as_ref())
                    .map(|t| t.callback.clone())
                    .collect(),
                tick_timer,
            }
        })
        .collect();
    TickState {
        version: tl.version.clone(),
        broadcast_device: tl.broadcast.as_ref().and_then(|b| b.device.clone()),
        cpus,
    }
}

fn cmdline_view(
    line: &str,
    nr_cpus: u32,
    build: Option<KernelBuild>,
) -> Result<CmdlineView, String> {
    let c = KernelCmdline::parse(line, nr_cpus).map_err(|e| e.to_string())?;
    let effective = build.map(|b| {
        let (cfg, messages) = TickConfig::resolve(&c, &b, nr_cpus, 0);
        EffectiveTick {
            nohz_idle: cfg.nohz_idle,
            nohz_full: cfg.nohz_full.to_cpulist(),
            housekeeping: cfg.housekeeping.to_cpulist(),
            rcu_nocbs: cfg.rcu_nocbs.to_cpulist(),
            highres: cfg.highres,
            messages: messages.iter().map(ToString::to_string).collect(),
        }
    });
    Ok(CmdlineView {
        line: line.trim().to_string(),
        nohz: c.nohz,
        nohz_full: c.nohz_full().map(|a| (a.text.clone(), a.cpus.to_cpulist())),
        isolcpus: c.housekeeping.iter().find_map(|h| match h {
            HousekeepingArg::Isolcpus(a) => Some(a.list.text.clone()),
            HousekeepingArg::NohzFull(_) => None,
        }),
        rcu_nocbs: c.rcu_nocbs.as_ref().map(|r| match r {
            RcuNocbsArg::Bare => String::new(),
            RcuNocbsArg::List(l) => l.text.clone(),
        }),
        skew_tick: c.skew_tick,
        highres: c.highres,
        idle: c.idle.and_then(|i| i.as_param()).map(str::to_string),
        cpuidle_off: c.cpuidle_off,
        cpuidle_governor: c.cpuidle_governor.clone(),
        cpuidle_haltpoll_force: c.cpuidle_haltpoll_force,
        clocksource: c.clocksource.clone(),
        effective,
    })
}

/// Runs every probe.
pub fn inspect(opts: &InspectOptions) -> Inspection {
    let root = &opts.root;
    let kernel = kernel_info(root);
    let cpus = cpu_lists(root);
    let release = kernel.ok().map(|k| k.release.clone());

    let tl_first = root
        .read("/proc/timer_list")
        .and_then(|t| Probe::from_result(parse_timer_list(&t)));
    let tl_second = match (&tl_first, opts.jiffies_window) {
        (Probe::Ok(_), Some(gap)) => {
            std::thread::sleep(gap);
            root.read("/proc/timer_list")
                .and_then(|t| Probe::from_result(parse_timer_list(&t)))
        }
        (Probe::Ok(_), None) => Probe::NotAvailable("a single snapshot (no live host)".into()),
        (Probe::NotAvailable(why), _) => Probe::NotAvailable(why.clone()),
    };

    let build = kconfig(root, release.as_deref()).map(|(k, src)| build_view(&k, src));
    let nohz_full_sysfs = root.read_line("/sys/devices/system/cpu/nohz_full");
    let isolated_sysfs = root.read_line("/sys/devices/system/cpu/isolated");

    // The build as far as the command line's meaning depends on it.
    let kernel_build = {
        let version = kernel.ok().and_then(KernelInfo::major_minor);
        let (nohz, high_res) = match (build.ok(), tl_first.ok()) {
            (Some(b), _) if b.nohz.is_some() => (b.nohz, Some(b.high_res)),
            (_, Some(tl)) => {
                let nohz_active = tl.cpus.iter().any(|c| c.nohz == Some(true));
                let full = nohz_full_sysfs.ok().is_some();
                let nohz = match (full, nohz_active) {
                    (true, _) => NohzBuild::Full,
                    (false, true) => NohzBuild::Idle,
                    (false, false) => NohzBuild::Periodic,
                };
                (Some(nohz), tl.cpus.first().and_then(|c| c.hres_active))
            }
            _ => (None, None),
        };
        match (nohz, high_res, version) {
            (Some(nohz), Some(high_res), Some(version)) => Some(KernelBuild {
                nohz,
                high_res,
                version,
                skew_tick_backport: false,
            }),
            _ => None,
        }
    };
    let cmdline = cpus.clone().and_then(|c| {
        root.read("/proc/cmdline")
            .and_then(|line| Probe::from_result(cmdline_view(&line, c.nr_possible, kernel_build)))
    });

    let skew = cmdline
        .ok()
        .and_then(|c| c.skew_tick)
        .is_some_and(|s| s != 0);
    let hz = HzReport::combine(
        match &tl_first {
            Probe::Ok(tl) => Ok(hz::hz_from_timer_list(tl, skew)),
            Probe::NotAvailable(why) => Err(format!("tick alignment: {why}")),
        },
        match (&tl_first, &tl_second) {
            (Probe::Ok(a), Probe::Ok(b)) => hz::hz_from_jiffies(a, b)
                .ok_or_else(|| "jiffies rate: no jiffies or no time between reads".to_string()),
            (_, Probe::NotAvailable(why)) | (Probe::NotAvailable(why), _) => {
                Err(format!("jiffies rate: {why}"))
            }
        },
        match build.ok() {
            Some(b) => {
                b.hz.ok_or_else(|| "build config has no CONFIG_HZ".to_string())
            }
            None => Err(match &build {
                Probe::NotAvailable(why) => format!("build config: {why}"),
                Probe::Ok(_) => unreachable!(),
            }),
        },
    );

    let cpuidle_dir = "/sys/devices/system/cpu/cpuidle";
    let cpuidle = if root.path(cpuidle_dir).is_dir() {
        Probe::Ok(read_cpuidle(&root.path("/sys/devices/system/cpu")))
    } else {
        Probe::NotAvailable(format!("{cpuidle_dir} is absent (CONFIG_CPU_IDLE off?)"))
    };
    let mut cpuidle_params = read_params(root, "/sys/module/cpuidle/parameters");
    if let (Probe::Ok(map), Probe::Ok(hp)) = (
        &mut cpuidle_params,
        read_params(root, "/sys/module/cpuidle_haltpoll/parameters"),
    ) {
        for (k, v) in hp {
            map.insert(format!("cpuidle_haltpoll.{k}"), v);
        }
    }
    let haltpoll = read_params(root, "/sys/module/haltpoll/parameters");
    let clocksource = root
        .read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .map(|current| ClocksourceView {
            current,
            available: root
                .read_line("/sys/devices/system/clocksource/clocksource0/available_clocksource")
                .ok()
                .map(|s| s.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
        });
    let clockevents = read_clockevents(root);
    let rapl = read_rapl(root);

    let mut notes = Vec::new();
    if let (Probe::Ok(ci), Probe::Ok(p)) = (&cpuidle, &cpuidle_params) {
        if ci.driver.as_deref() != Some("haltpoll")
            && p.get("cpuidle_haltpoll.force").map(String::as_str) == Some("N")
        {
            notes.push(
                "cpuidle-haltpoll is built in but not the driver: it registers only when the \
                 hypervisor advertises KVM_HINTS_REALTIME, or with cpuidle_haltpoll.force=Y"
                    .to_string(),
            );
        }
        if ci.driver.as_deref() == Some("none") {
            notes.push(
                "no cpuidle driver: idle CPUs use the default idle instruction (HLT in a \
                 guest) and the governor is not consulted"
                    .to_string(),
            );
        }
    }
    if nohz_full_sysfs.ok().is_none()
        && let Probe::Ok(b) = &build
        && b.nohz != Some(NohzBuild::Full)
    {
        notes.push("no nohz_full support in this build (CONFIG_NO_HZ_FULL off)".into());
    }

    Inspection {
        kernel,
        cpus,
        hz,
        tick: tl_first.map(|tl| tick_state(&tl)),
        cmdline,
        nohz_full_sysfs,
        isolated_sysfs,
        build,
        cpuidle,
        cpuidle_params,
        haltpoll,
        clocksource,
        clockevents,
        rapl,
        notes,
    }
}

fn read_clockevents(root: &HostRoot) -> Probe<BTreeMap<String, String>> {
    let dir = "/sys/devices/system/clockevents";
    let entries = match std::fs::read_dir(root.path(dir)) {
        Ok(e) => e,
        Err(e) => return Probe::NotAvailable(super::explain_io(dir, &e)),
    };
    let mut out = BTreeMap::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Ok(dev) = std::fs::read_to_string(e.path().join("current_device")) {
            let dev = dev.trim();
            out.insert(
                name,
                if dev.is_empty() {
                    "(none)".to_string()
                } else {
                    dev.to_string()
                },
            );
        }
    }
    Probe::Ok(out)
}

fn read_rapl(root: &HostRoot) -> Probe<Vec<String>> {
    let dir = "/sys/class/powercap";
    match std::fs::read_dir(root.path(dir)) {
        Ok(entries) => {
            let mut zones: Vec<String> = entries
                .flatten()
                .filter_map(|e| {
                    let dir_name = e.file_name().to_string_lossy().into_owned();
                    let name = std::fs::read_to_string(e.path().join("name")).ok()?;
                    Some(format!("{dir_name} ({})", name.trim()))
                })
                .collect();
            zones.sort();
            if zones.is_empty() {
                Probe::NotAvailable(format!("{dir} has no zones"))
            } else {
                Probe::Ok(zones)
            }
        }
        Err(e) => Probe::NotAvailable(format!(
            "{} (no RAPL: typical inside a VM)",
            super::explain_io(dir, &e)
        )),
    }
}

// ---------------------------------------------------------------------------------------
// The screen.

fn na(f: &mut fmt::Formatter<'_>, label: &str, why: &str) -> fmt::Result {
    writeln!(f, "{label:<14} not available: {why}")
}

/// `a, b×3, c` in first-seen order; `-` when empty.
fn count_names(names: &[String]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match counts.iter_mut().find(|(m, _)| m == n) {
            Some((_, k)) => *k += 1,
            None => counts.push((n, 1)),
        }
    }
    if counts.is_empty() {
        return "-".into();
    }
    counts
        .iter()
        .map(|(n, k)| {
            if *k > 1 {
                format!("{n}×{k}")
            } else {
                n.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn yesno(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn onoff(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "on",
        Some(false) => "off",
        None => "?",
    }
}

impl Inspection {
    /// One line with the facts people look for first.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        parts.push(match self.hz.hz {
            Some(hz) => format!("HZ={hz}"),
            None => "HZ unknown".to_string(),
        });
        let nohz_active = self
            .tick
            .ok()
            .map(|t| t.cpus.iter().any(|c| c.nohz == Some(true)));
        let full = self.nohz_full_sysfs.ok().filter(|s| !s.is_empty());
        let build = self.build.ok().and_then(|b| b.nohz);
        parts.push(match (full, nohz_active, build) {
            (Some(list), _, _) => format!("NO_HZ full on {list}"),
            (None, Some(true), _) | (None, None, Some(NohzBuild::Idle)) => {
                "NO_HZ idle (no nohz_full)".to_string()
            }
            (None, None, Some(NohzBuild::Full)) => "NO_HZ_FULL build, no nohz_full CPUs".into(),
            (None, Some(false), _) | (None, None, Some(NohzBuild::Periodic)) => {
                "periodic tick (NO_HZ inactive)".to_string()
            }
            (None, None, None) => "NO_HZ unknown".to_string(),
        });
        let hres = self
            .tick
            .ok()
            .and_then(|t| t.cpus.first().and_then(|c| c.highres))
            .or_else(|| self.build.ok().map(|b| b.high_res));
        parts.push(format!("high-res {}", onoff(hres)));
        if let Some(dev) = self.clockevents.ok().and_then(|m| {
            m.iter()
                .find(|(k, v)| k.starts_with("clockevent") && v.as_str() != "(none)")
                .map(|(_, v)| v.clone())
        }) {
            parts.push(format!("clockevent {dev}"));
        }
        if let Some(cs) = self.clocksource.ok() {
            parts.push(format!("clocksource {}", cs.current));
        }
        if let Some(ci) = self.cpuidle.ok() {
            parts.push(format!(
                "cpuidle driver {} governor {}",
                ci.driver.as_deref().unwrap_or("?"),
                ci.governor.as_deref().unwrap_or("?")
            ));
        }
        parts.join(", ")
    }
}

impl fmt::Display for Inspection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:<14} {}", "summary", self.summary())?;
        match &self.kernel {
            Probe::Ok(k) => writeln!(
                f,
                "{:<14} {} {} {} ({})",
                "kernel",
                k.ostype,
                k.release,
                k.arch.as_deref().unwrap_or(""),
                k.version
            )?,
            Probe::NotAvailable(w) => na(f, "kernel", w)?,
        }
        match &self.cpus {
            Probe::Ok(c) => writeln!(
                f,
                "{:<14} online {}  possible {}",
                "cpus", c.online, c.possible
            )?,
            Probe::NotAvailable(w) => na(f, "cpus", w)?,
        }
        // HZ and its evidence.
        match self.hz.hz {
            Some(hz) => writeln!(f, "{:<14} {hz}  ({})", "HZ", self.hz.basis)?,
            None => writeln!(f, "{:<14} unknown: {}", "HZ", self.hz.basis)?,
        }
        match &self.hz.alignment {
            Ok(a) => writeln!(
                f,
                "{:<14} tick alignment: {} ({} differences{}; consistent with {:?})",
                "",
                a.hz.map_or("none".to_string(), |h| h.to_string()),
                a.differences,
                if a.cross_cpu {
                    ", across CPUs"
                } else {
                    ", within CPUs"
                },
                a.consistent
            )?,
            Err(w) => writeln!(f, "{:<14} {w}", "")?,
        }
        match &self.hz.jiffies {
            Ok(j) => writeln!(
                f,
                "{:<14} jiffies rate: {:.1}/s ({} jiffies in {:.0} ms)",
                "",
                j.rate,
                j.jiffies,
                j.elapsed_ns as f64 / 1e6
            )?,
            Err(w) => writeln!(f, "{:<14} {w}", "")?,
        }
        match &self.hz.config {
            Ok(c) => writeln!(f, "{:<14} build config: CONFIG_HZ={c}", "")?,
            Err(w) => writeln!(f, "{:<14} {w}", "")?,
        }
        match &self.build {
            Probe::Ok(b) => writeln!(
                f,
                "{:<14} NO_HZ {}  HIGH_RES_TIMERS {}  haltpoll built: governor {}, driver {}  (from {})",
                "build",
                match b.nohz {
                    Some(NohzBuild::Full) => "full (NO_HZ_FULL)",
                    Some(NohzBuild::Idle) => "idle (NO_HZ_IDLE)",
                    Some(NohzBuild::Periodic) => "off (HZ_PERIODIC)",
                    None => "?",
                },
                onoff(Some(b.high_res)),
                yesno(b.haltpoll.0),
                yesno(b.haltpoll.1),
                b.source
            )?,
            Probe::NotAvailable(w) => na(f, "build", w)?,
        }
        match &self.tick {
            Probe::Ok(t) => {
                writeln!(
                    f,
                    "{:<14} /proc/timer_list {}; broadcast device: {}",
                    "tick",
                    t.version.as_deref().unwrap_or("?"),
                    t.broadcast_device.as_deref().unwrap_or("none")
                )?;
                writeln!(
                    f,
                    "  {:>4}  {:<16} {:<16} {:<8} {:<18} {:<5} {:<5} {:<8} other hrtimers",
                    "cpu", "clockevent", "state", "tick", "handler", "hres", "nohz", "stopped"
                )?;
                for c in &t.cpus {
                    writeln!(
                        f,
                        "  {:>4}  {:<16} {:<16} {:<8} {:<18} {:<5} {:<5} {:<8} {}",
                        c.cpu,
                        c.device.as_deref().unwrap_or("-"),
                        c.device_mode.as_deref().unwrap_or("-"),
                        c.tick_mode.as_deref().unwrap_or("-"),
                        c.event_handler.as_deref().unwrap_or("-"),
                        onoff(c.highres),
                        onoff(c.nohz),
                        match c.tick_stopped {
                            Some(true) => "yes",
                            Some(false) => "no",
                            None => "?",
                        },
                        count_names(&c.other_timers)
                    )?;
                }
                if let Some(name) = t.cpus.iter().find_map(|c| c.tick_timer.as_ref()) {
                    writeln!(f, "  tick hrtimer callback: {name}")?;
                }
            }
            Probe::NotAvailable(w) => na(f, "tick", w)?,
        }
        match &self.cmdline {
            Probe::Ok(c) => {
                let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
                writeln!(
                    f,
                    "{:<14} nohz={} nohz_full={} isolcpus={} rcu_nocbs={} skew_tick={} highres={} idle={}",
                    "cmdline",
                    c.nohz.map_or("-".into(), |b| onoff(Some(b)).to_string()),
                    c.nohz_full
                        .as_ref()
                        .map_or("-".into(), |(t, cpus)| format!("{t} ({cpus})")),
                    opt(&c.isolcpus),
                    opt(&c.rcu_nocbs),
                    c.skew_tick.map_or("-".into(), |s| s.to_string()),
                    c.highres.map_or("-".into(), |b| onoff(Some(b)).to_string()),
                    opt(&c.idle),
                )?;
                writeln!(
                    f,
                    "{:<14} cpuidle.off={} cpuidle.governor={} cpuidle_haltpoll.force={} clocksource={}",
                    "",
                    c.cpuidle_off
                        .map_or("-".into(), |b| u8::from(b).to_string()),
                    opt(&c.cpuidle_governor),
                    c.cpuidle_haltpoll_force
                        .map_or("-".into(), |b| onoff(Some(b)).to_string()),
                    opt(&c.clocksource),
                )?;
                if let Some(e) = &c.effective {
                    writeln!(
                        f,
                        "{:<14} effective: NO_HZ idle {}, nohz_full [{}], housekeeping [{}], rcu_nocbs [{}]",
                        "",
                        onoff(Some(e.nohz_idle)),
                        e.nohz_full,
                        e.housekeeping,
                        e.rcu_nocbs
                    )?;
                    for m in &e.messages {
                        writeln!(f, "{:<14}   {m}", "")?;
                    }
                }
            }
            Probe::NotAvailable(w) => na(f, "cmdline", w)?,
        }
        for (label, p) in [
            ("nohz_full", &self.nohz_full_sysfs),
            ("isolated", &self.isolated_sysfs),
        ] {
            match p {
                Probe::Ok(v) if v.is_empty() => writeln!(f, "{label:<14} (empty)")?,
                Probe::Ok(v) => writeln!(f, "{label:<14} {v}")?,
                Probe::NotAvailable(w) => na(f, label, w)?,
            }
        }
        match &self.cpuidle {
            Probe::Ok(ci) => {
                writeln!(
                    f,
                    "{:<14} driver {}  governor {}  (available: {})",
                    "cpuidle",
                    ci.driver.as_deref().unwrap_or("?"),
                    ci.governor.as_deref().unwrap_or("?"),
                    ci.available_governors.join(" ")
                )?;
                if ci.cpus.is_empty() {
                    writeln!(
                        f,
                        "{:<14} no per-CPU idle states (no driver registered)",
                        ""
                    )?;
                } else {
                    writeln!(
                        f,
                        "  {:>4}  {:<10} {:>9} {:>11} {:>12} {:>14} {:>9} {:>9} {:>8}",
                        "cpu",
                        "state",
                        "latency",
                        "residency",
                        "usage",
                        "time",
                        "above",
                        "below",
                        "disabled"
                    )?;
                    for c in &ci.cpus {
                        for s in &c.states {
                            let n = |v: Option<u64>| v.map_or("?".into(), |v| v.to_string());
                            writeln!(
                                f,
                                "  {:>4}  {:<10} {:>7}us {:>9}us {:>12} {:>12}us {:>9} {:>9} {:>8}",
                                c.cpu,
                                s.name.as_deref().unwrap_or("?"),
                                n(s.latency_us),
                                n(s.residency_us),
                                n(s.usage),
                                n(s.time_us),
                                n(s.above),
                                n(s.below),
                                s.disable.map_or("?", |d| if d { "yes" } else { "no" })
                            )?;
                        }
                    }
                }
            }
            Probe::NotAvailable(w) => na(f, "cpuidle", w)?,
        }
        let kv = |m: &BTreeMap<String, String>| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        match &self.cpuidle_params {
            Probe::Ok(m) => writeln!(f, "{:<14} {}", "cpuidle params", kv(m))?,
            Probe::NotAvailable(w) => na(f, "cpuidle params", w)?,
        }
        match &self.haltpoll {
            Probe::Ok(m) => writeln!(f, "{:<14} {}", "haltpoll", kv(m))?,
            Probe::NotAvailable(w) => na(f, "haltpoll", w)?,
        }
        match &self.clocksource {
            Probe::Ok(c) => writeln!(
                f,
                "{:<14} {}  (available: {})",
                "clocksource",
                c.current,
                c.available.join(" ")
            )?,
            Probe::NotAvailable(w) => na(f, "clocksource", w)?,
        }
        match &self.clockevents {
            Probe::Ok(m) => writeln!(f, "{:<14} {}", "clockevents", kv(m))?,
            Probe::NotAvailable(w) => na(f, "clockevents", w)?,
        }
        match &self.rapl {
            Probe::Ok(z) => writeln!(f, "{:<14} {}", "RAPL", z.join(", "))?,
            Probe::NotAvailable(w) => na(f, "RAPL", w)?,
        }
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        Ok(())
    }
}

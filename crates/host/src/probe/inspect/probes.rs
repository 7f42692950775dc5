//! The probes of `host inspect`: each reads one part of `/proc` or `/sys` under a
//! [`HostRoot`] (the live host or a fixture tree) into a [`Probe`], never failing the whole
//! inspection. [`inspect`] runs them all, then infers HZ ([`crate::probe::hz`]) and what the
//! boot line means for this build ([`Kernel::resolve`]).

use std::collections::BTreeMap;

use ticklab_cmdline::{
    CmdlineError, HousekeepingArg, Kernel, KernelBuild, KernelCmdline, NohzBuild, RcuNocbsArg,
};
use ticklab_cmdline::{parse_cpulist, parse_sysfs_cpulist};

use super::view::{
    BuildView, ClocksourceView, CmdlineView, CpuLists, CpuTick, CpusetView, EffectiveTick,
    InspectOptions, Inspection, KernelInfo, PlacementView, TickState,
};
use crate::harness::placement::{CpuPlacement, CpusetLimit};
use crate::probe::hz::{self, HzReport, HzSourceMissing};
use crate::probe::{HostRoot, Probe};
use crate::procfs::timer_list::{
    TimerList, clockevent_state_name, handler_mode, tick_device_mode_name,
};
use crate::procfs::{Cpuidle, Kconfig, parse_kconfig, parse_timer_list, read_cpuidle};

/// Reads every `name` file of a sysfs parameters directory.
fn read_params(root: &HostRoot, dir: &str) -> Probe<BTreeMap<String, String>> {
    let path = root.path(dir);
    let entries = match std::fs::read_dir(&path) {
        Ok(e) => e,
        Err(e) => return Probe::NotAvailable(crate::probe::explain_io(dir, &e)),
    };
    let mut out = BTreeMap::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let value = std::fs::read_to_string(e.path())
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|err| format!("<{}>", crate::probe::explain_io(&name, &err)));
        out.insert(name, value);
    }
    Probe::Ok(out)
}

pub(crate) fn kernel_info(root: &HostRoot) -> Probe<KernelInfo> {
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
pub(crate) fn kconfig(root: &HostRoot, release: Option<&str>) -> Probe<(Kconfig, String)> {
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

/// `CONFIG_HZ` from the build configuration, the third source of [`HzReport::combine`].
fn config_hz(build: &Probe<BuildView>) -> Result<u32, HzSourceMissing> {
    match build {
        Probe::Ok(b) => b.hz.ok_or(HzSourceMissing::NoConfigHz),
        Probe::NotAvailable(why) => Err(HzSourceMissing::BuildConfig(why.clone())),
    }
}

/// `CONFIG_HZ` of the running kernel as `host inspect` reads it (`/boot/config-<release>`,
/// else `/proc/config.gz`): `host run` combines it with its own measurements, so both
/// commands report HZ from the same probe, also without root (when `/proc/timer_list` is
/// unreadable).
pub(crate) fn build_config_hz(root: &HostRoot) -> Result<u32, HzSourceMissing> {
    let release = kernel_info(root).ok().map(|k| k.release.clone());
    config_hz(&kconfig(root, release.as_deref()).map(|(k, src)| build_view(&k, src)))
}

/// Whether the running kernel was built with `CONFIG_<option>=y`, read as `kconfig` reads
/// the build configuration; `None` when it cannot be read. `host run` asks it before
/// printing a twin prediction that needs the option (`NO_HZ_FULL` for a nohz_full CPU).
pub fn running_kernel_built_with(option: &str) -> Option<bool> {
    let root = HostRoot::live();
    let release = kernel_info(&root).ok().map(|k| k.release.clone());
    kconfig(&root, release.as_deref())
        .ok()
        .map(|(k, _)| k.is_y(option))
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

/// Where workloads may go, and the isolated CPUs among them: `isolated` and `nohz_full` from
/// sysfs, `isolcpus=` and `nohz_full=` from the boot line (`nr_cpus` to read its cpulists).
/// `release`: the running kernel's (`uname -r`), whose grammar reads the boot line.
fn placement_view(
    root: &HostRoot,
    nr_cpus: Option<u32>,
    release: Option<&str>,
) -> Probe<PlacementView> {
    if let Probe::NotAvailable(why) = root.read("/sys/devices/system/cpu/online") {
        return Probe::NotAvailable(why);
    }
    let p = CpuPlacement::read(root);
    let mut isolated = p.isolated.clone();
    if let Some(s) = root
        .read_line("/sys/devices/system/cpu/nohz_full")
        .ok()
        .and_then(|t| parse_sysfs_cpulist(t).ok())
    {
        isolated = isolated.union(&s);
    }
    if let (Some(nr), Probe::Ok(line)) = (nr_cpus, root.read("/proc/cmdline"))
        && let Ok(c) =
            KernelCmdline::parse_for_release(KernelCmdline::split_init_args(&line).0, nr, release)
    {
        for h in &c.housekeeping {
            isolated = isolated.union(match h {
                HousekeepingArg::Isolcpus(a) => &a.list.cpus,
                HousekeepingArg::NohzFull(a) => &a.cpus,
            });
        }
    }
    let (cpuset, no_cpuset) = match &p.cpuset {
        CpusetLimit::Cgroup { cgroup, file, cpus } => (
            Some(CpusetView {
                cgroup: cgroup.clone(),
                file: file.clone(),
                cpus: cpus.to_cpulist(),
            }),
            None,
        ),
        CpusetLimit::Unlimited(why) => (None, Some(why.clone())),
    };
    Probe::Ok(PlacementView {
        placeable: p.placeable().to_cpulist(),
        online: p.online.to_cpulist(),
        cpuset,
        no_cpuset,
        inherited_affinity: p.inherited.as_ref().map(|a| a.to_cpulist()),
        isolated_placeable: isolated.intersection(&p.placeable()).to_cpulist(),
        isolated: isolated.to_cpulist(),
    })
}

fn cmdline_view(
    line: &str,
    nr_cpus: u32,
    build: Option<KernelBuild>,
    release: Option<&str>,
) -> Result<CmdlineView, CmdlineError> {
    // Only the part before `--` is the kernel's; the rest are init's arguments.
    let (kernel_part, init) = KernelCmdline::split_init_args(line);
    // With the build known, the one resolution (the release's grammar); without it, the line
    // is read with the running release's grammar (today's when even that is unknown) and
    // its meaning is unknown.
    let (c, resolved) = match build {
        Some(b) => {
            let r = Kernel { build: b, nr_cpus }.resolve(kernel_part)?;
            (r.cmdline.clone(), Some((r.config, r.messages)))
        }
        None => (
            KernelCmdline::parse_for_release(kernel_part, nr_cpus, release)?,
            None,
        ),
    };
    let effective = resolved.map(|(cfg, messages)| EffectiveTick {
        nohz_idle: cfg.nohz_idle,
        nohz_full: cfg.nohz_full.to_cpulist(),
        housekeeping: cfg.housekeeping.to_cpulist(),
        rcu_nocbs: cfg.rcu_nocbs.to_cpulist(),
        highres: cfg.highres,
        messages: messages.iter().map(ToString::to_string).collect(),
    });
    Ok(CmdlineView {
        line: kernel_part.to_string(),
        init: init.map(str::to_string),
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
    let placement = placement_view(root, cpus.ok().map(|c| c.nr_possible), release.as_deref());

    let kernel_build = kernel_build(&kernel, &build, &tl_first, &nohz_full_sysfs);
    let cmdline = cpus.clone().and_then(|c| {
        root.read("/proc/cmdline").and_then(|line| {
            Probe::from_result(cmdline_view(
                &line,
                c.nr_possible,
                kernel_build,
                release.as_deref(),
            ))
        })
    });

    let skew = cmdline
        .ok()
        .and_then(|c| c.skew_tick)
        .is_some_and(|s| s != 0);
    let hz = HzReport::combine(
        match &tl_first {
            Probe::Ok(tl) => Ok(hz::hz_from_timer_list(tl, skew)),
            Probe::NotAvailable(why) => Err(HzSourceMissing::Alignment(why.clone())),
        },
        match (&tl_first, &tl_second) {
            (Probe::Ok(a), Probe::Ok(b)) => {
                hz::hz_from_jiffies(a, b).ok_or(HzSourceMissing::NoJiffiesRate)
            }
            (_, Probe::NotAvailable(why)) | (Probe::NotAvailable(why), _) => {
                Err(HzSourceMissing::Jiffies(why.clone()))
            }
        },
        config_hz(&build),
    );

    let (cpuidle, cpuidle_params) = cpuidle_view(root);
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

    let notes = inspection_notes(&cpuidle, &cpuidle_params, &nohz_full_sysfs, &build);

    Inspection {
        kernel,
        cpus,
        hz,
        tick: tl_first.map(|tl| tick_state(&tl)),
        cmdline,
        nohz_full_sysfs,
        isolated_sysfs,
        placement,
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

/// The build as far as the command line's meaning depends on it: from the kernel config
/// when it says, else from what /proc/timer_list and sysfs show; `None` when a part is
/// unknown.
fn kernel_build(
    kernel: &Probe<KernelInfo>,
    build: &Probe<BuildView>,
    tl_first: &Probe<TimerList>,
    nohz_full_sysfs: &Probe<String>,
) -> Option<KernelBuild> {
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
}

/// The cpuidle sysfs view and its module parameters (cpuidle_haltpoll's prefixed).
fn cpuidle_view(root: &HostRoot) -> (Probe<Cpuidle>, Probe<BTreeMap<String, String>>) {
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
    (cpuidle, cpuidle_params)
}

/// What the inspection adds in words: a haltpoll driver that did not register, no cpuidle
/// driver, no nohz_full in the build.
fn inspection_notes(
    cpuidle: &Probe<Cpuidle>,
    cpuidle_params: &Probe<BTreeMap<String, String>>,
    nohz_full_sysfs: &Probe<String>,
    build: &Probe<BuildView>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if let (Probe::Ok(ci), Probe::Ok(p)) = (cpuidle, cpuidle_params) {
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
        && let Probe::Ok(b) = build
        && b.nohz != Some(NohzBuild::Full)
    {
        notes.push("no nohz_full support in this build (CONFIG_NO_HZ_FULL off)".into());
    }

    notes
}

fn read_clockevents(root: &HostRoot) -> Probe<BTreeMap<String, String>> {
    let dir = "/sys/devices/system/clockevents";
    let entries = match std::fs::read_dir(root.path(dir)) {
        Ok(e) => e,
        Err(e) => return Probe::NotAvailable(crate::probe::explain_io(dir, &e)),
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
            crate::probe::explain_io(dir, &e)
        )),
    }
}

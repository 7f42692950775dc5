//! Checks of power management on the audited CPUs: the cpufreq governor, `intel_pstate`,
//! C-state limits, and the PM QoS limit held on `/dev/cpu_dma_latency`.

use super::check::{Check, Status};
use super::host::AuditHost;
use crate::probe::Probe;
use crate::procfs::read_cpuidle;
use ticklab_cmdline::IdleOverride;

/// An idle state whose exit latency is above this (µs) adds a visible delay to a wake-up on
/// an isolated CPU; the shallow states of x86 (`POLL`, C1 at 1-2 µs) do not count.
pub const DEEP_EXIT_LATENCY_US: u64 = 10;

/// The value `/dev/cpu_dma_latency` reads when no process holds a limit (the kernel's
/// `PM_QOS_DEFAULT_VALUE` for the CPU latency class: 2000 s).
pub const NO_LATENCY_LIMIT_US: i32 = 2_000_000_000;

/// `cpufreq_governor`: the audited CPUs run the `performance` governor.
pub fn cpufreq_governor(host: &AuditHost) -> Check {
    const ID: &str = "cpufreq_governor";
    const TITLE: &str = "cpufreq governor performance";
    let mut slow = Vec::new();
    let mut seen = Vec::new();
    for cpu in host.target.iter() {
        let path = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor");
        if !host.root.path(&path).exists() {
            continue;
        }
        match host.root.read_line(&path) {
            Probe::Ok(g) => {
                if g != "performance" {
                    slow.push(cpu);
                }
                seen.push(format!("CPU {cpu}: {g}"));
            }
            Probe::NotAvailable(why) => return Check::new(ID, TITLE, Status::Unknown).with(why),
        }
    }
    if seen.is_empty() {
        return Check::new(ID, TITLE, Status::NotApplicable).with(
            "no cpufreq policy for the CPUs (no cpufreq driver: in a guest the host sets the frequency)",
        );
    }
    let check = Check::new(ID, TITLE, Status::Pass).with(seen.join(", "));
    if slow.is_empty() {
        return check;
    }
    let list: Vec<String> = slow.iter().map(u32::to_string).collect();
    Check {
        status: Status::Warn,
        ..check
    }
    .with("a scaling governor other than performance changes the frequency under the task, and each change costs a wake-up's worth of latency")
    .fix(format!(
        "cpupower -c {} frequency-set -g performance",
        list.join(",")
    ))
}

/// `intel_pstate`: in active mode, the audited CPUs' energy-performance preference is
/// `performance` (the governor check covers the passive mode).
pub fn intel_pstate(host: &AuditHost) -> Check {
    const ID: &str = "intel_pstate";
    const TITLE: &str = "intel_pstate set for latency";
    const DIR: &str = "/sys/devices/system/cpu/intel_pstate";
    let status = match host.root.read_line(&format!("{DIR}/status")) {
        Probe::Ok(s) => s,
        Probe::NotAvailable(_) if !host.root.path(DIR).exists() => {
            return Check::new(ID, TITLE, Status::NotApplicable).with(format!(
                "{DIR} is absent (not an Intel CPU driven by intel_pstate)"
            ));
        }
        Probe::NotAvailable(why) => return Check::new(ID, TITLE, Status::Unknown).with(why),
    };
    let no_turbo = host
        .root
        .read_line(&format!("{DIR}/no_turbo"))
        .ok()
        .cloned()
        .unwrap_or_else(|| "?".into());
    let mut check = Check::new(ID, TITLE, Status::Pass)
        .with(format!("{DIR}/status: {status}, no_turbo: {no_turbo}"));
    if let Some(v) = host.unknown_param("intel_pstate") {
        check = check.with(format!("intel_pstate={v} on the boot line"));
    }
    if status != "active" {
        return check;
    }
    let mut other = Vec::new();
    for cpu in host.target.iter() {
        let path =
            format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/energy_performance_preference");
        if let Probe::Ok(p) = host.root.read_line(&path)
            && p != "performance"
        {
            other.push(format!("CPU {cpu}: {p}"));
        }
    }
    if other.is_empty() {
        return check;
    }
    let list: Vec<String> = host.target.iter().map(|c| c.to_string()).collect();
    Check {
        status: Status::Warn,
        ..check
    }
    .with(format!(
        "energy_performance_preference {}: the hardware trades wake-up latency for power",
        other.join(", ")
    ))
    .fix(format!(
        "echo performance > /sys/devices/system/cpu/cpu{{{}}}/cpufreq/energy_performance_preference",
        list.join(",")
    ))
}

/// A limit on the exit latency of the idle states a CPU may enter, µs: the per-CPU
/// `pm_qos_resume_latency_us` (0 means no limit; `n/a` means none may be entered).
fn resume_latency_cap(host: &AuditHost, cpu: u32) -> Option<u64> {
    let path = format!("/sys/devices/system/cpu/cpu{cpu}/power/pm_qos_resume_latency_us");
    match host.root.read_line(&path).ok()?.as_str() {
        "n/a" => Some(0),
        "0" => None,
        v => v.parse().ok(),
    }
}

/// The limit held on `/dev/cpu_dma_latency`, µs (binary 32-bit, native endian).
fn cpu_dma_latency_value(host: &AuditHost) -> Probe<i32> {
    const PATH: &str = crate::harness::pm_qos::CPU_DMA_LATENCY;
    match std::fs::read(host.root.path(PATH)) {
        Ok(b) => match <[u8; 4]>::try_from(b.get(..4).unwrap_or_default()) {
            Ok(w) => Probe::Ok(i32::from_ne_bytes(w)),
            Err(_) => Probe::NotAvailable(format!("{PATH}: read {} bytes, expected 4", b.len())),
        },
        Err(e) => Probe::NotAvailable(crate::probe::explain_io(PATH, &e)),
    }
}

/// Per audited CPU: the deepest enabled idle state with an exit latency above
/// [`DEEP_EXIT_LATENCY_US`] and not capped, as `(cpu, name, latency)`; `None` without a
/// cpuidle driver.
fn deep_states(host: &AuditHost, cap: Option<u64>) -> Option<Vec<(u32, String, u64)>> {
    let ci = read_cpuidle(&host.root.path("/sys/devices/system/cpu"));
    if ci.driver.as_deref().is_none_or(|d| d == "none") {
        return None;
    }
    let mut deep = Vec::new();
    for c in ci.cpus.iter().filter(|c| host.target.contains(c.cpu)) {
        let cpu_cap = [cap, resume_latency_cap(host, c.cpu)]
            .into_iter()
            .flatten()
            .min();
        let worst = c
            .states
            .iter()
            .filter(|s| s.disable != Some(true))
            .filter_map(|s| Some((s.name.clone().unwrap_or_default(), s.latency_us?)))
            .filter(|(_, l)| *l > DEEP_EXIT_LATENCY_US && cpu_cap.is_none_or(|cap| *l > cap))
            .max_by_key(|(_, l)| *l);
        if let Some((name, l)) = worst {
            deep.push((c.cpu, name, l));
        }
    }
    Some(deep)
}

/// `cstate_limits`: no deep idle state (exit latency above [`DEEP_EXIT_LATENCY_US`]) may be
/// entered on the audited CPUs: disabled, capped per CPU, limited on the boot line, or held
/// off by `/dev/cpu_dma_latency`.
pub fn cstate_limits(host: &AuditHost) -> Check {
    const ID: &str = "cstate_limits";
    const TITLE: &str = "deep C-states limited";
    let c = host.cmdline.ok();
    let mut check = Check::new(ID, TITLE, Status::Pass);
    if let Some(c) = c {
        if c.idle == Some(IdleOverride::Poll) {
            return check.with("idle=poll on the boot line: idle CPUs spin, no C-state is entered");
        }
        let limits: Vec<String> = [
            c.intel_idle_max_cstate
                .map(|n| format!("intel_idle.max_cstate={n}")),
            c.processor_max_cstate
                .map(|n| format!("processor.max_cstate={n}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !limits.is_empty() {
            check = check.with(format!("{} on the boot line", limits.join(" ")));
        }
    }
    let cap = cpu_dma_latency_value(host)
        .ok()
        .filter(|&&v| v < NO_LATENCY_LIMIT_US)
        .and_then(|&v| u64::try_from(v).ok());
    let Some(deep) = deep_states(host, cap) else {
        return Check::new(ID, TITLE, Status::NotApplicable).with(
            "no cpuidle driver: idle is the default instruction (HLT; in a guest its exit latency is the host's), no C-state to limit",
        );
    };
    if deep.is_empty() {
        return check.with(format!(
            "no enabled idle state on the CPUs exits in more than {DEEP_EXIT_LATENCY_US} µs{}",
            cap.map_or(String::new(), |c| format!(" (cpu_dma_latency {c} µs held)"))
        ));
    }
    for (cpu, name, l) in &deep {
        check = check.with(format!("CPU {cpu} may enter {name} (exit latency {l} µs)"));
    }
    Check {
        status: Status::Warn,
        ..check
    }
    .fix(format!(
        "hold /dev/cpu_dma_latency at the latency you can afford from the application (as cyclictest does), \
         or `echo {DEEP_EXIT_LATENCY_US} > /sys/devices/system/cpu/cpuN/power/pm_qos_resume_latency_us`, \
         or disable the state (`echo 1 > .../cpuidle/stateK/disable`)"
    ))
}

/// `cpu_dma_latency`: some process holds a PM QoS CPU latency limit, or there is nothing for
/// one to limit.
pub fn cpu_dma_latency(host: &AuditHost) -> Check {
    const ID: &str = "cpu_dma_latency";
    const TITLE: &str = "PM QoS limit held (/dev/cpu_dma_latency)";
    let value = match cpu_dma_latency_value(host) {
        Probe::Ok(v) => v,
        Probe::NotAvailable(why) => return Check::new(ID, TITLE, Status::Unknown).with(why),
    };
    if value < NO_LATENCY_LIMIT_US {
        return Check::new(ID, TITLE, Status::Pass).with(format!(
            "/dev/cpu_dma_latency: {value} µs held by some process"
        ));
    }
    let check = Check::new(ID, TITLE, Status::Pass).with(format!(
        "/dev/cpu_dma_latency: {value} (no process holds a limit)"
    ));
    match deep_states(host, None) {
        None => check.with("no cpuidle driver: a limit would change nothing"),
        Some(deep) if deep.is_empty() => {
            check.with(format!("no idle state exits in more than {DEEP_EXIT_LATENCY_US} µs"))
        }
        Some(deep) => Check {
            status: Status::Warn,
            ..check
        }
        .with(format!(
            "the governor may choose states up to {} µs deep",
            deep.iter().map(|d| d.2).max().unwrap_or_default()
        ))
        .fix("open /dev/cpu_dma_latency in the RT application, write the limit (s32, µs, 0 = polling only) and keep it open; `ticklab host run --cpu-dma-latency=0` does this for a run"),
    }
}

//! The `host inspect` screen: [`Inspection::summary`], one line with the facts people look
//! for first, and the `Display` of an [`Inspection`], one labelled line (or block) per probe,
//! `not available: <why>` where a probe could not run. Snapshot-tested in
//! `tests/inspect.rs`.

use std::collections::BTreeMap;
use std::fmt;

use ticklab_cmdline::NohzBuild;

use super::Inspection;
use crate::probe::Probe;

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
    /// One line per fact, in sections (the methods below), each `not available: why` when
    /// its probe has no value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_head(f)?;
        self.fmt_hz(f)?;
        self.fmt_tick(f)?;
        self.fmt_cmdline(f)?;
        self.fmt_placement(f)?;
        self.fmt_cpuidle(f)?;
        self.fmt_devices(f)?;
        Ok(())
    }
}

impl Inspection {
    /// The summary line, the kernel and the CPUs.
    fn fmt_head(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        Ok(())
    }

    /// HZ and its evidence.
    fn fmt_hz(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        Ok(())
    }

    /// The build options and each CPU's tick.
    fn fmt_tick(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        Ok(())
    }

    /// The boot line and what it means for the tick.
    fn fmt_cmdline(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
                if let Some(init) = &c.init {
                    writeln!(
                        f,
                        "{:<14} after `--` (init's arguments, not read by the kernel): {init}",
                        ""
                    )?;
                }
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
        Ok(())
    }

    /// The nohz_full and isolated lists and where workloads may be placed.
    fn fmt_placement(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        match &self.placement {
            Probe::Ok(p) => {
                match &p.cpuset {
                    Some(c) => writeln!(
                        f,
                        "{:<14} workloads may pin to {} (online {} ∩ cpuset {} of cgroup {}, from {})",
                        "placement", p.placeable, p.online, c.cpus, c.cgroup, c.file
                    )?,
                    None => writeln!(
                        f,
                        "{:<14} workloads may pin to {} (online; no cpuset limit: {})",
                        "placement",
                        p.placeable,
                        p.no_cpuset.as_deref().unwrap_or("?")
                    )?,
                }
                writeln!(
                    f,
                    "{:<14} inherited affinity {}: not a limit, every worker pins itself (sched_setaffinity)",
                    "",
                    p.inherited_affinity.as_deref().unwrap_or("unknown")
                )?;
                if p.isolated.is_empty() {
                    writeln!(f, "{:<14} no isolated CPUs", "")?;
                } else {
                    writeln!(
                        f,
                        "{:<14} isolated CPUs {} (isolated, nohz_full, isolcpus=, nohz_full=): workloads can be placed on {}",
                        "",
                        p.isolated,
                        if p.isolated_placeable.is_empty() {
                            "none of them (outside the cpuset)"
                        } else {
                            p.isolated_placeable.as_str()
                        }
                    )?;
                }
            }
            Probe::NotAvailable(w) => na(f, "placement", w)?,
        }
        Ok(())
    }

    /// cpuidle: driver, governor and the idle states.
    fn fmt_cpuidle(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        Ok(())
    }

    /// cpuidle and haltpoll parameters, clock source and events, RAPL, and the notes.
    fn fmt_devices(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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

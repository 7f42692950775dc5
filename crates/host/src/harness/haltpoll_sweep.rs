//! The live part of E3: the futex ping-pong at several `guest_halt_poll_ns` values on this
//! guest (docs/experiments.md E3).
//!
//! For each value the sweep sets `haltpoll.guest_halt_poll_ns` through a
//! [`ParamGuard`] (restored after the point, and on error or
//! Ctrl-C), runs `pingpong:futex@A,B:n=ROUNDS` with [`run_workload`] and
//! keeps ns per switch, the two CPUs' busy % and the cpuidle state usage from sysfs. It also
//! measures the ping-pong with both tasks on CPU A once (at the first value), the
//! one-CPU switch cost the twin's calibration needs. A point cut short by Ctrl-C is dropped,
//! not reported as a partial measurement.
//!
//! Whether the parameter can matter is read from sysfs first ([`IdleSetup`]): the haltpoll
//! governor only runs under the cpuidle-haltpoll driver. Without it the sweep still runs and
//! says plainly that no effect is expected.

use std::path::Path;
use std::time::Duration;

use ticklab_schema::experiment::e3::LivePoint;
use ticklab_schema::report::WorkloadResult;
use ticklab_schema::workload::{PingPongMethod, TaskGroup, Workload};

use super::sysfs_params::{ParamGuard, ParamSetting, read_param};
use super::{HarnessError, RunConfig, Stop, run_workload};

/// The cpuidle driver and governor in force (sysfs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleSetup {
    /// `current_driver` (`none` when absent).
    pub driver: String,
    /// `current_governor` (`current_governor_ro` on older kernels; `none` when absent).
    pub governor: String,
}

impl IdleSetup {
    /// Reads the driver and governor under `sys_root` (normally `/sys`).
    pub fn read(sys_root: &Path) -> IdleSetup {
        let dir = sys_root.join("devices/system/cpu/cpuidle");
        let driver = read_param(&dir.join("current_driver")).unwrap_or_else(|_| "none".into());
        let governor = read_param(&dir.join("current_governor"))
            .or_else(|_| read_param(&dir.join("current_governor_ro")))
            .unwrap_or_else(|_| "none".into());
        IdleSetup { driver, governor }
    }

    /// Whether `guest_halt_poll_ns` can change anything: only the haltpoll governor under
    /// the cpuidle-haltpoll driver reads it.
    pub fn haltpoll_active(&self) -> bool {
        self.driver == "haltpoll" && self.governor == "haltpoll"
    }

    /// One sentence for the report.
    pub fn verdict(&self) -> String {
        if self.haltpoll_active() {
            "the cpuidle-haltpoll driver and governor are active: guest_halt_poll_ns sets the guest's poll window".into()
        } else {
            format!(
                "cpuidle driver is {:?} and governor {:?}, not haltpoll/haltpoll: guest_halt_poll_ns is read by nothing here, so no effect is expected (the twin of this host predicts none)",
                self.driver, self.governor
            )
        }
    }
}

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// `guest_halt_poll_ns` values, in order.
    pub values_ns: Vec<u64>,
    /// Round trips per point.
    pub round_trips: u64,
    /// The two CPUs.
    pub cpus: (u32, u32),
    /// The cap on each point's run.
    pub max_point: Duration,
}

/// The sweep's measurements (without predictions).
#[derive(Debug, Clone)]
pub struct SweepOutcome {
    /// One point per value done.
    pub points: Vec<LivePoint>,
    /// ns per switch with both tasks on CPU A (at the first value).
    pub same_cpu_ns: f64,
    /// Stopped early by a signal.
    pub interrupted: bool,
    /// The host's HZ as the runs reported it (0 if no point ran).
    pub hz: u32,
}

/// What one ping-pong run measured.
pub(crate) struct Measured {
    pub(crate) round_trips: u64,
    pub(crate) ns_per_switch: f64,
    /// Mean busy % of its CPUs.
    pub(crate) busy_pct: f64,
    /// cpuidle usage summed over its CPUs.
    pub(crate) idle_usage: Vec<(String, u64)>,
    /// The report's HZ.
    pub(crate) hz: u32,
}

/// One futex ping-pong run between CPUs `a` and `b` (`a` = `b`: both tasks on one CPU).
pub(crate) fn pingpong(
    a: u32,
    b: u32,
    round_trips: u64,
    config: &RunConfig,
    stop: &Stop,
) -> Result<Measured, HarnessError> {
    let workload = Workload {
        groups: vec![TaskGroup::PingPong {
            method: PingPongMethod::Futex,
            cpu_a: a,
            cpu_b: b,
            round_trips,
        }],
    };
    let run = run_workload(&workload, config, stop)?;
    let r = &run.report;
    let pp = r
        .workloads
        .iter()
        .find_map(|w| match w {
            WorkloadResult::PingPong(p) => Some(p),
            _ => None,
        })
        .ok_or_else(|| HarnessError::Input("the ping-pong produced no result".into()))?;
    let cpus: Vec<_> = r.cpus.iter().filter(|c| c.cpu == a || c.cpu == b).collect();
    let busy: Vec<f64> = cpus
        .iter()
        .filter_map(|c| c.busy_ns)
        .map(|ns| 100.0 * ns as f64 / r.duration_ns.max(1) as f64)
        .collect();
    let busy_pct = busy.iter().sum::<f64>() / busy.len().max(1) as f64;
    let mut usage: Vec<(String, u64)> = Vec::new();
    for c in &cpus {
        for s in &c.idle_states {
            match usage.iter_mut().find(|(n, _)| *n == s.name) {
                Some((_, u)) => *u += s.usage,
                None => usage.push((s.name.clone(), s.usage)),
            }
        }
    }
    Ok(Measured {
        round_trips: pp.round_trips,
        ns_per_switch: pp.ns_per_switch,
        busy_pct,
        idle_usage: usage,
        hz: r.hz,
    })
}

/// Runs the sweep (needs root for the parameter writes). `progress` hears one line per point.
pub fn sweep(
    cfg: &SweepConfig,
    stop: &Stop,
    mut progress: impl FnMut(&str),
) -> Result<SweepOutcome, HarnessError> {
    if cfg.values_ns.is_empty() {
        return Err(HarnessError::Input(
            "--values: expected at least one guest_halt_poll_ns value".into(),
        ));
    }
    let config = RunConfig {
        duration: cfg.max_point,
        ..RunConfig::default()
    };
    let (a, b) = cfg.cpus;
    let mut points = Vec::new();
    let mut same_cpu_ns = f64::NAN;
    let mut hz = 0;
    for (i, &v) in cfg.values_ns.iter().enumerate() {
        if stop.is_set() {
            break;
        }
        let setting = ParamSetting::parse(&format!("haltpoll.guest_halt_poll_ns={v}"))?;
        let mut guard = ParamGuard::apply(std::slice::from_ref(&setting))?;
        if i == 0 {
            let ns = pingpong(a, a, cfg.round_trips, &config, stop)?.ns_per_switch;
            if stop.is_set() {
                break;
            }
            same_cpu_ns = ns;
            progress(&format!("one CPU (cpu {a}): {ns:.1} ns/switch"));
        }
        let m = pingpong(a, b, cfg.round_trips, &config, stop)?;
        if stop.is_set() {
            // An interrupted point is partial: it is not reported (the guard restores).
            break;
        }
        hz = m.hz;
        let (ns, busy_pct) = (m.ns_per_switch, m.busy_pct);
        let failed = guard.restore();
        if !failed.is_empty() {
            return Err(HarnessError::Input(format!(
                "could not restore {}; the restore record under /run stays",
                failed.join(", ")
            )));
        }
        progress(&format!(
            "guest_halt_poll_ns={v}: {ns:.1} ns/switch, busy {busy_pct:.1} %"
        ));
        points.push(LivePoint {
            guest_halt_poll_ns: v,
            round_trips: m.round_trips,
            ns_per_switch: ns,
            busy_pct,
            idle_usage: m.idle_usage,
            predicted_ns: None,
            calibration_point: false,
        });
    }
    Ok(SweepOutcome {
        points,
        same_cpu_ns,
        interrupted: stop.is_set(),
        hz,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_depends_on_driver_and_governor() {
        let s = |d: &str, g: &str| IdleSetup {
            driver: d.into(),
            governor: g.into(),
        };
        assert!(s("haltpoll", "haltpoll").haltpoll_active());
        assert!(!s("none", "menu").haltpoll_active());
        assert!(!s("haltpoll", "teo").haltpoll_active());
        assert!(s("none", "menu").verdict().contains("no effect"));
        let missing = IdleSetup::read(Path::new("/nonexistent-sysfs"));
        assert_eq!(missing.driver, "none");
    }
}

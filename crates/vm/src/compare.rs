//! Kernel versus twin, per CPU, on the counts both can speak for.
//!
//! Under TCG the guest's timers follow real time but its instructions do not run at
//! hardware speed, so only counts are compared: local timer interrupts per second (LOC/s),
//! busy share, and — when both sides report them — tick-stopped share and idle-state usage.
//! Latency, jitter and syscall cost are carried over as the guest measured them, marked
//! emulated, and never set against the twin (docs/vm-validation.md).
//!
//! The figures and the bands are the shared comparison's ([`ticklab_host::comparison`],
//! [`Bands::Vm`]), so `vm compare` and `host run --twin` compare the same fields the same
//! way. The bands ([`Band`]): a CPU that ticks in the kernel (≥ [`TICKING_LOC_PER_S`]) must be
//! matched within ±[`TICKING_TOLERANCE`]; a quiet one (< [`QUIET_LOC_PER_S`]) within
//! [`QUIET_TOLERANCE_LOC_PER_S`] LOC/s; a CPU in between within ±[`BETWEEN_TOLERANCE`] or
//! [`BETWEEN_FLOOR_LOC_PER_S`] LOC/s, whichever is wider.
//!
//! Where the twin sends the wake-up IPIs of a workload (a frame worker whose sleeper another
//! CPU's hrtimer base took), the CPUs' IPIs per second (RES + CAL, the two vectors a remote
//! wake-up arrives by) are judged too, with the same bands applied to the kernel's IPI rate.
//! A workload the twin of the guest does not model is recorded as refused, with the reason,
//! and judged nowhere ([`VmComparison::refused`]).

use serde::{Deserialize, Serialize};
use ticklab_schema::comparison::{Figure, Row};
use ticklab_schema::report::{CpuRole, Report};

use crate::oversubscription::{Oversubscribed, always_runnable_vcpus, oversubscribed};
use crate::qemu::Accel;

use ticklab_host::comparison::{Bands, cpu_rows, loc_band_vm};
pub use ticklab_host::comparison::{
    VM_BETWEEN_FLOOR_LOC_PER_S as BETWEEN_FLOOR_LOC_PER_S,
    VM_BETWEEN_TOLERANCE as BETWEEN_TOLERANCE, VM_QUIET_LOC_PER_S as QUIET_LOC_PER_S,
    VM_QUIET_TOLERANCE_LOC_PER_S as QUIET_TOLERANCE_LOC_PER_S,
    VM_TICKING_LOC_PER_S as TICKING_LOC_PER_S, VM_TICKING_TOLERANCE as TICKING_TOLERANCE,
};

/// QEMU run-queue wait (ms per second of window, summed over its threads) from which a
/// ticking CPU's shortfall is put down to the emulator: a tenth of a host CPU. Below it the
/// vCPU threads ran when their guest timers fired, as far as the host could tell.
pub const EMULATOR_WAIT_MS_PER_S: f64 = 100.0;

/// Why a CPU is outside its band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissReason {
    /// A ticking CPU (in the kernel, or in the twin) counts fewer interrupts than the twin
    /// while QEMU waited at least [`EMULATOR_WAIT_MS_PER_S`] for a host CPU: guest ticks were
    /// lost in the emulator.
    EmulatorTickLoss,
    /// Nothing on the host side explains it: the twin and the kernel differ.
    Twin,
    /// LOC/s is within its band, the IPI rate is not: the twin wakes the CPU differently.
    TwinIpi,
    /// The CPU's frame worker overran frames in the guest while QEMU waited at least
    /// [`EMULATOR_WAIT_MS_PER_S`] for a host CPU: with a few µs of work per frame only a late
    /// wake-up (a vCPU not running) makes an overrun, and an overrun frame starts without a
    /// sleep, so the guest's timer interrupts and wake-up IPIs follow the emulator's delays.
    EmulatorLateWakeups,
}

impl MissReason {
    /// The emulator, not the twin, explains the miss.
    pub fn is_emulator(self) -> bool {
        matches!(
            self,
            MissReason::EmulatorTickLoss | MissReason::EmulatorLateWakeups
        )
    }
}

impl MissReason {
    /// The reason for a miss, from the band, the two values and QEMU's wait.
    pub fn of(band: Band, kernel: f64, twin: f64, wait_ms_per_s: Option<f64>) -> MissReason {
        let starved = wait_ms_per_s.is_some_and(|w| w >= EMULATOR_WAIT_MS_PER_S);
        // A CPU the twin has ticking that the emulator pushed below the ticking band still
        // lost ticks.
        let ticking = band == Band::Ticking || twin >= TICKING_LOC_PER_S;
        if ticking && kernel < twin && starved {
            MissReason::EmulatorTickLoss
        } else {
            MissReason::Twin
        }
    }
}

/// Which band a CPU falls in, from the kernel's LOC/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    /// ≥ 100 LOC/s: relative error within ±15 %.
    Ticking,
    /// < 20 LOC/s: absolute difference within 10 LOC/s.
    Quiet,
    /// In between: within ±25 % or 5 LOC/s, whichever is wider.
    Between,
}

impl Band {
    /// The band of a kernel LOC/s value.
    pub fn of(kernel_loc_per_s: f64) -> Band {
        if kernel_loc_per_s >= TICKING_LOC_PER_S {
            Band::Ticking
        } else if kernel_loc_per_s < QUIET_LOC_PER_S {
            Band::Quiet
        } else {
            Band::Between
        }
    }

    /// Whether `twin` matches `kernel` in this band: the shared comparison's VM band
    /// ([`loc_band_vm`]) of a value in this band.
    pub fn within(self, kernel: f64, twin: f64) -> Option<bool> {
        let band = match self {
            Band::Ticking => loc_band_vm(TICKING_LOC_PER_S),
            Band::Quiet => loc_band_vm(0.0),
            Band::Between => loc_band_vm(QUIET_LOC_PER_S),
        };
        band.within(kernel, twin)
    }
}

/// One CPU, kernel beside twin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuComparison {
    /// CPU number.
    pub cpu: u32,
    /// Role the guest's host lab reported.
    pub kernel_role: CpuRole,
    /// Role in the twin.
    pub twin_role: CpuRole,
    /// Kernel LOC/s.
    pub kernel_loc_per_s: f64,
    /// Twin LOC/s.
    pub twin_loc_per_s: f64,
    /// Twin − kernel, LOC/s.
    pub diff_loc_per_s: f64,
    /// (Twin − kernel) / kernel, when the kernel's value is not 0.
    pub rel_error: Option<f64>,
    /// The band the kernel's value falls in.
    pub band: Band,
    /// Within the band (`None` when the band does not judge).
    pub within: Option<bool>,
    /// Kernel busy share of the window, % (when measured).
    pub kernel_busy_pct: Option<f64>,
    /// Twin busy share, %.
    pub twin_busy_pct: Option<f64>,
    /// Kernel tick-stopped share, % (when measured).
    pub kernel_stopped_pct: Option<f64>,
    /// Twin tick-stopped share, %.
    pub twin_stopped_pct: Option<f64>,
    /// Idle-state entries per second, kernel (summed over states; `None` without a driver).
    pub kernel_idle_entries_per_s: Option<f64>,
    /// Idle-state entries per second, twin (`None` when the guest has no driver to compare).
    pub twin_idle_entries_per_s: Option<f64>,
    /// Kernel IPIs per second, RES + CAL (`None` when the guest did not count them).
    #[serde(default)]
    pub kernel_ipi_per_s: Option<f64>,
    /// Twin IPIs per second (`None` where the twin does not model this workload's IPIs).
    #[serde(default)]
    pub twin_ipi_per_s: Option<f64>,
    /// The IPI rate within the band of the kernel's rate (`None` when not judged).
    #[serde(default)]
    pub ipi_within: Option<bool>,
    /// Frames the guest's frame worker on this CPU overran (`None`: no worker here).
    #[serde(default)]
    pub kernel_frame_overruns: Option<u64>,
}

impl CpuComparison {
    /// The CPU's verdict over what is judged on it (LOC/s, and IPI/s where judged): `None`
    /// when nothing is.
    pub fn verdict(&self) -> Option<bool> {
        match (self.within, self.ipi_within) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(true) && b.unwrap_or(true)),
        }
    }
}

/// A whole guest boot beside its twin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VmComparison {
    /// The guest kernel's release (`uname -r` inside).
    pub kernel_release: String,
    /// Version from the kernel config.
    pub kernel_version: String,
    /// CONFIG_HZ.
    pub hz: u32,
    /// Accelerator.
    pub accel: Accel,
    /// Why KVM was not used, when it was tried.
    pub kvm_fallback: Option<String>,
    /// vCPUs.
    pub vcpus: u32,
    /// The user's boot line.
    pub cmdline: String,
    /// Workload label.
    pub workload: String,
    /// The workload spec as given (`hogs:1@1`), so the twin can be re-run from a record.
    pub workload_spec: String,
    /// Measured window of the guest, s.
    pub kernel_seconds: f64,
    /// Per CPU.
    pub cpus: Vec<CpuComparison>,
    /// Boot to power-off, wall-clock seconds.
    pub wall_s: f64,
    /// QEMU's host run-queue wait during the window (TCG tick loss; see
    /// [`crate::qemu::HostWait`]).
    #[serde(default)]
    pub host_wait: Option<crate::qemu::HostWait>,
    /// Why the twin of the guest was not run for this workload (then `cpus` is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Other load and steal the guest's host lab found in its window
    /// ([`Report::contamination`]): the misses of these CPUs are marked as possibly theirs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contamination: Vec<ticklab_schema::report::Contamination>,
    /// The host's online CPUs when the point ran (`None` in records written before it was
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<u32>,
    /// vCPUs that are always runnable under this workload and boot line
    /// ([`always_runnable_vcpus`]; `None` in
    /// records written before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runnable_vcpus: Option<u32>,
}

impl VmComparison {
    /// Whether the point's always-runnable vCPUs exceed the host's CPUs: it is then shown
    /// but not judged ([`crate::oversubscription`]).
    pub fn oversubscribed(&self) -> Option<Oversubscribed> {
        oversubscribed(self.runnable_vcpus?, self.host_cpus)
    }

    /// `c`'s verdict in this point: [`CpuComparison::verdict`], or `None` (not judged) when
    /// the point is oversubscribed.
    pub fn verdict(&self, c: &CpuComparison) -> Option<bool> {
        if self.oversubscribed().is_some() {
            return None;
        }
        c.verdict()
    }

    /// CPUs of this point that are judged.
    pub fn judged(&self) -> impl Iterator<Item = &CpuComparison> {
        self.cpus.iter().filter(|c| self.verdict(c).is_some())
    }

    /// Why `c` (a CPU of this point) missed, or `None` when it did not (or is not judged).
    pub fn miss_reason(&self, c: &CpuComparison) -> Option<MissReason> {
        if self.verdict(c) != Some(false) {
            return None;
        }
        let starved = self
            .host_wait
            .is_some_and(|w| w.ms_per_s() >= EMULATOR_WAIT_MS_PER_S);
        if starved && c.kernel_frame_overruns.is_some_and(|n| n > 0) {
            return Some(MissReason::EmulatorLateWakeups);
        }
        if c.within != Some(false) {
            return Some(MissReason::TwinIpi);
        }
        Some(MissReason::of(
            c.band,
            c.kernel_loc_per_s,
            c.twin_loc_per_s,
            self.host_wait.map(|w| w.ms_per_s()),
        ))
    }

    /// Whether the guest's host lab found `cpu` contaminated (other load, steal).
    pub fn contaminated(&self, cpu: u32) -> bool {
        self.contamination.iter().any(|c| c.cpu() == cpu)
    }

    /// Judged CPUs outside their band (LOC/s or IPI/s).
    pub fn misses(&self) -> impl Iterator<Item = &CpuComparison> {
        self.cpus.iter().filter(|c| self.verdict(c) == Some(false))
    }
}

/// What `ticklab vm compare --json` writes and `ticklab vm table` reads: the comparison and
/// both reports it was made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRecord {
    /// Per CPU, kernel beside twin.
    pub comparison: VmComparison,
    /// The guest's host run report.
    pub kernel: ticklab_host::harness::HostRun,
    /// The twin's report (`None` when the workload was refused).
    pub twin: Option<Report>,
}

/// Kernel and twin reports of the same point, CPU by CPU (CPUs present in both): the rows of
/// the shared comparison ([`ticklab_host::comparison::cpu_rows`] with the VM bands) in the
/// shape `vm compare` records.
pub fn compare_cpus(kernel: &Report, twin: &Report) -> Vec<CpuComparison> {
    let rows = cpu_rows(kernel, twin, Bands::Vm);
    let pick = |cpu: u32, f: &Figure| {
        rows.iter()
            .find(|r| r.cpu == Some(cpu) && &r.figure == f)
            .map(|r: &Row| (r.measured, r.predicted))
            .unwrap_or((None, None))
    };
    kernel
        .cpus
        .iter()
        .filter_map(|k| twin.cpus.iter().find(|t| t.cpu == k.cpu).map(|t| (k, t)))
        .map(|(k, t)| {
            let (kl, tl) = pick(k.cpu, &Figure::LocPerS);
            let (kl, tl) = (kl.unwrap_or(0.0), tl.unwrap_or(0.0));
            let band = Band::of(kl);
            let (kernel_busy_pct, twin_busy_pct) = pick(k.cpu, &Figure::BusyPct);
            let (kernel_stopped_pct, twin_stopped_pct) = pick(k.cpu, &Figure::TickStoppedPct);
            let (kernel_idle_entries_per_s, twin_idle_entries_per_s) =
                pick(k.cpu, &Figure::IdleEntriesPerS);
            let kernel_ipi_per_s = ipi_per_s(k, kernel.seconds());
            let twin_ipi_per_s = ipi_per_s(t, twin.seconds());
            let ipi_within = match (kernel_ipi_per_s, twin_ipi_per_s) {
                (Some(ki), Some(ti)) => Band::of(ki).within(ki, ti),
                _ => None,
            };
            CpuComparison {
                cpu: k.cpu,
                kernel_role: k.role,
                twin_role: t.role,
                kernel_loc_per_s: kl,
                twin_loc_per_s: tl,
                diff_loc_per_s: tl - kl,
                rel_error: (kl > 0.0).then(|| (tl - kl) / kl),
                band,
                within: band.within(kl, tl),
                kernel_busy_pct,
                twin_busy_pct,
                kernel_stopped_pct,
                twin_stopped_pct,
                kernel_idle_entries_per_s,
                twin_idle_entries_per_s,
                kernel_ipi_per_s,
                twin_ipi_per_s,
                ipi_within,
                kernel_frame_overruns: frame_overruns(kernel, k.cpu),
            }
        })
        .collect()
}

/// Frames overrun by the frame worker on `cpu` in `report`, if one ran there.
fn frame_overruns(report: &Report, cpu: u32) -> Option<u64> {
    report.workloads.iter().find_map(|w| match w {
        ticklab_schema::report::WorkloadResult::Frames(g) => {
            g.rows.iter().find(|r| r.cpu == cpu).map(|r| r.overruns)
        }
        _ => None,
    })
}

/// RES + CAL per second of one CPU's report, `None` when it counts neither (the twin counts
/// RES only where it sends wake-up IPIs).
fn ipi_per_s(c: &ticklab_schema::report::CpuReport, seconds: f64) -> Option<f64> {
    if seconds <= 0.0 || (c.res.is_none() && c.cal.is_none()) {
        return None;
    }
    Some((c.res.unwrap_or(0) + c.cal.unwrap_or(0)) as f64 / seconds)
}

/// One guest boot's parameters, as the twin of the guest needs them.
#[derive(Debug, Clone)]
pub struct BootPoint<'a> {
    /// The guest kernel's build options.
    pub config: &'a crate::kconfig::KernelConfig,
    /// The user's boot line.
    pub cmdline: &'a str,
    /// vCPUs.
    pub vcpus: u32,
    /// The workload as the user wrote it.
    pub workload_spec: &'a str,
    /// The workload, parsed for `vcpus` CPUs.
    pub workload: &'a ticklab_schema::workload::Workload,
    /// The accelerator that ran the guest.
    pub accel: Accel,
    /// Why KVM was not used, when it was asked for and fell back.
    pub kvm_fallback: Option<String>,
    /// Boot to power-off, wall seconds.
    pub wall_s: f64,
    /// How long the host kept the guest waiting, when measured.
    pub host_wait: Option<crate::qemu::HostWait>,
    /// The host's online CPUs when the guest ran, when known.
    pub host_cpus: Option<u32>,
}

/// Why [`with_twin`] or [`retwin`] set no twin beside the guest: the twin refused the guest's
/// scenario, or a recorded workload no longer parses.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The twin refused the guest's scenario (its own error, whole).
    #[error(transparent)]
    Twin(#[from] ticklab_host::calibrate::SimulatorError),
    /// The record's workload spec does not parse for its vCPUs.
    #[error("workload {spec:?}: {source}")]
    Workload {
        /// The spec as recorded.
        spec: String,
        /// The parser's error.
        #[source]
        source: ticklab_schema::workload::WorkloadError,
    },
}

/// Whether the guest's idle loop polls on this boot line (`idle=poll`); a line the kernel
/// cannot parse never reaches here (the CLI checks it first) and counts as not polling.
fn idle_polls(config: &crate::kconfig::KernelConfig, cmdline: &str, vcpus: u32) -> bool {
    crate::twin_guest::guest_tick_config(config, cmdline, vcpus)
        .is_some_and(|c| c.idle == ticklab_cmdline::IdleOverride::Poll)
}

/// Runs the twin of the guest (`twin`, the binary passes the twin's single entry) and sets
/// it beside the guest's report. Err: the twin refused the guest's scenario.
pub fn with_twin(
    p: &BootPoint<'_>,
    run: ticklab_host::harness::HostRun,
    twin: ticklab_host::calibrate::Simulator<'_>,
) -> Result<CompareRecord, CompareError> {
    let release = match &run.report.source {
        ticklab_schema::report::Source::Host { kernel, .. } => kernel.clone(),
        ticklab_schema::report::Source::Twin { .. } => String::new(),
    };
    let mut comparison = VmComparison {
        kernel_release: release,
        kernel_version: p.config.version.clone(),
        hz: p.config.hz,
        accel: p.accel,
        kvm_fallback: p.kvm_fallback.clone(),
        vcpus: p.vcpus,
        cmdline: p.cmdline.to_string(),
        workload: ticklab_report::workload_label(&run.report),
        workload_spec: p.workload_spec.to_string(),
        kernel_seconds: run.report.seconds(),
        cpus: Vec::new(),
        wall_s: p.wall_s,
        host_wait: p.host_wait,
        refused: None,
        contamination: run.report.contamination.clone(),
        host_cpus: p.host_cpus,
        runnable_vcpus: Some(always_runnable_vcpus(
            p.workload,
            idle_polls(p.config, p.cmdline, p.vcpus),
            p.vcpus,
        )),
    };
    if let Some(why) = crate::twin_guest::refused(p.workload) {
        comparison.refused = Some(why.to_string());
        return Ok(CompareRecord {
            comparison,
            kernel: run,
            twin: None,
        });
    }
    let has_driver = run.report.cpus.iter().any(|c| !c.idle_states.is_empty());
    let scenario = crate::twin_guest::guest_scenario(&crate::twin_guest::GuestPoint {
        config: p.config,
        cmdline: p.cmdline,
        vcpus: p.vcpus,
        workload: p.workload,
        duration_ns: run.report.duration_ns,
        guest_has_cpuidle_driver: has_driver,
        accel: p.accel,
        guest: &run.report,
    });
    let twin = twin(&scenario)?;
    comparison.workload = ticklab_report::workload_label(&twin);
    comparison.cpus = compare_cpus(&run.report, &twin);
    Ok(CompareRecord {
        comparison,
        kernel: run,
        twin: Some(twin),
    })
}

/// The record with its twin run again (`twin`) for the guest kernel built with `kernel`:
/// the guest's measurement is kept. Err names a recorded workload that no longer parses, or
/// what the twin refused.
pub fn retwin(
    c: CompareRecord,
    kernel: &crate::kconfig::KernelConfig,
    twin: ticklab_host::calibrate::Simulator<'_>,
) -> Result<CompareRecord, CompareError> {
    let v = &c.comparison;
    let workload =
        ticklab_schema::workload::Workload::parse(&v.workload_spec, v.vcpus).map_err(|source| {
            CompareError::Workload {
                spec: v.workload_spec.clone(),
                source,
            }
        })?;
    let point = BootPoint {
        config: kernel,
        cmdline: &v.cmdline,
        vcpus: v.vcpus,
        workload_spec: &v.workload_spec,
        workload: &workload,
        accel: v.accel,
        kvm_fallback: v.kvm_fallback.clone(),
        wall_s: v.wall_s,
        host_wait: v.host_wait,
        host_cpus: v.host_cpus,
    };
    with_twin(&point, c.kernel, twin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_table() {
        // (kernel, twin, band, within)
        let cases = [
            (250.0, 250.0, Band::Ticking, Some(true)),
            (250.0, 287.5, Band::Ticking, Some(true)),
            (250.0, 290.0, Band::Ticking, Some(false)),
            (100.0, 84.0, Band::Ticking, Some(false)),
            (0.0, 9.9, Band::Quiet, Some(true)),
            (5.0, 15.5, Band::Quiet, Some(false)),
            (19.9, 30.0, Band::Quiet, Some(false)),
            // Between: ±25 % or ±5 LOC/s, whichever is wider.
            (20.0, 25.0, Band::Between, Some(true)),
            (20.0, 25.1, Band::Between, Some(false)),
            (28.0, 21.0, Band::Between, Some(true)),
            (28.0, 20.9, Band::Between, Some(false)),
            (80.0, 100.0, Band::Between, Some(true)),
            (80.0, 100.5, Band::Between, Some(false)),
            (99.9, 0.0, Band::Between, Some(false)),
        ];
        for (k, t, band, within) in cases {
            assert_eq!(Band::of(k), band, "{k}");
            assert_eq!(band.within(k, t), within, "{k} vs {t}");
        }
    }

    #[test]
    fn miss_reasons_table() {
        // (band, kernel, twin, QEMU wait ms/s, reason)
        let cases = [
            (
                Band::Ticking,
                180.0,
                250.0,
                Some(400.0),
                MissReason::EmulatorTickLoss,
            ),
            (Band::Ticking, 180.0, 250.0, Some(99.0), MissReason::Twin),
            (Band::Ticking, 180.0, 250.0, None, MissReason::Twin),
            (Band::Ticking, 300.0, 250.0, Some(400.0), MissReason::Twin),
            (Band::Quiet, 5.0, 16.0, Some(400.0), MissReason::Twin),
            // The twin ticks; the starved kernel fell into the between band.
            (
                Band::Between,
                63.5,
                250.4,
                Some(1526.0),
                MissReason::EmulatorTickLoss,
            ),
            (Band::Between, 63.5, 250.4, Some(50.0), MissReason::Twin),
            (Band::Between, 29.9, 20.4, Some(400.0), MissReason::Twin),
        ];
        for (band, k, t, w, want) in cases {
            assert_eq!(
                MissReason::of(band, k, t, w),
                want,
                "{band:?} {k} {t} {w:?}"
            );
        }
    }
}

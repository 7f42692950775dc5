//! Kernel versus twin, per CPU, on the counts both can speak for.
//!
//! Under TCG the guest's timers follow real time but its instructions do not run at
//! hardware speed, so only counts are compared: local timer interrupts per second (LOC/s),
//! busy share, and — when both sides report them — tick-stopped share and idle-state usage.
//! Latency, jitter and syscall cost are carried over as the guest measured them, marked
//! emulated, and never set against the twin (docs/vm-validation.md).
//!
//! The bands ([`Band`]): a CPU that ticks in the kernel (≥ [`TICKING_LOC_PER_S`]) must be
//! matched within ±[`TICKING_TOLERANCE`]; a quiet one (< [`QUIET_LOC_PER_S`]) within
//! [`QUIET_TOLERANCE_LOC_PER_S`] LOC/s; a CPU in between has no band and is shown only.

use serde::{Deserialize, Serialize};
use ticklab_schema::report::{CpuRole, Report};

use crate::qemu::Accel;

/// A kernel CPU at or above this many LOC/s is "ticking".
pub const TICKING_LOC_PER_S: f64 = 100.0;
/// A ticking CPU's twin value must be within this relative error.
pub const TICKING_TOLERANCE: f64 = 0.15;
/// A kernel CPU below this many LOC/s is "quiet".
pub const QUIET_LOC_PER_S: f64 = 20.0;
/// A quiet CPU's twin value must be within this many LOC/s.
pub const QUIET_TOLERANCE_LOC_PER_S: f64 = 10.0;

/// QEMU run-queue wait (ms per second of window, summed over its threads) from which a
/// ticking CPU's shortfall is put down to the emulator: a tenth of a host CPU. Below it the
/// vCPU threads ran when their guest timers fired, as far as the host could tell.
pub const EMULATOR_WAIT_MS_PER_S: f64 = 100.0;

/// Why a CPU is outside its band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissReason {
    /// A ticking CPU counts fewer interrupts than the twin while QEMU waited at least
    /// [`EMULATOR_WAIT_MS_PER_S`] for a host CPU: guest ticks were lost in the emulator.
    EmulatorTickLoss,
    /// Nothing on the host side explains it: the twin and the kernel differ.
    Twin,
}

impl MissReason {
    /// The reason for a miss, from the band, the two values and QEMU's wait.
    pub fn of(band: Band, kernel: f64, twin: f64, wait_ms_per_s: Option<f64>) -> MissReason {
        let starved = wait_ms_per_s.is_some_and(|w| w >= EMULATOR_WAIT_MS_PER_S);
        if band == Band::Ticking && kernel < twin && starved {
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
    /// In between: shown, not judged.
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

    /// Whether `twin` matches `kernel` in this band (`None` for [`Band::Between`]).
    pub fn within(self, kernel: f64, twin: f64) -> Option<bool> {
        match self {
            Band::Ticking => Some((twin - kernel).abs() <= TICKING_TOLERANCE * kernel),
            Band::Quiet => Some((twin - kernel).abs() <= QUIET_TOLERANCE_LOC_PER_S),
            Band::Between => None,
        }
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
}

impl VmComparison {
    /// CPUs outside their band.
    pub fn misses(&self) -> impl Iterator<Item = &CpuComparison> {
        self.cpus.iter().filter(|c| c.within == Some(false))
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
    /// The twin's report.
    pub twin: Report,
}

fn rate(count: u64, seconds: f64) -> f64 {
    count as f64 / seconds.max(1e-9)
}

fn pct(ns: Option<u64>, window_ns: u64) -> Option<f64> {
    ns.map(|n| n as f64 * 100.0 / (window_ns.max(1) as f64))
}

/// Kernel and twin reports of the same point, CPU by CPU (CPUs present in both).
pub fn compare_cpus(kernel: &Report, twin: &Report) -> Vec<CpuComparison> {
    let ks = kernel.seconds();
    let ts = twin.seconds();
    let kernel_has_states = kernel.cpus.iter().any(|c| !c.idle_states.is_empty());
    kernel
        .cpus
        .iter()
        .filter_map(|k| twin.cpus.iter().find(|t| t.cpu == k.cpu).map(|t| (k, t)))
        .map(|(k, t)| {
            let kl = rate(k.loc, ks);
            let tl = rate(t.loc, ts);
            let band = Band::of(kl);
            let entries = |c: &ticklab_schema::report::CpuReport, s: f64| {
                rate(c.idle_states.iter().map(|st| st.usage).sum(), s)
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
                kernel_busy_pct: pct(k.busy_ns, kernel.duration_ns),
                twin_busy_pct: pct(t.busy_ns, twin.duration_ns),
                kernel_stopped_pct: pct(k.tick_stopped_ns, kernel.duration_ns),
                twin_stopped_pct: pct(t.tick_stopped_ns, twin.duration_ns),
                kernel_idle_entries_per_s: kernel_has_states.then(|| entries(k, ks)),
                twin_idle_entries_per_s: kernel_has_states.then(|| entries(t, ts)),
            }
        })
        .collect()
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
            (20.0, 90.0, Band::Between, None),
            (99.9, 0.0, Band::Between, None),
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

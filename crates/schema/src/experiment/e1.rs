//! E1: `nohz_full_aggressive` on a laptop (Dell XPS 13 7390, HZ=1000, `nohz_full=all`), with
//! and without the 2023 proposal, idle and with 1, 2, 4 and 8 hogs.
//!
//! This module holds what the experiment is — its two [`Mode`]s, its [`LOADS`], the
//! [`PUBLISHED`] table of the RFC (docs/experiments.md E1) — and what a run of it yields: one
//! [`Row`] per (mode, load) and the band checks, together in [`Results`]. The twin builds the
//! scenarios and fills the rows (`ticklab_twin::experiments::e1`); `ticklab-report` renders
//! them.

use super::BandCheck;
use serde::{Deserialize, Serialize};

/// The two configurations compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `nohz_full=all`.
    NohzFull,
    /// `nohz_full=all nohz_full_aggressive`.
    Aggressive,
}

impl Mode {
    /// Both, in table order.
    pub const ALL: [Mode; 2] = [Mode::NohzFull, Mode::Aggressive];

    /// The kernel command line of this mode.
    pub fn cmdline(self) -> &'static str {
        match self {
            Mode::NohzFull => "nohz_full=all",
            Mode::Aggressive => "nohz_full=all nohz_full_aggressive",
        }
    }

    /// JSON/table name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::NohzFull => "nohz_full",
            Mode::Aggressive => "aggressive",
        }
    }
}

/// Hog counts of the experiment (0 = idle).
pub const LOADS: [u32; 5] = [0, 1, 2, 4, 8];

/// Simulated warm-up before each point's window, ns.
pub const WARMUP_NS: u64 = 2_000_000_000;

/// One published row: (hogs, irq/s nohz_full, irq/s aggressive, W nohz_full, W aggressive).
pub const PUBLISHED: [(u32, f64, f64, f64, f64); 5] = [
    (0, 1036.679, 98.685, 0.502, 0.301),
    (1, 1047.522, 106.296, 3.436, 2.372),
    (2, 1046.203, 127.587, 3.755, 2.372),
    (4, 1048.590, 146.586, 6.187, 6.005),
    (8, 1074.867, 1062.277, 6.019, 6.016),
];

/// Published `(irq/s, watts)` for a mode and load; zeros for a load the RFC did not measure.
pub fn published(mode: Mode, hogs: u32) -> (f64, f64) {
    let r = PUBLISHED
        .iter()
        .find(|r| r.0 == hogs)
        .copied()
        .unwrap_or((hogs, 0.0, 0.0, 0.0, 0.0));
    match mode {
        Mode::NohzFull => (r.1, r.3),
        Mode::Aggressive => (r.2, r.4),
    }
}

/// The load label used in tables and JSON (`idle`, `1`, `2`, ...).
pub fn load_label(hogs: u32) -> String {
    if hogs == 0 {
        "idle".into()
    } else {
        hogs.to_string()
    }
}

/// One row of the E1 table: a modelled (mode, load) point beside its published figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `nohz_full` or `aggressive`.
    pub mode: Mode,
    /// `idle`, `1`, `2`, `4`, `8` (see [`load_label`]).
    pub load: String,
    /// Local timer interrupts per second, whole machine.
    pub irq_per_s: f64,
    /// Average package watts.
    pub watts: f64,
    /// Published irq/s.
    pub published_irq_per_s: f64,
    /// Published watts.
    pub published_watts: f64,
    /// Longest time without a jiffies update (ms).
    pub max_jiffies_gap_ms: f64,
    /// Worst jiffies staleness seen at interrupt entry (ms).
    pub max_reader_staleness_ms: f64,
    /// Time-weighted mean coarse-time staleness (ms).
    pub mean_coarse_staleness_ms: f64,
    /// hrtimer hangs ("interrupt took N ns").
    pub hrtimer_hangs: u64,
    /// Longest interrupt (µs).
    pub max_irq_us: f64,
    /// Fraction of time the whole package was idle.
    pub package_idle_fraction: f64,
}

/// A whole E1 run: every (mode, load) row and the acceptance bands checked on them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Seed of every point.
    pub seed: u64,
    /// Measured time per point, ns (after [`WARMUP_NS`] of warm-up).
    pub duration_ns: u64,
    /// One row per (mode, load), modes in [`Mode::ALL`] order, loads in [`LOADS`] order.
    pub rows: Vec<Row>,
    /// The acceptance bands, in the order they were checked.
    pub checks: Vec<BandCheck>,
}

impl Results {
    /// The row of one (mode, load), if the run has it.
    pub fn row(&self, mode: Mode, hogs: u32) -> Option<&Row> {
        let label = load_label(hogs);
        self.rows.iter().find(|r| r.mode == mode && r.load == label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_published_figures() {
        assert_eq!(load_label(0), "idle");
        assert_eq!(load_label(8), "8");
        assert_eq!(published(Mode::Aggressive, 2), (127.587, 2.372));
        assert_eq!(published(Mode::NohzFull, 3), (0.0, 0.0));
        for hogs in LOADS {
            assert!(PUBLISHED.iter().any(|p| p.0 == hogs), "{hogs}");
        }
    }
}

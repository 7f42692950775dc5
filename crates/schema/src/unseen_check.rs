//! The unseen-load check of the twin of this host (`host calibrate --check-unseen`,
//! docs/host-lab.md "The unseen-load check"): `host calibrate`, then loads the calibration
//! did not run, each measured and run in the fitted twin beside it (`host run --twin`), every
//! figure a [`Row`] of the shared comparison.
//!
//! One load is the control (`idle`): it is shown but not counted, since the idle phase is a
//! load the calibration was fitted to. [`UnseenCheck::in_band`] counts the judged rows of the
//! other loads.

use serde::{Deserialize, Serialize};

use crate::comparison::{Row, Verdict};
use crate::report::Contamination;

/// One load of the check: what ran, and every figure beside the twin's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnseenLoad {
    /// The load's short name in the table (`two hogs`, `frames 100 Hz`).
    pub name: String,
    /// The workload spec that ran (`hogs:2`), as `host run --workload` takes it.
    pub spec: String,
    /// A control: shown, not counted in [`UnseenCheck::in_band`].
    pub control: bool,
    /// Every figure, measured beside predicted (`ticklab_host::comparison::compare_reports`,
    /// host bands).
    pub rows: Vec<Row>,
    /// What other load or steal did to the measured run's CPUs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contamination: Vec<Contamination>,
    /// The measured window, s.
    pub measured_s: f64,
}

/// The whole check: the calibration's budget and every load, in the order run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnseenCheck {
    /// `host calibrate`'s budget, s.
    pub calibrate_s: f64,
    /// Each load's window, s.
    pub load_s: f64,
    /// The loads, the control first.
    pub loads: Vec<UnseenLoad>,
}

/// Figures inside their bands over figures judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InBand {
    /// Judged rows inside their band.
    pub ok: usize,
    /// Judged rows (inside or outside their band).
    pub judged: usize,
}

impl InBand {
    /// `ok` over `judged`, 0 when nothing was judged.
    pub fn share(self) -> f64 {
        if self.judged == 0 {
            0.0
        } else {
            self.ok as f64 / self.judged as f64
        }
    }
}

impl UnseenCheck {
    /// The in-band count over the loads that are not controls: rows whose verdict is
    /// [`Verdict::Ok`] or [`Verdict::Miss`] (shown and uncompared rows are not judged).
    pub fn in_band(&self) -> InBand {
        let mut n = InBand { ok: 0, judged: 0 };
        for row in self
            .loads
            .iter()
            .filter(|l| !l.control)
            .flat_map(|l| &l.rows)
        {
            match row.verdict() {
                Verdict::Ok => {
                    n.ok += 1;
                    n.judged += 1;
                }
                Verdict::Miss => n.judged += 1,
                Verdict::Shown | Verdict::NotCompared => {}
            }
        }
        debug_assert!(n.ok <= n.judged, "in band is a subset of judged");
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::{Band, Figure};

    fn load(name: &str, control: bool, rows: Vec<Row>) -> UnseenLoad {
        UnseenLoad {
            name: name.into(),
            spec: name.into(),
            control,
            rows,
            contamination: Vec::new(),
            measured_s: 10.0,
        }
    }

    #[test]
    fn the_count_leaves_out_the_control_and_unjudged_rows() {
        // Rows as the host bands judge them (`ticklab_host::comparison`): LOC/s within 20 % or
        // 2 LOC/s; idle entries and a figure not measured shown.
        let row = |figure, measured, predicted, band| Row {
            cpu: Some(0),
            figure,
            measured,
            predicted,
            band,
        };
        let host = Band::Within { rel: 0.2, abs: 2.0 };
        let loc = |m, p| row(Figure::LocPerS, Some(m), Some(p), host);
        // (loads, expected ok, expected judged)
        let table = [
            (vec![], 0, 0),
            // the control's miss and hit are not counted
            (
                vec![load(
                    "idle",
                    true,
                    vec![loc(100.0, 200.0), loc(100.0, 100.0)],
                )],
                0,
                0,
            ),
            // 20 % is inside, 21 % outside; an uncompared row is not judged
            (
                vec![
                    load("idle", true, vec![loc(100.0, 300.0)]),
                    load(
                        "hogs",
                        false,
                        vec![
                            loc(100.0, 120.0),
                            loc(100.0, 121.0),
                            row(Figure::BusyPct, None, Some(3.0), Band::Shown),
                            row(Figure::IdleEntriesPerS, Some(5.0), Some(9.0), Band::Shown),
                        ],
                    ),
                    load("frames", false, vec![loc(250.0, 250.0)]),
                ],
                2,
                3,
            ),
        ];
        for (loads, ok, judged) in table {
            let c = UnseenCheck {
                calibrate_s: 30.0,
                load_s: 10.0,
                loads,
            };
            assert_eq!(c.in_band(), InBand { ok, judged });
        }
        assert_eq!(InBand { ok: 0, judged: 0 }.share(), 0.0);
        assert_eq!(InBand { ok: 4, judged: 5 }.share(), 0.8);
    }
}

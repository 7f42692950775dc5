//! The published experiments as shared data: what each one compares, its published figures,
//! and the typed results a run of it produces.
//!
//! An experiment is defined once here, so that whoever runs it (today the twin, through
//! `ticklab_twin::experiments`; one day the host lab) and whoever renders it (`ticklab-report`)
//! agree on its configurations, its constants and the shape of its results:
//!
//! * [`e1`] — `nohz_full_aggressive` on a laptop: [`e1::Row`]s of irq/s and watts against the
//!   published table, and the [`BandCheck`]s they are held to, gathered in [`e1::Results`].
//! * [`e2`] — `skew_tick=1` on a 64-CPU server: one [`e2::Outcome`] (the full report) per
//!   configuration, summarised per frame group by [`e2::GroupSummary`], gathered in
//!   [`e2::Results`].
//! * [`e3`] — context switches in a KVM guest with polling before idle: one [`e3::Row`] per
//!   configuration beside the published figures, the costs used and the band checks of the
//!   HLT-versus-polling difference, gathered in [`e3::Results`].
//! * [`e4`] — what NO_HZ_FULL costs a getpid loop on three servers: one [`e4::Row`] per
//!   (server, kernel, case, pinning) with the per-call breakdown, in [`e4::Results`].
//!
//! Everything here is plain serialisable data with no simulation in it. The JSON the CLI
//! prints for an experiment is these structs plus `schema_version` and `experiment` keys
//! (see `ticklab_report::e1::json` and `ticklab_report::e2::json`).

use serde::{Deserialize, Serialize};

pub mod e1;
pub mod e2;
pub mod e3;
pub mod e4;

/// One band check: a modelled value against a target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandCheck {
    /// What is checked.
    pub what: String,
    /// The modelled value.
    pub value: f64,
    /// The target (published value or bound).
    pub target: f64,
    /// Human-readable band (`±10 %`, `<= 0.75`).
    pub band: String,
    /// Whether the value is inside.
    pub ok: bool,
}

impl BandCheck {
    /// Checks `value` within `±frac` of `target` (inclusive).
    pub fn within(what: String, value: f64, target: f64, frac: f64) -> BandCheck {
        let ok = (value - target).abs() <= frac * target.abs();
        BandCheck {
            what,
            value,
            target,
            band: format!("±{:.0} %", frac * 100.0),
            ok,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_is_inclusive_and_symmetric() {
        // (value, target, frac, ok)
        let cases = [
            (110.0, 100.0, 0.10, true),
            (90.0, 100.0, 0.10, true),
            (110.5, 100.0, 0.10, false),
            (89.5, 100.0, 0.10, false),
            (0.0, 0.0, 0.10, true),
        ];
        for (value, target, frac, ok) in cases {
            let c = BandCheck::within("x".into(), value, target, frac);
            assert_eq!(c.ok, ok, "{value} vs {target} ±{frac}");
        }
        assert_eq!(BandCheck::within("x".into(), 1.0, 1.0, 0.35).band, "±35 %");
    }
}

//! The published experiments of `docs/experiments.md` as built-in scenarios, run by the twin.
//!
//! What each experiment is and the typed results it yields live in
//! [`ticklab_schema::experiment`] (shared with the renderers of `ticklab-report`); this module
//! builds the experiment's scenarios, runs them and fills those results.

pub mod e1;
pub mod e2;
pub mod e3;
pub mod e4;

pub use ticklab_schema::experiment::BandCheck;

/// Checks `value` within `±frac` of `target` ([`BandCheck::within`]).
pub fn within(what: String, value: f64, target: f64, frac: f64) -> BandCheck {
    BandCheck::within(what, value, target, frac)
}

//! The published experiments of `experiments.md` as built-in scenarios, with their published
//! numbers and the acceptance bands the twin is held to.

pub mod e1;
pub mod e2;

/// One band check: a modelled value against a target.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BandCheck {
    /// What is checked.
    pub what: String,
    /// The twin's value.
    pub value: f64,
    /// The target (published value or bound).
    pub target: f64,
    /// Human-readable band (`±10 %`, `<= 75 %`).
    pub band: String,
    /// Whether the value is inside.
    pub ok: bool,
}

/// Checks `value` within `±frac` of `target`.
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

//! Number and table formatting shared by the renderers.
//!
//! Rules (deterministic, ASCII only):
//!
//! * rates (`LOC/s`, ticks/s): one decimal (`1036.7`);
//! * percentages: one decimal, no `%` sign in cells (the header says `%`);
//! * watts: three decimals (`0.502`), like the published turbostat figures;
//! * durations: [`duration`] picks ns / us / ms / s;
//! * anything unknown or not computable (missing counter, zero-length window, NaN): `-`;
//! * a column whose values span magnitudes (the `compare` table, sweep tables and CSV):
//!   one precision for the whole column, from its largest magnitude ([`column_decimals`]:
//!   four significant digits there, at most three decimals), so that a column reads down
//!   and no cell claims digits the others lack.

use comfy_table::{CellAlignment, ContentArrangement, Table, presets};

/// What a cell shows for a value that is unknown or cannot be computed.
pub const MISSING: &str = "-";

/// `v` with `decimals` decimals, `-` when not finite; never prints `-0`.
pub fn fixed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return MISSING.to_string();
    }
    // Adding 0.0 turns -0.0 into 0.0; values that round to zero lose their sign too.
    let s = format!("{:.*}", decimals, v + 0.0);
    if s.starts_with('-') && s[1..].bytes().all(|b| b == b'0' || b == b'.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// An optional value with [`fixed`], `-` when absent.
pub fn opt_fixed(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| MISSING.to_string(), |v| fixed(v, decimals))
}

/// The decimals of a column holding `values`: four significant digits for the largest
/// magnitude, between 0 and 3 decimals (`64283`, `234.4`, `17.20`, `1.010`, `0.502`); 0 for
/// an empty or all-zero column. Non-finite values are ignored.
pub fn column_decimals(values: impl IntoIterator<Item = f64>) -> usize {
    let largest = values
        .into_iter()
        .filter(|v| v.is_finite())
        .map(f64::abs)
        .fold(0.0, f64::max);
    if largest == 0.0 {
        return 0;
    }
    // Digits before the point of the largest value (1 for values below 10, ...).
    let int_digits = largest.log10().floor() as i64 + 1;
    (4 - int_digits).clamp(0, 3) as usize
}

/// `part / whole` as a percentage, `None` when `whole` is zero.
pub fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole != 0).then(|| part as f64 * 100.0 / whole as f64)
}

/// `count` per second over `duration_ns`, `None` for a zero-length window.
pub fn per_second(count: u64, duration_ns: u64) -> Option<f64> {
    (duration_ns != 0).then(|| count as f64 * 1e9 / duration_ns as f64)
}

/// A duration in nanoseconds with a readable unit: below 1 us in ns (`850 ns`), then
/// three decimals in us, ms or s (`12.345 us`, `1.000 ms`, `2.500 s`).
pub fn duration(ns: u64) -> String {
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.3} us", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}

/// A new table in ticklab's terminal style: ASCII borders, a `=` line under the header, no
/// row separators, no wrapping (columns as wide as their content), no colours.
pub fn new_table(header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_style(presets::ASCII_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header);
    t
}

/// Right-aligns columns `from..` (the numeric ones).
pub fn right_align_from(t: &mut Table, from: usize) {
    for col in t.column_iter_mut().skip(from) {
        col.set_cell_alignment(CellAlignment::Right);
    }
}

/// Band-check lines: `  ok   <what>  <value>  target <target>  <band>` (`FAIL` when outside),
/// `what` padded to `what_width`, values `value_width` wide with `decimals` decimals, then
/// `<n> of <m> checks inside their bands`.
pub fn band_checks(
    s: &mut String,
    checks: &[ticklab_schema::experiment::BandCheck],
    what_width: usize,
    value_width: usize,
    decimals: usize,
) {
    use std::fmt::Write;
    for c in checks {
        let _ = writeln!(
            s,
            "  {:<4} {:<what_width$} {:>value_width$.decimals$}  target {:>value_width$.decimals$}  {}",
            if c.ok { "ok" } else { "FAIL" },
            c.what,
            c.value,
            c.target,
            c.band
        );
    }
    let passed = checks.iter().filter(|c| c.ok).count();
    let _ = writeln!(s, "{passed} of {} checks inside their bands", checks.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_table() {
        let cases: &[(f64, usize, &str)] = &[
            (0.0, 1, "0.0"),
            (-0.0, 1, "0.0"),
            (-0.00001, 2, "0.00"),
            (-1.25, 1, "-1.2"),
            (1036.679, 1, "1036.7"),
            (0.01594, 4, "0.0159"),
            (5.9812, 2, "5.98"),
            (f64::NAN, 2, "-"),
            (f64::INFINITY, 2, "-"),
        ];
        for (v, d, want) in cases {
            assert_eq!(fixed(*v, *d), *want, "{v} {d}");
        }
    }

    #[test]
    fn column_decimals_table() {
        let cases: &[(&[f64], usize)] = &[
            (&[], 0),
            (&[0.0, 0.0], 0),
            (&[64283.4, 126271.1], 0),
            (&[1000.0], 0),
            (&[999.9], 1),
            (&[234.359, 0.5], 1),
            (&[17.2, -3.0], 2),
            (&[9.405], 3),
            (&[0.502], 3),
            (&[0.0001], 3),
            (&[f64::NAN, 12.0], 2),
        ];
        for (values, want) in cases {
            assert_eq!(column_decimals(values.iter().copied()), *want, "{values:?}");
        }
    }

    #[test]
    fn duration_units() {
        let cases: &[(u64, &str)] = &[
            (0, "0 ns"),
            (999, "999 ns"),
            (1_000, "1.000 us"),
            (12_345, "12.345 us"),
            (1_000_000, "1.000 ms"),
            (999_999_999, "1000.000 ms"),
            (2_500_000_000, "2.500 s"),
        ];
        for (ns, want) in cases {
            assert_eq!(duration(*ns), *want);
        }
    }

    #[test]
    fn rates_and_percentages_guard_zero() {
        assert_eq!(per_second(10, 0), None);
        assert_eq!(per_second(1000, 1_000_000_000), Some(1000.0));
        assert_eq!(percent(1, 0), None);
        assert_eq!(percent(1, 4), Some(25.0));
    }
}

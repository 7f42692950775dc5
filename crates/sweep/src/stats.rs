//! Statistics of one metric over the seeds of a sweep point: mean, extremes and the 95 %
//! confidence interval of the mean (Student's t, the seeds taken as independent samples).
//!
//! A fraction (tick-stopped share, busy share, package idle: 0..1) gets its interval on the
//! logit scale ([`Stats::of_fraction`]): t on `ln(p / (1 − p))` of each seed, mapped back, so
//! that the interval stays inside (0, 1) and narrows towards a bound the way a proportion's
//! does. Wilson's interval would need a count of trials; a seed's fraction is a share of
//! time, not a count, so the seeds' own spread is the scale's input here.

use serde::{Deserialize, Serialize};

/// One metric over the seeds of a point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stats {
    /// Seeds that produced the metric.
    pub n: u32,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Lower end of the 95 % confidence interval of the mean, `mean − t·s/√n`; `None` with
    /// one seed (no spread to estimate).
    pub ci95_low: Option<f64>,
    /// Upper end of the 95 % confidence interval of the mean.
    pub ci95_high: Option<f64>,
}

impl Stats {
    /// The statistics of `xs` (in the given order, so the sums are the same on every run);
    /// `None` for no values.
    pub fn of(xs: &[f64]) -> Option<Stats> {
        let n = xs.len();
        if n == 0 {
            return None;
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if n >= 2 {
            // Sample standard deviation (n − 1).
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let half = t_975(n as u32 - 1) * var.sqrt() / (n as f64).sqrt();
            (Some(mean - half), Some(mean + half))
        } else {
            (None, None)
        };
        Some(Stats {
            n: n as u32,
            mean,
            min,
            max,
            ci95_low: lo,
            ci95_high: hi,
        })
    }
}

impl Stats {
    /// The statistics of `xs`, fractions in 0..1: mean, extremes and [`Stats::of`]'s, but the
    /// interval computed on the logit scale (see the module docs) when every value lies
    /// strictly inside (0, 1), else the t interval cut to [0, 1] (a seed at a bound: no
    /// logit). The interval always lies in [0, 1] and holds the mean.
    pub fn of_fraction(xs: &[f64]) -> Option<Stats> {
        let mut s = Stats::of(xs)?;
        if xs.len() >= 2 && xs.iter().all(|&x| x > 0.0 && x < 1.0) {
            let logits: Vec<f64> = xs.iter().map(|&x| (x / (1.0 - x)).ln()).collect();
            let l = Stats::of(&logits)?;
            let back = |v: f64| 1.0 / (1.0 + (-v).exp());
            s.ci95_low = l.ci95_low.map(back).map(|v| v.min(s.mean));
            s.ci95_high = l.ci95_high.map(back).map(|v| v.max(s.mean));
        } else {
            s.ci95_low = s.ci95_low.map(|v| v.clamp(0.0, 1.0));
            s.ci95_high = s.ci95_high.map(|v| v.clamp(0.0, 1.0));
        }
        debug_assert!(
            s.ci95_low.is_none_or(|v| (0.0..=1.0).contains(&v))
                && s.ci95_high.is_none_or(|v| (0.0..=1.0).contains(&v)),
            "{s:?}"
        );
        Some(s)
    }
}

/// The 0.975 quantile of Student's t distribution with `df` degrees of freedom (`df ≥ 1`):
/// the factor of a two-sided 95 % interval. Exact table values (3 decimals, as printed in
/// every statistics table, e.g. the NIST/SEMATECH e-Handbook's t table) for 1 to 30, 40, 60
/// and 120, linear in 1/df between them, and the normal quantile 1.960 beyond.
pub fn t_975(df: u32) -> f64 {
    const SMALL: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    // (df, t), then df = ∞ as 1/df = 0.
    const LARGE: [(f64, f64); 4] = [(30.0, 2.042), (40.0, 2.021), (60.0, 2.000), (120.0, 1.980)];
    let df = df.max(1);
    if let Some(&t) = SMALL.get(df as usize - 1) {
        return t;
    }
    let inv = 1.0 / df as f64;
    for w in LARGE.windows(2) {
        let ((d0, t0), (d1, t1)) = (w[0], w[1]);
        if df as f64 <= d1 {
            let f = (1.0 / d0 - inv) / (1.0 / d0 - 1.0 / d1);
            return t0 + f * (t1 - t0);
        }
    }
    let (d0, t0) = LARGE[3];
    t0 + (1.0 / d0 - inv) / (1.0 / d0) * (1.960 - t0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_table() {
        // (df, t) from the printed table; interpolated ones within 0.002 of it.
        let exact = [
            (1, 12.706),
            (2, 4.303),
            (10, 2.228),
            (30, 2.042),
            (40, 2.021),
        ];
        for (df, t) in exact {
            assert_eq!(t_975(df), t, "df {df}");
        }
        for (df, t) in [(50, 2.009), (100, 1.984), (1000, 1.962)] {
            assert!((t_975(df) - t).abs() < 0.002, "df {df}: {}", t_975(df));
        }
        assert_eq!(t_975(0), 12.706);
        // Monotone falling towards 1.96.
        let mut last = f64::INFINITY;
        for df in 1..2000 {
            let t = t_975(df);
            assert!(t <= last && t > 1.96, "df {df}: {t}");
            last = t;
        }
    }

    #[test]
    fn stats_table() {
        assert_eq!(Stats::of(&[]), None);
        let one = Stats::of(&[5.0]).unwrap_or_else(|| unreachable!());
        assert_eq!(
            (one.mean, one.min, one.max, one.ci95_low),
            (5.0, 5.0, 5.0, None)
        );
        // 1, 2, 3: mean 2, s = 1, half-width 4.303 / √3.
        let s = Stats::of(&[3.0, 1.0, 2.0]).unwrap_or_else(|| unreachable!());
        assert_eq!((s.n, s.mean, s.min, s.max), (3, 2.0, 1.0, 3.0));
        let half = 4.303 / 3f64.sqrt();
        assert!((s.ci95_low.unwrap_or(0.0) - (2.0 - half)).abs() < 1e-12);
        assert!((s.ci95_high.unwrap_or(0.0) - (2.0 + half)).abs() < 1e-12);
        // No spread, no width.
        let flat = Stats::of(&[7.0, 7.0]).unwrap_or_else(|| unreachable!());
        assert_eq!((flat.ci95_low, flat.ci95_high), (Some(7.0), Some(7.0)));
    }

    #[test]
    fn fraction_intervals_stay_inside_zero_and_one() {
        // Plain t would reach above 1: mean 0.98, s ≈ 0.0265, half-width 12.706 · s / √2.
        let plain = Stats::of(&[0.999, 0.961]).unwrap_or_else(|| unreachable!());
        assert!(plain.ci95_high.unwrap_or(0.0) > 1.0, "{plain:?}");
        let cases: &[&[f64]] = &[
            &[0.999, 0.961],
            &[0.001, 0.2, 0.05],
            &[0.0, 0.3],
            &[1.0, 0.7, 0.95],
            &[0.5, 0.5],
            &[0.0, 0.0],
        ];
        for xs in cases {
            let s = Stats::of_fraction(xs).unwrap_or_else(|| unreachable!());
            let (lo, hi) = (s.ci95_low.unwrap_or(-1.0), s.ci95_high.unwrap_or(-1.0));
            assert!(
                (0.0..=1.0).contains(&lo) && (0.0..=1.0).contains(&hi),
                "{xs:?}: {s:?}"
            );
            assert!(lo <= s.mean && s.mean <= hi, "{xs:?}: {s:?}");
            assert_eq!(
                (s.n, s.min, s.max),
                (plain_of(xs).n, plain_of(xs).min, plain_of(xs).max)
            );
        }
        let one = Stats::of_fraction(&[0.3]).unwrap_or_else(|| unreachable!());
        assert_eq!((one.ci95_low, one.ci95_high), (None, None));
    }

    fn plain_of(xs: &[f64]) -> Stats {
        Stats::of(xs).unwrap_or_else(|| unreachable!())
    }
}

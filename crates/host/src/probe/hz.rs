//! Inferring the kernel's HZ.
//!
//! Three independent sources, combined by [`HzReport::combine`]:
//!
//! * **tick alignment** in one `/proc/timer_list` snapshot ([`hz_from_timer_list`]). Tick
//!   expiries are spaced by `TICK_NSEC` (10 000 000, 4 000 000, 3 333 333 or 1 000 000 ns
//!   for HZ 100, 250, 300, 1000). Per CPU, the `.last_tick` value and — when the tick is
//!   running — the tick hrtimer's expiry are both on that CPU's tick grid, so their
//!   difference is a multiple of `TICK_NSEC`. Without `skew_tick` all CPUs share one grid
//!   (modern kernels align it to multiples of `TICK_NSEC`), so cross-CPU differences count
//!   too. A candidate is *consistent* when every difference is a multiple of its period. A
//!   coarser true period makes the finer candidates consistent too (every multiple of 4 ms
//!   is a multiple of 1 ms), so the coarsest consistent candidate wins; a finer true period
//!   fakes a coarser one only by coincidence, with probability about (1/k)^n for n non-zero
//!   differences, which is why the number of differences is reported. The stopped tick's
//!   own expiry is not used: a CPU with a stopped tick may program it at a non-grid time
//!   (the timekeeping CPU's maximum deferment).
//! * **jiffies rate** between two timer_list snapshots ([`hz_from_jiffies`]): jiffies
//!   advance at HZ per second (the `now at` lines give the elapsed time).
//! * the **build configuration**'s `CONFIG_HZ`, when the kernel exposes it.
//!
//! The candidates are [`CONFIG_HZ_CHOICES`], the one list of valid HZ values in `ticklab-schema`.

use crate::procfs::TimerList;
use serde::Serialize;
use ticklab_schema::scenario::CONFIG_HZ_CHOICES;

/// `TICK_NSEC` for `hz`: one second divided by HZ, rounded to nearest.
pub fn tick_nsec(hz: u32) -> i64 {
    (1_000_000_000 + i64::from(hz) / 2) / i64::from(hz)
}

/// What the tick alignment says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlignmentEvidence {
    /// The coarsest candidate consistent with every difference, if any difference was seen.
    pub hz: Option<u32>,
    /// Every consistent candidate, coarsest first.
    pub consistent: Vec<u32>,
    /// Candidates coarser than `hz`'s neighbours that are also consistent, i.e. a tie that
    /// alignment alone cannot break (e.g. differences that are all multiples of 20 ms fit
    /// both 100 and 250).
    pub ambiguous_with: Vec<u32>,
    /// Number of non-zero differences the verdict rests on.
    pub differences: usize,
    /// Whether cross-CPU differences were used (no `skew_tick`).
    pub cross_cpu: bool,
}

/// Collects each CPU's grid-aligned timestamps: `.last_tick`, and the tick hrtimer's hard
/// expiry when the tick is not stopped.
fn grid_samples(tl: &TimerList) -> Vec<Vec<i64>> {
    tl.cpus
        .iter()
        .map(|cpu| {
            let mut v: Vec<i64> = cpu.last_tick_ns.into_iter().filter(|&t| t > 0).collect();
            if cpu.tick_stopped == Some(false)
                && let Some(t) = cpu.tick_timer().and_then(|t| t.hard_expires_ns)
            {
                v.push(t);
            }
            v
        })
        .filter(|v| !v.is_empty())
        .collect()
}

/// Infers HZ from tick alignment in one timer_list snapshot.
///
/// `skew_tick` must be true when the boot line has `skew_tick=1` (per-CPU grid offsets);
/// then only differences within a CPU are used.
pub fn hz_from_timer_list(tl: &TimerList, skew_tick: bool) -> AlignmentEvidence {
    let samples = grid_samples(tl);
    let mut diffs: Vec<i64> = Vec::new();
    for cpu in &samples {
        diffs.extend(cpu.iter().map(|&t| t - cpu[0]));
    }
    let cross_cpu = !skew_tick && samples.len() > 1;
    if cross_cpu {
        diffs.extend(samples.iter().map(|cpu| cpu[0] - samples[0][0]));
    }
    diffs.retain(|&d| d != 0);
    let mut by_period: Vec<u32> = CONFIG_HZ_CHOICES.to_vec();
    by_period.sort_by_key(|&hz| std::cmp::Reverse(tick_nsec(hz)));
    let consistent: Vec<u32> = if diffs.is_empty() {
        Vec::new()
    } else {
        by_period
            .into_iter()
            .filter(|&hz| diffs.iter().all(|d| d % tick_nsec(hz) == 0))
            .collect()
    };
    let hz = consistent.first().copied();
    // A tie: another consistent candidate whose period does not divide the winner's.
    let ambiguous_with = match hz {
        Some(best) => consistent
            .iter()
            .copied()
            .filter(|&c| c != best && tick_nsec(best) % tick_nsec(c) != 0)
            .collect(),
        None => Vec::new(),
    };
    AlignmentEvidence {
        hz,
        consistent,
        ambiguous_with,
        differences: diffs.len(),
        cross_cpu,
    }
}

/// What the jiffies rate says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JiffiesEvidence {
    /// Measured jiffies per second.
    pub rate: f64,
    /// The candidate within 10 % of the rate, if exactly one is.
    pub hz: Option<u32>,
    /// Jiffies elapsed.
    pub jiffies: u64,
    /// Nanoseconds elapsed (from the `now at` lines).
    pub elapsed_ns: i64,
}

/// Infers HZ from two snapshots taken some time apart (at least ~100 ms for a useful
/// answer). `None` when a snapshot lacks `now at` or `jiffies`, or time did not advance.
pub fn hz_from_jiffies(before: &TimerList, after: &TimerList) -> Option<JiffiesEvidence> {
    let j = |tl: &TimerList| tl.cpus.iter().find_map(|c| c.jiffies);
    let (j0, j1) = (j(before)?, j(after)?);
    let (t0, t1) = (before.now_ns?, after.now_ns?);
    let elapsed_ns = t1 - t0;
    if elapsed_ns <= 0 || j1 < j0 {
        return None;
    }
    let jiffies = j1 - j0;
    let rate = jiffies as f64 * 1e9 / elapsed_ns as f64;
    let near: Vec<u32> = CONFIG_HZ_CHOICES
        .iter()
        .copied()
        .filter(|&hz| (rate - f64::from(hz)).abs() <= 0.1 * f64::from(hz))
        .collect();
    Some(JiffiesEvidence {
        rate,
        hz: (near.len() == 1).then(|| near[0]),
        jiffies,
        elapsed_ns,
    })
}

/// Why one source of HZ evidence is missing. In JSON it is its message (`"Err": "..."`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HzSourceMissing {
    /// No `/proc/timer_list` snapshot to align ticks in (the probe's reason).
    #[error("tick alignment: {0}")]
    Alignment(String),
    /// No second `/proc/timer_list` snapshot for a jiffies rate (the probe's reason).
    #[error("jiffies rate: {0}")]
    Jiffies(String),
    /// The two snapshots give no rate: no jiffies line, no `now at` time, or no time (or
    /// jiffies going backwards) between them.
    #[error("jiffies rate: no jiffies or no time between reads")]
    NoJiffiesRate,
    /// `/proc/timer_list` cannot be read (it needs root).
    #[error("/proc/timer_list unreadable (needs root)")]
    TimerListUnreadable,
    /// The build configuration has no `CONFIG_HZ` line.
    #[error("build config has no CONFIG_HZ")]
    NoConfigHz,
    /// The build configuration cannot be read (the probe's reason).
    #[error("build config: {0}")]
    BuildConfig(String),
}

impl Serialize for HzSourceMissing {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// All HZ evidence and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HzReport {
    /// The verdict, if the sources allow one.
    pub hz: Option<u32>,
    /// How the verdict was reached, or why there is none.
    pub basis: String,
    /// Tick alignment evidence, or why it is missing.
    pub alignment: Result<AlignmentEvidence, HzSourceMissing>,
    /// Jiffies-rate evidence, or why it is missing.
    pub jiffies: Result<JiffiesEvidence, HzSourceMissing>,
    /// `CONFIG_HZ` from the build configuration, or why it is missing.
    pub config: Result<u32, HzSourceMissing>,
}

impl HzReport {
    /// Combines the sources. Measurements (jiffies rate, then alignment) decide; the build
    /// configuration is the fallback and a cross-check. Disagreements are spelled out in
    /// [`HzReport::basis`].
    pub fn combine(
        alignment: Result<AlignmentEvidence, HzSourceMissing>,
        jiffies: Result<JiffiesEvidence, HzSourceMissing>,
        config: Result<u32, HzSourceMissing>,
    ) -> HzReport {
        let a = alignment
            .as_ref()
            .ok()
            .filter(|a| a.ambiguous_with.is_empty())
            .and_then(|a| a.hz);
        let j = jiffies.as_ref().ok().and_then(|j| j.hz);
        let c = config.as_ref().ok().copied();
        let mut parts = Vec::new();
        let hz = match (j, a) {
            (Some(j), Some(a)) if j == a => {
                parts.push("jiffies rate and tick alignment agree".to_string());
                Some(j)
            }
            (Some(j), Some(a)) => {
                // The jiffies rate cannot be faked by coincidence; alignment can.
                parts.push(format!(
                    "jiffies rate says {j}, tick alignment says {a}; trusting the rate"
                ));
                Some(j)
            }
            (Some(j), None) => {
                parts.push("jiffies rate".to_string());
                Some(j)
            }
            (None, Some(a)) => {
                parts.push("tick alignment".to_string());
                Some(a)
            }
            (None, None) => {
                if c.is_some() {
                    parts.push("from the build configuration only, not measured".to_string());
                }
                c
            }
        };
        match (hz, c) {
            (Some(h), Some(c)) if h == c && (j.is_some() || a.is_some()) => {
                parts.push("matches CONFIG_HZ".to_string())
            }
            (Some(h), Some(c)) if h != c => {
                parts.push(format!("CONFIG_HZ={c} disagrees with the measurement {h}"))
            }
            _ => {}
        }
        let basis = if hz.is_some() {
            parts.join("; ")
        } else {
            let why = [
                alignment.as_ref().err(),
                jiffies.as_ref().err(),
                config.as_ref().err(),
            ]
            .into_iter()
            .flatten()
            .map(ToString::to_string)
            .collect::<Vec<_>>();
            if why.is_empty() {
                "the sources do not single out one HZ".to_string()
            } else {
                why.join("; ")
            }
        };
        HzReport {
            hz,
            basis,
            alignment,
            jiffies,
            config,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::timer_list::{ActiveTimer, ClockBase, CpuTimers};

    fn cpu(n: u32, last_tick: i64, tick: Option<i64>, stopped: bool) -> CpuTimers {
        CpuTimers {
            cpu: n,
            last_tick_ns: Some(last_tick),
            tick_stopped: Some(stopped),
            clock_bases: vec![ClockBase {
                index: 0,
                timers: tick
                    .map(|t| ActiveTimer {
                        callback: "tick_nohz_handler".into(),
                        hard_expires_ns: Some(t),
                        ..ActiveTimer::default()
                    })
                    .into_iter()
                    .collect(),
                ..ClockBase::default()
            }],
            ..CpuTimers::default()
        }
    }

    fn tl(cpus: Vec<CpuTimers>) -> TimerList {
        TimerList {
            cpus,
            ..TimerList::default()
        }
    }

    #[test]
    fn tick_nsec_values() {
        let got: Vec<i64> = CONFIG_HZ_CHOICES.iter().map(|&h| tick_nsec(h)).collect();
        assert_eq!(got, vec![10_000_000, 4_000_000, 3_333_333, 1_000_000]);
    }

    #[test]
    fn alignment_cases() {
        // (cpus, skew, expected hz, expected ambiguity)
        // (cpus, skew_tick, expected hz, expected ambiguity)
        type Case = (Vec<CpuTimers>, bool, Option<u32>, Vec<u32>);
        let cases: Vec<Case> = vec![
            // HZ=250: 4 ms grid, differences 2088 ms and 408 ms.
            (
                vec![
                    cpu(0, 478_756_000_000, Some(480_844_000_000), false),
                    cpu(1, 479_164_000_000, Some(480_844_000_000), false),
                ],
                false,
                Some(250),
                vec![],
            ),
            // HZ=300: multiples of 3 333 333.
            (
                vec![cpu(0, 3_333_333 * 100, Some(3_333_333 * 107), false)],
                false,
                Some(300),
                vec![],
            ),
            // HZ=1000 with differences 1 ms and 3 ms.
            (
                vec![
                    cpu(0, 5_001_000_000, Some(5_002_000_000), false),
                    cpu(1, 5_004_000_000, None, true),
                ],
                false,
                Some(1000),
                vec![],
            ),
            // Only a 20 ms difference: 100 and 250 both fit.
            (
                vec![cpu(0, 1_000_000_000, Some(1_020_000_000), false)],
                false,
                Some(100),
                vec![250],
            ),
            // A stopped CPU's tick timer is ignored: only last_tick counts, no difference.
            (
                vec![cpu(0, 1_000_000_000, Some(1_234_567_891), true)],
                false,
                None,
                vec![],
            ),
            // skew_tick: CPU 1 is offset by 0.5 ms; within-CPU differences still show 250.
            (
                vec![
                    cpu(0, 8_000_000, Some(12_000_000), false),
                    cpu(1, 8_500_000, Some(16_500_000), false),
                ],
                true,
                Some(250),
                vec![],
            ),
        ];
        for (i, (cpus, skew, hz, amb)) in cases.into_iter().enumerate() {
            let e = hz_from_timer_list(&tl(cpus), skew);
            assert_eq!(
                (e.hz, e.ambiguous_with.clone()),
                (hz, amb),
                "case {i}: {e:?}"
            );
        }
    }

    #[test]
    fn skewed_grid_without_skew_flag_finds_no_common_period() {
        let e = hz_from_timer_list(
            &tl(vec![
                cpu(0, 8_000_000, Some(12_000_000), false),
                cpu(1, 8_500_000, Some(16_500_000), false),
            ]),
            false,
        );
        assert_eq!(e.hz, None);
        assert!(e.consistent.is_empty());
    }

    #[test]
    fn jiffies_rates() {
        let snap = |now: i64, j: u64| TimerList {
            now_ns: Some(now),
            cpus: vec![CpuTimers {
                jiffies: Some(j),
                ..CpuTimers::default()
            }],
            ..TimerList::default()
        };
        let cases = [
            (250_000_000, 62, Some(250)),
            (250_000_000, 75, Some(300)),
            (200_000_000, 20, Some(100)),
            (200_000_000, 200, Some(1000)),
            // 180/s is within 10 % of nothing.
            (1_000_000_000, 180, None),
        ];
        for (dt, dj, want) in cases {
            let e = hz_from_jiffies(
                &snap(1_000, 4_295_000_000),
                &snap(1_000 + dt, 4_295_000_000 + dj),
            )
            .unwrap();
            assert_eq!(e.hz, want, "{dj} jiffies in {dt} ns");
        }
        assert!(hz_from_jiffies(&snap(5, 1), &snap(5, 2)).is_none());
    }

    #[test]
    fn combining() {
        let align = |hz| {
            Ok(AlignmentEvidence {
                hz: Some(hz),
                consistent: vec![hz],
                ambiguous_with: vec![],
                differences: 3,
                cross_cpu: true,
            })
        };
        let jif = |hz| {
            Ok(JiffiesEvidence {
                rate: f64::from(hz),
                hz: Some(hz),
                jiffies: 50,
                elapsed_ns: 200_000_000,
            })
        };
        let r = HzReport::combine(align(250), jif(250), Ok(250));
        assert_eq!(r.hz, Some(250));
        assert!(
            r.basis.contains("agree") && r.basis.contains("matches CONFIG_HZ"),
            "{}",
            r.basis
        );

        let r = HzReport::combine(align(100), jif(250), Ok(250));
        assert_eq!(r.hz, Some(250));
        assert!(r.basis.contains("trusting the rate"), "{}", r.basis);

        let root = HzSourceMissing::TimerListUnreadable;
        let r = HzReport::combine(Err(root.clone()), Err(root), Ok(250));
        assert_eq!(r.hz, Some(250));
        assert!(
            r.basis.contains("from the build configuration only"),
            "{}",
            r.basis
        );

        let r = HzReport::combine(align(1000), Err(HzSourceMissing::NoJiffiesRate), Ok(250));
        assert_eq!(r.hz, Some(1000));
        assert!(r.basis.contains("disagrees"), "{}", r.basis);

        let r = HzReport::combine(
            Err(HzSourceMissing::Alignment("a".into())),
            Err(HzSourceMissing::Jiffies("b".into())),
            Err(HzSourceMissing::BuildConfig("c".into())),
        );
        assert_eq!(
            (r.hz, r.basis.as_str()),
            (None, "tick alignment: a; jiffies rate: b; build config: c")
        );
        // In JSON a missing source is its message, as the snapshots show.
        assert_eq!(
            serde_json::to_string(&r.config).unwrap(),
            r#"{"Err":"build config: c"}"#
        );
    }
}

//! The noise probe's peer: `rtla osnoise top -q` read back, and set beside ticklab's noise
//! report from the same guest, class by class.
//!
//! rtla's summary is one header line and one row per CPU:
//!
//! ```text
//! CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread
//!   1 #9           9000000         5123    99.94307          74           12           3            0         2260          450            9
//! ```
//!
//! times in µs (`duration: … | time is in us` says so above it), the last five columns
//! interference counts. [`parse_osnoise_top`] reads the rows (terminal escapes removed);
//! [`beside`] puts each class's count from both tools on one line with their difference.

use std::fmt::Write;

use ticklab_schema::noise::{CpuNoise, NoiseClass, NoiseReport};

/// One CPU row of `rtla osnoise top`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RtlaCpu {
    /// The CPU.
    pub cpu: u32,
    /// Sampling periods completed.
    pub periods: u64,
    /// Runtime, µs.
    pub runtime_us: u64,
    /// Noise, µs.
    pub noise_us: u64,
    /// % of the CPU available to the workload.
    pub available_pct: f64,
    /// Largest noise in one period, µs.
    pub max_noise_us: u64,
    /// Longest single noise, µs.
    pub max_single_us: u64,
    /// Interference counts: hardware, NMI, IRQ, softirq, thread.
    pub hw: u64,
    /// NMIs.
    pub nmi: u64,
    /// IRQs.
    pub irq: u64,
    /// Softirqs.
    pub softirq: u64,
    /// Threads.
    pub thread: u64,
}

impl RtlaCpu {
    /// The count of one class.
    pub fn count(&self, class: NoiseClass) -> u64 {
        match class {
            NoiseClass::Hardware => self.hw,
            NoiseClass::Nmi => self.nmi,
            NoiseClass::Irq => self.irq,
            NoiseClass::Softirq => self.softirq,
            NoiseClass::Thread => self.thread,
        }
    }
}

/// Removes ANSI escape sequences (`ESC [ … letter`), which rtla writes to clear the screen.
fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Why `rtla osnoise top` output gave no rows; each names the row or quotes the output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RtlaError {
    /// A column of a CPU row is not a count (the column, from 1).
    #[error("rtla row {row:?}: column {column} is not a count")]
    NotACount {
        /// The row as printed.
        row: String,
        /// The column, from 1.
        column: usize,
    },
    /// A row's first column is not a CPU number.
    #[error("rtla row {0:?}: no CPU")]
    NoCpu(String),
    /// A row's `#N` column is not a period count.
    #[error("rtla row {0:?}: no period count")]
    NoPeriods(String),
    /// A row's fifth column is not a percentage.
    #[error("rtla row {0:?}: no % CPU available")]
    NoAvailable(String),
    /// No summary header at all (the output's first 300 characters).
    #[error("no `rtla osnoise top` summary in the peer's output; it says: {0:?}")]
    NoSummary(String),
}

/// The CPU rows of `rtla osnoise top` output; an error names what is missing.
pub fn parse_osnoise_top(text: &str) -> Result<Vec<RtlaCpu>, RtlaError> {
    let text = strip_escapes(text);
    let mut rows = Vec::new();
    let mut header = false;
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.first() == Some(&"CPU") && line.contains("Softirq") {
            header = true;
            continue;
        }
        if !header || t.len() != 12 || !t[1].starts_with('#') {
            continue;
        }
        let n = |i: usize| -> Result<u64, RtlaError> {
            t[i].parse().map_err(|_| RtlaError::NotACount {
                row: line.into(),
                column: i + 1,
            })
        };
        rows.push(RtlaCpu {
            cpu: t[0].parse().map_err(|_| RtlaError::NoCpu(line.into()))?,
            periods: t[1][1..]
                .parse()
                .map_err(|_| RtlaError::NoPeriods(line.into()))?,
            runtime_us: n(2)?,
            noise_us: n(3)?,
            available_pct: t[4]
                .parse()
                .map_err(|_| RtlaError::NoAvailable(line.into()))?,
            max_noise_us: n(5)?,
            max_single_us: n(6)?,
            hw: n(7)?,
            nmi: n(8)?,
            irq: n(9)?,
            softirq: n(10)?,
            thread: n(11)?,
        });
    }
    if !header {
        return Err(RtlaError::NoSummary(
            text.trim().chars().take(300).collect(),
        ));
    }
    Ok(rows)
}

/// ticklab's count of one class on one CPU (the hardware class counts detours with nothing
/// inside).
fn ticklab_count(c: &CpuNoise, class: NoiseClass) -> u64 {
    c.sources
        .iter()
        .filter(|s| s.class == class)
        .map(|s| s.count)
        .sum()
}

/// The relative difference of `a` from `b`, %, `None` when `b` is 0.
pub fn diff_pct(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| 100.0 * (a as f64 - b as f64) / b as f64)
}

/// Both tools per CPU: the summary, then each class's interference count side by side with
/// ticklab's difference from rtla, per second of each tool's runtime (the two ran one after
/// the other for the same length, so their windows differ by a little).
pub fn beside(ticklab: &NoiseReport, rtla: &[RtlaCpu]) -> String {
    let mut s = String::new();
    for c in &ticklab.cpus {
        let Some(r) = rtla.iter().find(|r| r.cpu == c.cpu) else {
            let _ = writeln!(s, "CPU {}: rtla printed no row for it", c.cpu);
            continue;
        };
        let (tk_s, rt_s) = (c.runtime_ns as f64 / 1e9, r.runtime_us as f64 / 1e6);
        let _ = writeln!(
            s,
            "CPU {}: ticklab {:.3} s runtime, {:.1} us noise, {:.5} % available, max {:.1} us; \
             rtla {:.3} s, {} us, {:.5} %, max single {} us",
            c.cpu,
            tk_s,
            c.noise_ns as f64 / 1e3,
            c.available_pct,
            c.max_detour_ns as f64 / 1e3,
            rt_s,
            r.noise_us,
            r.available_pct,
            r.max_single_us
        );
        let _ = writeln!(
            s,
            "  {:<8} {:>10} {:>10} {:>10} {:>10} {:>8}",
            "class", "ticklab", "rtla", "ticklab/s", "rtla/s", "diff"
        );
        for class in [
            NoiseClass::Irq,
            NoiseClass::Softirq,
            NoiseClass::Nmi,
            NoiseClass::Thread,
            NoiseClass::Hardware,
        ] {
            let (a, b) = (ticklab_count(c, class), r.count(class));
            let (ra, rb) = (a as f64 / tk_s.max(1e-9), b as f64 / rt_s.max(1e-9));
            let diff = if rb > 0.0 {
                format!("{:+.1} %", 100.0 * (ra - rb) / rb)
            } else {
                "-".to_string()
            };
            let _ = writeln!(
                s,
                "  {:<8} {:>10} {:>10} {:>10.1} {:>10.1} {:>8}",
                format!("{class:?}").to_lowercase(),
                a,
                b,
                ra,
                rb,
                diff
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOP: &str = "\u{1b}[2J\u{1b}[H                                          Operating System Noise
duration:   0 00:00:10 | time is in us
CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread
  1 #9           9000000         5123    99.94307          74           12           3            0         2260          450            9
";

    #[test]
    fn top_rows() {
        let rows = parse_osnoise_top(TOP).unwrap();
        assert_eq!(rows.len(), 1);
        let r = rows[0];
        assert_eq!(
            (r.cpu, r.periods, r.runtime_us, r.noise_us),
            (1, 9, 9_000_000, 5_123)
        );
        assert_eq!(
            (r.hw, r.nmi, r.irq, r.softirq, r.thread),
            (3, 0, 2260, 450, 9)
        );
        assert!((r.available_pct - 99.94307).abs() < 1e-9);
    }

    #[test]
    fn output_without_a_summary_is_an_error_that_quotes_it() {
        let e = parse_osnoise_top("Failed to apply CPUs config\nCould not apply config\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("Failed to apply CPUs config"), "{e}");
        assert_eq!(
            parse_osnoise_top(TOP.replace("#9", "9").as_str()),
            Ok(Vec::new())
        );
    }

    #[test]
    fn differences() {
        assert_eq!(diff_pct(110, 100), Some(10.0));
        assert_eq!(diff_pct(1, 0), None);
    }
}

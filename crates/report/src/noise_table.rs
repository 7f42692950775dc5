//! OS noise as a table: a report's [`NoiseReport`] (per busy CPU, then per source) and a
//! bulk-synchronous job's iterations ([`BspReport`]).
//!
//! Layout of [`noise_table`] (the CPU rows in the columns of `rtla osnoise`'s summary; at most
//! [`MAX_CPU_ROWS`] rows, then one line saying how many more):
//!
//! ```text
//! OS noise (twin, detours above 1 us)
//! CPU   Runtime(s)   Noise(us)     Avail%  MaxDetour(us)   Detours
//!   1       10.000     12345.6   99.87654           12.3      2500
//! sources (all CPUs above)        class      count   Noise(us)  Max(us)  Share%
//!   tick                          irq         2500      6000.0      3.2    48.6
//! ```
//!
//! Layout of [`bsp_lines`]:
//!
//! ```text
//! bsp 64 ranks (spin barrier), work 1 ms: 9876 iterations
//!   iteration mean 1012.3 us, p99 1020.1 us, max 1025.0 us; excess over noiseless 12.3 us (1.23 %), 9000 late
//!   blame: tick (irq) 8000 iterations, 98.0 ms; ...
//!   last to arrive: CPU 7 (123), CPU 9 (120), ...
//! ```

use std::fmt::Write;
use ticklab_schema::bsp::BspReport;
use ticklab_schema::noise::{NoiseClass, NoiseMethod, NoiseReport};

/// One source summed over CPUs: class, name, count, noise (ns), longest run (ns).
type SourceSum<'a> = (NoiseClass, &'a str, u64, Option<u64>, Option<u64>);

/// CPU rows printed before the rest are summarised in one line.
pub const MAX_CPU_ROWS: usize = 64;

fn class_name(c: NoiseClass) -> &'static str {
    match c {
        NoiseClass::Irq => "irq",
        NoiseClass::Softirq => "softirq",
        NoiseClass::Nmi => "nmi",
        NoiseClass::Thread => "thread",
        NoiseClass::Hardware => "hardware",
    }
}

/// The noise table of a report (see the module docs).
pub fn noise_table(n: &NoiseReport) -> String {
    let method = match n.method {
        NoiseMethod::Twin => "twin",
        NoiseMethod::Tracefs => "tracefs",
        NoiseMethod::CountDeltas => "count deltas",
    };
    let mut s = format!(
        "OS noise ({method}, detours above {} us)\n",
        crate::format::fixed(n.threshold_ns as f64 / 1e3, 1)
    );
    let _ = writeln!(
        s,
        "{:>4} {:>12} {:>11} {:>10} {:>14} {:>9}",
        "CPU", "Runtime(s)", "Noise(us)", "Avail%", "MaxDetour(us)", "Detours"
    );
    for c in n.cpus.iter().take(MAX_CPU_ROWS) {
        let _ = writeln!(
            s,
            "{:>4} {:>12.3} {:>11.1} {:>10.5} {:>14.1} {:>9}",
            c.cpu,
            c.runtime_ns as f64 / 1e9,
            c.noise_ns as f64 / 1e3,
            c.available_pct,
            c.max_detour_ns as f64 / 1e3,
            c.detours
        );
    }
    if n.cpus.len() > MAX_CPU_ROWS {
        let rest = &n.cpus[MAX_CPU_ROWS..];
        let worst = rest.iter().map(|c| c.max_detour_ns).max().unwrap_or(0);
        let _ = writeln!(
            s,
            "     ... {} more CPUs, noise {:.1} us in all, longest detour {:.1} us",
            rest.len(),
            rest.iter().map(|c| c.noise_ns).sum::<u64>() as f64 / 1e3,
            worst as f64 / 1e3
        );
    }
    // Sources summed over the CPUs (in order of first appearance, then by noise).
    let mut sources: Vec<SourceSum<'_>> = Vec::new();
    for c in &n.cpus {
        for src in &c.sources {
            match sources
                .iter_mut()
                .find(|e| e.0 == src.class && e.1 == src.name)
            {
                Some(e) => {
                    e.2 += src.count;
                    e.3 = match (e.3, src.noise_ns) {
                        (Some(a), Some(b)) => Some(a + b),
                        _ => None,
                    };
                    e.4 = e.4.max(src.max_ns);
                }
                None => sources.push((src.class, &src.name, src.count, src.noise_ns, src.max_ns)),
            }
        }
    }
    if sources.is_empty() {
        return s;
    }
    sources.sort_by(|a, b| b.3.cmp(&a.3).then(b.2.cmp(&a.2)).then(a.1.cmp(b.1)));
    let total: u64 = sources.iter().filter_map(|e| e.3).sum();
    let _ = writeln!(
        s,
        "{:<32} {:<9} {:>9} {:>11} {:>8} {:>7}",
        "sources (all CPUs above)", "class", "count", "Noise(us)", "Max(us)", "Share%"
    );
    let us = |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{:.1}", v as f64 / 1e3));
    for (class, name, count, noise, max) in sources {
        let share = match noise {
            Some(v) if total > 0 => format!("{:.1}", 100.0 * v as f64 / total as f64),
            _ => "-".into(),
        };
        let _ = writeln!(
            s,
            "  {:<30} {:<9} {:>9} {:>11} {:>8} {:>7}",
            name,
            class_name(class),
            count,
            us(noise),
            us(max),
            share
        );
    }
    s
}

/// A bulk-synchronous job's lines (see the module docs).
pub fn bsp_lines(b: &BspReport) -> String {
    let us = |ns: f64| ns / 1e3;
    let mut s = format!(
        "bsp {} ranks ({} barrier), work {}: {} iterations\n",
        b.ranks,
        b.barrier.name(),
        ticklab_schema::units::format_duration(b.work_ns),
        b.iterations
    );
    let _ = writeln!(
        s,
        "  iteration mean {:.1} us, p99 {:.1} us, max {:.1} us; excess over noiseless {:.2} us ({:.3} %), {} late",
        us(b.mean_ns),
        us(b.p99_ns as f64),
        us(b.max_ns as f64),
        us(b.excess_mean_ns),
        b.excess_pct,
        b.late_iterations
    );
    if !b.blame.is_empty() {
        let parts: Vec<String> = b
            .blame
            .iter()
            .map(|x| {
                format!(
                    "{} ({}) {} iterations, {:.1} us",
                    x.name,
                    x.class.map_or("unknown class", class_name),
                    x.iterations,
                    us(x.excess_ns as f64)
                )
            })
            .collect();
        let _ = writeln!(s, "  blame: {}", parts.join("; "));
    }
    if !b.last_arrivals.is_empty() {
        let parts: Vec<String> = b
            .last_arrivals
            .iter()
            .map(|l| format!("CPU {} ({})", l.cpu, l.iterations))
            .collect();
        let _ = writeln!(s, "  last to arrive: {}", parts.join(", "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_schema::bsp::{BspBlame, BspLastArrival};
    use ticklab_schema::noise::{CpuNoise, NoiseSource};
    use ticklab_schema::workload::Barrier;

    fn report() -> NoiseReport {
        let src = |class, name: &str, count, noise, max| NoiseSource {
            class,
            name: name.into(),
            count,
            noise_ns: Some(noise),
            max_ns: Some(max),
            nested: false,
        };
        NoiseReport {
            method: NoiseMethod::Twin,
            threshold_ns: 1_000,
            cpus: vec![CpuNoise {
                cpu: 1,
                runtime_ns: 10_000_000_000,
                noise_ns: 20_000_000,
                available_pct: CpuNoise::available_pct(10_000_000_000, 20_000_000),
                max_detour_ns: 12_300,
                detours: 2_500,
                histogram: None,
                sources: vec![
                    src(NoiseClass::Irq, "tick", 2_500, 12_000_000, 4_100),
                    src(NoiseClass::Irq, "local_timer", 2_500, 5_000_000, 2_000),
                    src(NoiseClass::Hardware, "guest exits", 2_500, 3_000_000, 2_000),
                ],
            }],
        }
    }

    #[test]
    fn noise_table_snapshot() {
        insta::assert_snapshot!(noise_table(&report()));
    }

    #[test]
    fn bsp_lines_snapshot() {
        let b = BspReport {
            ranks: 64,
            cpus: (0..64).collect(),
            barrier: Barrier::Spin,
            work_ns: 1_000_000,
            noiseless_ns: 1_000_000,
            iterations: 9_876,
            min_ns: 1_000_000,
            mean_ns: 1_012_300.0,
            p99_ns: 1_020_100,
            max_ns: 1_025_000,
            excess_mean_ns: 12_300.0,
            excess_pct: 1.23,
            late_iterations: 9_000,
            blame: vec![BspBlame {
                class: Some(NoiseClass::Irq),
                name: "tick".into(),
                iterations: 9_000,
                excess_ns: 121_000_000,
            }],
            last_arrivals: vec![BspLastArrival {
                cpu: 7,
                iterations: 123,
            }],
        };
        insta::assert_snapshot!(bsp_lines(&b));
    }

    #[test]
    fn bsp_lines_of_a_host_run_snapshot() {
        // The host lab's ranks see their detours but not their sources (class unknown).
        let b = BspReport {
            ranks: 2,
            cpus: vec![0, 1],
            barrier: Barrier::Futex,
            work_ns: 100_000,
            noiseless_ns: 100_000,
            iterations: 20_000,
            min_ns: 100_100,
            mean_ns: 351_000.0,
            p99_ns: 4_007_900,
            max_ns: 5_439_000,
            excess_mean_ns: 251_000.0,
            excess_pct: 251.0,
            late_iterations: 19_997,
            blame: vec![
                BspBlame {
                    class: None,
                    name: "futex wake-up".into(),
                    iterations: 19_626,
                    excess_ns: 4_997_571_800,
                },
                BspBlame {
                    class: None,
                    name: "unknown: detours while computing".into(),
                    iterations: 371,
                    excess_ns: 21_459_600,
                },
            ],
            last_arrivals: vec![
                BspLastArrival {
                    cpu: 1,
                    iterations: 10_011,
                },
                BspLastArrival {
                    cpu: 0,
                    iterations: 9_986,
                },
            ],
        };
        b.check().unwrap();
        insta::assert_snapshot!(bsp_lines(&b));
    }
}

//! Latency histograms as `cyclictest -h` prints them, so its output and ticklab's can be put
//! side by side (or fed to the same plotting script).
//!
//! Layout of [`cyclictest_layout`] (one column per CPU, separated by a tab, shown as `<TAB>`;
//! every bucket row):
//!
//! ```text
//! # Histogram
//! 000000 000000<TAB>000012
//! 000001 000987<TAB>000975
//! ...
//! # Total: 000000999 000000999
//! # Min Latencies: 00000 00000
//! # Avg Latencies: 00001 00001
//! # Max Latencies: 00012 00014
//! # Max Latencies (exact us): 12.345 14.020
//! # Histogram Overflows: 00000 00001
//! # Histogram Overflow at cycle number:
//! # Thread 0:
//! # Thread 1: 00417
//! ```
//!
//! `# Total` counts the values in buckets (overflows excluded), as `cyclictest` does.
//! Min/Avg/Max are whole microseconds truncated, as there; ticklab adds one line,
//! `# Max Latencies (exact us)`, with the exact maximum the frame table shows.
//! [`frame_histograms`] prints a frame group's two histograms under a `#` title line each:
//! the wake-up latency first (the quantity `cyclictest -h` histograms), then the jitter,
//! after one line saying whether `/dev/cpu_dma_latency` was held, as cyclictest's first line
//! does (`# /dev/cpu_dma_latency set to 0us`).

use std::fmt::Write;
use ticklab_schema::histogram::LatencyHistogram;
use ticklab_schema::report::FrameGroupReport;

/// Renders histograms (one column per CPU) in the layout of `cyclictest -h` (module docs).
pub fn cyclictest_layout(columns: &[&LatencyHistogram]) -> String {
    let mut s = String::from("# Histogram\n");
    let rows = columns.iter().map(|h| h.max_us()).max().unwrap_or(0);
    for us in 0..rows {
        let _ = write!(s, "{us:06} ");
        let cells: Vec<String> = columns
            .iter()
            .map(|h| format!("{:06}", h.count(us)))
            .collect();
        s += &cells.join("\t");
        s.push('\n');
    }
    let line = |s: &mut String, name: &str, f: &dyn Fn(&LatencyHistogram) -> String| {
        let _ = write!(s, "# {name}:");
        for h in columns {
            let _ = write!(s, " {}", f(h));
        }
        s.push('\n');
    };
    // Whole microseconds, truncated toward zero; negative values (host only) show as 0.
    let whole_us = |ns: Option<f64>| (ns.unwrap_or(0.0).max(0.0) / 1e3) as u64;
    line(&mut s, "Total", &|h| {
        format!("{:09}", h.samples() - h.overflows())
    });
    line(&mut s, "Min Latencies", &|h| {
        format!("{:05}", whole_us(h.min_ns().map(|v| v as f64)))
    });
    line(&mut s, "Avg Latencies", &|h| {
        format!("{:05}", whole_us(h.mean_ns()))
    });
    line(&mut s, "Max Latencies", &|h| {
        format!("{:05}", whole_us(h.max_ns().map(|v| v as f64)))
    });
    line(&mut s, "Max Latencies (exact us)", &|h| {
        h.max_ns()
            .map_or("-".into(), |v| format!("{:.3}", v as f64 / 1e3))
    });
    line(&mut s, "Histogram Overflows", &|h| {
        format!("{:05}", h.overflows())
    });
    s += "# Histogram Overflow at cycle number:\n";
    for (i, h) in columns.iter().enumerate() {
        let _ = write!(s, "# Thread {i}:");
        for k in h.first_overflows() {
            let _ = write!(s, " {k:05}");
        }
        if h.overflows() > h.first_overflows().len() as u64 {
            let _ = write!(
                s,
                " # {:05} others",
                h.overflows() - h.first_overflows().len() as u64
            );
        }
        s.push('\n');
    }
    s
}

/// The line that says whether a PM QoS CPU latency limit was held: cyclictest's own
/// `# /dev/cpu_dma_latency set to 0us` when it was, else that it was not (so the cpuidle
/// governor could pick any idle state, however slow to leave).
pub fn cpu_dma_latency_line(cpu_dma_latency_us: Option<u32>) -> String {
    match cpu_dma_latency_us {
        Some(us) => format!("# /dev/cpu_dma_latency set to {us}us\n"),
        None => "# /dev/cpu_dma_latency not held: any idle state allowed (cyclictest holds it at 0; --cpu-dma-latency=0)\n".into(),
    }
}

/// A frame group's histograms (`--histogram`): the [`cpu_dma_latency_line`], then the
/// wake-up latency (what `cyclictest -h` measures: programmed start to running), then the
/// jitter, each in the `cyclictest -h` layout under a title naming the group and the CPU of
/// each column. Empty when the group kept none.
pub fn frame_histograms(g: &FrameGroupReport, cpu_dma_latency_us: Option<u32>) -> String {
    if g.histograms.is_empty() {
        return String::new();
    }
    let cpus: Vec<String> = g.histograms.iter().map(|h| h.cpu.to_string()).collect();
    let mut s = cpu_dma_latency_line(cpu_dma_latency_us);
    for (what, pick) in [
        (
            "wake-up latency",
            (|h| &h.wakeup) as fn(&ticklab_schema::histogram::CpuHistograms) -> &LatencyHistogram,
        ),
        ("jitter", |h| &h.jitter),
    ] {
        let _ = writeln!(
            s,
            "# {what} histogram of frame group {} (us; Thread i = CPU {})",
            g.group,
            cpus.join(", ")
        );
        let cols: Vec<&LatencyHistogram> = g.histograms.iter().map(pick).collect();
        s += &cyclictest_layout(&cols);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclictest_layout_rows_and_summary() {
        let mut a = LatencyHistogram::new(3);
        let mut b = LatencyHistogram::new(3);
        for (k, ns) in [500i64, 1_500, 1_700].into_iter().enumerate() {
            a.record(k as u64, ns);
        }
        for (k, ns) in [2_100i64, 9_000].into_iter().enumerate() {
            b.record(k as u64, ns);
        }
        let text = cyclictest_layout(&[&a, &b]);
        let want = "\
# Histogram
000000 000001\t000000
000001 000002\t000000
000002 000000\t000001
# Total: 000000003 000000001
# Min Latencies: 00000 00002
# Avg Latencies: 00001 00005
# Max Latencies: 00001 00009
# Max Latencies (exact us): 1.700 9.000
# Histogram Overflows: 00000 00001
# Histogram Overflow at cycle number:
# Thread 0:
# Thread 1: 00001
";
        assert_eq!(text, want);
    }

    #[test]
    fn cpu_dma_latency_line_says_whether_it_was_held() {
        assert_eq!(
            cpu_dma_latency_line(Some(0)),
            "# /dev/cpu_dma_latency set to 0us\n"
        );
        assert_eq!(
            cpu_dma_latency_line(Some(20)),
            "# /dev/cpu_dma_latency set to 20us\n"
        );
        assert!(cpu_dma_latency_line(None).contains("not held"));
    }
}

//! The frame-scheduler jitter table (docs/experiments.md E2), in its exact published layout.
//!
//! ```text
//! Cpu Frames Min Max(Frame) Avg Sigma Overruns(Last) Fliers(Frames)
//! 4   3456000 0.0159 5.98 (1957035) 0.1275 0.2979 0 (0) 0
//! ```
//!
//! Fields are separated by one space; the CPU number is left-aligned in three characters (so
//! one-digit CPUs are followed by three spaces, as in the example). Times are microseconds:
//!
//! * `Min`, `Avg`, `Sigma`: four decimals (`0.0159`), i.e. 0.1 ns resolution, enough to tell
//!   the small sub-microsecond values of an undisturbed CPU apart;
//! * `Max`: two decimals (`5.98`), since the worst case is read in microseconds;
//! * `Fliers(Frames)`: the count, then — when non-zero — the first five flier frame indices and,
//!   if there are more fliers than listed, `..` and the last index:
//!   `940 (2496,2497,36625,36626,45649,..3438632)`; `3 (10,11,12)`; `0`.
//!
//! A last line summarises the group: name, frequency, LOOP, flier threshold, the group
//! percentiles p50 / p99 (four decimals) and p99.9 (two decimals, a tail like `Max`), and
//! the host harness policy when known.
//!
//! Jitter counts from the moment the worker started running its frame; the wake-up latency
//! (programmed start → worker running) has its own table, [`wakeup_table`], printed after the
//! jitter table when the rows carry it:
//!
//! ```text
//! Wake-up latency (programmed frame start -> worker running), us
//! Cpu Min Max(Frame) Avg Sigma Overruns(Last) Fliers(Frames) MaxLockWait
//! 4   1.2031 6.41 (2041) 1.4402 0.3109 1 (2041) 2 (7,2041) 0.45
//! group A wake-up: p50 1.4200 us, p99 2.0100 us, p99.9 5.12 us
//! ```
//!
//! Its overruns are frames whose worker started running after the next frame's start, its
//! fliers frames woken more than the group's flier threshold late (the same threshold as
//! the jitter's). `MaxLockWait` is the CPU's longest wait for a shared lock or line in one kernel path (twin
//! only; `-` where not known).

use crate::format::fixed;
use ticklab_schema::report::{FrameGroupReport, FrameRow};

/// The header line, exactly as in docs/experiments.md E2.
pub const FRAME_HEADER: &str = "Cpu Frames Min Max(Frame) Avg Sigma Overruns(Last) Fliers(Frames)";

fn fliers(row: &FrameRow) -> String {
    flier_cell(row.fliers, &row.first_fliers, row.last_flier)
}

/// `940 (2496,2497,36625,36626,45649,..3438632)`, `3 (10,11,12)` or `0`.
fn flier_cell(count: u64, first: &[u64], last: Option<u64>) -> String {
    if count == 0 {
        return "0".to_string();
    }
    let mut list: Vec<String> = first.iter().take(5).map(u64::to_string).collect();
    if let Some(last) = last
        && count > list.len() as u64
        && !first.contains(&last)
    {
        list.push(format!("..{last}"));
    }
    format!("{count} ({})", list.join(","))
}

/// One row of the E2 table (no trailing newline).
pub fn frame_row(row: &FrameRow) -> String {
    format!(
        "{:<3} {} {} {} ({}) {} {} {} ({}) {}",
        row.cpu,
        row.frames,
        fixed(row.min_us, 4),
        fixed(row.max_us, 2),
        row.max_frame,
        fixed(row.avg_us, 4),
        fixed(row.sigma_us, 4),
        row.overruns,
        row.last_overrun,
        fliers(row)
    )
}

/// Header of the wake-up latency table.
pub const WAKEUP_HEADER: &str =
    "Cpu Min Max(Frame) Avg Sigma Overruns(Last) Fliers(Frames) MaxLockWait";

/// One row of the wake-up table (no trailing newline), `None` when the row has no wake-up.
pub fn wakeup_row(row: &FrameRow) -> Option<String> {
    let w = row.wakeup.as_ref()?;
    Some(format!(
        "{:<3} {} {} ({}) {} {} {} ({}) {} {}",
        row.cpu,
        fixed(w.min_us, 4),
        fixed(w.max_us, 2),
        w.max_frame,
        fixed(w.avg_us, 4),
        fixed(w.sigma_us, 4),
        w.overruns,
        w.last_overrun,
        flier_cell(w.fliers, &w.first_fliers, w.last_flier),
        row.max_lock_wait_us
            .map_or_else(|| "-".to_string(), |us| fixed(us, 2))
    ))
}

/// The wake-up latency table of a group (empty when no row carries wake-up latencies).
pub fn wakeup_table(g: &FrameGroupReport) -> String {
    let rows: Vec<String> = g.rows.iter().filter_map(wakeup_row).collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from("Wake-up latency (programmed frame start -> worker running), us\n");
    s.push_str(WAKEUP_HEADER);
    s.push('\n');
    for r in rows {
        s.push_str(&r);
        s.push('\n');
    }
    if let Some(p) = &g.wakeup {
        s.push_str(&format!(
            "group {} wake-up: p50 {} us, p99 {} us, p99.9 {} us\n",
            g.group,
            fixed(p.p50_us, 4),
            fixed(p.p99_us, 4),
            fixed(p.p999_us, 2)
        ));
    }
    s
}

/// The whole table for one group: header, one row per CPU in report order, summary line.
pub fn frame_table(g: &FrameGroupReport) -> String {
    let mut out = vec![FRAME_HEADER.to_string()];
    out.extend(g.rows.iter().map(frame_row));
    let mut summary = format!(
        "group {}: {} Hz, LOOP {}, fliers above {} us, {} CPUs: p50 {} us, p99 {} us, p99.9 {} us",
        g.group,
        fixed(g.frequency_hz, 3)
            .trim_end_matches('0')
            .trim_end_matches('.'),
        g.loop_units,
        fixed(g.flier_threshold_us, 3)
            .trim_end_matches('0')
            .trim_end_matches('.'),
        g.rows.len(),
        fixed(g.p50_us, 4),
        fixed(g.p99_us, 4),
        fixed(g.p999_us, 2),
    );
    if let Some(p) = &g.policy {
        summary.push_str(&format!(", policy {p}"));
    }
    out.push(summary);
    let mut s = out.join("\n");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e2_row() -> FrameRow {
        FrameRow {
            cpu: 4,
            frames: 3_456_000,
            min_us: 0.0159,
            max_us: 5.98,
            max_frame: 1_957_035,
            avg_us: 0.1275,
            sigma_us: 0.2979,
            overruns: 0,
            last_overrun: 0,
            fliers: 0,
            first_fliers: vec![],
            last_flier: None,
            wakeup: None,
            max_lock_wait_us: None,
        }
    }

    fn group() -> FrameGroupReport {
        let noisy = FrameRow {
            cpu: 17,
            min_us: 0.01234,
            max_us: 48.256,
            max_frame: 3_438_632,
            avg_us: 1.5,
            sigma_us: 3.04159,
            overruns: 2,
            last_overrun: 3_438_632,
            fliers: 940,
            first_fliers: vec![2496, 2497, 36625, 36626, 45649],
            last_flier: Some(3_438_632),
            ..e2_row()
        };
        let few = FrameRow {
            cpu: 23,
            max_us: 12.0,
            fliers: 3,
            first_fliers: vec![10, 11, 12],
            last_flier: Some(12),
            ..e2_row()
        };
        FrameGroupReport {
            jitter_histogram: None,
            group: "A".to_string(),
            frequency_hz: 960.0,
            loop_units: 50_000,
            flier_threshold_us: 10.0,
            rows: vec![e2_row(), noisy, few],
            p50_us: 0.0921,
            p99_us: 0.8312,
            p999_us: 9.876,
            policy: Some("SCHED_FIFO 50".to_string()),
            wakeup: None,
            histograms: Vec::new(),
        }
    }

    #[test]
    fn e2_example_row_is_reproduced_exactly() {
        assert_eq!(
            FRAME_HEADER,
            "Cpu Frames Min Max(Frame) Avg Sigma Overruns(Last) Fliers(Frames)"
        );
        assert_eq!(
            frame_row(&e2_row()),
            "4   3456000 0.0159 5.98 (1957035) 0.1275 0.2979 0 (0) 0"
        );
    }

    #[test]
    fn flier_lists() {
        let g = group();
        assert!(frame_row(&g.rows[1]).ends_with(" 940 (2496,2497,36625,36626,45649,..3438632)"));
        assert!(frame_row(&g.rows[2]).ends_with(" 3 (10,11,12)"));
        // More fliers than listed but the last one unknown: no `..` part.
        let r = FrameRow {
            fliers: 7,
            first_fliers: vec![1, 2, 3, 4, 5],
            last_flier: None,
            ..e2_row()
        };
        assert!(frame_row(&r).ends_with(" 7 (1,2,3,4,5)"));
        // Exactly five fliers: the last is already listed.
        let r = FrameRow {
            fliers: 5,
            first_fliers: vec![1, 2, 3, 4, 5],
            last_flier: Some(5),
            ..e2_row()
        };
        assert!(frame_row(&r).ends_with(" 5 (1,2,3,4,5)"));
        // Six fliers: five listed, then the sixth as the last.
        let r = FrameRow {
            fliers: 6,
            first_fliers: vec![1, 2, 3, 4, 5],
            last_flier: Some(9),
            ..e2_row()
        };
        assert!(frame_row(&r).ends_with(" 6 (1,2,3,4,5,..9)"));
    }

    #[test]
    fn wide_cpu_numbers_keep_single_space_separation() {
        let r = FrameRow {
            cpu: 63,
            ..e2_row()
        };
        assert!(frame_row(&r).starts_with("63  3456000 "));
        let r = FrameRow {
            cpu: 127,
            ..e2_row()
        };
        assert!(frame_row(&r).starts_with("127 3456000 "));
        let r = FrameRow {
            cpu: 1023,
            ..e2_row()
        };
        assert!(frame_row(&r).starts_with("1023 3456000 "));
    }

    #[test]
    fn wakeup_rows_follow_the_jitter_layout() {
        let mut g = group();
        assert_eq!(wakeup_table(&g), "");
        g.rows[0].wakeup = Some(ticklab_schema::report::WakeupRow {
            min_us: 1.20312,
            max_us: 6.409,
            max_frame: 2041,
            avg_us: 1.44021,
            sigma_us: 0.31094,
            overruns: 1,
            last_overrun: 2041,
            fliers: 2,
            first_fliers: vec![7, 2041],
            last_flier: Some(2041),
        });
        g.rows[0].max_lock_wait_us = Some(0.4512);
        g.wakeup = Some(ticklab_schema::report::Percentiles {
            p50_us: 1.42,
            p99_us: 2.01,
            p999_us: 5.123,
        });
        assert_eq!(
            wakeup_table(&g),
            "Wake-up latency (programmed frame start -> worker running), us\n\
             Cpu Min Max(Frame) Avg Sigma Overruns(Last) Fliers(Frames) MaxLockWait\n\
             4   1.2031 6.41 (2041) 1.4402 0.3109 1 (2041) 2 (7,2041) 0.45\n\
             group A wake-up: p50 1.4200 us, p99 2.0100 us, p99.9 5.12 us\n"
        );
        g.rows[0].max_lock_wait_us = None;
        assert!(
            wakeup_row(&g.rows[0])
                .unwrap()
                .ends_with(" 0.3109 1 (2041) 2 (7,2041) -")
        );
    }

    #[test]
    fn group_snapshot() {
        insta::assert_snapshot!(frame_table(&group()));
    }

    #[test]
    fn summary_without_policy() {
        let mut g = group();
        g.policy = None;
        g.frequency_hz = 666.0;
        let out = frame_table(&g);
        let last = out.lines().last().unwrap();
        assert_eq!(
            last,
            "group A: 666 Hz, LOOP 50000, fliers above 10 us, 3 CPUs: p50 0.0921 us, p99 0.8312 us, p99.9 9.88 us"
        );
    }
}

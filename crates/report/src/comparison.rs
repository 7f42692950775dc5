//! A measured run beside the twin's prediction ([`ticklab_schema::comparison`]): one table per
//! CPU, then one for the figures of the whole run, and a verdict line.
//!
//! ```text
//! CPU 1
//! +-----------------+----------+-----------+-------+---------+------------------+
//! | figure          | measured | predicted | ratio | verdict | band             |
//! +=============================================================================+
//! | LOC/s           |   1003.2 |    1010.0 | 1.007 | ok      | 20 % or 2.0      |
//! | tick stopped %  |        - |      80.7 |     - | -       | shown            |
//! ...
//! <n> of <m> compared figures inside their bands; misses: CPU 1 busy %, ...
//! ```
//!
//! Values: three significant decimals below 10, one decimal from there (`-` when a side has
//! none); the ratio is predicted ÷ measured with three decimals; the band is
//! `<rel> % or <abs>` (the wider wins), `shown` when the figure is not judged.

use crate::format::{MISSING, fixed, new_table, right_align_from};
use std::fmt::Write;
use ticklab_schema::comparison::{Band, Row, Verdict};
use ticklab_schema::report::Contamination;

pub(crate) fn value(v: Option<f64>) -> String {
    match v {
        Some(x) if x.abs() < 10.0 => fixed(x, 3),
        Some(x) => fixed(x, 1),
        None => MISSING.to_string(),
    }
}

pub(crate) fn band(b: Band) -> String {
    match b {
        Band::Within { rel, abs: 0.0 } => format!("{} %", fixed(rel * 100.0, 0)),
        Band::Within { rel: 0.0, abs } => fixed(abs, 1),
        Band::Within { rel, abs } => format!("{} % or {}", fixed(rel * 100.0, 0), fixed(abs, 1)),
        Band::Shown => "shown".to_string(),
    }
}

fn table(rows: &[&Row], contaminated: bool) -> String {
    let header = [
        "figure",
        "measured",
        "predicted",
        "ratio",
        "verdict",
        "band",
    ];
    let mut t = new_table(header.iter().map(|h| h.to_string()).collect());
    for r in rows {
        t.add_row(vec![
            r.figure.name(),
            value(r.measured),
            value(r.predicted),
            r.ratio().map_or(MISSING.to_string(), |x| fixed(x, 3)),
            match r.verdict() {
                // A miss on a contaminated CPU may be the other load's, not the model's.
                Verdict::Miss if contaminated => contaminated_verdict("miss"),
                v => v.word().to_string(),
            },
            band(r.band),
        ]);
    }
    // The numbers right-aligned; verdict and band read as words.
    right_align_from(&mut t, 1);
    for col in t.column_iter_mut().skip(4) {
        col.set_cell_alignment(comfy_table::CellAlignment::Left);
    }
    let mut s = t.to_string();
    s.push('\n');
    s
}

/// The comparison's text: a table per CPU (in CPU order of first appearance), then one for
/// the run's own figures, then the verdict line (module docs).
pub fn comparison_tables(rows: &[Row]) -> String {
    comparison_tables_beside(rows, &[])
}

/// [`comparison_tables`] of a measured run some of whose CPUs were contaminated (other load,
/// steal: [`ticklab_schema::report::Report::contamination`]): each such CPU's table is
/// headed by what contaminated it, its misses read `miss (contaminated)` (and the whole
/// run's, when any CPU was), and the verdict line names them.
pub fn comparison_tables_beside(rows: &[Row], contamination: &[Contamination]) -> String {
    let mut cpus: Vec<u32> = Vec::new();
    for r in rows {
        if let Some(c) = r.cpu
            && !cpus.contains(&c)
        {
            cpus.push(c);
        }
    }
    let mut s = String::new();
    for c in cpus {
        let why: Vec<String> = contamination
            .iter()
            .filter(|x| x.cpu() == c)
            .map(Contamination::text)
            .collect();
        if why.is_empty() {
            let _ = writeln!(s, "CPU {c}");
        } else {
            let _ = writeln!(s, "CPU {c} (contaminated: {})", why.join("; "));
        }
        let mine: Vec<&Row> = rows.iter().filter(|r| r.cpu == Some(c)).collect();
        s += &table(&mine, contamination.iter().any(|x| x.cpu() == c));
    }
    let run: Vec<&Row> = rows.iter().filter(|r| r.cpu.is_none()).collect();
    if !run.is_empty() {
        s += "whole run\n";
        s += &table(&run, !contamination.is_empty());
    }
    s += &verdict_line(rows);
    if let Some(line) = contamination_line(contamination) {
        s += &line;
        s.push('\n');
    }
    s
}

/// The verdict word of a miss on a contaminated CPU: `miss (contaminated)`. A miss there may
/// be the other load's, not the model's; `host run --twin` and `vm compare` mark it alike.
pub fn contaminated_verdict(word: &str) -> String {
    format!("{word} (contaminated)")
}

/// The line under a comparison naming its contaminated CPUs (`contaminated: CPU 1 (other
/// load or steal): their misses may be that load's, not the twin's`); `None` when none was.
pub fn contamination_line(contamination: &[Contamination]) -> Option<String> {
    if contamination.is_empty() {
        return None;
    }
    let mut cpus: Vec<u32> = contamination.iter().map(Contamination::cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let names: Vec<String> = cpus.iter().map(|c| format!("CPU {c}")).collect();
    Some(format!(
        "contaminated: {} (other load or steal): their misses may be that load's, not the twin's",
        names.join(", ")
    ))
}

/// `<n> of <m> compared figures inside their bands[; misses: <figure>, ...]`.
pub fn verdict_line(rows: &[Row]) -> String {
    let judged: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.verdict(), Verdict::Ok | Verdict::Miss))
        .collect();
    let misses: Vec<String> = judged
        .iter()
        .filter(|r| r.verdict() == Verdict::Miss)
        .map(|r| match r.cpu {
            Some(c) => format!("CPU {c} {}", r.figure.name()),
            None => r.figure.name(),
        })
        .collect();
    let mut s = format!(
        "{} of {} compared figures inside their bands",
        judged.len() - misses.len(),
        judged.len()
    );
    if !misses.is_empty() {
        let _ = write!(s, "; misses: {}", misses.join(", "));
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_host::comparison::{Bands, row};
    use ticklab_schema::comparison::Figure;

    #[test]
    fn comparison_tables_snapshot() {
        let rows = vec![
            row(Some(0), Figure::LocPerS, Some(4.1), Some(3.9), Bands::Host),
            row(
                Some(0),
                Figure::TickStoppedPct,
                None,
                Some(99.1),
                Bands::Host,
            ),
            row(Some(0), Figure::BusyPct, Some(0.4), Some(0.1), Bands::Host),
            row(
                Some(1),
                Figure::LocPerS,
                Some(65.8),
                Some(26.9),
                Bands::Host,
            ),
            row(
                Some(1),
                Figure::BusyPct,
                Some(32.5),
                Some(32.1),
                Bands::Host,
            ),
            row(
                Some(1),
                Figure::IdleStatePct {
                    state: "HLT".into(),
                },
                None,
                Some(66.0),
                Bands::Host,
            ),
            row(
                Some(1),
                Figure::WakeupUs { stat: "p99".into() },
                Some(21.5),
                Some(9.4),
                Bands::Host,
            ),
            row(
                None,
                Figure::SyscallNs,
                Some(163.4),
                Some(163.0),
                Bands::Host,
            ),
            row(Some(1), Figure::LocPerS, Some(50.0), Some(90.0), Bands::Vm),
        ];
        insta::assert_snapshot!(comparison_tables(&rows));
    }

    #[test]
    fn contaminated_cpus_are_named_beside_their_misses() {
        let rows = vec![
            row(Some(0), Figure::LocPerS, Some(4.1), Some(3.9), Bands::Host),
            row(Some(1), Figure::BusyPct, Some(99.9), Some(0.1), Bands::Host),
            row(
                None,
                Figure::SyscallNs,
                Some(400.0),
                Some(163.0),
                Bands::Host,
            ),
        ];
        let c = [Contamination::OtherLoad {
            cpu: 1,
            busy_pct: 99.9,
            explained_pct: 0.0,
        }];
        let text = comparison_tables_beside(&rows, &c);
        assert!(
            text.contains(
                "CPU 1 (contaminated: CPU 1 was 99.9 % busy where the workload explains 0.0 %"
            ),
            "{text}"
        );
        assert!(text.contains("CPU 0\n"), "{text}");
        assert_eq!(text.matches("miss (contaminated)").count(), 2, "{text}");
        assert!(
            text.contains("contaminated: CPU 1 (other load or steal)"),
            "{text}"
        );
        // Without contamination the text is the plain one.
        assert_eq!(
            comparison_tables_beside(&rows, &[]),
            comparison_tables(&rows)
        );
        assert!(!comparison_tables(&rows).contains("contaminated"));
    }
}

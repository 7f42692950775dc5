//! The table of `host calibrate --check-unseen` ([`ticklab_schema::unseen_check`]): one row
//! per figure of every load, then the in-band count with the control left out.
//!
//! ```text
//! +----------------+----------------------+----------+-----------+-------+-------------+---------+
//! | load           | figure               | measured | predicted | ratio | band        | verdict |
//! +===============================================================================================+
//! | idle (control) | CPU 0 LOC/s          |     52.5 |      44.0 | 0.838 | 20 % or 2.0 | ok      |
//! | frames 100 Hz  | CPU 1 wake-up p50 us |     89.0 |      37.0 | 0.416 | 20 %        | MISS    |
//! ...
//! unseen loads: 25 of 30 figures inside their bands (83 %), idle (control) not counted; calibration 30 s, each load 10 s
//! ```
//!
//! Values and bands are written as in [`crate::comparison`]; a miss on a CPU other load
//! contaminated reads `MISS (contaminated)`, and each contaminated load is named under the
//! table.

use std::fmt::Write;

use crate::comparison::{band, contaminated_verdict, value};
use crate::format::{MISSING, fixed, new_table, right_align_from};
use ticklab_schema::comparison::Verdict;
use ticklab_schema::unseen_check::UnseenCheck;

/// The check's text (module docs).
pub fn unseen_check_table(check: &UnseenCheck) -> String {
    let header = [
        "load",
        "figure",
        "measured",
        "predicted",
        "ratio",
        "band",
        "verdict",
    ];
    let mut t = new_table(header.iter().map(|h| h.to_string()).collect());
    for load in &check.loads {
        let name = if load.control {
            format!("{} (control)", load.name)
        } else {
            load.name.clone()
        };
        for r in &load.rows {
            let contaminated = match r.cpu {
                Some(c) => load.contamination.iter().any(|x| x.cpu() == c),
                None => !load.contamination.is_empty(),
            };
            let figure = match r.cpu {
                Some(c) => format!("CPU {c} {}", r.figure.name()),
                None => r.figure.name(),
            };
            let verdict = match r.verdict() {
                Verdict::Miss if contaminated => contaminated_verdict("MISS"),
                v => v.word().to_string(),
            };
            t.add_row(vec![
                name.clone(),
                figure,
                value(r.measured),
                value(r.predicted),
                r.ratio().map_or(MISSING.to_string(), |x| fixed(x, 3)),
                band(r.band),
                verdict,
            ]);
        }
    }
    right_align_from(&mut t, 2);
    for col in t.column_iter_mut().skip(5) {
        col.set_cell_alignment(comfy_table::CellAlignment::Left);
    }
    let mut s = t.to_string();
    s.push('\n');
    for load in check.loads.iter().filter(|l| !l.contamination.is_empty()) {
        let what: Vec<String> = load.contamination.iter().map(|c| c.text()).collect();
        let _ = writeln!(s, "contaminated: {}: {}", load.name, what.join("; "));
    }
    let n = check.in_band();
    let controls: Vec<String> = check
        .loads
        .iter()
        .filter(|l| l.control)
        .map(|l| format!("{} (control)", l.name))
        .collect();
    let _ = write!(
        s,
        "unseen loads: {} of {} figures inside their bands ({} %)",
        n.ok,
        n.judged,
        fixed(n.share() * 100.0, 0)
    );
    if !controls.is_empty() {
        let _ = write!(s, ", {} not counted", controls.join(", "));
    }
    let _ = writeln!(
        s,
        "; calibration {} s, each load {} s",
        fixed(check.calibrate_s, 0),
        fixed(check.load_s, 0)
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_host::comparison::{Bands, row};
    use ticklab_schema::comparison::Figure;
    use ticklab_schema::report::Contamination;
    use ticklab_schema::unseen_check::UnseenLoad;

    #[test]
    fn unseen_check_table_snapshot() {
        let check = UnseenCheck {
            calibrate_s: 30.0,
            load_s: 10.0,
            loads: vec![
                UnseenLoad {
                    name: "idle".into(),
                    spec: "idle".into(),
                    control: true,
                    rows: vec![row(
                        Some(0),
                        Figure::LocPerS,
                        Some(52.5),
                        Some(30.0),
                        Bands::Host,
                    )],
                    contamination: vec![],
                    measured_s: 10.0,
                },
                UnseenLoad {
                    name: "frames 100 Hz".into(),
                    spec: "frames:100@1:loop=1000".into(),
                    control: false,
                    rows: vec![
                        row(
                            Some(1),
                            Figure::WakeupUs { stat: "p50".into() },
                            Some(89.0),
                            Some(37.0),
                            Bands::Host,
                        ),
                        row(Some(1), Figure::BusyPct, Some(1.0), Some(1.5), Bands::Host),
                        row(
                            Some(1),
                            Figure::IdleEntriesPerS,
                            Some(120.0),
                            Some(110.0),
                            Bands::Host,
                        ),
                    ],
                    contamination: vec![Contamination::OtherLoad {
                        cpu: 1,
                        busy_pct: 30.0,
                        explained_pct: 1.0,
                    }],
                    measured_s: 10.0,
                },
                UnseenLoad {
                    name: "getpid beside a hog".into(),
                    spec: "syscall:getpid@0+hogs:1@1".into(),
                    control: false,
                    rows: vec![row(
                        None,
                        Figure::SyscallNs,
                        Some(144.0),
                        Some(150.0),
                        Bands::Host,
                    )],
                    contamination: vec![],
                    measured_s: 10.0,
                },
            ],
        };
        insta::assert_snapshot!(unseen_check_table(&check));
    }
}

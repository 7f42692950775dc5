//! `host calibrate`'s text: the scenario file it writes ([`scenario_file`]: a `#` comment
//! header with what the scenario has no field for — the raw measurements, wake-up latency, the
//! fit log, harness warnings — then the scenario's TOML, which `ticklab sim --scenario FILE`
//! loads; TOML comments are ignored), and the lines it prints on stderr: the steal over the
//! measure stage ([`steal_line`]), each fit-quality check ([`fit_lines`]) and the presets a
//! checked figure depends on ([`flagged_lines`]).
//!
//! The calibration itself (what was measured, fitted and checked) is `ticklab_host::calibrate`'s
//! typed result; nothing here computes, it only writes.

use ticklab_host::calibrate::{
    Calibration, CostSensitivity, FitCheck, Measurements, Move, NEEDED_REL, SensitivityVerdict,
    Step, ZERO_STEP_NS, sensitivity_summary,
};
use ticklab_schema::comparison::Verdict;

/// The scenario file: a `#` comment header (measurements, fit log) then the TOML.
pub fn scenario_file(c: &Calibration) -> String {
    let m = &c.measurements;
    let mut s = format!(
        "# ticklab host calibrate: {} ({}), {} CPUs, HZ={}\n",
        m.hostname, m.release, m.nr_cpus, m.hz
    );
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.1}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    s += &format!(
        "# idle {:.1} s: LOC/s per CPU [{}], busy fraction [{}]\n",
        m.idle_s,
        list(&m.idle_loc),
        m.idle_busy
            .iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    s += &format!("# {}\n", steal_line(m));
    s += &format!(
        "# one hog on CPU {}: LOC/s per CPU [{}]\n",
        m.hog_cpu,
        list(&m.hog_loc)
    );
    s += &format!(
        "# syscall getpid {:.1} ns; pipe round trip same CPU {:.0} ns, cross CPU {}\n",
        m.syscall_ns,
        m.same_cpu_rt_ns,
        m.cross_cpu_rt_ns
            .map_or("n/a (one CPU)".into(), |v| format!("{v:.0} ns"))
    );
    match &m.wakeup {
        Some(w) => {
            s += &format!(
                "# wake-up latency (frames 1 kHz, {} samples): min {:.1} us, median {:.1} us, p99 {:.1} us\n",
                w.samples, w.min_us, w.p50_us, w.p99_us
            )
        }
        None => s += "# wake-up latency: not measured\n",
    }
    if let Some(w) = &m.busy_wakeup {
        s += &format!(
            "# wake-up latency beside a hog on CPU {} ({} samples): min {:.1} us, p25 {:.2} us, median {:.2} us, p75 {:.2} us, p99 {:.1} us\n",
            m.hog_cpu, w.samples, w.min_us, w.p25_us, w.p50_us, w.p75_us, w.p99_us
        );
    }
    for n in &c.notes {
        s += &format!("# {n}\n");
    }
    for f in c.ledger.entries() {
        s += &format!("# fitted {}: {}\n", f.name, f.how);
    }
    for line in sensitivity_lines(c.ledger.entries().len(), &c.sensitivity) {
        s += &format!("# {line}\n");
    }
    for line in c.fit_quality.iter().flat_map(fit_lines) {
        s += &format!("# {line}\n");
    }
    for w in &m.warnings {
        s += &format!("# warning: {w}\n");
    }
    s += &c.scenario.to_toml();
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// `steal over the 58.3 s of measuring, % per CPU: CPU0 2.5 CPU1 3.1` (`-` where a CPU
/// was not read): the line `host calibrate` prints and writes into its file's header.
pub fn steal_line(m: &Measurements) -> String {
    let per_cpu: Vec<String> = m
        .steal_pct
        .iter()
        .enumerate()
        .map(|(c, v)| match v {
            Some(v) => format!("CPU{c} {v:.1}"),
            None => format!("CPU{c} -"),
        })
        .collect();
    format!(
        "steal over the {:.1} s of measuring, % per CPU: {}",
        m.measured_s,
        per_cpu.join(" ")
    )
}

/// A fit-quality check's comment lines of the scenario file's header (and of stderr): one per
/// row, `fit <phase>: [CPU n ]<figure> measured <m> twin <p> ratio <r> <verdict>`, a miss
/// marked `MISS (> 20 %)`.
pub fn fit_lines(c: &FitCheck) -> Vec<String> {
    if let Some(why) = &c.refused {
        return vec![format!("fit {}: not checked: {why}", c.phase)];
    }
    c.rows
        .iter()
        .map(|r| {
            let cpu = r.cpu.map_or(String::new(), |c| format!("CPU {c} "));
            let v = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
            let verdict = match r.verdict() {
                Verdict::Miss => "MISS (outside 20 %)",
                other => other.word(),
            };
            format!(
                "fit {}: {cpu}{} measured {} twin {} ratio {} {verdict}",
                c.phase,
                r.figure.name(),
                v(r.measured),
                v(r.predicted),
                r.ratio().map_or("-".to_string(), |x| format!("{x:.3}")),
            )
        })
        .collect()
}

/// A preset's line of the sensitivity test: `preset NAME = VALUE: NEEDED (...)` when a checked
/// figure depends on it, or how little it moved (`ticklab_host::calibrate`'s sensitivity
/// module docs).
pub fn preset_line(s: &CostSensitivity) -> String {
    let value = s.value.map_or_else(|| "?".to_string(), |v| format!("{v}"));
    let head = format!("preset {} = {value}", s.name);
    let how = if s.trials.iter().any(|t| t.step == Step::RaisedFromZero) {
        format!("when raised from 0 to {ZERO_STEP_NS} (0 cannot be doubled or halved)")
    } else {
        "when doubled or halved".to_string()
    };
    let mut line = match s.verdict() {
        SensitivityVerdict::Needed(t, m) => format!(
            "{head}: NEEDED ({} moves {} by {}), not measured here",
            gerund(t.step),
            what(m),
            pct(m.rel())
        ),
        SensitivityVerdict::NotNeeded(None) => format!("{head}: no checked figure moves {how}"),
        SensitivityVerdict::NotNeeded(Some((t, m))) if m.rel().abs() > NEEDED_REL => format!(
            "{head}: no checked figure moves past its threshold {how} (largest: {} by {} when {}, {:+.2} in all, under its threshold {:.2})",
            what(m),
            pct(m.rel()),
            participle(t.step),
            m.moved - m.base,
            m.threshold()
        ),
        SensitivityVerdict::NotNeeded(Some((t, m))) => {
            // Rounded up, so that "no more than" stays true of the printed figure.
            let up = (m.rel().abs() * 1000.0).ceil() / 10.0;
            format!(
                "{head}: no checked figure moves by more than {up:.1} % {how} (largest: {} by {} when {})",
                what(m),
                pct(m.rel()),
                participle(t.step)
            )
        }
        SensitivityVerdict::NotTested(why) => format!("{head}: not tested: {why}"),
    };
    let refused: Vec<&str> = s
        .trials
        .iter()
        .flat_map(|t| t.refused.iter().map(String::as_str))
        .collect();
    if !refused.is_empty() && !matches!(s.verdict(), SensitivityVerdict::NotTested(_)) {
        line += &format!("; the varied twin refused {}", refused.join("; "));
    }
    line
}

/// The verb of the flagged line (`doubling`).
fn gerund(step: Step) -> String {
    match step {
        Step::Doubled => "doubling".into(),
        Step::Halved => "halving".into(),
        Step::RaisedFromZero => format!("raising it from 0 to {ZERO_STEP_NS}"),
    }
}

/// `CPU 0 wake-up p50 us in frames:1000@0:loop=0`.
fn what(m: &Move) -> String {
    let cpu = m.cpu.map_or(String::new(), |c| format!("CPU {c} "));
    format!("{cpu}{} in {}", m.figure.name(), m.phase)
}

fn participle(s: Step) -> &'static str {
    match s {
        Step::Doubled => "doubled",
        Step::Halved => "halved",
        Step::RaisedFromZero => "raised",
    }
}

/// `+6.1 %`; a change under 0.05 % with three decimals (`-0.004 %`), so that it does not
/// read as no change.
fn pct(rel: f64) -> String {
    if !rel.is_finite() {
        "from 0".to_string()
    } else if (rel * 100.0).abs() < 0.05 {
        format!("{:+.3} %", rel * 100.0)
    } else {
        format!("{:+.1} %", rel * 100.0)
    }
}

/// The sensitivity test's header lines: one per preset, then the summary
/// ([`sensitivity_summary`], the line `host calibrate`'s progress ends with).
pub fn sensitivity_lines(fitted: usize, sens: &[CostSensitivity]) -> Vec<String> {
    let mut out: Vec<String> = sens.iter().map(preset_line).collect();
    out.push(sensitivity_summary(fitted, sens));
    out
}

/// The flagged lines (stderr): the needed presets, then the summary.
pub fn flagged_lines(fitted: usize, sens: &[CostSensitivity]) -> Vec<String> {
    let mut out: Vec<String> = sens
        .iter()
        .filter(|s| s.needed())
        .map(preset_line)
        .collect();
    out.push(sensitivity_summary(fitted, sens));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_host::calibrate::Trial;
    use ticklab_host::comparison::{Bands, row};
    use ticklab_schema::comparison::Figure;

    #[test]
    fn steal_line_per_cpu() {
        // (steal per CPU, window s, expected)
        let cases = [
            (
                vec![Some(0.0), Some(2.46)],
                58.34,
                "steal over the 58.3 s of measuring, % per CPU: CPU0 0.0 CPU1 2.5",
            ),
            (
                vec![None, Some(12.0)],
                20.0,
                "steal over the 20.0 s of measuring, % per CPU: CPU0 - CPU1 12.0",
            ),
        ];
        for (steal, secs, want) in cases {
            let m = Measurements {
                steal_pct: steal,
                measured_s: secs,
                ..Measurements::default()
            };
            assert_eq!(steal_line(&m), want);
        }
    }

    #[test]
    fn a_miss_above_twenty_percent_is_flagged_and_a_refused_check_says_why() {
        // The case: CPU 0 at 26.8 LOC/s in the twin against 65.8 measured.
        let hog = FitCheck {
            phase: "hogs:1@1".into(),
            rows: vec![
                row(
                    Some(0),
                    Figure::LocPerS,
                    Some(65.8),
                    Some(26.8),
                    Bands::Host,
                ),
                row(
                    Some(1),
                    Figure::LocPerS,
                    Some(262.0),
                    Some(258.0),
                    Bands::Host,
                ),
            ],
            refused: None,
        };
        assert_eq!(
            fit_lines(&hog),
            [
                "fit hogs:1@1: CPU 0 LOC/s measured 65.80 twin 26.80 ratio 0.407 MISS (outside 20 %)",
                "fit hogs:1@1: CPU 1 LOC/s measured 262.00 twin 258.00 ratio 0.985 ok",
            ]
        );
        let refused = FitCheck {
            phase: "syscall:getpid@0:n=1000000".into(),
            rows: Vec::new(),
            refused: Some("not modelled".into()),
        };
        assert_eq!(
            fit_lines(&refused),
            ["fit syscall:getpid@0:n=1000000: not checked: not modelled"]
        );
    }

    fn mv(phase: &str, cpu: u32, base: f64, moved: f64) -> Move {
        Move {
            phase: phase.into(),
            cpu: Some(cpu),
            figure: Figure::LocPerS,
            base,
            moved,
        }
    }

    fn trial(step: Step, value: f64, moves: Vec<Move>, refused: &[&str]) -> Trial {
        Trial {
            step,
            value,
            moves,
            refused: refused.iter().map(|r| r.to_string()).collect(),
        }
    }

    fn preset(name: &str, value: f64, trials: Vec<Trial>) -> CostSensitivity {
        CostSensitivity {
            name: name.into(),
            value: Some(value),
            trials,
            refused: None,
        }
    }

    /// One preset of each kind of line, as the sensitivity test gives them.
    fn presets() -> Vec<CostSensitivity> {
        let doubled_halved = |name: &str, value: f64, doubled: Vec<Move>| {
            preset(
                name,
                value,
                vec![
                    trial(Step::Doubled, value * 2.0, doubled, &[]),
                    trial(Step::Halved, value / 2.0, Vec::new(), &[]),
                ],
            )
        };
        vec![
            // +9.1 %, past a quarter of the 20 % band.
            doubled_halved(
                "costs.tick_handler_ns",
                1000.0,
                vec![mv("hogs:1@1", 1, 275.0, 300.0)],
            ),
            // +0.27 %, under the 5 % that counts.
            doubled_halved(
                "costs.jiffies_update_ns",
                300.0,
                vec![mv("hogs:1@1", 1, 300.0, 300.8)],
            ),
            // +8.3 %, but 0.30 LOC/s is under a quarter of the 2 LOC/s floor.
            doubled_halved("costs.wheel_timer_ns", 300.0, vec![mv("idle", 1, 3.6, 3.9)]),
            doubled_halved("costs.rcu_node_hold_ns", 150.0, Vec::new()),
            preset(
                "costs.cacheline_remote_ns",
                0.0,
                vec![trial(Step::RaisedFromZero, ZERO_STEP_NS, Vec::new(), &[])],
            ),
            preset(
                "costs.tick_stop_ns",
                500.0,
                vec![
                    trial(
                        Step::Doubled,
                        1000.0,
                        Vec::new(),
                        &["idle: tick_stop_ns out of range"],
                    ),
                    trial(
                        Step::Halved,
                        250.0,
                        Vec::new(),
                        &["idle: tick_stop_ns out of range"],
                    ),
                ],
            ),
        ]
    }

    #[test]
    fn preset_lines_say_what_moved_and_by_how_much() {
        let sens = presets();
        let lines: Vec<String> = sens.iter().map(preset_line).collect();
        assert_eq!(
            lines,
            [
                "preset costs.tick_handler_ns = 1000: NEEDED (doubling moves CPU 1 LOC/s in hogs:1@1 by +9.1 %), not measured here",
                "preset costs.jiffies_update_ns = 300: no checked figure moves by more than 0.3 % when doubled or halved (largest: CPU 1 LOC/s in hogs:1@1 by +0.3 % when doubled)",
                "preset costs.wheel_timer_ns = 300: no checked figure moves past its threshold when doubled or halved (largest: CPU 1 LOC/s in idle by +8.3 % when doubled, +0.30 in all, under its threshold 0.50)",
                "preset costs.rcu_node_hold_ns = 150: no checked figure moves when doubled or halved",
                "preset costs.cacheline_remote_ns = 0: no checked figure moves when raised from 0 to 1000 (0 cannot be doubled or halved)",
                "preset costs.tick_stop_ns = 500: not tested: idle: tick_stop_ns out of range",
            ]
        );
        let summary = sensitivity_summary(4, &sens);
        assert_eq!(
            summary,
            "costs: 4 fitted, 6 preset (1 of them needed by a checked figure: costs.tick_handler_ns; 1 not tested)"
        );
        assert_eq!(flagged_lines(4, &sens), [lines[0].clone(), summary.clone()]);
        let all = sensitivity_lines(4, &sens);
        assert_eq!(all.len(), sens.len() + 1);
        assert_eq!(all[..sens.len()], lines[..]);
        assert_eq!(all.last(), Some(&summary));
    }

    #[test]
    fn a_refusal_beside_a_move_is_named_and_small_changes_keep_their_digits() {
        let mut s = preset(
            "costs.timer_wheel_ns",
            200.0,
            vec![trial(
                Step::Doubled,
                400.0,
                vec![mv("idle", 0, 4.0, 4.6)],
                &["frames:1000@0:loop=0: no wake-up p50 us"],
            )],
        );
        assert_eq!(
            preset_line(&s),
            "preset costs.timer_wheel_ns = 200: NEEDED (doubling moves CPU 0 LOC/s in idle by +15.0 %), not measured here; the varied twin refused frames:1000@0:loop=0: no wake-up p50 us"
        );
        s.value = None;
        assert!(preset_line(&s).starts_with("preset costs.timer_wheel_ns = ?: "));
        let rel = |base: f64, moved: f64| mv("idle", 0, base, moved).rel();
        assert_eq!(pct(rel(200.0, 212.2)), "+6.1 %");
        assert_eq!(pct(rel(1000.0, 999.96)), "-0.004 %");
        assert_eq!(pct(rel(0.0, 1.0)), "from 0");
    }
}

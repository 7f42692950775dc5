//! Which of the costs calibration did not fit the twin needs: each preset varied in the twin
//! with every fit-quality figure re-run.
//!
//! # Method
//!
//! `host calibrate` fits the costs its phases can measure ([`super::ledger`]); every other
//! cost of `[machine.costs]` (and each idle state's exit latency and target residency) keeps
//! the `kvm-guest` preset's estimate. Whether that matters is a question for the twin: for
//! each preset, the fitted scenario is simulated again with that one cost **doubled** and
//! again with it **halved**, and every figure the fit-quality check compares with a
//! measurement ([`super::fit_quality::twin_checks`]: idle and one-hog LOC/s per CPU, getpid
//! ns/call, the pipe ping-pongs, the frame worker's wake-up p50 / p99) is set beside the same
//! figure of the unmodified twin. A cost at 0 cannot be doubled or halved: it is raised to
//! [`ZERO_STEP_NS`] instead, and the line says so.
//!
//! # Verdict
//!
//! A preset is **needed** when one of its two variations moves some figure by more than a
//! quarter of that figure's fit-quality band ([`NEEDED_SHARE_OF_BAND`]): by more than 5 % of
//! the unmodified twin's value (a quarter of the 20 % miss), and, for a LOC/s figure, by more
//! than 0.5 LOC/s (a quarter of the 2 LOC/s floor, so that a quiet CPU's one extra interrupt
//! in the window does not count). A needed preset is a cost the twin's answers depend on and
//! this host's calibration did not measure: it is flagged. Any other preset is listed with
//! the largest change it caused, which figure, and by how much.
//!
//! # Windows
//!
//! The runs are shorter than the fit's ([`SENSITIVITY_WINDOWS`]: idle 20 s, one hog 5 s, each
//! cost check 2 s of simulated time), and both sides of every comparison use the same
//! window. The twin is deterministic, so a change between the two runs is the cost's doing,
//! not sampling noise; it may still be a change of timing that moves one interrupt from one
//! side of the window's end to the other, which is what the LOC/s floor is for.

use serde::Serialize;
use ticklab_schema::comparison::{Band, Figure};
use ticklab_schema::scenario::Scenario;

use super::fit_quality::{FitCheck, twin_checks};
use super::ledger::{self, CostLedger};
use super::measurements::Measurements;
use super::specs::{Simulator, Windows};
use crate::comparison::{Bands, HOST_TOLERANCE};

/// A change counts when it exceeds this share of the figure's fit-quality band. A quarter: a
/// preset that is off by a factor of two and moves a figure by that much uses up a good part
/// of the room before a miss, while smaller moves are lost among the fit's other errors. It is
/// the 5 % the question was posed with (a quarter of the 20 % band), carried over to the
/// bands' absolute floors.
pub(crate) const NEEDED_SHARE_OF_BAND: f64 = 0.25;

/// The relative move that makes a preset needed: 5 %, a quarter of the 20 % band.
pub const NEEDED_REL: f64 = NEEDED_SHARE_OF_BAND * HOST_TOLERANCE;

/// The value tried for a preset at 0, which doubling and halving would leave at 0: 1 µs, the
/// order of what one guest kernel path that costs anything costs here (the preset's interrupt
/// entry and exit is 2 µs, a deadline-timer write 1.5 µs: docs/costs.md).
pub const ZERO_STEP_NS: f64 = 1000.0;

/// The simulated windows of the sensitivity runs (module docs).
pub(crate) const SENSITIVITY_WINDOWS: Windows = Windows {
    idle_ns: 20_000_000_000,
    hog_ns: 5_000_000_000,
    check_ns: 2_000_000_000,
};

/// How a preset was varied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Twice the preset.
    Doubled,
    /// Half the preset (an integer cost rounds down).
    Halved,
    /// A preset at 0 raised to `ZERO_STEP_NS`.
    RaisedFromZero,
}

/// One figure of one check that a variation moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Move {
    /// The check (`idle`, `frames:1000@0:loop=0`).
    pub phase: String,
    /// The CPU, or `None` for a figure of the whole run.
    pub cpu: Option<u32>,
    /// Which figure.
    pub figure: Figure,
    /// The unmodified twin's value.
    pub base: f64,
    /// The varied twin's value.
    pub moved: f64,
}

impl Move {
    /// `(moved − base) / |base|`: infinite when a figure at 0 moved.
    pub fn rel(&self) -> f64 {
        let d = self.moved - self.base;
        if self.base != 0.0 {
            d / self.base.abs()
        } else if d == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(d)
        }
    }

    /// The least absolute change that counts: a quarter of the figure's fit-quality band
    /// around the unmodified twin's value (module docs).
    pub fn threshold(&self) -> f64 {
        NEEDED_SHARE_OF_BAND
            * match Bands::Host.band(&self.figure, self.base) {
                Band::Within { rel, abs } => (rel * self.base.abs()).max(abs),
                Band::Shown => HOST_TOLERANCE * self.base.abs(),
            }
    }

    /// Whether this change makes the cost needed.
    pub fn counts(&self) -> bool {
        (self.moved - self.base).abs() > self.threshold()
    }
}

/// One variation of one preset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trial {
    /// How the preset was varied.
    pub step: Step,
    /// The value simulated.
    pub value: f64,
    /// Every figure that moved, in check order.
    pub moves: Vec<Move>,
    /// Checks (or figures) the varied twin could not give, with why (`phase: reason`).
    pub refused: Vec<String>,
}

/// One preset cost and what varying it did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostSensitivity {
    /// Path below `[machine]` (`ledger::cost_names`).
    pub name: String,
    /// The preset value (`None`: unreadable, then `trials` is empty and `refused` says why).
    pub value: Option<f64>,
    /// Doubled and halved, or raised from 0.
    pub trials: Vec<Trial>,
    /// Why the cost could not be varied at all.
    pub refused: Option<String>,
}

/// What the sensitivity says about one preset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict<'a> {
    /// Some figure moved by more than its threshold: the largest such move.
    Needed(&'a Trial, &'a Move),
    /// Nothing moved past its threshold: the largest relative move, if anything moved.
    NotNeeded(Option<(&'a Trial, &'a Move)>),
    /// Not simulated: why.
    NotTested(&'a str),
}

impl CostSensitivity {
    /// The verdict (module docs).
    pub fn verdict(&self) -> Verdict<'_> {
        if let Some(why) = &self.refused {
            return Verdict::NotTested(why);
        }
        let all = || {
            self.trials
                .iter()
                .flat_map(|t| t.moves.iter().map(move |m| (t, m)))
        };
        let by_size =
            |a: &(&Trial, &Move), b: &(&Trial, &Move)| a.1.rel().abs().total_cmp(&b.1.rel().abs());
        if let Some((t, m)) = all().filter(|(_, m)| m.counts()).max_by(by_size) {
            return Verdict::Needed(t, m);
        }
        if self.trials.iter().all(|t| t.moves.is_empty())
            && let Some(why) = self.trials.iter().find_map(|t| t.refused.first())
        {
            return Verdict::NotTested(why);
        }
        Verdict::NotNeeded(all().max_by(by_size))
    }

    /// Whether a checked figure depends on this preset.
    pub fn needed(&self) -> bool {
        matches!(self.verdict(), Verdict::Needed(..))
    }
}

/// `costs: N fitted, M preset (K of them needed by a checked figure: a, b)`: the progress
/// line the sensitivity test ends with, and the last of its lines in the scenario file.
pub fn summary(fitted: usize, sens: &[CostSensitivity]) -> String {
    let needed: Vec<&str> = sens
        .iter()
        .filter(|s| s.needed())
        .map(|s| s.name.as_str())
        .collect();
    let untested = sens
        .iter()
        .filter(|s| matches!(s.verdict(), Verdict::NotTested(_)))
        .count();
    let mut s = format!("costs: {fitted} fitted, {} preset (", sens.len());
    if needed.is_empty() {
        s += "none of them needed by a checked figure";
    } else {
        s += &format!(
            "{} of them needed by a checked figure: {}",
            needed.len(),
            needed.join(", ")
        );
    }
    if untested > 0 {
        s += &format!("; {untested} not tested");
    }
    s.push(')');
    s
}

/// The figures of `trial` that differ from `base`'s, and what the trial could not give.
fn compare(base: &[FitCheck], trial: &[FitCheck]) -> (Vec<Move>, Vec<String>) {
    let mut moves = Vec::new();
    let mut refused = Vec::new();
    for (b, t) in base.iter().zip(trial) {
        debug_assert_eq!(b.phase, t.phase, "the same checks in the same order");
        if b.refused.is_some() {
            continue;
        }
        if let Some(why) = &t.refused {
            refused.push(format!("{}: {why}", t.phase));
            continue;
        }
        for (rb, rt) in b.rows.iter().zip(&t.rows) {
            match (rb.predicted, rt.predicted) {
                (Some(x), Some(y)) if x != y => moves.push(Move {
                    phase: b.phase.clone(),
                    cpu: rb.cpu,
                    figure: rb.figure.clone(),
                    base: x,
                    moved: y,
                }),
                (Some(_), None) => {
                    refused.push(format!("{}: no {}", t.phase, rb.figure.name()));
                }
                _ => {}
            }
        }
    }
    (moves, refused)
}

/// The steps tried for a preset at `value`, with the value each simulates.
fn steps(value: f64) -> Vec<(Step, f64)> {
    if value == 0.0 {
        return vec![(Step::RaisedFromZero, ZERO_STEP_NS)];
    }
    let half = if value.fract() == 0.0 {
        (value / 2.0).floor()
    } else {
        value / 2.0
    };
    vec![(Step::Doubled, value * 2.0), (Step::Halved, half)]
}

/// Every preset of `ledger` on `fitted`'s machine, doubled and halved in the twin (module
/// docs), in [`ledger::cost_names`] order.
pub(crate) fn sensitivity(
    m: &Measurements,
    fitted: &Scenario,
    ledger: &CostLedger,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Vec<CostSensitivity> {
    let presets = ledger.presets(&fitted.machine);
    let w = &SENSITIVITY_WINDOWS;
    progress(&format!(
        "sensitivity: {} presets, each doubled and halved, every check re-run (idle {} s, one hog {} s, cost checks {} s simulated)",
        presets.len(),
        w.idle_ns / 1_000_000_000,
        w.hog_ns / 1_000_000_000,
        w.check_ns / 1_000_000_000
    ));
    let base = twin_checks(m, fitted, w, sim, &mut |_| {});
    let out: Vec<CostSensitivity> = presets
        .into_iter()
        .map(|name| {
            let value = match ledger::get(&fitted.machine, &name) {
                Ok(v) => v,
                Err(e) => {
                    return CostSensitivity {
                        name,
                        value: None,
                        trials: Vec::new(),
                        refused: Some(e.to_string()),
                    };
                }
            };
            let trials = steps(value)
                .into_iter()
                .map(|(step, v)| {
                    let mut s = fitted.clone();
                    if let Err(e) = ledger::set(&mut s.machine, &name, v) {
                        return Trial {
                            step,
                            value: v,
                            moves: Vec::new(),
                            refused: vec![e.to_string()],
                        };
                    }
                    let value = ledger::get(&s.machine, &name).unwrap_or(v);
                    let (moves, refused) = compare(&base, &twin_checks(m, &s, w, sim, &mut |_| {}));
                    Trial {
                        step,
                        value,
                        moves,
                        refused,
                    }
                })
                .collect();
            CostSensitivity {
                name,
                value: Some(value),
                trials,
                refused: None,
            }
        })
        .collect();
    progress(&summary(ledger.entries().len(), &out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::error::SimulatorError;
    use crate::calibrate::fit_quality::tests::{fake_twin, measured, scenario};
    use ticklab_schema::machine::Machine;

    fn mv(figure: Figure, base: f64, moved: f64) -> Move {
        Move {
            phase: "idle".into(),
            cpu: Some(0),
            figure,
            base,
            moved,
        }
    }

    #[test]
    fn a_change_counts_above_a_quarter_of_the_figures_band() {
        // (figure, unmodified, varied, counts)
        let cases = [
            (Figure::LocPerS, 4.0, 4.4, false), // +10 %, but 0.4 LOC/s is under 0.5
            (Figure::LocPerS, 4.0, 4.6, true),
            (Figure::LocPerS, 280.0, 294.0, false), // exactly 5 %
            (Figure::LocPerS, 280.0, 305.0, true),
            (Figure::WakeupUs { stat: "p50".into() }, 10.0, 10.4, false),
            (Figure::WakeupUs { stat: "p50".into() }, 10.0, 9.4, true),
            (Figure::SyscallNs, 0.0, 1.0, true),
            (Figure::BusyPct, 1.0, 1.4, false), // under a quarter of the 2-point floor
        ];
        for (figure, base, moved, counts) in cases {
            let m = mv(figure.clone(), base, moved);
            assert_eq!(m.counts(), counts, "{figure:?} {base} -> {moved}");
        }
        assert_eq!(mv(Figure::SyscallNs, 0.0, 1.0).rel(), f64::INFINITY);
    }

    #[test]
    fn steps_double_and_halve_and_raise_zero() {
        assert_eq!(
            steps(500.0),
            [(Step::Doubled, 1000.0), (Step::Halved, 250.0)]
        );
        assert_eq!(steps(5.0), [(Step::Doubled, 10.0), (Step::Halved, 2.0)]);
        assert_eq!(steps(6.5), [(Step::Doubled, 13.0), (Step::Halved, 3.25)]);
        assert_eq!(steps(0.0), [(Step::RaisedFromZero, ZERO_STEP_NS)]);
    }

    /// The fake twin's LOC/s scale: the tick handler's cost moves every CPU's rate by up to
    /// 9 % when doubled; the wheel timer's only the idle CPUs', by well under 0.5 LOC/s; the
    /// jiffies update's by a fraction of a per cent; nothing else.
    fn scale(mach: &Machine) -> f64 {
        let c = &mach.costs;
        1.0 + c.tick_handler_ns as f64 / 10_000.0 + c.jiffies_update_ns as f64 / 100_000.0
    }

    #[test]
    // Over 100 lines because it builds one fake twin with every figure and walks each cost through it;
    // the cases share the fake's state.
    fn a_cost_that_moves_a_figure_is_needed_and_one_that_does_not_is_not() {
        let m = measured();
        let mut s = scenario();
        // One preset at 0, which cannot be doubled or halved.
        s.machine.costs.cacheline_remote_ns = 0;
        let mut ledger = CostLedger::new();
        for fitted in [
            "costs.syscall_ns",
            "costs.context_switch_ns",
            "costs.ipi_ns",
            "costs.work_unit_ns",
        ] {
            ledger.fitted(fitted, "measured");
        }
        let twin = |x: &Scenario| {
            let mut r = fake_twin(x, &scale)?;
            // Wheel timers add to the idle CPUs only (not to the hog's CPU 1).
            let hog = x.workload.label().starts_with("hogs");
            let extra = x.machine.costs.wheel_timer_ns as f64 / 1000.0;
            let secs = x.run.duration_ns as f64 / 1e9;
            for c in &mut r.cpus {
                if !(hog && c.cpu == 1) {
                    c.loc += (extra * secs).round() as u64;
                }
            }
            Ok(r)
        };
        let mut progress = Vec::new();
        let sens = sensitivity(&m, &s, &ledger, &twin, &mut |l| {
            progress.push(l.to_string())
        });
        assert_eq!(sens.len(), ledger.presets(&s.machine).len());
        let verdict = |name: &str| {
            sens.iter()
                .find(|x| x.name == name)
                .unwrap_or_else(|| panic!("{name} missing"))
                .verdict()
        };
        // The move a line names: the step, the phase, the CPU, the figure, and the relative
        // change in tenths of a per cent (as the line rounds it).
        let named = |t: &Trial, m: &Move| {
            let tenths = (m.rel() * 1000.0).round() as i64;
            (t.step, m.phase.clone(), m.cpu, m.figure.clone(), tenths)
        };
        let hog_loc = |step, tenths| {
            (
                step,
                "hogs:1@1".to_string(),
                Some(1),
                Figure::LocPerS,
                tenths,
            )
        };
        match verdict("costs.tick_handler_ns") {
            Verdict::Needed(t, m) => assert_eq!(named(t, m), hog_loc(Step::Doubled, 91)),
            v => panic!("{v:?}"),
        }
        match verdict("costs.jiffies_update_ns") {
            Verdict::NotNeeded(Some((t, m))) => {
                assert_eq!(named(t, m), hog_loc(Step::Doubled, 3));
                assert!(m.rel().abs() <= NEEDED_REL, "{m:?}");
            }
            v => panic!("{v:?}"),
        }
        match verdict("costs.wheel_timer_ns") {
            Verdict::NotNeeded(Some((t, m))) => {
                let idle_loc = (
                    Step::Doubled,
                    "idle".to_string(),
                    Some(1),
                    Figure::LocPerS,
                    83,
                );
                assert_eq!(named(t, m), idle_loc);
                assert!(m.rel().abs() > NEEDED_REL, "{m:?}");
                assert_eq!(((m.moved - m.base) * 100.0).round(), 30.0, "{m:?}");
                assert_eq!(m.threshold(), 0.5);
            }
            v => panic!("{v:?}"),
        }
        let steps_of = |name: &str| -> Vec<Step> {
            let c = sens.iter().find(|x| x.name == name);
            c.map(|c| c.trials.iter().map(|t| t.step).collect())
                .unwrap_or_default()
        };
        assert_eq!(verdict("costs.rcu_node_hold_ns"), Verdict::NotNeeded(None));
        assert_eq!(
            steps_of("costs.rcu_node_hold_ns"),
            [Step::Doubled, Step::Halved]
        );
        assert_eq!(
            verdict("costs.cacheline_remote_ns"),
            Verdict::NotNeeded(None)
        );
        assert_eq!(
            steps_of("costs.cacheline_remote_ns"),
            [Step::RaisedFromZero]
        );
        let needed: Vec<&str> = sens
            .iter()
            .filter(|x| x.needed())
            .map(|x| x.name.as_str())
            .collect();
        assert_eq!(needed, ["costs.tick_handler_ns"]);
        let summary = format!(
            "costs: 4 fitted, {} preset (1 of them needed by a checked figure: costs.tick_handler_ns)",
            sens.len()
        );
        assert_eq!(super::summary(4, &sens), summary);
        // Progress: what runs, then the summary.
        assert!(progress[0].starts_with("sensitivity: "), "{progress:?}");
        assert_eq!(progress.last(), Some(&summary));
    }

    #[test]
    fn a_cost_the_twin_refuses_to_vary_is_not_tested() {
        let m = measured();
        let s = scenario();
        let ledger = CostLedger::new();
        let twin = |x: &Scenario| {
            if x.machine.costs.tick_stop_ns != s.machine.costs.tick_stop_ns {
                return Err(SimulatorError::new("tick_stop_ns out of range"));
            }
            fake_twin(x, &|_| 1.0)
        };
        let sens = sensitivity(&m, &s, &ledger, &twin, &mut |_| {});
        let x = sens
            .iter()
            .find(|x| x.name == "costs.tick_stop_ns")
            .unwrap();
        assert_eq!(x.value, Some(500.0));
        assert_eq!(
            x.verdict(),
            Verdict::NotTested("idle: tick_stop_ns out of range")
        );
        // The fake's ping-pong is two switches and four syscalls: with nothing fitted, those
        // two costs are needed presets.
        assert_eq!(
            summary(0, &sens),
            format!(
                "costs: 0 fitted, {} preset (2 of them needed by a checked figure: costs.context_switch_ns, costs.syscall_ns; 1 not tested)",
                sens.len()
            )
        );
    }
}

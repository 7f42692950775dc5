//! The package energy meter.
//!
//! Power is piecewise constant between state changes, so the meter integrates exactly: every
//! time a CPU starts or stops executing, or changes idle state, the elapsed interval is added
//! to integer time integrals of the state that held during it (core-nanoseconds executing,
//! nanowatt-nanoseconds of idle cores, nanoseconds per package state) and exits are counted;
//! joules are computed from those integrals once, when the totals are asked for.
//!
//! The model (values and provenance in `ticklab_schema::machine`):
//! * a core with a thread executing (task, interrupt or POLL spinning) draws `core_active_w`,
//!   plus `smt_extra_w` with both threads executing;
//! * an idle core rests in the shallowest state of its threads and draws that state's
//!   `core_w`, or `core_w_pkg_active` while another core executes (shared voltage plane);
//! * the package draws `package_active_w` while any core executes; otherwise the deepest
//!   package state whose `min_core_state` every core satisfies, or `package_idle_w`;
//! * leaving a core state costs its `wake_energy_uj`; leaving a package state its
//!   `exit_energy_uj`.
//!
//! Changes are scheduled with [`EnergyMeter::set`] at the instant they happen, which may lie a
//! few microseconds after the engine's current event (an interrupt handler's end, the end of a
//! C-state exit), and applied in time order by [`EnergyMeter::apply_until`] as the engine's
//! clock passes them. Only a few changes are pending at any time (a C-state exit and the next
//! idle entry per busy CPU, most a few microseconds ahead), so they wait in one deque sorted by
//! time: a new change is nearly always the latest and is appended, and the earliest leaves
//! from the front.
//!
//! Changes of several CPUs at the same instant are common (ticks without skew fire on every CPU
//! at once). Applied one by one they can pass a core or the package through a state that lasts
//! zero nanoseconds, and which one depends on the order the CPUs were listed in; such a state
//! is charged nothing and its exit costs nothing, so the totals do not depend on that order.

use crate::engine::Time;
use std::collections::VecDeque;
use ticklab_schema::machine::Machine;

/// What one logical CPU is doing, as far as power is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activity {
    /// Executing instructions (task, interrupt handler, or spinning in POLL).
    Executing,
    /// Resting in this idle-state index (the state the hardware actually entered).
    Idle(u8),
}

const EXECUTING: u8 = u8::MAX;

/// A power in whole nanowatts (the meter's idle-core sums are exact integers).
fn watts_to_nw(w: f64) -> u64 {
    assert!(
        w.is_finite() && w >= 0.0,
        "idle-state power {w} W: expected finite and >= 0"
    );
    (w * 1e9).round() as u64
}

/// Joules by component.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct EnergyTotals {
    /// Uncore/package.
    pub package_j: f64,
    /// Cores executing.
    pub core_active_j: f64,
    /// Cores idle.
    pub core_idle_j: f64,
    /// Core and package exits.
    pub wake_j: f64,
    /// Time every core was idle at once (ns).
    pub package_idle_ns: u64,
    /// Time integrated (ns).
    pub measured_ns: u64,
}

/// Integrates package energy over simulated time.
#[derive(Debug, Clone)]
pub(crate) struct EnergyMeter {
    core_active_w: f64,
    smt_extra_w: f64,
    package_active_w: f64,
    package_idle_w: f64,
    /// Per idle state, the energy of a core leaving it (J).
    wake_j: Vec<f64>,
    /// Per package C-state: (power W, exit energy J).
    pkg_states: Vec<(f64, f64)>,
    /// Per logical CPU.
    threads: Vec<ThreadState>,
    /// Per core.
    cores: Vec<CoreState>,
    /// The threads of core `k` are `core_threads[k * threads_per_core..][..threads_per_core]`.
    core_threads: Vec<u32>,
    threads_per_core: usize,
    /// For each shallowest idle core state, the deepest package state it allows (`NO_PC`:
    /// none).
    pkg_state_for: Vec<usize>,
    /// Idle cores per idle state.
    idle_cores_in: Vec<u32>,
    /// Bit `s` set ⇔ `idle_cores_in[s] > 0`.
    idle_mask: u64,
    /// Per idle state, a core's draw in nW with the package idle and with it active.
    state_nw: Vec<(u64, u64)>,
    /// Draw of all idle cores in nW, with the package idle and with it active. Invariant:
    /// `Σ idle_cores_in[s] × state_nw[s]`, kept exactly as cores enter and leave states.
    idle_nw: (u64, u64),
    active_cores: u32,
    smt_busy_cores: u32,
    /// Current package state: `PKG_ACTIVE`, `NO_PC` (all idle, no package C-state), or a
    /// package C-state index.
    pkg_state: usize,
    /// When the package entered `pkg_state`.
    pkg_since: Time,
    /// Time integrated up to.
    last: Time,
    /// Integrals since the window started.
    acc: Integrals,
    /// Changes scheduled but not applied: `(time, cpu, code)`, sorted by time; changes at the
    /// same time keep the order they were scheduled in.
    pending: VecDeque<(Time, u32, u8)>,
}

/// `EnergyMeter::pkg_state` while a core executes.
const PKG_ACTIVE: usize = usize::MAX;
/// `EnergyMeter::pkg_state` with every core idle but no package C-state allowed.
const NO_PC: usize = usize::MAX - 1;

/// Exact integrals of the machine's state over the measured window.
#[derive(Debug, Clone, Default)]
struct Integrals {
    /// Σ executing cores × dt (core-ns).
    active_core_ns: u64,
    /// Σ cores with both threads executing × dt.
    smt_core_ns: u64,
    /// Σ idle-core draw × dt (nW·ns).
    idle_nw_ns: u128,
    /// Time with a core executing, with all idle and no package C-state, and per package
    /// C-state (ns).
    pkg_active_ns: u64,
    pkg_idle_ns: u64,
    pkg_state_ns: Vec<u64>,
    /// Core exits per idle state, package exits per package C-state.
    core_exits: Vec<u64>,
    pkg_exits: Vec<u64>,
    measured_ns: u64,
}

/// One logical CPU as the meter sees it.
#[derive(Debug, Clone, Copy)]
struct ThreadState {
    /// Current activity code (`EXECUTING` or an idle-state index).
    code: u8,
    /// The code once every pending change is applied.
    scheduled: u8,
    core: u32,
}

/// One core.
#[derive(Debug, Clone, Copy)]
struct CoreState {
    /// Threads executing.
    busy: u8,
    /// `EXECUTING`, or the shallowest idle state of its threads.
    state: u8,
    /// When it entered `state`.
    since: Time,
}

impl EnergyMeter {
    /// A meter for `machine` with every CPU executing at time 0 (boot).
    pub(crate) fn new(machine: &Machine) -> Self {
        let topo = machine.topology;
        let n = topo.nr_cpus() as usize;
        let cores = topo.nr_cores() as usize;
        let p = &machine.power;
        let threads_per_core = topo.threads_per_core as usize;
        assert!(
            machine.idle_states.len() <= 64,
            "{} idle states: the energy meter tracks at most 64",
            machine.idle_states.len()
        );
        EnergyMeter {
            core_active_w: p.core_active_w,
            smt_extra_w: p.smt_extra_w,
            package_active_w: p.package_active_w,
            package_idle_w: p.package_idle_w,
            wake_j: machine
                .idle_states
                .iter()
                .map(|s| s.wake_energy_uj * 1e-6)
                .collect(),
            pkg_states: p
                .package_states
                .iter()
                .map(|s| (s.power_w, s.exit_energy_uj * 1e-6))
                .collect(),
            threads: (0..n as u32)
                .map(|c| ThreadState {
                    code: EXECUTING,
                    scheduled: EXECUTING,
                    core: topo.core_of(c),
                })
                .collect(),
            cores: vec![
                CoreState {
                    busy: threads_per_core as u8,
                    state: EXECUTING,
                    since: 0,
                };
                cores
            ],
            core_threads: (0..cores as u32)
                .flat_map(|c| topo.threads_of_core(c))
                .collect(),
            threads_per_core,
            pkg_state_for: (0..machine.idle_states.len())
                .map(|shallowest| {
                    p.package_states
                        .iter()
                        .rposition(|s| s.min_core_state <= shallowest)
                        .unwrap_or(NO_PC)
                })
                .collect(),
            idle_cores_in: vec![0; machine.idle_states.len()],
            idle_mask: 0,
            state_nw: machine
                .idle_states
                .iter()
                .map(|s| (watts_to_nw(s.core_w), watts_to_nw(s.core_w_pkg_active)))
                .collect(),
            idle_nw: (0, 0),
            active_cores: cores as u32,
            smt_busy_cores: if threads_per_core >= 2 {
                cores as u32
            } else {
                0
            },
            pkg_state: PKG_ACTIVE,
            pkg_since: 0,
            last: 0,
            acc: Integrals::new(machine.idle_states.len(), p.package_states.len()),
            // A CPU has at most a C-state exit and the following idle entry pending at once.
            pending: VecDeque::with_capacity(4 * n),
        }
    }

    /// Starts (or restarts) the measured window at `now`, discarding what came before.
    pub(crate) fn start_window(&mut self, now: Time) {
        self.apply_until(now);
        self.charge(now);
        self.acc = Integrals::new(self.wake_j.len(), self.pkg_states.len());
    }

    /// Charges up to `now` and returns the totals of the window.
    pub(crate) fn finish(&mut self, now: Time) -> EnergyTotals {
        self.apply_until(now);
        self.charge(now);
        let a = &self.acc;
        let secs = |ns: u64| ns as f64 * 1e-9;
        let pc_j: f64 = a
            .pkg_state_ns
            .iter()
            .zip(&self.pkg_states)
            .map(|(&ns, &(w, _))| secs(ns) * w)
            .sum();
        let exits_j: f64 = a
            .core_exits
            .iter()
            .zip(&self.wake_j)
            .map(|(&n, &j)| n as f64 * j)
            .sum::<f64>()
            + a.pkg_exits
                .iter()
                .zip(&self.pkg_states)
                .map(|(&n, &(_, j))| n as f64 * j)
                .sum::<f64>();
        EnergyTotals {
            package_j: secs(a.pkg_active_ns) * self.package_active_w
                + secs(a.pkg_idle_ns) * self.package_idle_w
                + pc_j,
            core_active_j: secs(a.active_core_ns) * self.core_active_w
                + secs(a.smt_core_ns) * self.smt_extra_w,
            core_idle_j: a.idle_nw_ns as f64 * 1e-18,
            wake_j: exits_j,
            package_idle_ns: a.measured_ns - a.pkg_active_ns,
            measured_ns: a.measured_ns,
        }
    }

    /// Adds the interval since the last change to the integrals.
    #[inline]
    fn charge(&mut self, now: Time) {
        // Invariant: changes are applied in time order (apply_until), so time never goes back.
        debug_assert!(now >= self.last, "energy meter time went backwards");
        let dt = now.saturating_sub(self.last);
        if dt == 0 {
            return;
        }
        self.last = now;
        let a = &mut self.acc;
        a.measured_ns += dt;
        a.active_core_ns += u64::from(self.active_cores) * dt;
        a.smt_core_ns += u64::from(self.smt_busy_cores) * dt;
        let idle_nw = match self.pkg_state {
            PKG_ACTIVE => {
                a.pkg_active_ns += dt;
                self.idle_nw.1
            }
            NO_PC => {
                a.pkg_idle_ns += dt;
                self.idle_nw.0
            }
            pc => {
                a.pkg_state_ns[pc] += dt;
                self.idle_nw.0
            }
        };
        a.idle_nw_ns += u128::from(idle_nw) * u128::from(dt);
    }

    /// Schedules CPU `cpu`'s change of activity at `at` (applied once the clock passes it).
    ///
    /// A change that would land before the last applied instant is moved up to it.
    #[inline]
    pub(crate) fn set(&mut self, cpu: usize, at: Time, activity: Activity) {
        let code = match activity {
            Activity::Executing => EXECUTING,
            Activity::Idle(s) => s,
        };
        let thread = &mut self.threads[cpu];
        if thread.scheduled == code {
            return; // once the pending changes are applied this one would change nothing
        }
        thread.scheduled = code;
        let at = at.max(self.last);
        // Insertion from the back: the new change is almost always the latest. Changes of
        // one CPU are scheduled in time order, so this keeps each CPU's changes in order.
        let q = &mut self.pending;
        if q.back().is_none_or(|&(t, _, _)| t <= at) {
            q.push_back((at, cpu as u32, code));
            return;
        }
        let pos = q
            .iter()
            .rposition(|&(t, _, _)| t <= at)
            .map_or(0, |p| p + 1);
        q.insert(pos, (at, cpu as u32, code));
    }

    /// Applies every scheduled change at or before `now`, in time order.
    #[inline]
    pub(crate) fn apply_until(&mut self, now: Time) {
        while let Some(&(t, cpu, code)) = self.pending.front() {
            if t > now {
                break;
            }
            self.pending.pop_front();
            self.apply(t, cpu as usize, code);
        }
    }

    /// Applies one thread's change at `t`, then its core's and the package's consequences.
    fn apply(&mut self, t: Time, cpu: usize, code: u8) {
        let old = self.threads[cpu].code;
        if old == code {
            return;
        }
        self.charge(t);
        self.threads[cpu].code = code;
        let k = self.threads[cpu].core as usize;
        let core = &mut self.cores[k];
        if old == EXECUTING {
            core.busy -= 1;
            if core.busy == 1 {
                self.smt_busy_cores -= 1;
            }
        }
        if code == EXECUTING {
            core.busy += 1;
            if core.busy == 2 {
                self.smt_busy_cores += 1;
            }
        }
        if self.update_core(k, t) {
            self.update_package(t);
        }
    }

    /// Re-evaluates core `k`'s state from its threads at `t`; returns whether it changed.
    fn update_core(&mut self, k: usize, t: Time) -> bool {
        let core = self.cores[k];
        let was = core.state;
        let now_state = if core.busy > 0 {
            EXECUTING
        } else {
            let n = self.threads_per_core;
            self.core_threads[k * n..][..n]
                .iter()
                .map(|&c| self.threads[c as usize].code)
                .min()
                .unwrap_or(0)
        };
        if now_state == was {
            return false;
        }
        self.cores[k].state = now_state;
        self.cores[k].since = t;
        if was == EXECUTING {
            self.active_cores -= 1;
        } else {
            let s = was as usize;
            self.idle_cores_in[s] -= 1;
            if self.idle_cores_in[s] == 0 {
                self.idle_mask &= !(1 << s);
            }
            let (w_idle, w_busy) = self.state_nw[s];
            self.idle_nw.0 -= w_idle;
            self.idle_nw.1 -= w_busy;
            // Leaving a deeper state for a shallower one or for execution costs its exit,
            // unless the state lasted no time at all (see the module note).
            if (now_state == EXECUTING || now_state < was) && core.since < t {
                self.acc.core_exits[s] += 1;
            }
        }
        if now_state == EXECUTING {
            self.active_cores += 1;
        } else {
            let s = now_state as usize;
            self.idle_cores_in[s] += 1;
            self.idle_mask |= 1 << s;
            let (w_idle, w_busy) = self.state_nw[s];
            self.idle_nw.0 += w_idle;
            self.idle_nw.1 += w_busy;
        }
        true
    }

    fn update_package(&mut self, t: Time) {
        let new = if self.active_cores > 0 {
            PKG_ACTIVE
        } else {
            self.pkg_state_for[self.idle_mask.trailing_zeros() as usize]
        };
        let old = self.pkg_state;
        if new == old {
            return;
        }
        // Leaving a package C-state for activity, for none or for a shallower one costs its
        // exit, unless it lasted no time at all.
        if old < NO_PC && (new >= NO_PC || new < old) && self.pkg_since < t {
            self.acc.pkg_exits[old] += 1;
        }
        self.pkg_state = new;
        self.pkg_since = t;
    }
}

impl Integrals {
    fn new(idle_states: usize, pkg_states: usize) -> Integrals {
        Integrals {
            pkg_state_ns: vec![0; pkg_states],
            core_exits: vec![0; idle_states],
            pkg_exits: vec![0; pkg_states],
            ..Integrals::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_schema::machine::xps13_7390;

    fn watts(t: &EnergyTotals) -> f64 {
        (t.package_j + t.core_active_j + t.core_idle_j + t.wake_j) / (t.measured_ns as f64 * 1e-9)
    }

    #[test]
    fn all_idle_deep_reaches_the_deepest_package_state() {
        let m = xps13_7390();
        let mut e = EnergyMeter::new(&m);
        for c in 0..8 {
            e.set(c, 0, Activity::Idle(8));
        }
        e.start_window(0);
        let t = e.finish(1_000_000_000);
        let pc10 = m.power.package_states.last().unwrap().power_w;
        assert!((watts(&t) - pc10).abs() < 1e-9, "{}", watts(&t));
        assert_eq!(t.package_idle_ns, 1_000_000_000);
    }

    #[test]
    fn one_shallow_core_holds_the_package_up() {
        let m = xps13_7390();
        let mut e = EnergyMeter::new(&m);
        for c in 0..8 {
            e.set(c, 0, Activity::Idle(8));
        }
        e.set(0, 0, Activity::Idle(1)); // C1: below every package state's requirement
        e.start_window(0);
        let t = e.finish(1_000_000_000);
        let want = m.power.package_idle_w + m.idle_states[1].core_w;
        assert!((watts(&t) - want).abs() < 1e-9);
    }

    #[test]
    fn simultaneous_changes_do_not_depend_on_their_order() {
        // CPU 0 wakes and CPU 1 goes idle at the same instant, everything else sleeps deep.
        // Applied one by one in the order 1, 0 the package would pass through a zero-length
        // package C-state and be charged its exit energy; as a batch it never leaves active.
        let m = xps13_7390();
        let run = |order: [usize; 2]| {
            let mut e = EnergyMeter::new(&m);
            for c in 0..8 {
                e.set(c, 0, Activity::Idle(8));
            }
            e.set(1, 0, Activity::Executing);
            e.start_window(0);
            for c in order {
                let act = if c == 0 {
                    Activity::Executing
                } else {
                    Activity::Idle(8)
                };
                e.set(c, 500_000_000, act);
            }
            e.finish(1_000_000_000)
        };
        let a = run([0, 1]);
        let b = run([1, 0]);
        assert_eq!(a, b);
        let p = &m.power;
        // Only CPU 0's own core exit is charged (CPU 0 and 1 are different cores here).
        assert!((a.wake_j - m.idle_states[8].wake_energy_uj * 1e-6).abs() < 1e-12);
        assert_eq!(a.package_idle_ns, 0);
        assert!((a.package_j - p.package_active_w).abs() < 1e-9);
    }

    #[test]
    fn a_cpus_changes_apply_in_the_order_scheduled() {
        let m = xps13_7390();
        let mut e = EnergyMeter::new(&m);
        e.start_window(0);
        // Two changes of CPU 3 pending at once, the second undoing the first.
        e.set(3, 100, Activity::Idle(1));
        e.set(3, 200, Activity::Executing);
        e.apply_until(150);
        assert_eq!(e.threads[3].code, 1);
        e.apply_until(200);
        assert_eq!(e.threads[3].code, EXECUTING);
        assert!(e.pending.is_empty());
        // A change equal to what is already scheduled is dropped.
        e.set(3, 300, Activity::Executing);
        assert!(e.pending.is_empty());
    }

    #[test]
    fn smt_and_wake_energy_are_counted() {
        // Everything sleeps in the deepest state from 0; at 1 ms the two threads of core 1
        // (CPUs 1 and 5) wake and run to the end: one core exit and one package exit.
        let m = xps13_7390();
        let mut e = EnergyMeter::new(&m);
        for c in 0..8 {
            e.set(c, 0, Activity::Idle(8));
        }
        e.start_window(0);
        e.set(1, 1_000_000, Activity::Executing);
        e.set(5, 1_000_000, Activity::Executing);
        let t = e.finish(1_000_000_000);
        let p = &m.power;
        let pc10 = p.package_states.last().unwrap();
        let wake = (m.idle_states[8].wake_energy_uj + pc10.exit_energy_uj) * 1e-6;
        assert!((t.wake_j - wake).abs() < 1e-15, "{} vs {wake}", t.wake_j);
        let want_j = 0.999 * (p.package_active_w + p.core_active_w + p.smt_extra_w)
            + 0.001 * (pc10.power_w + 4.0 * m.idle_states[8].core_w)
            + 0.999 * 3.0 * m.idle_states[8].core_w_pkg_active
            + wake;
        assert!(
            (watts(&t) - want_j).abs() < 1e-9,
            "{} vs {want_j}",
            watts(&t)
        );
        assert_eq!(t.package_idle_ns, 1_000_000);
    }

    #[test]
    fn a_state_that_lasts_no_time_costs_no_exit() {
        // All idle deep at 0 and awake again at 0: nothing was ever left.
        let m = xps13_7390();
        let mut e = EnergyMeter::new(&m);
        e.start_window(0);
        for c in 0..8 {
            e.set(c, 0, Activity::Idle(8));
        }
        e.set(1, 0, Activity::Executing);
        let t = e.finish(1_000);
        assert_eq!(t.wake_j, 0.0);
    }
}

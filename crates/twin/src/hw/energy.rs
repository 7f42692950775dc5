//! The package energy meter.
//!
//! Power is piecewise constant between state changes, so the meter integrates exactly: every
//! time a CPU starts or stops executing, or changes idle state, the elapsed interval is charged
//! at the power that held during it and the new power is computed from counts.
//!
//! The model (values and provenance in `ticklab_spec::machine`):
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
//! Changes of several CPUs at the same instant are applied as one batch: every thread changes
//! first, then the cores and the package are re-evaluated once. Simultaneous changes are common
//! (ticks without skew fire on every CPU at once), and applying them one by one would let a
//! core or the package pass through a zero-length state whose exit energy depends on the order
//! in which the CPUs happened to be listed.

use crate::engine::Time;
use std::collections::VecDeque;
use ticklab_spec::machine::Machine;

/// What one logical CPU is doing, as far as power is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
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
pub struct EnergyTotals {
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
pub struct EnergyMeter {
    core_active_w: f64,
    smt_extra_w: f64,
    package_active_w: f64,
    package_idle_w: f64,
    /// Per idle state, the energy of a core leaving it (J).
    wake_j: Vec<f64>,
    pkg_states: Vec<(u8, f64, f64)>,
    /// Per logical CPU.
    threads: Vec<ThreadState>,
    /// Per core.
    cores: Vec<CoreState>,
    /// The threads of core `k` are `core_threads[k * threads_per_core..][..threads_per_core]`.
    core_threads: Vec<u32>,
    threads_per_core: usize,
    /// For each shallowest idle core state, the deepest package state it allows (`usize::MAX`:
    /// none).
    pkg_state_for: Vec<usize>,
    /// Bit `s` set ⇔ `idle_cores_in[s] > 0` (invariant kept by `update_core`).
    idle_mask: u64,
    idle_cores_in: Vec<u32>,
    active_cores: u32,
    smt_busy_cores: u32,
    /// Current package state: `None` active, `Some(usize::MAX)` idle without a PC state.
    pkg_state: Option<usize>,
    /// Per idle state, a core's draw in nW with the package idle and with it active.
    state_nw: Vec<(u64, u64)>,
    /// Draw of all idle cores in nW, with the package idle and with it active: integer sums
    /// kept exactly as cores enter and leave states (invariant: equal to
    /// `Σ idle_cores_in[s] × state_nw[s]`), so charging needs no scan of the states.
    idle_nw: (u64, u64),
    last: Time,
    measuring: bool,
    totals: EnergyTotals,
    /// Changes scheduled but not applied: `(time, cpu, code)`, sorted by time; changes at the
    /// same time keep the order they were scheduled in.
    pending: VecDeque<(Time, u32, u8)>,
    /// Cores touched by the batch being applied (each also has `CoreState::dirty` set).
    dirty_cores: Vec<u32>,
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
    /// Touched by the batch being applied.
    dirty: bool,
}

impl EnergyMeter {
    /// A meter for `machine` with every CPU executing at time 0 (boot).
    pub fn new(machine: &Machine) -> Self {
        let topo = machine.topology;
        let n = topo.nr_cpus() as usize;
        let cores = topo.nr_cores() as usize;
        let p = &machine.power;
        let threads_per_core = topo.threads_per_core as usize;
        let core_threads: Vec<u32> = (0..cores as u32)
            .flat_map(|c| topo.threads_of_core(c))
            .collect();
        let smt_busy_cores = if threads_per_core >= 2 {
            cores as u32
        } else {
            0
        };
        assert!(
            machine.idle_states.len() <= 64,
            "{} idle states: the energy meter tracks at most 64",
            machine.idle_states.len()
        );
        let pkg_state_for = (0..machine.idle_states.len())
            .map(|shallowest| {
                p.package_states
                    .iter()
                    .rposition(|s| s.min_core_state <= shallowest)
                    .unwrap_or(usize::MAX)
            })
            .collect();
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
                .map(|s| (s.min_core_state as u8, s.power_w, s.exit_energy_uj * 1e-6))
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
                    dirty: false,
                };
                cores
            ],
            core_threads,
            threads_per_core,
            pkg_state_for,
            idle_mask: 0,
            idle_cores_in: vec![0; machine.idle_states.len()],
            active_cores: cores as u32,
            smt_busy_cores,
            pkg_state: None,
            state_nw: machine
                .idle_states
                .iter()
                .map(|s| (watts_to_nw(s.core_w), watts_to_nw(s.core_w_pkg_active)))
                .collect(),
            idle_nw: (0, 0),
            last: 0,
            measuring: false,
            totals: EnergyTotals::default(),
            // A CPU has at most a C-state exit and the following idle entry pending at once.
            pending: VecDeque::with_capacity(4 * n),
            dirty_cores: Vec::with_capacity(cores),
        }
    }

    /// Starts (or restarts) the measured window at `now`, discarding what came before.
    pub fn start_window(&mut self, now: Time) {
        self.apply_until(now);
        self.charge(now);
        self.totals = EnergyTotals::default();
        self.measuring = true;
    }

    /// Charges up to `now` and returns the totals.
    pub fn finish(&mut self, now: Time) -> EnergyTotals {
        self.apply_until(now);
        self.charge(now);
        self.totals
    }

    fn charge(&mut self, now: Time) {
        // Invariant: changes are applied in time order (apply_until), so time never goes back.
        debug_assert!(now >= self.last, "energy meter time went backwards");
        let dt = now.saturating_sub(self.last);
        self.last = now;
        if !self.measuring || dt == 0 {
            return;
        }
        let secs = dt as f64 * 1e-9;
        let pkg_busy = self.active_cores > 0;
        let pkg_w = match self.pkg_state {
            None => self.package_active_w,
            Some(usize::MAX) => self.package_idle_w,
            Some(i) => self.pkg_states[i].1,
        };
        let idle_nw = if pkg_busy {
            self.idle_nw.1
        } else {
            self.idle_nw.0
        };
        let active_w = self.active_cores as f64 * self.core_active_w
            + self.smt_busy_cores as f64 * self.smt_extra_w;
        self.totals.package_j += pkg_w * secs;
        self.totals.core_active_j += active_w * secs;
        self.totals.core_idle_j += idle_nw as f64 * 1e-9 * secs;
        self.totals.measured_ns += dt;
        if !pkg_busy {
            self.totals.package_idle_ns += dt;
        }
    }

    /// Schedules CPU `cpu`'s change of activity at `at` (applied once the clock passes it).
    ///
    /// A change that would land before the last applied instant is moved up to it.
    #[inline]
    pub fn set(&mut self, cpu: usize, at: Time, activity: Activity) {
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

    /// Applies every scheduled change at or before `now`, in time order; changes at the same
    /// instant as one batch.
    #[inline]
    pub fn apply_until(&mut self, now: Time) {
        while let Some(&(t, _, _)) = self.pending.front() {
            if t > now {
                break;
            }
            self.apply_batch(t);
        }
    }

    /// Applies every change scheduled at `t` (the earliest pending instant).
    fn apply_batch(&mut self, t: Time) {
        self.charge(t);
        while let Some(&(at, cpu, code)) = self.pending.front() {
            if at != t {
                break;
            }
            self.pending.pop_front();
            self.set_thread(cpu as usize, code);
        }
        if self.dirty_cores.is_empty() {
            return; // every change in the batch was undone within it
        }
        let mut cores_changed = false;
        while let Some(core) = self.dirty_cores.pop() {
            cores_changed |= self.update_core(core as usize);
        }
        if cores_changed {
            self.update_package();
        }
    }

    /// Sets one thread's activity and marks its core for re-evaluation.
    fn set_thread(&mut self, cpu: usize, code: u8) {
        let thread = &mut self.threads[cpu];
        let old = thread.code;
        if old == code {
            return;
        }
        thread.code = code;
        let k = thread.core;
        let core = &mut self.cores[k as usize];
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
        if !core.dirty {
            core.dirty = true;
            self.dirty_cores.push(k);
        }
    }

    /// Re-evaluates a core's state from its threads; returns whether it changed.
    fn update_core(&mut self, k: usize) -> bool {
        let core = self.cores[k];
        self.cores[k].dirty = false;
        let was = core.state;
        let now_state = if core.busy > 0 {
            EXECUTING
        } else {
            let n = self.threads_per_core;
            self.core_threads[k * n..][..n]
                .iter()
                .map(|&t| self.threads[t as usize].code)
                .min()
                .unwrap_or(0)
        };
        if now_state == was {
            return false;
        }
        self.cores[k].state = now_state;
        if was == EXECUTING {
            self.active_cores -= 1;
        } else {
            self.idle_cores_in[was as usize] -= 1;
            if self.idle_cores_in[was as usize] == 0 {
                self.idle_mask &= !(1 << was);
            }
            let (w_idle, w_busy) = self.state_nw[was as usize];
            self.idle_nw.0 -= w_idle;
            self.idle_nw.1 -= w_busy;
            // Leaving a deeper state for a shallower one or for execution costs its exit.
            if now_state == EXECUTING || now_state < was {
                self.add_wake(self.wake_j[was as usize]);
            }
        }
        if now_state == EXECUTING {
            self.active_cores += 1;
        } else {
            self.idle_cores_in[now_state as usize] += 1;
            self.idle_mask |= 1 << now_state;
            let (w_idle, w_busy) = self.state_nw[now_state as usize];
            self.idle_nw.0 += w_idle;
            self.idle_nw.1 += w_busy;
        }
        true
    }

    fn add_wake(&mut self, joules: f64) {
        if self.measuring {
            self.totals.wake_j += joules;
        }
    }

    fn update_package(&mut self) {
        let new = if self.active_cores > 0 {
            None
        } else {
            let shallowest = self.idle_mask.trailing_zeros() as usize;
            Some(self.pkg_state_for[shallowest])
        };
        if new == self.pkg_state {
            return;
        }
        if let Some(old) = self.pkg_state
            && old != usize::MAX
        {
            let leaving = match new {
                None | Some(usize::MAX) => true,
                Some(n) => n < old,
            };
            if leaving {
                self.add_wake(self.pkg_states[old].2);
            }
        }
        self.pkg_state = new;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_spec::machine::xps13_7390;

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
        let m = xps13_7390();
        let mut e = EnergyMeter::new(&m);
        for c in 0..8 {
            e.set(c, 0, Activity::Idle(8));
        }
        e.start_window(0);
        e.set(1, 0, Activity::Executing);
        e.set(5, 0, Activity::Executing);
        let t = e.finish(1_000_000_000);
        let p = &m.power;
        let want = p.package_active_w + p.core_active_w + p.smt_extra_w;
        let wake = (m.idle_states[8].wake_energy_uj
            + p.package_states.last().unwrap().exit_energy_uj)
            * 1e-6;
        assert!(
            (watts(&t) - want - wake).abs() < 1e-9,
            "{} vs {}",
            watts(&t),
            want + wake
        );
    }
}

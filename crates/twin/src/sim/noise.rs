//! OS noise as the twin predicts it (docs/noise.md "The twin"): what the kernel takes from
//! each CPU's busy user task (a hog, the syscall loop, a BSP rank), per source, as one more
//! listener of the loop's [`Event`]s.
//!
//! A **detour** opens when an interrupt (`IrqEntry`, `ReschedIpi`) is taken from the busy task,
//! or the task is switched out for another thread, and closes when the task runs again
//! (`IrqReturn`, or `TaskSwitched` back to it). Inside, time is charged to the part of the
//! kernel path running at each moment, from the events that bound it:
//!
//! | part | from | class |
//! |---|---|---|
//! | `local_timer` | interrupt entry/exit, context tracking, jiffies catch-up, device programming, the nohz_full tick decision at exit | irq |
//! | `tick` | `HrtimerExpireEntry{Tick}` .. `Exit`: `tick_sched_timer` (timekeeping, scheduler tick, accounting) | irq |
//! | `hrtimer: NAME` | a background source's callback | irq |
//! | `TIMER` | `SoftirqEntry` .. `SoftirqExit` (timer-wheel callbacks) | softirq |
//! | `RCU` | the leaf `rcu_node` lock hold of each RCU step in the tick (`rcu_node_hold_ns`) | softirq |
//! | `lock wait` | every `LockWaited` inside the detour (seqlock, jiffies, RCU leaf, shared lines) | irq |
//! | `IPI reschedule` | a reschedule IPI's handler | irq |
//! | `thread: background task` | another task on the CPU | thread |
//! | `guest exits` | on a KVM guest, the VM exit and injection inside each interrupt's entry/exit (`irq_entry_exit_ns`) | hardware |
//!
//! Lock waits and RCU holds are moved out of the part they happened in (the tick, mostly), so
//! the parts of a detour add up to its length. Counts (interference) are kept for every run of
//! a part in the window; time only for detours longer than the threshold, so that the sources'
//! noise adds up to the CPU's. Nothing here allocates after [`NoiseStats::new`].

use super::observe::Running;
use super::observe::{Callback, Event, LockId, Observer};
use crate::engine::Time;
use crate::workloads::bsp::BspJob;
use ticklab_schema::histogram::LatencyHistogram;
use ticklab_schema::noise::{CpuNoise, NoiseClass, NoiseMethod, NoiseReport, NoiseSource};

/// Interrupt entry/exit and what the handler does outside callbacks.
const LOCAL_TIMER: u32 = 0;
/// The tick's callback.
const TICK: u32 = 1;
/// RCU's work in the tick.
const RCU: u32 = 2;
/// Waits for shared locks and lines.
const LOCK_WAIT: u32 = 3;
/// The TIMER softirq.
const TIMER_SOFTIRQ: u32 = 4;
/// A reschedule IPI.
const RESCHED_IPI: u32 = 5;
/// Another thread.
const THREAD: u32 = 6;
/// The hypervisor's part of interrupt delivery on a guest.
const GUEST_EXIT: u32 = 7;
/// A frame worker's wake-up callback.
const FRAME_WAKE: u32 = 8;
/// Background source `s` is part `HRTIMER_BASE + s`.
const HRTIMER_BASE: u32 = 9;

/// Parts one detour can touch before the last slot takes the rest.
const TOUCHED: usize = 8;

/// Largest detour the histogram resolves in 1 µs buckets (longer ones are overflows).
pub const NOISE_HISTOGRAM_US: u32 = 200;

/// One part's counters on one CPU.
#[derive(Debug, Clone, Copy, Default)]
struct PartCounters {
    count: u64,
    noise_ns: u64,
    max_ns: u64,
}

/// One CPU as the listener follows it.
#[derive(Debug, Clone)]
struct NoiseCpu {
    /// The CPU runs a busy user task to measure.
    measured: bool,
    /// What it runs now.
    task: Running,
    in_detour: bool,
    start: Time,
    mark: Time,
    cur: u32,
    /// (part, ns) of the open detour; negative entries are time moved to another part.
    touched: [(u32, i64); TOUCHED],
    ntouched: usize,
    detours: u64,
    noise_ns: u64,
    max_detour_ns: u64,
    hist: Option<LatencyHistogram>,
}

impl NoiseCpu {
    #[inline]
    fn add(&mut self, part: u32, ns: i64) {
        for e in &mut self.touched[..self.ntouched] {
            if e.0 == part {
                e.1 += ns;
                return;
            }
        }
        if self.ntouched < TOUCHED {
            self.touched[self.ntouched] = (part, ns);
            self.ntouched += 1;
        } else {
            self.touched[TOUCHED - 1].1 += ns;
        }
    }

    /// Charges the time since the last mark to the current part.
    #[inline]
    fn charge(&mut self, at: Time) {
        let ns = at.saturating_sub(self.mark);
        if ns > 0 {
            self.add(self.cur, ns as i64);
        }
        self.mark = self.mark.max(at);
    }
}

/// The busy task the listener measures.
#[inline]
fn busy(r: Running) -> bool {
    matches!(r, Running::Hog | Running::Syscall)
}

/// The noise listener (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct NoiseStats {
    threshold_ns: u64,
    open: bool,
    /// Guest: the VM-exit share of each interrupt's entry/exit (0 on bare metal).
    guest_exit_ns: u64,
    /// RCU: the leaf lock hold of one step.
    rcu_hold_ns: u64,
    cpus: Vec<NoiseCpu>,
    nr_parts: usize,
    /// `cpus × nr_parts`.
    parts: Vec<PartCounters>,
    /// The bulk-synchronous job, if the workload has one.
    pub(crate) bsp: Option<BspJob>,
}

impl NoiseStats {
    /// Counters for `cpus` (`true` = measured), with `nr_sources` background sources.
    pub(super) fn new(
        measured: impl Iterator<Item = (bool, Running)>,
        nr_sources: usize,
        guest_exit_ns: u64,
        rcu_hold_ns: u64,
    ) -> NoiseStats {
        let cpus: Vec<NoiseCpu> = measured
            .map(|(m, task)| NoiseCpu {
                measured: m,
                task,
                in_detour: false,
                start: 0,
                mark: 0,
                cur: LOCAL_TIMER,
                touched: [(0, 0); TOUCHED],
                ntouched: 0,
                detours: 0,
                noise_ns: 0,
                max_detour_ns: 0,
                hist: m.then(|| LatencyHistogram::new(NOISE_HISTOGRAM_US)),
            })
            .collect();
        let nr_parts = HRTIMER_BASE as usize + nr_sources;
        let parts = vec![PartCounters::default(); cpus.len() * nr_parts];
        NoiseStats {
            threshold_ns: ticklab_schema::noise::DEFAULT_THRESHOLD_NS,
            open: false,
            guest_exit_ns,
            rcu_hold_ns,
            cpus,
            nr_parts,
            parts,
            bsp: None,
        }
    }

    /// Number of parts (for the BSP job's blame table).
    pub(crate) fn nr_parts(&self) -> usize {
        self.nr_parts
    }

    /// Opens the window at `at`: counters restart; a detour in progress counts from `at`.
    pub(crate) fn reset(&mut self, at: Time) {
        self.open = true;
        for c in &mut self.cpus {
            c.detours = 0;
            c.noise_ns = 0;
            c.max_detour_ns = 0;
            if let Some(h) = &mut c.hist {
                *h = LatencyHistogram::new(h.max_us());
            }
            if c.in_detour {
                c.start = at;
                c.mark = at;
                c.ntouched = 0;
            }
        }
        self.parts.fill(PartCounters::default());
        if let Some(b) = &mut self.bsp {
            b.open_window(at);
        }
    }

    #[inline]
    fn count(&mut self, cpu: usize, part: u32) {
        if self.open {
            self.parts[cpu * self.nr_parts + part as usize].count += 1;
        }
    }

    /// A detour opens on `cpu` at `at` in `part`.
    #[inline]
    fn open_detour(&mut self, cpu: usize, at: Time, part: u32) {
        let c = &mut self.cpus[cpu];
        c.in_detour = true;
        c.start = at;
        c.mark = at;
        c.cur = part;
        c.ntouched = 0;
        if let Some(b) = &mut self.bsp {
            b.advance(at);
            if let Some(r) = b.rank_of(cpu as u32) {
                b.detour_open(r, at);
            }
        }
    }

    /// The detour on `cpu` closes at `at`: the busy task runs again.
    #[inline]
    fn close_detour(&mut self, cpu: usize, at: Time) {
        let nr_parts = self.nr_parts;
        let c = &mut self.cpus[cpu];
        c.charge(at);
        c.in_detour = false;
        let len = at.saturating_sub(c.start);
        // The part that took the most, for the BSP job's blame (only it asks).
        let mut top = (LOCAL_TIMER, 0u64);
        if self.bsp.is_some() {
            for &(part, ns) in &c.touched[..c.ntouched] {
                let ns = ns.max(0) as u64;
                if ns > top.1 {
                    top = (part, ns);
                }
            }
        }
        if self.open && len > self.threshold_ns {
            c.detours += 1;
            c.noise_ns += len;
            c.max_detour_ns = c.max_detour_ns.max(len);
            if let Some(h) = &mut c.hist {
                h.record(c.detours - 1, len as i64);
            }
            let base = cpu * nr_parts;
            for &(part, ns) in &c.touched[..c.ntouched] {
                let ns = ns.max(0) as u64;
                let p = &mut self.parts[base + part as usize];
                p.noise_ns += ns;
                p.max_ns = p.max_ns.max(ns);
            }
        }
        if let Some(b) = &mut self.bsp
            && let Some(r) = b.rank_of(cpu as u32)
        {
            b.detour_close(r, at, top.0);
        }
    }

    /// An interrupt in `part` is taken on `cpu` at `at`.
    #[inline]
    fn interrupt(&mut self, cpu: usize, at: Time, part: u32) {
        let c = &mut self.cpus[cpu];
        if c.in_detour {
            c.charge(at);
            c.cur = part;
        } else if busy(c.task) {
            self.open_detour(cpu, at, part);
        } else {
            return;
        }
        self.count(cpu, part);
        if self.guest_exit_ns > 0 && part == LOCAL_TIMER {
            let g = self.guest_exit_ns as i64;
            let c = &mut self.cpus[cpu];
            c.add(GUEST_EXIT, g);
            c.add(LOCAL_TIMER, -g);
            self.count(cpu, GUEST_EXIT);
        }
    }

    /// Time `ns` inside the open detour of `cpu` belongs to `part`, not the current one.
    #[inline]
    fn move_to(&mut self, cpu: usize, part: u32, ns: u64) {
        let c = &mut self.cpus[cpu];
        if !c.in_detour || ns == 0 {
            return;
        }
        let cur = c.cur;
        c.add(part, ns as i64);
        c.add(cur, -(ns as i64));
        self.count(cpu, part);
    }

    /// Enters `part` inside the open detour of `cpu` at `at`.
    #[inline]
    fn enter(&mut self, cpu: usize, at: Time, part: u32, counted: bool) {
        let c = &mut self.cpus[cpu];
        if !c.in_detour {
            return;
        }
        c.charge(at);
        c.cur = part;
        if counted {
            self.count(cpu, part);
        }
    }

    /// The noise report of every measured CPU: its runtime (`busy_ns` of the CPU's index),
    /// noise and detours, and its sources (`names`: the background sources'), largest
    /// noise first.
    pub(super) fn report(&self, names: &[String], busy_ns: impl Fn(usize) -> u64) -> NoiseReport {
        let mut cpus = Vec::new();
        for (c, nc) in self.cpus.iter().enumerate().filter(|(_, c)| c.measured) {
            let runtime_ns = busy_ns(c);
            let mut sources: Vec<NoiseSource> = self.parts
                [c * self.nr_parts..(c + 1) * self.nr_parts]
                .iter()
                .enumerate()
                .filter(|(_, p)| p.count > 0)
                .map(|(i, p)| {
                    let (class, name) = NoiseStats::part_name(i as u32, names);
                    NoiseSource {
                        class,
                        name,
                        count: p.count,
                        noise_ns: Some(p.noise_ns),
                        max_ns: Some(p.max_ns),
                        nested: NoiseStats::part_nested(i as u32),
                    }
                })
                .collect();
            sources.sort_by(|a, b| {
                b.noise_ns
                    .cmp(&a.noise_ns)
                    .then(b.count.cmp(&a.count))
                    .then(a.name.cmp(&b.name))
            });
            let cpu = CpuNoise {
                cpu: c as u32,
                runtime_ns,
                noise_ns: nc.noise_ns.min(runtime_ns),
                available_pct: CpuNoise::available_pct(runtime_ns, nc.noise_ns),
                max_detour_ns: nc.max_detour_ns,
                detours: nc.detours,
                histogram: nc.hist.clone(),
                sources,
            };
            debug_assert!(cpu.check().is_ok(), "{:?}", cpu.check());
            cpus.push(cpu);
        }
        NoiseReport {
            method: NoiseMethod::Twin,
            threshold_ns: self.threshold_ns,
            cpus,
        }
    }

    /// Whether part `i` runs inside another part's interruption rather than being one: the
    /// tick, RCU's step in it, lock waits and hrtimer callbacks all run inside the timer
    /// interrupt (`local_timer`), which is the interruption a tracer counts. The TIMER softirq
    /// (run at interrupt exit, counted apart by tracers), reschedule IPIs, other threads and
    /// the hypervisor's exits (a detour of its own as the host sees it) are not.
    fn part_nested(i: u32) -> bool {
        matches!(i, TICK | RCU | LOCK_WAIT | FRAME_WAKE) || i >= HRTIMER_BASE
    }

    /// The name and class of part `i`; `sources` names the background sources.
    pub(super) fn part_name(i: u32, sources: &[String]) -> (NoiseClass, String) {
        match i {
            LOCAL_TIMER => (NoiseClass::Irq, "local_timer".into()),
            TICK => (NoiseClass::Irq, "tick".into()),
            RCU => (NoiseClass::Softirq, "RCU".into()),
            LOCK_WAIT => (NoiseClass::Irq, "lock wait".into()),
            TIMER_SOFTIRQ => (NoiseClass::Softirq, "TIMER".into()),
            RESCHED_IPI => (NoiseClass::Irq, "IPI reschedule".into()),
            THREAD => (NoiseClass::Thread, "background task".into()),
            GUEST_EXIT => (NoiseClass::Hardware, "guest exits".into()),
            FRAME_WAKE => (NoiseClass::Irq, "hrtimer: hrtimer_wakeup".into()),
            s => (
                NoiseClass::Irq,
                format!(
                    "hrtimer: {}",
                    sources
                        .get((s - HRTIMER_BASE) as usize)
                        .map_or("?", String::as_str)
                ),
            ),
        }
    }
}

impl Observer for NoiseStats {
    #[inline(always)]
    fn on(&mut self, at: Time, ev: Event) {
        match ev {
            Event::IrqEntry { cpu } if self.cpus[cpu as usize].measured => {
                self.interrupt(cpu as usize, at, LOCAL_TIMER)
            }
            Event::ReschedIpi { cpu } if self.cpus[cpu as usize].measured => {
                self.interrupt(cpu as usize, at, RESCHED_IPI)
            }
            Event::HrtimerExpireEntry { cpu, callback } if self.cpus[cpu as usize].measured => {
                let part = match callback {
                    Callback::Tick => TICK,
                    Callback::Source(s) => HRTIMER_BASE + u32::from(s),
                    Callback::FrameWake => FRAME_WAKE,
                };
                self.enter(cpu as usize, at, part, true);
            }
            Event::HrtimerExpireExit { cpu } | Event::SoftirqExit { cpu, .. }
                if self.cpus[cpu as usize].measured =>
            {
                self.enter(cpu as usize, at, LOCAL_TIMER, false)
            }
            Event::SoftirqEntry { cpu, .. } if self.cpus[cpu as usize].measured => {
                self.enter(cpu as usize, at, TIMER_SOFTIRQ, true)
            }
            Event::LockWaited { cpu, wait_ns } | Event::PathWaited { cpu, wait_ns }
                if self.cpus[cpu as usize].measured =>
            {
                self.move_to(cpu as usize, LOCK_WAIT, wait_ns)
            }
            Event::LockAcquired {
                cpu,
                lock: LockId::RcuNodeLeaf(_),
                ..
            } if self.cpus[cpu as usize].measured => {
                self.move_to(cpu as usize, RCU, self.rcu_hold_ns)
            }
            Event::IrqReturn { cpu } if self.cpus[cpu as usize].measured => {
                let c = &mut self.cpus[cpu as usize];
                if !c.in_detour {
                    return;
                }
                if busy(c.task) {
                    self.close_detour(cpu as usize, at);
                } else {
                    // Counted where the other thread got the CPU (`TaskSwitched`).
                    self.enter(cpu as usize, at, THREAD, false);
                }
            }
            Event::TaskSwitched { cpu, to } if self.cpus[cpu as usize].measured => {
                let c = &mut self.cpus[cpu as usize];
                let was = c.task;
                c.task = to;
                let other = !busy(to) && to != Running::Idle;
                if c.in_detour {
                    if !other {
                        self.close_detour(cpu as usize, at);
                    }
                } else if busy(was) && other {
                    self.open_detour(cpu as usize, at, THREAD);
                }
                if other && busy(was) {
                    self.count(cpu as usize, THREAD);
                }
            }
            _ => {}
        }
    }
}

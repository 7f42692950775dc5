//! Timeline export of a twin run (`--trace`): the [`ChromeTrace`] listener turns the loop's
//! [`Event`]s into Chrome trace-event records in the vocabulary the host lab writes too
//! ([`ticklab_trace`], docs/trace.md), and [`trace_run`] drives a run with it,
//! sampling the counter tracks between events.
//!
//! What each event becomes, per CPU track: [`Event::TaskSwitched`] ends the task slice and
//! starts the next (every CPU starts in the idle task at boot); [`Event::IdleEntered`] /
//! [`Event::IdleLeft`] an idle-state slice named by the state the hardware entered;
//! [`Event::IrqEntry`] / [`Event::IrqExit`] an interrupt slice, named `tick` when the tick's
//! callback ran in it, else `hrtimer` when another callback did, else `local_timer`;
//! [`Event::HrtimerExpireEntry`] / [`Event::HrtimerExpireExit`] and [`Event::SoftirqEntry`] /
//! [`Event::SoftirqExit`] nested slices; [`Event::LockAcquired`] with a wait a lock-wait slice
//! whose `holder` is the CPU that took that lock (or line) last before it;
//! [`Event::TickStopped`], [`Event::TickRestarted`], [`Event::DutyChanged`],
//! [`Event::IrqWorkIpi`], [`Event::ReschedIpi`] and [`Event::CallFunctionIpi`] instants.
//! Counters, every [`SAMPLE_NS`]: jiffies staleness and package power (the energy integrated
//! over the interval, before any RAPL limit).
//!
//! The listener allocates only when it writes a record: with [`crate::sim::NoTimeline`]
//! none of this is compiled in. Same scenario, seed and window: the same bytes.

use std::sync::Arc;

use crate::engine::{NEVER, Time};
use crate::kernel::timekeeping::Duty;
use crate::sim::{Callback, Event, LockId, Observer, Running, SharedLine, Sim, SimError};
use ticklab_schema::report::Report;
use ticklab_schema::scenario::Scenario;
use ticklab_trace::{
    Arg, CpuTrack, DUTY_MOVED, IDLE_TASK, Kind, PACKAGE_POWER, STALENESS, TICK_RESTART, TICK_STOP,
    TraceWindow, TraceWriter,
};

/// Instant: the SCHED tick dependency kicked a busy nohz_full CPU with an irq_work IPI.
pub const IRQ_WORK_KICK: &str = "IPI irq_work (tick dependency kick)";
/// Instant name of a reschedule IPI (a task woken onto this CPU from another).
pub const RESCHED_IPI: &str = "IPI reschedule (task woken here)";
/// Instant: a function-call IPI arrived (the idle load balancer's kick, PREEMPT_RT).
pub const CALL_FUNCTION_IPI: &str = "IPI call_function_single (idle load balancer kick)";

/// Interval of the counter samples (ns): the shortest tick period (1000 Hz). A sample is
/// written only when its value changed, so a steady machine costs few records; staleness
/// therefore shows where it leaves its usual range (a stopped duty), not each tick's
/// saw-tooth.
pub const SAMPLE_NS: u64 = 1_000_000;

/// Names interned once per run.
#[derive(Debug)]
struct Names {
    idle_task: Arc<str>,
    hog: Arc<str>,
    background: Arc<str>,
    frame: Arc<str>,
    syscall: Arc<str>,
    local_timer: Arc<str>,
    tick: Arc<str>,
    hrtimer: Arc<str>,
    tick_sched_timer: Arc<str>,
    hrtimer_wakeup: Arc<str>,
    timer_softirq: Arc<str>,
    idle_poll: Arc<str>,
    timekeeping: Arc<str>,
    /// Idle states by index (set once the machine is built).
    states: Vec<Arc<str>>,
    /// Background sources by index, `sched_tick_remote` last.
    sources: Vec<Arc<str>>,
    rcu_leaves: Vec<Arc<str>>,
    lines: [Arc<str>; 4],
}

impl Names {
    fn new() -> Names {
        let a = |s: &str| -> Arc<str> { Arc::from(s) };
        Names {
            idle_task: a(IDLE_TASK),
            hog: a("hog"),
            background: a("background task"),
            frame: a("frame worker"),
            syscall: a("syscall loop"),
            local_timer: a("local_timer"),
            tick: a("tick"),
            hrtimer: a("hrtimer"),
            tick_sched_timer: a("tick_sched_timer"),
            hrtimer_wakeup: a("hrtimer_wakeup"),
            timer_softirq: a("TIMER"),
            idle_poll: a("poll (idle=poll)"),
            timekeeping: a("timekeeping lock"),
            states: Vec::new(),
            sources: Vec::new(),
            rcu_leaves: Vec::new(),
            lines: SharedLine::ALL.map(|l| a(line_name(l))),
        }
    }

    fn task(&self, r: Running) -> &Arc<str> {
        match r {
            Running::Idle => &self.idle_task,
            Running::Hog => &self.hog,
            Running::Background => &self.background,
            Running::Frame => &self.frame,
            Running::Syscall => &self.syscall,
        }
    }

    fn state(&self, i: u8) -> Arc<str> {
        self.states
            .get(i as usize)
            .cloned()
            .unwrap_or_else(|| Arc::from(format!("state {i}")))
    }

    fn lock(&mut self, l: LockId) -> Arc<str> {
        match l {
            LockId::Timekeeping => Arc::clone(&self.timekeeping),
            LockId::RcuNodeLeaf(i) => {
                while self.rcu_leaves.len() <= i as usize {
                    let n = self.rcu_leaves.len();
                    self.rcu_leaves
                        .push(Arc::from(format!("rcu_node leaf {n}")));
                }
                Arc::clone(&self.rcu_leaves[i as usize])
            }
            LockId::Line(s) => Arc::clone(&self.lines[s as usize]),
        }
    }
}

fn line_name(l: SharedLine) -> &'static str {
    match l {
        SharedLine::CpupriVectors => "cpupri vectors",
        SharedLine::NohzMasks => "nohz masks",
        SharedLine::NohzPicks => "nohz balance picks",
        SharedLine::CalcLoad => "calc_load_tasks",
    }
}

/// One CPU as the listener follows it.
#[derive(Debug)]
struct CpuLine {
    track: CpuTrack,
    /// The state index of the open idle-state slice (renamed once names are known).
    idle_state: Option<u8>,
    /// The open interrupt ran the tick's callback.
    irq_tick: bool,
    /// The open interrupt ran some callback.
    irq_callback: bool,
}

/// The listener that writes a run's timeline (see the module documentation).
#[derive(Debug)]
pub struct ChromeTrace {
    w: TraceWriter,
    cpus: Vec<CpuLine>,
    names: Names,
    duty: Option<u32>,
    /// Last CPU seen taking each lock: timekeeping, then the lines, then the leaves.
    last_taker: Vec<Option<u32>>,
}

impl ChromeTrace {
    /// A timeline of `nr_cpus` CPUs as process `pid` named `label`, inside `[start_ns,
    /// end_ns]`, at most about `limit_bytes` of records.
    pub fn new(
        pid: u32,
        label: &str,
        nr_cpus: usize,
        (start_ns, end_ns): (u64, u64),
        limit_bytes: usize,
    ) -> ChromeTrace {
        let mut w = TraceWriter::new(pid, label, start_ns, end_ns, limit_bytes);
        let names = Names::new();
        let cpus = (0..nr_cpus as u32)
            .map(|c| {
                let mut track = CpuTrack::new(c);
                w.name_track(&track);
                // Every CPU starts in the idle task (sim/setup.rs boot).
                w.begin(&mut track, Kind::Task, &names.idle_task, 0, None);
                CpuLine {
                    track,
                    idle_state: None,
                    irq_tick: false,
                    irq_callback: false,
                }
            })
            .collect();
        ChromeTrace {
            w,
            cpus,
            names,
            duty: None,
            last_taker: Vec::new(),
        }
    }

    /// Takes the names of the machine's idle states and background sources and the duty
    /// holder at boot (the listener is built before the machine; call before the first step).
    fn learn(&mut self, states: Vec<Arc<str>>, sources: Vec<Arc<str>>, duty: Duty) {
        self.names.states = states;
        self.names.sources = sources;
        if let Duty::Cpu(c) = duty {
            self.duty = Some(c);
        }
        for c in &mut self.cpus {
            if let Some(s) = c.idle_state {
                let name = self.names.state(s);
                c.track.rename(Kind::IdleState, &name);
            }
        }
    }

    fn taker_slot(&mut self, l: LockId) -> &mut Option<u32> {
        let i = match l {
            LockId::Timekeeping => 0,
            LockId::Line(s) => 1 + s as usize,
            LockId::RcuNodeLeaf(n) => 1 + SharedLine::ALL.len() + n as usize,
        };
        if self.last_taker.len() <= i {
            self.last_taker.resize(i + 1, None);
        }
        &mut self.last_taker[i]
    }

    /// Closes every track at the window's end and returns the records.
    pub fn finish(mut self) -> TraceWriter {
        for c in &mut self.cpus {
            self.w.close(&mut c.track);
        }
        self.w
    }

    /// The writer (for counter samples).
    fn writer(&mut self) -> &mut TraceWriter {
        &mut self.w
    }
}

impl ChromeTrace {
    /// An hrtimer callback starts: its slice is named for the callback, and the interrupt's
    /// slice is renamed for what it turned out to serve (the tick, or another hrtimer).
    fn hrtimer_entry(&mut self, cpu: u32, callback: Callback, at: Time) {
        let n = &self.names;
        let c = &mut self.cpus[cpu as usize];
        let name = match callback {
            Callback::Tick => {
                c.irq_tick = true;
                c.track.rename(Kind::Irq, &n.tick);
                Arc::clone(&n.tick_sched_timer)
            }
            Callback::Source(s) => n
                .sources
                .get(s as usize)
                .cloned()
                .unwrap_or_else(|| Arc::clone(&n.hrtimer)),
            Callback::FrameWake => Arc::clone(&n.hrtimer_wakeup),
        };
        if !c.irq_tick && !c.irq_callback {
            c.track.rename(Kind::Irq, &n.hrtimer);
        }
        c.irq_callback = true;
        self.w.begin(&mut c.track, Kind::Hrtimer, &name, at, None);
    }

    /// The duty moved: an instant on the CPU that took it (or, when nobody took it, on the
    /// one that gave it up), naming both ends.
    fn duty_changed(&mut self, to: Duty, at: Time) {
        let (on, to_name) = match to {
            Duty::Cpu(c) => (c, format!("CPU {c}")),
            Duty::None => (self.duty.unwrap_or(0), "nobody".to_string()),
        };
        let from = self
            .duty
            .map_or_else(|| "nobody".to_string(), |c| format!("CPU {c}"));
        self.duty = match to {
            Duty::Cpu(c) => Some(c),
            Duty::None => None,
        };
        if let Some(c) = self.cpus.get(on as usize) {
            let arg = Arg::Str(Arc::from(format!("{from} -> {to_name}")));
            self.w
                .instant(&c.track, DUTY_MOVED, at, Some(("move", arg)));
        }
    }

    /// A lock or shared line was taken after `wait_ns`: a wait slice naming the previous
    /// taker (the holder it queued behind, or where the line came from).
    fn lock_acquired(&mut self, cpu: u32, lock: LockId, wait_ns: u64, contended: bool, at: Time) {
        let prev = self.taker_slot(lock).replace(cpu);
        if wait_ns > 0 {
            let name = self.names.lock(lock);
            let arg = prev.filter(|&p| p != cpu).map(|p| {
                let key = if contended { "holder" } else { "line from" };
                (key, Arg::Str(Arc::from(format!("CPU {p}"))))
            });
            let c = &mut self.cpus[cpu as usize];
            self.w.begin(&mut c.track, Kind::LockWait, &name, at, arg);
            self.w.end(&mut c.track, Kind::LockWait, at + wait_ns);
        }
    }
}

impl Observer for ChromeTrace {
    fn on(&mut self, at: Time, ev: Event) {
        self.w.full(at);
        let n = &self.names;
        match ev {
            Event::TaskSwitched { cpu, to } => {
                let c = &mut self.cpus[cpu as usize];
                self.w.end(&mut c.track, Kind::Task, at);
                self.w.begin(&mut c.track, Kind::Task, n.task(to), at, None);
            }
            Event::IdleEntered {
                cpu,
                state,
                actual,
                idle_poll,
            } => {
                let name = if idle_poll {
                    Arc::clone(&n.idle_poll)
                } else {
                    n.state(actual)
                };
                let arg = (state != actual).then(|| ("requested", Arg::Str(n.state(state))));
                let c = &mut self.cpus[cpu as usize];
                c.idle_state = Some(actual);
                self.w.begin(&mut c.track, Kind::IdleState, &name, at, arg);
            }
            Event::IdleLeft { cpu, .. } => {
                let c = &mut self.cpus[cpu as usize];
                c.idle_state = None;
                self.w.end(&mut c.track, Kind::IdleState, at);
            }
            Event::IrqEntry { cpu } => {
                let c = &mut self.cpus[cpu as usize];
                c.irq_tick = false;
                c.irq_callback = false;
                self.w
                    .begin(&mut c.track, Kind::Irq, &n.local_timer, at, None);
            }
            Event::IrqExit { cpu, .. } => {
                let c = &mut self.cpus[cpu as usize];
                self.w.end(&mut c.track, Kind::Irq, at);
            }
            Event::HrtimerExpireEntry { cpu, callback } => self.hrtimer_entry(cpu, callback, at),
            Event::HrtimerExpireExit { cpu } => {
                let c = &mut self.cpus[cpu as usize];
                self.w.end(&mut c.track, Kind::Hrtimer, at);
            }
            Event::SoftirqEntry { cpu, .. } => {
                let c = &mut self.cpus[cpu as usize];
                self.w
                    .begin(&mut c.track, Kind::Softirq, &n.timer_softirq, at, None);
            }
            Event::SoftirqExit { cpu, .. } => {
                let c = &mut self.cpus[cpu as usize];
                self.w.end(&mut c.track, Kind::Softirq, at);
            }
            Event::TickStopped { cpu } => {
                self.w
                    .instant(&self.cpus[cpu as usize].track, TICK_STOP, at, None);
            }
            Event::IrqWorkIpi { cpu } => {
                // The kick's handler time is not modelled apart; the restart follows at exit.
                self.w
                    .instant(&self.cpus[cpu as usize].track, IRQ_WORK_KICK, at, None);
            }
            Event::ReschedIpi { cpu } => {
                self.w
                    .instant(&self.cpus[cpu as usize].track, RESCHED_IPI, at, None);
            }
            Event::CallFunctionIpi { cpu } => {
                self.w
                    .instant(&self.cpus[cpu as usize].track, CALL_FUNCTION_IPI, at, None);
            }
            Event::TickRestarted { cpu } => {
                self.w
                    .instant(&self.cpus[cpu as usize].track, TICK_RESTART, at, None);
            }
            Event::DutyChanged { to } => self.duty_changed(to, at),
            Event::LockAcquired {
                cpu,
                lock,
                wait_ns,
                contended,
            } => self.lock_acquired(cpu, lock, wait_ns, contended, at),
            _ => {}
        }
    }
}

/// The listener for a run of `scenario` as process `pid`, keeping `window` (at most about
/// `limit_bytes` of records, after which the window ends early). Build the sim with it
/// ([`Sim::with_observer`]) and drive it with [`trace_sim`].
pub fn listener(
    scenario: &Scenario,
    pid: u32,
    window: TraceWindow,
    limit_bytes: usize,
) -> ChromeTrace {
    let end = scenario.run.warmup_ns + scenario.run.duration_ns;
    let label = format!(
        "twin: {} (seed {}, {})",
        scenario.name, scenario.run.seed, scenario.machine.name
    );
    let nr = scenario.machine.topology.nr_cpus() as usize;
    ChromeTrace::new(pid, &label, nr, window.resolve(end), limit_bytes)
}

/// Runs `scenario` to its end with its [`listener`]: see [`trace_sim`].
pub fn trace_run(
    scenario: &Scenario,
    pid: u32,
    window: TraceWindow,
    limit_bytes: usize,
    progress: impl FnMut(u64),
) -> Result<(Report, TraceWriter), SimError> {
    let sim = Sim::with_observer(scenario, listener(scenario, pid, window, limit_bytes))?;
    Ok(trace_sim(sim, progress))
}

/// Runs `sim` (built with a [`listener`], not yet stepped) to its end, sampling the counters
/// between events; calls `progress` like [`Sim::run`]. Returns the report (the same as
/// without the trace) and the records for [`ticklab_trace::write_trace`].
pub fn trace_sim(
    mut sim: Sim<ChromeTrace>,
    mut progress: impl FnMut(u64),
) -> (Report, TraceWriter) {
    let states = sim.idle_state_names().map(Arc::from).collect();
    let sources = sim.source_names().map(Arc::from).collect();
    let duty = sim.duty();
    sim.observer_mut().learn(states, sources, duty);
    let (w0, w1) = sim.observer().w.window();
    let end = sim.end();
    let mut sample = w0;
    let mut last = Samples::default();
    let mut next_report = 0;
    loop {
        let due = sim.peek_event().map_or(NEVER, |(t, _)| t).min(end + 1);
        while sample <= w1 && sample < due {
            sample_counters(&mut sim, sample, &mut last);
            sample += SAMPLE_NS;
        }
        if !sim.step() {
            break;
        }
        if sim.now() >= next_report {
            progress(sim.now());
            next_report = sim.now() + 10_000_000;
        }
    }
    while sample <= w1 {
        sample_counters(&mut sim, sample, &mut last);
        sample += SAMPLE_NS;
    }
    progress(end);
    let report = sim.report();
    (report, sim.into_observer().finish())
}

/// The counters' last samples.
#[derive(Debug, Default)]
struct Samples {
    /// Last energy reading `(time, J)`.
    energy: Option<(Time, f64)>,
    /// Last values written (milli-units).
    staleness: Option<i64>,
    power: Option<i64>,
}

/// Writes the counter samples at `at` (no event between the last one and `at`) that changed.
fn sample_counters(sim: &mut Sim<ChromeTrace>, at: Time, last: &mut Samples) {
    let stale = sim.jiffies_staleness_ns(at) as i64;
    let energy = sim.energy_j_until(at);
    let w = sim.observer_mut().writer();
    // milli-µs = ns.
    if last.staleness != Some(stale) {
        w.counter(STALENESS, at, stale);
        last.staleness = Some(stale);
    }
    if let Some(e) = energy {
        if let Some((t0, e0)) = last.energy
            && at > t0
            && e >= e0
        {
            let watts = (e - e0) / ((at - t0) as f64 * 1e-9);
            let milli = (watts * 1000.0).round() as i64;
            if last.power != Some(milli) {
                w.counter(PACKAGE_POWER, t0, milli);
                last.power = Some(milli);
            }
        }
        last.energy = Some((at, e));
    }
}

//! The one validation layer between every input and the model.
//!
//! Flags, scenario files, inline `[machine]` tables and the files `host calibrate --out`
//! writes all end up as a [`Scenario`]; [`Scenario::validate`] checks it before the twin (or
//! anything else) runs it, so nothing past this point has to defend itself against a value
//! out of range. Each error names the key (`machine.clockevent.max_delta_ns`,
//! `background[3].cpus`) and the limit it broke. The rules and their reasons are listed in
//! `docs/validation.md`; the constants below are the limits it quotes.
//!
//! What is checked:
//!
//! * finite numbers (no `nan`, no `inf`) and the sign a quantity has (no negative watts);
//! * `min ≤ max` pairs (clock event deltas) and indices into other tables (package C-states
//!   and auto-demotion name idle-state indices);
//! * sizes that fit their types, with checked arithmetic: the topology product, a frame's
//!   work (units × unit cost), the run length;
//! * capacities: at most [`MAX_CPUS`] CPUs, [`MAX_IDLE_STATES`] idle states,
//!   [`MAX_BACKGROUND_SOURCES`] background sources;
//! * CPU numbers (workload placement, a background source's `cpus`) against the machine;
//! * an estimate of the compute a run needs ([`Scenario::estimated_events`]); the front end
//!   refuses a run above [`COMPUTE_LIMIT_EVENTS`] unless the user confirms it.

use crate::machine::{Costs, KvmHost, Machine};
use crate::scenario::{BackgroundSource, Scenario, TimerKind, check_hz};
use crate::workload::TaskGroup;
use std::fmt;

/// Most logical CPUs a machine may have: the twin's event queue packs a CPU number in 12 bits
/// (`ticklab_twin::engine::CPU_BITS`), which is also half of x86-64's `MAXSMP` limit of 8192.
pub const MAX_CPUS: u32 = 4096;

/// Most idle states a machine may list: the kernel's `CPUIDLE_STATE_MAX` (10), which the
/// twin's governors size their tables by (the energy meter's own limit is 64).
pub const MAX_IDLE_STATES: usize = 10;

/// Most background sources a scenario may list: each is a timer per CPU in the twin's
/// per-CPU hrtimer slab or timer wheel, which are sized from the scenario up to this.
pub const MAX_BACKGROUND_SOURCES: usize = 64;

/// Most spare timers per CPU for sources whose timer follows its task (`follows_task`): the
/// twin keeps, on every CPU, one timer per instance of such a source (an instance may move
/// anywhere), so a source on every CPU of an `n`-CPU machine costs `n` per CPU. 4096 allows a
/// 64-CPU machine sixty-four such sources and keeps the per-CPU slab far below its 65 535 ids.
pub const MAX_FOLLOWING_TIMERS_PER_CPU: usize = 4096;

/// Most tasks of one `timer_migrates` source (its `cpus`): each keeps a spare sleep timer on
/// every timer-housekeeping CPU.
pub const MAX_MIGRATING_SLEEPERS: usize = 64;

/// Largest per-operation cost, exit latency, target residency, slack or delivery jitter (ns):
/// one second. Real values are nanoseconds to a millisecond; a second keeps every sum of
/// costs in a run far from overflowing the twin's 52-bit clock.
pub const MAX_COST_NS: u64 = 1_000_000_000;

/// Largest power figure (W) of a core, a package or a limit.
pub const MAX_WATTS: f64 = 10_000.0;

/// Largest energy figure (µJ) of one idle-state or package-state exit: one joule.
pub const MAX_ENERGY_UJ: f64 = 1_000_000.0;

/// Fastest background source: one expiry per microsecond per CPU (a `period_ns` of at least
/// 1000, a `rate_hz` of at most 1 MHz). Faster is not a background timer but a workload.
pub const MAX_SOURCE_RATE_HZ: f64 = 1_000_000.0;

/// Longest background period (ns): one week, the longest run.
pub const MAX_PERIOD_NS: u64 = 7 * 24 * 3600 * 1_000_000_000;

/// Most work one frame may carry (ns of `loop × work_unit_ns`): one hour.
pub const MAX_FRAME_WORK_NS: f64 = 3600e9;

/// Most ping-pong round trips or syscalls one group may ask for.
pub const MAX_WORKLOAD_COUNT: u64 = 1_000_000_000_000;

/// Longest run, warm-up included (ns): two weeks (each of `duration` and `warmup` is at most
/// one week).
pub const MAX_RUN_NS: u64 = 14 * 24 * 3600 * 1_000_000_000;

/// Simulated events above which a front end asks for confirmation (`--yes`): 2·10¹⁰, about
/// ten minutes of one core at the twin's tens of millions of events per second (`ticklab
/// bench`); 4096 CPUs × 168 h at HZ=1000 is 2.5·10¹².
pub const COMPUTE_LIMIT_EVENTS: f64 = 2e10;

/// What is wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// The key, as written in a scenario file (`machine.topology.cores_per_socket`).
    pub key: String,
    /// What was found and what was expected.
    pub what: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.what)
    }
}

impl std::error::Error for ValidationError {}

fn bad(key: impl Into<String>, what: impl Into<String>) -> ValidationError {
    ValidationError {
        key: key.into(),
        what: what.into(),
    }
}

/// `x` is finite and in `[0, max]`.
fn check_f64(key: &str, x: f64, max: f64, unit: &str) -> Result<(), ValidationError> {
    if x.is_finite() && (0.0..=max).contains(&x) {
        Ok(())
    } else {
        Err(bad(
            key,
            format!("expected a finite number from 0 to {max} {unit}, found {x}"),
        ))
    }
}

/// `x` is at most `max`.
fn check_u64(key: &str, x: u64, max: u64, unit: &str) -> Result<(), ValidationError> {
    if x <= max {
        Ok(())
    } else {
        Err(bad(
            key,
            format!("expected at most {max} {unit}, found {x}"),
        ))
    }
}

impl Machine {
    /// Checks the machine against the rules of the module docs; the error names the key
    /// under `machine.`.
    // Over 100 lines because it is a list of independent checks, one per machine key in the order
    // the schema documents them; each is a few lines and names its key.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let t = &self.topology;
        for (key, v) in [
            ("sockets", t.sockets),
            ("cores_per_socket", t.cores_per_socket),
            ("threads_per_core", t.threads_per_core),
        ] {
            if v == 0 {
                return Err(bad(
                    format!("machine.topology.{key}"),
                    "expected at least 1",
                ));
            }
        }
        let cpus = t
            .sockets
            .checked_mul(t.cores_per_socket)
            .and_then(|c| c.checked_mul(t.threads_per_core))
            .filter(|&n| n <= MAX_CPUS);
        if cpus.is_none() {
            return Err(bad(
                "machine.topology",
                format!(
                    "sockets × cores_per_socket × threads_per_core = {} × {} × {} = {}: expected at most {MAX_CPUS} CPUs",
                    t.sockets,
                    t.cores_per_socket,
                    t.threads_per_core,
                    u128::from(t.sockets)
                        * u128::from(t.cores_per_socket)
                        * u128::from(t.threads_per_core)
                ),
            ));
        }
        validate_costs(&self.costs)?;
        if let Some(k) = &self.kvm_host {
            validate_kvm_host(k)?;
        }
        if let Some(h) = &self.halt_wake {
            validate_halt_wake(h)?;
        }
        let n = self.idle_states.len();
        if n == 0 || n > MAX_IDLE_STATES {
            return Err(bad(
                "machine.idle_states",
                format!(
                    "expected 1 to {MAX_IDLE_STATES} states (the kernel's CPUIDLE_STATE_MAX), found {n}"
                ),
            ));
        }
        for (i, s) in self.idle_states.iter().enumerate() {
            let key = |k: &str| format!("machine.idle_states[{i}].{k}");
            check_u64(
                &key("exit_latency_ns"),
                s.exit_latency_ns,
                MAX_COST_NS,
                "ns",
            )?;
            check_u64(
                &key("target_residency_ns"),
                s.target_residency_ns,
                MAX_COST_NS,
                "ns",
            )?;
            check_f64(&key("core_w"), s.core_w, MAX_WATTS, "W")?;
            check_f64(
                &key("core_w_pkg_active"),
                s.core_w_pkg_active,
                MAX_WATTS,
                "W",
            )?;
            check_f64(
                &key("wake_energy_uj"),
                s.wake_energy_uj,
                MAX_ENERGY_UJ,
                "µJ",
            )?;
        }
        let p = &self.power;
        for (key, w) in [
            ("core_active_w", p.core_active_w),
            ("smt_extra_w", p.smt_extra_w),
            ("package_active_w", p.package_active_w),
            ("package_idle_w", p.package_idle_w),
        ] {
            check_f64(&format!("machine.power.{key}"), w, MAX_WATTS, "W")?;
        }
        if let Some(l) = p.power_limit_w {
            check_f64("machine.power.power_limit_w", l, MAX_WATTS, "W")?;
            if l <= 0.0 {
                return Err(bad(
                    "machine.power.power_limit_w",
                    "expected more than 0 W (leave it out for no limit)",
                ));
            }
        }
        for (i, s) in p.package_states.iter().enumerate() {
            let key = |k: &str| format!("machine.power.package_states[{i}].{k}");
            if s.min_core_state >= n {
                return Err(bad(
                    key("min_core_state"),
                    format!(
                        "expected an index into machine.idle_states (below {n}), found {}",
                        s.min_core_state
                    ),
                ));
            }
            check_f64(&key("power_w"), s.power_w, MAX_WATTS, "W")?;
            check_f64(
                &key("exit_energy_uj"),
                s.exit_energy_uj,
                MAX_ENERGY_UJ,
                "µJ",
            )?;
        }
        if let Some(d) = &p.auto_demotion {
            if d.demote_to >= n {
                return Err(bad(
                    "machine.power.auto_demotion.demote_to",
                    format!(
                        "expected an index into machine.idle_states (below {n}), found {}",
                        d.demote_to
                    ),
                ));
            }
            // The twin keeps the last 16 residencies of a core.
            if !(1..=16).contains(&d.window) {
                return Err(bad(
                    "machine.power.auto_demotion.window",
                    format!("expected 1 to 16 idle periods, found {}", d.window),
                ));
            }
            check_u64(
                "machine.power.auto_demotion.min_mean_residency_ns",
                d.min_mean_residency_ns,
                MAX_COST_NS,
                "ns",
            )?;
        }
        let ce = &self.clockevent;
        if ce.max_delta_ns == 0 || ce.min_delta_ns > ce.max_delta_ns {
            return Err(bad(
                "machine.clockevent",
                format!(
                    "expected 0 < max_delta_ns and min_delta_ns <= max_delta_ns, found min_delta_ns = {} and max_delta_ns = {}",
                    ce.min_delta_ns, ce.max_delta_ns
                ),
            ));
        }
        check_u64(
            "machine.clockevent.min_delta_ns",
            ce.min_delta_ns,
            MAX_COST_NS,
            "ns",
        )?;
        if self.clocksource.max_idle_ns == 0 {
            return Err(bad(
                "machine.clocksource.max_idle_ns",
                "expected at least 1 ns",
            ));
        }
        Ok(())
    }
}

fn validate_costs(c: &Costs) -> Result<(), ValidationError> {
    let ns = [
        ("irq_entry_exit_ns", c.irq_entry_exit_ns),
        ("tick_handler_ns", c.tick_handler_ns),
        ("jiffies_update_ns", c.jiffies_update_ns),
        (
            "jiffies_catch_up_per_tick_ns",
            c.jiffies_catch_up_per_tick_ns,
        ),
        ("hrtimer_callback_ns", c.hrtimer_callback_ns),
        ("clockevent_program_ns", c.clockevent_program_ns),
        ("tick_stop_ns", c.tick_stop_ns),
        ("tick_restart_ns", c.tick_restart_ns),
        ("wheel_timer_ns", c.wheel_timer_ns),
        ("syscall_ns", c.syscall_ns),
        ("ct_transition_ns", c.ct_transition_ns),
        ("context_switch_ns", c.context_switch_ns),
        ("ipi_ns", c.ipi_ns),
        ("cacheline_local_ns", c.cacheline_local_ns),
        ("cacheline_remote_ns", c.cacheline_remote_ns),
        ("rcu_node_hold_ns", c.rcu_node_hold_ns),
        ("xtime_read_ns", c.xtime_read_ns),
        ("background_task_ns", c.background_task_ns),
        ("timer_delivery_jitter_ns", c.timer_delivery_jitter_ns),
    ];
    for (key, v) in ns {
        check_u64(&format!("machine.costs.{key}"), v, MAX_COST_NS, "ns")?;
    }
    if let Some(v) = c.softirq_thread_ns {
        let key = "machine.costs.softirq_thread_ns";
        if v == 0 {
            return Err(bad(key, "expected at least 1 ns (a run), found 0"));
        }
        check_u64(key, v, MAX_COST_NS, "ns")?;
    }
    check_f64(
        "machine.costs.work_unit_ns",
        c.work_unit_ns,
        MAX_COST_NS as f64,
        "ns",
    )?;
    if let Some(ct) = &c.context_tracking {
        for (key, v) in [
            ("rcu_eqs_ns", ct.rcu_eqs_ns),
            ("vtime_jiffy_check_ns", ct.vtime_jiffy_check_ns),
            ("vtime_clock_ns", ct.vtime_clock_ns),
            ("vtime_account_ns", ct.vtime_account_ns),
            ("percpu_check_ns", ct.percpu_check_ns),
        ] {
            check_u64(
                &format!("machine.costs.context_tracking.{key}"),
                v,
                MAX_COST_NS,
                "ns",
            )?;
        }
    }
    Ok(())
}

/// `[machine.kvm_host]`: costs like the others, at most [`MAX_COST_NS`] each (the kernel's
/// `halt_poll_ns` is an `unsigned int` of ns, but a poll window of a second is already far
/// past any real one).
fn validate_kvm_host(k: &KvmHost) -> Result<(), ValidationError> {
    check_u64(
        "machine.kvm_host.host_wake_ns",
        k.host_wake_ns,
        MAX_COST_NS,
        "ns",
    )?;
    if let Some(ns) = k.host_halt_poll_ns {
        check_u64("machine.kvm_host.host_halt_poll_ns", ns, MAX_COST_NS, "ns")?;
    }
    Ok(())
}

/// Most points a `[machine.halt_wake]` curve may have: calibration writes a handful.
pub const MAX_HALT_WAKE_POINTS: usize = 64;

/// `[machine.halt_wake]`: 1 to [`MAX_HALT_WAKE_POINTS`] points, sleep lengths strictly
/// rising, exit costs never falling and at most [`MAX_COST_NS`] (the invariants
/// [`crate::machine::HaltWake::exit_ns`] relies on).
fn validate_halt_wake(h: &crate::machine::HaltWake) -> Result<(), ValidationError> {
    let key = "machine.halt_wake.points";
    if h.points.is_empty() || h.points.len() > MAX_HALT_WAKE_POINTS {
        return Err(bad(
            key,
            format!(
                "expected 1 to {MAX_HALT_WAKE_POINTS} points, found {}",
                h.points.len()
            ),
        ));
    }
    for (i, p) in h.points.iter().enumerate() {
        check_u64(&format!("{key}.{i}.exit_ns"), p.exit_ns, MAX_COST_NS, "ns")?;
    }
    for (i, w) in h.points.windows(2).enumerate() {
        if w[1].slept_ns <= w[0].slept_ns {
            return Err(bad(
                format!("{key}.{}.slept_ns", i + 1),
                format!(
                    "expected a sleep longer than the point before ({} ns), found {} ns",
                    w[0].slept_ns, w[1].slept_ns
                ),
            ));
        }
        if w[1].exit_ns < w[0].exit_ns {
            return Err(bad(
                format!("{key}.{}.exit_ns", i + 1),
                format!(
                    "expected an exit cost no lower than the point before ({} ns), found {} ns",
                    w[0].exit_ns, w[1].exit_ns
                ),
            ));
        }
    }
    Ok(())
}

impl BackgroundSource {
    /// Expiries per second of one instance (a periodic source's `1e9 / period_ns`), after
    /// [`BackgroundSource::validate`].
    pub fn rate_per_cpu(&self) -> f64 {
        match (self.period_ns, self.rate_hz) {
            (Some(p), _) if p > 0 => 1e9 / p as f64,
            (_, Some(r)) if r.is_finite() => r,
            _ => 0.0,
        }
    }

    /// Checks one source on a machine of `nr_cpus` CPUs; `key` is `background[i]`.
    pub fn validate(&self, key: &str, nr_cpus: u32) -> Result<(), ValidationError> {
        let min_period = (1e9 / MAX_SOURCE_RATE_HZ) as u64;
        match (self.period_ns, self.rate_hz) {
            (Some(p), None) => {
                if !(min_period..=MAX_PERIOD_NS).contains(&p) {
                    return Err(bad(
                        format!("{key}.period_ns"),
                        format!("expected {min_period} to {MAX_PERIOD_NS} ns, found {p}"),
                    ));
                }
            }
            (None, Some(r)) => {
                let slowest = 1e9 / MAX_PERIOD_NS as f64;
                if !(r.is_finite() && (slowest..=MAX_SOURCE_RATE_HZ).contains(&r)) {
                    return Err(bad(
                        format!("{key}.rate_hz"),
                        format!(
                            "expected a finite rate from {slowest:.2e} to {MAX_SOURCE_RATE_HZ} Hz, found {r}"
                        ),
                    ));
                }
            }
            _ => {
                return Err(bad(
                    key,
                    format!(
                        "{:?}: expected exactly one of period_ns or rate_hz",
                        self.name
                    ),
                ));
            }
        }
        check_u64(&format!("{key}.slack_ns"), self.slack_ns, MAX_COST_NS, "ns")?;
        if let Some(t) = self.task_ns {
            if !self.wakes_task {
                return Err(bad(
                    format!("{key}.task_ns"),
                    "expected wakes_task = true with it: it is the woken task's run",
                ));
            }
            if t == 0 {
                return Err(bad(
                    format!("{key}.task_ns"),
                    format!("expected 1 to {MAX_COST_NS} ns, found 0"),
                ));
            }
            check_u64(&format!("{key}.task_ns"), t, MAX_COST_NS, "ns")?;
        }
        if self.follows_task && !self.wakes_task {
            return Err(bad(
                format!("{key}.follows_task"),
                "expected wakes_task = true with it: the timer follows the task it wakes",
            ));
        }
        if self.timer_migrates {
            let why = if !self.wakes_task {
                Some("expected wakes_task = true with it: the timer is a task's sleep")
            } else if self.kind != TimerKind::Hrtimer {
                Some("expected kind = \"hrtimer\" with it: the migrating sleep is an hrtimer")
            } else if self.follows_task {
                Some(
                    "expected follows_task = false with it: a task that follows its timer is not pinned",
                )
            } else if self
                .cpus
                .as_ref()
                .is_none_or(|c| c.len() > MAX_MIGRATING_SLEEPERS)
            {
                Some(
                    "expected cpus = the tasks' CPUs with it (at most 64): each task keeps a spare timer on every timer-housekeeping CPU",
                )
            } else {
                None
            };
            if let Some(why) = why {
                return Err(bad(format!("{key}.timer_migrates"), why));
            }
        }
        if self.hard && self.kind != TimerKind::Hrtimer {
            return Err(bad(
                format!("{key}.hard"),
                "expected kind = \"hrtimer\" with it: only an hrtimer is armed hard or soft",
            ));
        }
        if let Some(last) = self
            .cpus
            .as_ref()
            .and_then(|cpus| cpus.last())
            .filter(|&c| c >= nr_cpus)
        {
            return Err(bad(
                format!("{key}.cpus"),
                format!(
                    "CPU {last} is not on this machine: expected CPUs 0-{} ({nr_cpus} CPUs)",
                    nr_cpus.saturating_sub(1)
                ),
            ));
        }
        Ok(())
    }
}

impl Scenario {
    /// Checks the whole scenario (module docs): the machine, the kernel's version and HZ, its
    /// command line as that release reads it ([`Kernel::resolve`](crate::scenario::Kernel::resolve)),
    /// the workload against the machine, the background sources and the run's length.
    pub fn validate(&self) -> Result<(), ValidationError> {
        self.machine.validate()?;
        let nr = self.machine.topology.nr_cpus();
        self.kernel
            .version_tuple()
            .map_err(|e| bad("kernel.version", e.to_string()))?;
        check_hz(self.kernel.hz).map_err(|e| bad("kernel.hz", e.to_string()))?;
        self.kernel
            .resolve(nr)
            .map_err(|e| bad("kernel.cmdline", e.to_string()))?;
        if self.background.len() > MAX_BACKGROUND_SOURCES {
            return Err(bad(
                "background",
                format!(
                    "expected at most {MAX_BACKGROUND_SOURCES} sources, found {}",
                    self.background.len()
                ),
            ));
        }
        for (i, b) in self.background.iter().enumerate() {
            b.validate(&format!("background[{i}]"), nr)?;
        }
        let following = self.background.iter().filter(|b| b.follows_task).count() * nr as usize;
        if following > MAX_FOLLOWING_TIMERS_PER_CPU {
            return Err(bad(
                "background",
                format!(
                    "{} sources follow their task on {nr} CPUs: the twin keeps a spare timer per instance on every CPU, {following} per CPU; expected at most {MAX_FOLLOWING_TIMERS_PER_CPU} (sources x CPUs)",
                    self.background.iter().filter(|b| b.follows_task).count()
                ),
            ));
        }
        for (i, g) in self.workload.groups.iter().enumerate() {
            self.validate_group("workload", g)
                .map_err(|e| ValidationError {
                    what: format!("group {} ({}): {}", i + 1, g.label(), e.what),
                    ..e
                })?;
        }
        let r = &self.run;
        if r.duration_ns == 0 {
            return Err(bad("run.duration", "expected more than zero"));
        }
        let total = r.warmup_ns.checked_add(r.duration_ns);
        if total.is_none_or(|t| t > MAX_RUN_NS) {
            return Err(bad(
                "run",
                format!(
                    "warm-up {} ns + duration {} ns: expected at most {} s in all",
                    r.warmup_ns,
                    r.duration_ns,
                    MAX_RUN_NS / 1_000_000_000
                ),
            ));
        }
        Ok(())
    }

    // Over 100 lines because it is one match over the group kinds, each arm the checks of that
    // kind's fields, each naming its key.
    fn validate_group(&self, key: &str, g: &TaskGroup) -> Result<(), ValidationError> {
        let nr = self.machine.topology.nr_cpus();
        let cpu_ok = |c: u32| {
            if c < nr {
                Ok(())
            } else {
                Err(bad(
                    key,
                    format!("CPU {c} is not on this machine ({nr} CPUs)"),
                ))
            }
        };
        match g {
            TaskGroup::Hogs { count, cpus } => {
                if let Some(c) = cpus {
                    c.last().map_or(Ok(()), cpu_ok)?;
                } else if *count > nr {
                    return Err(bad(
                        key,
                        format!("at most {nr} hogs on {nr} CPUs, found {count}"),
                    ));
                }
            }
            TaskGroup::Frames {
                frequency_hz,
                loop_units,
                cpus,
                ..
            } => {
                cpus.last().map_or(Ok(()), cpu_ok)?;
                // The period (1/rate) must fit the twin's clock: no longer than a background
                // source's longest period (a week), so `frames:1e-12` cannot overflow it.
                let slowest = 1e9 / MAX_PERIOD_NS as f64;
                if !(frequency_hz.is_finite() && *frequency_hz >= slowest) {
                    return Err(bad(
                        key,
                        format!(
                            "a finite frame rate of at least {slowest:.3e} Hz (one frame a \
                             week, the longest period), found {frequency_hz}"
                        ),
                    ));
                }
                // time × work in f64: 2^64 units × 1 ns does not wrap, it is refused.
                let work = *loop_units as f64 * self.machine.costs.work_unit_ns;
                if !(work.is_finite() && work <= MAX_FRAME_WORK_NS) {
                    return Err(bad(
                        key,
                        format!(
                            "loop = {loop_units} units × machine.costs.work_unit_ns = {} ns is {work:e} ns of work per frame: expected at most {MAX_FRAME_WORK_NS:e} ns (one hour)",
                            self.machine.costs.work_unit_ns
                        ),
                    ));
                }
            }
            TaskGroup::PingPong {
                cpu_a,
                cpu_b,
                round_trips,
                ..
            } => {
                cpu_ok(*cpu_a)?;
                cpu_ok(*cpu_b)?;
                if *round_trips == 0 || *round_trips > MAX_WORKLOAD_COUNT {
                    return Err(bad(
                        key,
                        format!(
                            "n = {round_trips}: expected 1 to {MAX_WORKLOAD_COUNT} round trips"
                        ),
                    ));
                }
            }
            TaskGroup::Syscall { cpu, calls } => {
                cpu.map_or(Ok(()), cpu_ok)?;
                if *calls == 0 || *calls > MAX_WORKLOAD_COUNT {
                    return Err(bad(
                        key,
                        format!("n = {calls}: expected 1 to {MAX_WORKLOAD_COUNT} calls"),
                    ));
                }
            }
            TaskGroup::Bsp {
                ranks,
                cpus,
                work_ns,
                iterations,
                ..
            } => {
                cpus.last().map_or(Ok(()), cpu_ok)?;
                if cpus.len() != *ranks as usize || *ranks == 0 {
                    return Err(bad(
                        key,
                        format!(
                            "{ranks} ranks: expected one CPU per rank, at least one, found {} CPUs",
                            cpus.len()
                        ),
                    ));
                }
                let range = crate::workload::MIN_BSP_WORK_NS..=crate::workload::MAX_BSP_WORK_NS;
                if !range.contains(work_ns) {
                    return Err(bad(
                        key,
                        format!("work = {work_ns} ns: expected 1 us to 10 s"),
                    ));
                }
                if let Some(k) = iterations
                    && (*k == 0 || *k > MAX_WORKLOAD_COUNT)
                {
                    return Err(bad(
                        key,
                        format!("iters = {k}: expected 1 to {MAX_WORKLOAD_COUNT} iterations"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// An upper estimate of the events the twin simulates for this scenario: every CPU takes
    /// its tick at HZ and each background source's expiries for the whole run (warm-up
    /// included), plus four events per frame per worker and per ping-pong round trip. It is
    /// a bound for refusing runs by their cost ([`COMPUTE_LIMIT_EVENTS`]), not a prediction.
    pub fn estimated_events(&self) -> f64 {
        let nr = f64::from(self.machine.topology.nr_cpus());
        let secs = (self.run.warmup_ns as f64 + self.run.duration_ns as f64) / 1e9;
        let per_cpu: f64 = f64::from(self.kernel.hz)
            + self
                .background
                .iter()
                .map(BackgroundSource::rate_per_cpu)
                .sum::<f64>();
        let mut events = nr * secs * per_cpu;
        for g in &self.workload.groups {
            events += match g {
                TaskGroup::Frames {
                    frequency_hz, cpus, ..
                } => 4.0 * frequency_hz * secs * cpus.len() as f64,
                TaskGroup::PingPong { round_trips, .. } => 4.0 * *round_trips as f64,
                // Ranks are busy tasks: their iterations are bookkeeping, not events.
                TaskGroup::Hogs { .. } | TaskGroup::Syscall { .. } | TaskGroup::Bsp { .. } => 0.0,
            };
        }
        events
    }

    /// Refuses a run whose [`Scenario::estimated_events`] is above [`COMPUTE_LIMIT_EVENTS`];
    /// the error says the estimate and how to go on anyway (`confirm_flag`, e.g. `--yes`).
    pub fn check_compute(&self, confirm_flag: &str) -> Result<(), ValidationError> {
        let events = self.estimated_events();
        if events > COMPUTE_LIMIT_EVENTS {
            return Err(bad(
                "run",
                format!(
                    "about {events:.1e} simulated events ({} CPUs × {} s × the tick, timer and workload rates): above the limit of {COMPUTE_LIMIT_EVENTS:.0e}, hours of compute; shorten the run, use a smaller machine, or pass {confirm_flag}",
                    self.machine.topology.nr_cpus(),
                    (self.run.warmup_ns + self.run.duration_ns) / 1_000_000_000,
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

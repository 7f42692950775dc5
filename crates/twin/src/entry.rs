//! The one way into the twin: [`run`] takes a [`Scenario`] and gives its [`Report`].
//!
//! A scenario runs in one of two engines ([`Engine::of`]): the event loop ([`Sim`]), or, for
//! a workload of one ping-pong group alone, the guest ping-pong model
//! ([`crate::guest::simulate_pingpong`]), which walks the two vCPUs wake point by wake point
//! and has no per-CPU counters. [`run`] chooses, runs and builds the report, so no front end
//! picks an engine or writes a report itself.
//!
//! The compute limit lives here too: [`RunOptions::check_compute`] refuses work whose
//! estimated events ([`Scenario::estimated_events`]) sum above
//! [`COMPUTE_LIMIT_EVENTS`] unless the
//! options allow it (`--yes` on the command line). [`run`] applies it to its scenario; a
//! front end running many scenarios (compare, sweep, an experiment) applies it to all of
//! them at once first, so the limit is on the command's work, not on each run.

use ticklab_schema::report::Report;
use ticklab_schema::scenario::Scenario;
use ticklab_schema::validate::{COMPUTE_LIMIT_EVENTS, ValidationError};
use ticklab_schema::workload::TaskGroup;

use crate::sim::{Sim, SimError};

/// The flag a user passes to go past the compute limit; every front end that runs the twin
/// offers it under this name.
pub const CONFIRM_FLAG: &str = "--yes";

/// Which engine runs a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// The discrete-event loop ([`Sim`]): every workload but a lone ping-pong.
    EventLoop,
    /// The guest ping-pong model ([`crate::guest::simulate_pingpong`]): a workload of one
    /// ping-pong group and nothing else.
    GuestPingPong,
}

impl Engine {
    /// The engine `scenario` runs in.
    pub fn of(scenario: &Scenario) -> Engine {
        match &scenario.workload.groups[..] {
            [TaskGroup::PingPong { .. }] => Engine::GuestPingPong,
            _ => Engine::EventLoop,
        }
    }
}

/// How to run: what to keep, and whether a run above the compute limit may start.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Keep the frame groups' jitter and wake-up histograms in this many 1 µs buckets
    /// (event loop only).
    pub histogram: Option<u32>,
    /// The user confirmed a run above the compute limit ([`CONFIRM_FLAG`]).
    pub allow_large: bool,
    /// Called with the simulated ns done, about every simulated 10 ms (event loop only).
    pub progress: Option<&'a mut dyn FnMut(u64)>,
    /// Run in this engine whatever the workload (`None`: [`Engine::of`]); for front ends
    /// that compare per-CPU counters, which only the event loop has.
    pub engine: Option<Engine>,
    /// Keep the OS-noise report of every busy CPU (`Report.noise`; event loop only, and
    /// always on for a bulk-synchronous job).
    pub noise: bool,
}

impl RunOptions<'_> {
    /// Options with the compute limit lifted: for runs already checked as a whole (each
    /// configuration of a comparison), or whose length was measured rather than asked for
    /// (the twin of a host's or a guest's window, a calibration's fits).
    pub fn unlimited() -> RunOptions<'static> {
        RunOptions {
            allow_large: true,
            ..RunOptions::default()
        }
    }

    /// The compute limit over all of `scenarios` (their estimated events summed): Err names
    /// the estimate and [`CONFIRM_FLAG`], unless [`RunOptions::allow_large`].
    pub fn check_compute<'s>(
        &self,
        scenarios: impl IntoIterator<Item = &'s Scenario>,
    ) -> Result<(), SimError> {
        let mut n = 0usize;
        let mut events = 0.0;
        let mut first = None;
        for s in scenarios {
            n += 1;
            events += s.estimated_events();
            first.get_or_insert(s);
        }
        match first {
            // One run: the scenario's own message, which names its CPUs and length.
            Some(s) if n == 1 => self.check_events_of(s.check_compute(CONFIRM_FLAG)),
            _ => self.check_events(events, &format!("{n} runs")),
        }
    }

    /// The compute limit for `events` estimated over some work (`what`: `12 runs`, `all
    /// points`), for work that is not a list of scenarios (E3's guest model).
    pub fn check_events(&self, events: f64, what: &str) -> Result<(), SimError> {
        if self.allow_large || events <= COMPUTE_LIMIT_EVENTS {
            return Ok(());
        }
        Err(SimError::ComputeLimit(ValidationError {
            key: "run".into(),
            what: format!(
                "about {events:.1e} simulated events over {what}: above the limit of {COMPUTE_LIMIT_EVENTS:.0e}, hours of compute; shorten the runs, use fewer points or pass {CONFIRM_FLAG}"
            ),
        }))
    }

    fn check_events_of(&self, checked: Result<(), ValidationError>) -> Result<(), SimError> {
        match checked {
            Err(e) if !self.allow_large => Err(SimError::ComputeLimit(e)),
            _ => Ok(()),
        }
    }
}

/// Runs `scenario` in its engine ([`Engine::of`]) after the compute limit
/// ([`RunOptions::check_compute`]) and returns its report. Same scenario and seed,
/// byte-identical report.
pub fn run(scenario: &Scenario, options: RunOptions<'_>) -> Result<Report, SimError> {
    options.check_compute([scenario])?;
    match options.engine.unwrap_or_else(|| Engine::of(scenario)) {
        Engine::GuestPingPong => {
            let o = crate::guest::simulate_pingpong(scenario).map_err(SimError::GuestModel)?;
            Ok(crate::guest::report(scenario, &o))
        }
        Engine::EventLoop => {
            let mut sim: Sim = Sim::new(scenario)?;
            if let Some(max_us) = options.histogram {
                sim.set_frame_histogram(max_us);
            }
            if options.noise {
                sim.set_noise();
            }
            match options.progress {
                Some(p) => sim.run(p),
                None => sim.run(|_| {}),
            }
            Ok(sim.report())
        }
    }
}

/// What `ticklab sim` shows of a guest ping-pong run: the model's own figures (exits by
/// reason, guest and host CPU), after the compute limit of `options`.
pub fn pingpong_run(
    scenario: &ticklab_schema::scenario::Scenario,
    options: &RunOptions<'_>,
) -> Result<ticklab_schema::report::GuestPingPongRun, SimError> {
    options.check_compute([scenario])?;
    let o = crate::guest::simulate_pingpong(scenario).map_err(SimError::GuestModel)?;
    Ok(ticklab_schema::report::GuestPingPongRun {
        cmdline: scenario.kernel.cmdline.clone(),
        exits_per_switch: crate::kernel::kvm::ExitReason::ALL
            .iter()
            .map(|&r| (r.name().to_string(), o.exits_per_switch(r)))
            .collect(),
        guest_busy_pct: o.guest_busy_pct(),
        host_cpu_pct: o.host_cpu_pct(),
        host_poll_pct: o.host_poll_pct(),
        machine: scenario.machine.name.clone(),
        ns_per_switch: o.ns_per_switch(),
        schema_version: ticklab_schema::report::REPORT_SCHEMA_VERSION,
        switches: o.switches,
        workload: scenario.workload.label(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_schema::scenario::Run;

    fn long(hours: u64) -> Scenario {
        let mut s = crate::experiments::e1::scenario(
            crate::experiments::e1::Mode::NohzFull,
            0,
            Run {
                duration_ns: hours * 3600 * 1_000_000_000,
                warmup_ns: 0,
                seed: 1,
            },
        );
        s.machine = ticklab_schema::machine::server_2012_64();
        s
    }

    #[test]
    fn the_limit_is_on_the_sum_and_yes_lifts_it() {
        let (one, two) = (long(60), long(60));
        assert!(one.estimated_events() < COMPUTE_LIMIT_EVENTS);
        let strict = RunOptions::default();
        assert!(strict.check_compute([&one]).is_ok());
        let e = strict
            .check_compute([&one, &two])
            .expect_err("together above");
        assert!(matches!(e, SimError::ComputeLimit(_)), "{e}");
        assert!(e.to_string().contains(CONFIRM_FLAG), "{e}");
        let yes = RunOptions {
            allow_large: true,
            ..RunOptions::default()
        };
        assert!(yes.check_compute([&one, &two]).is_ok());
        assert!(yes.check_compute([&long(168)]).is_ok());
        assert!(strict.check_compute([&long(168)]).is_err());
        assert!(strict.check_events(COMPUTE_LIMIT_EVENTS, "x").is_ok());
        assert!(
            strict
                .check_events(COMPUTE_LIMIT_EVENTS * 1.01, "x")
                .is_err()
        );
    }

    #[test]
    fn run_refuses_above_the_limit_before_simulating() {
        let e = run(&long(168), RunOptions::default()).expect_err("above the limit");
        assert!(matches!(e, SimError::ComputeLimit(_)), "{e}");
    }

    #[test]
    fn a_lone_pingpong_runs_in_the_guest_model_and_anything_else_in_the_loop() {
        let mut s = long(1);
        assert_eq!(Engine::of(&s), Engine::EventLoop);
        s.workload = ticklab_schema::workload::Workload::parse("pingpong:futex@0,1:n=10", 64)
            .expect("workload");
        assert_eq!(Engine::of(&s), Engine::GuestPingPong);
        s.workload =
            ticklab_schema::workload::Workload::parse("pingpong:futex@0,1:n=10+hogs:1@5", 64)
                .expect("workload");
        assert_eq!(Engine::of(&s), Engine::EventLoop);
    }
}

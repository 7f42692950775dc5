//! Which kernel source delayed each late iteration of a bsp job (docs/noise.md, "The host
//! lab"): the ranks time their detours, and a trace of their CPUs recorded during the run says
//! what ran in them.
//!
//! The trace is `host noise`'s: the same private tracefs instance, events and runs
//! (`noise::trace_sources`, `noise::attribution::runs_from_trace`), restricted to the ranks'
//! CPUs, with each rank's thread as the task whose switches away open thread runs. Each kept
//! late iteration ([`LateIteration`]) has a span on its last rank's CPU (its largest detour
//! while computing, or the release seen late); the source that took most of that span
//! ([`RunIndex::largest_inside`]) is its blame, and a span with nothing traced inside is
//! `hardware` (firmware, or on a guest the hypervisor), as a detour of `host noise` is.
//!
//! **One time base.** The ranks read `CLOCK_MONOTONIC`; the trace clock is the samplers'
//! (`x86-tsc` on x86_64: the raw counter, where the ns trace clocks print only microseconds).
//! A (counter, `CLOCK_MONOTONIC`) pair read before the ranks start and one after they stop
//! map the trace's counts onto the ranks' nanoseconds by a straight line: the TSC is the
//! clocksource `CLOCK_MONOTONIC` is built on, and over a run NTP changes its rate by parts per
//! million at most, far below a detour's microseconds.
//!
//! Tracing writes at least two events per traced interrupt, so a traced job's detours include
//! the tracer's cost of writing them, as `host noise`'s do.

use std::time::Duration;

use ticklab_schema::bsp::BspReport;
use ticklab_schema::host_noise::SourceRef;
use ticklab_schema::noise::NoiseClass;
use ticklab_schema::workload::{TaskGroup, Workload};

use super::bsp::{BspBarrier, LateIteration};
use super::os::now_ns;
use crate::noise::attribution::{Detour, RunIndex, SoftirqContext, runs_from_trace};
use crate::noise::sampler::{Clock, ClockPair, ns_per_count};
use crate::noise::{NoTrace, trace_sources};
use crate::probe::tracefs::{TraceError, TraceSession};

/// Why a bsp job's late iterations are not blamed on named sources (the run says so).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BlameUnnamed {
    /// The ranks' CPUs could not be traced.
    #[error(transparent)]
    NoTrace(#[from] NoTrace),
    /// The trace could not be read after the run.
    #[error("trace unreadable ({0})")]
    Unreadable(#[source] TraceError),
    /// The ring buffer dropped events (their count), so some sources would be missed.
    #[error("{0} trace events lost to ring-buffer overruns")]
    Overruns(u64),
    /// Too little time between the clock pairs to map trace counts onto nanoseconds.
    #[error("the run was too short to map the trace clock onto CLOCK_MONOTONIC")]
    TooShort,
}

/// A trace of the ranks' CPUs, running.
#[derive(Debug)]
pub(crate) struct BlameTrace {
    session: TraceSession,
    clock: Clock,
    before: ClockPair,
}

/// Every bsp rank's CPU of `workload`, sorted, once each.
fn rank_cpus(workload: &Workload) -> Vec<u32> {
    let mut cpus: Vec<u32> = workload
        .groups
        .iter()
        .filter_map(|g| match g {
            TaskGroup::Bsp { cpus, .. } => Some(cpus.iter()),
            _ => None,
        })
        .flatten()
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// Starts tracing the ranks' CPUs when `workload` has a bsp group: `None` without one,
/// `Some(Err(why))` when tracing is not possible (the blame then stays unnamed).
pub(crate) fn start(
    workload: &Workload,
    duration: Duration,
) -> Option<Result<BlameTrace, BlameUnnamed>> {
    let cpus = rank_cpus(workload);
    if cpus.is_empty() {
        return None;
    }
    let clock = Clock::native();
    Some(
        trace_sources(&cpus, duration, clock)
            .map(|session| BlameTrace {
                session,
                clock,
                before: ClockPair::now_against(clock, now_ns),
            })
            .map_err(BlameUnnamed::from),
    )
}

impl BlameTrace {
    /// Stops the trace and names the blame of every bsp group: `reports[i]` is group `i`'s
    /// report when it is a bsp group (`barriers[i]`), built by [`BspBarrier::report_traced`].
    /// `Err` says why the trace could not be used.
    pub(crate) fn finish(
        self,
        barriers: &[Option<BspBarrier>],
    ) -> Result<Vec<Option<BspReport>>, BlameUnnamed> {
        let after = ClockPair::now_against(self.clock, now_ns);
        let _ = self.session.stop();
        let text = self
            .session
            .read_trace()
            .map_err(BlameUnnamed::Unreadable)?;
        let overruns = self.session.overruns();
        drop(self.session);
        if overruns > 0 {
            return Err(BlameUnnamed::Overruns(overruns));
        }
        let npc = ns_per_count(self.before, after).ok_or(BlameUnnamed::TooShort)?;
        let before = self.before;
        let to_ns = move |c: u64| {
            before.ns as i64 + ((c as i128 - before.count as i128) as f64 * npc).round() as i64
        };
        let softirqs = SoftirqContext::of_this_kernel();
        Ok(barriers
            .iter()
            .map(|b| {
                b.as_ref()
                    .map(|job| name_blame(job, &text, softirqs, &to_ns))
            })
            .collect())
    }
}

/// `job`'s report with its late iterations named from the trace `text` (module docs);
/// `to_ns` maps a trace timestamp onto the ranks' clock.
pub(crate) fn name_blame(
    job: &BspBarrier,
    text: &str,
    softirqs: SoftirqContext,
    to_ns: &impl Fn(u64) -> i64,
) -> BspReport {
    let index: Vec<RunIndex> = job
        .cpus()
        .iter()
        .zip(job.tids())
        .map(|(&cpu, tid)| RunIndex::new(runs_from_trace(text, cpu, tid, softirqs, to_ns)))
        .collect();
    job.report_traced(|l| Some(source_of(l, &index)))
}

/// The source that took most of late iteration `l`'s span on its last rank's CPU, `hardware`
/// when nothing traced ran in it.
fn source_of(l: &LateIteration, index: &[RunIndex]) -> SourceRef {
    let span = Detour {
        start: l.from_ns as i64,
        ns: l.to_ns.saturating_sub(l.from_ns),
    };
    index
        .get(l.rank as usize)
        .and_then(|i| i.largest_inside(span))
        .map(|(s, _)| s)
        .unwrap_or_else(|| SourceRef {
            class: NoiseClass::Hardware,
            name: "hardware".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::bsp::{Arrival, Step};
    use ticklab_schema::workload::Barrier;

    /// Two ranks on CPUs 1 and 2 (tids 501, 502); timestamps are ns on the ranks' clock.
    /// CPU 1: a tick at 10 000 (2 µs) raising the TIMER softirq (1 µs); a kworker from 30 000
    /// to 33 000; a tick at 41 000-42 500 (rank 1 spins at the barrier then). CPU 2: a
    /// device interrupt at 60 000-60 800 inside a 3 µs tick-and-softirq pair.
    const TRACE: &str = "\
    ticklab-bsp-rank0-501 [001] d.h1. 10000: local_timer_entry: vector=236
    ticklab-bsp-rank0-501 [001] d.h1. 12000: local_timer_exit: vector=236
    ticklab-bsp-rank0-501 [001] ..s1. 12050: softirq_entry: vec=1 [action=TIMER]
    ticklab-bsp-rank0-501 [001] ..s1. 13050: softirq_exit: vec=1 [action=TIMER]
    ticklab-bsp-rank0-501 [001] d..2. 30000: sched_switch: prev_comm=ticklab-bsp-rank0 prev_pid=501 prev_prio=120 prev_state=R ==> next_comm=kworker/1:1 next_pid=77 next_prio=120
      kworker/1:1-77      [001] d..2. 33000: sched_switch: prev_comm=kworker/1:1 prev_pid=77 prev_prio=120 prev_state=S ==> next_comm=ticklab-bsp-rank0 next_pid=501 next_prio=120
    ticklab-bsp-rank0-501 [001] d.h1. 41000: local_timer_entry: vector=236
    ticklab-bsp-rank0-501 [001] d.h1. 42500: local_timer_exit: vector=236
    ticklab-bsp-rank1-502 [002] d.h1. 59000: local_timer_entry: vector=236
    ticklab-bsp-rank1-502 [002] d.h1. 59400: local_timer_exit: vector=236
    ticklab-bsp-rank1-502 [002] ..s1. 59500: softirq_entry: vec=7 [action=SCHED]
    ticklab-bsp-rank1-502 [002] d.h2. 60000: irq_handler_entry: irq=24 name=virtio0-input.0
    ticklab-bsp-rank1-502 [002] d.h2. 60800: irq_handler_exit: irq=24 ret=handled
    ticklab-bsp-rank1-502 [002] ..s1. 62000: softirq_exit: vec=7 [action=SCHED]
";

    /// One iteration per row: the iteration starts at `release`, rank `late` arrives last
    /// with `arrival`, the other on time; what the traced blame says.
    #[test]
    fn each_late_iteration_is_blamed_on_the_source_that_took_most_of_its_span() {
        // (case, release, late rank, its arrival, expected blame (class, name))
        type Case<'a> = (
            &'a str,
            u64,
            u32,
            Arrival,
            Option<(Option<NoiseClass>, &'a str)>,
        );
        let computing = |at, lost, detour_at, detour| Arrival {
            at_ns: at,
            lost_ns: lost,
            late_start_ns: 0,
            detour_at_ns: detour_at,
            detour_ns: detour,
        };
        let table: &[Case<'_>] = &[
            (
                "a tick, then its softirq: the tick took most of the detour",
                9_000,
                0,
                computing(9_000 + 100 + 3_100, 3_100, 9_990, 3_100),
                Some((Some(NoiseClass::Irq), "local_timer")),
            ),
            (
                "another thread ran",
                29_000,
                0,
                computing(29_000 + 100 + 3_050, 3_050, 29_990, 3_050),
                Some((Some(NoiseClass::Thread), "kworker/1:1")),
            ),
            (
                "nothing traced in the detour: hardware",
                20_000,
                0,
                computing(20_000 + 100 + 2_000, 2_000, 20_050, 2_000),
                Some((Some(NoiseClass::Hardware), "hardware")),
            ),
            (
                "two sources, the softirq the larger (its net time less the device's)",
                58_900,
                1,
                computing(58_900 + 100 + 3_100, 3_100, 58_990, 3_100),
                Some((Some(NoiseClass::Softirq), "SCHED")),
            ),
            (
                "a tick while spinning that outlasted the release",
                42_000,
                0,
                Arrival {
                    at_ns: 42_000 + 1_500 + 100,
                    lost_ns: 0,
                    late_start_ns: 1_500,
                    ..Arrival::default()
                },
                Some((Some(NoiseClass::Irq), "local_timer")),
            ),
            (
                "a tick while spinning, over before the release: not late",
                43_000,
                0,
                computing(43_000 + 100, 0, 0, 0),
                None,
            ),
        ];
        for (case, release, late, arrival, blame) in table {
            let job = BspBarrier::new(&[1, 2], 100, None, Barrier::Spin);
            job.set_tid(0, 501);
            job.set_tid(1, 502);
            job.start(*release);
            let on_time = computing(release + 100, 0, 0, 0);
            let other = 1 - late;
            assert!(!job.check_in(other, on_time), "{case}");
            let step = job.arrive(*late, 0, *arrival, || arrival.at_ns + 10, || false);
            assert_eq!(step, Step::Go(arrival.at_ns + 10), "{case}");
            let r = name_blame(&job, TRACE, SoftirqContext::Own, &|t| t as i64);
            r.check().unwrap();
            let got = r.blame.first().map(|b| (b.class, b.name.as_str()));
            assert_eq!(got, *blame, "{case}");
            if blame.is_some() {
                assert_eq!(r.last_arrivals[0].cpu, [1, 2][*late as usize], "{case}");
            }
            // Untraced, the same iteration keeps an unnamed blame.
            let untraced = job.report();
            assert!(untraced.blame.iter().all(|b| b.class.is_none()), "{case}");
        }
    }

    /// A futex rank that saw the release late was asleep by design: its wake-up stays the
    /// blame, whatever ran on its CPU.
    #[test]
    fn a_futex_wake_up_stays_the_wake_up() {
        let job = BspBarrier::new(&[1, 2], 100, None, Barrier::Futex);
        job.set_tid(0, 501);
        job.set_tid(1, 502);
        job.start(9_000);
        let on_time = Arrival {
            at_ns: 9_100,
            ..Arrival::default()
        };
        assert!(!job.check_in(1, on_time));
        let late = Arrival {
            at_ns: 9_000 + 3_000 + 100,
            late_start_ns: 3_000,
            ..Arrival::default()
        };
        job.arrive(0, 0, late, || 20_000, || false);
        let r = name_blame(&job, TRACE, SoftirqContext::Own, &|t| t as i64);
        assert_eq!(r.blame.len(), 1);
        assert_eq!(
            (r.blame[0].class, r.blame[0].name.as_str()),
            (None, "futex wake-up")
        );
    }

    #[test]
    fn only_bsp_ranks_are_traced() {
        let w = Workload::parse("bsp:2@1,3:work=10us+hogs:1@2", 4).unwrap();
        assert_eq!(rank_cpus(&w), [1, 3]);
        let idle = Workload::parse("hogs:1@1", 4).unwrap();
        assert!(start(&idle, Duration::from_secs(1)).is_none());
    }
}

//! The bulk-synchronous harness (`bsp:N@LIST:work=DUR[:iters=K][:barrier=spin|futex]`,
//! docs/noise.md "The host lab"): one rank thread pinned per listed CPU; in every iteration
//! each rank computes `work`, then waits at a barrier, and the iteration ends when the last
//! rank arrives.
//!
//! **Compute.** A rank's compute part is a loop of `CLOCK_MONOTONIC` reads (the vDSO) that
//! runs until it has been given `work` of its CPU's time: a gap between two reads at or below
//! [`DETOUR_THRESHOLD_NS`] is the loop's own pass and counts as compute; a longer gap is a
//! **detour** (the kernel or another thread held the CPU, the same definition as `host
//! noise`) and counts as time lost. The duration is measured, not guessed from an instruction
//! count, so an undisturbed rank arrives `work` (plus less than one pass) after it saw the
//! release, and a disturbed one later by exactly what it lost.
//!
//! **Barrier** ([`BspBarrier`]): an arrival counter and a generation word. A rank stores its
//! arrival time and lost time in its slot and increments the counter; the rank that brings it
//! to N is the last arriver: it closes the iteration (statistics, under an uncontended mutex
//! no other rank touches at that moment), reads the release time, resets the counter and bumps
//! the generation. `spin` waiters spin on the generation; `futex` waiters `FUTEX_WAIT` on it and
//! the last arriver wakes them all with one `FUTEX_WAKE`. The stop decision (the iteration
//! count, the window's end, a stop request) is taken by the last arriver before the release,
//! so every rank leaves after the same iteration and none is left waiting.
//!
//! **Iteration time**: from the previous release to the latest arrival (the statistics the
//! last arriver keeps between its arrival and the release belong to neither iteration). The
//! noiseless iteration is `work`; an iteration is **late** when its excess is above the detour
//! threshold. Its blame goes to the rank with the latest arrival: to the detours inside its
//! compute part, or, when it lost more by starting late than by computing, to the release
//! reaching it late (with `futex`, the wake-up; with `spin`, a detour while it spun that
//! outlasted the release). The ranks see their detours but not who ran in them: the barrier
//! keeps each late iteration's [`LateIteration`] (the last rank, and the span that delayed it:
//! its largest detour while computing, or the time from the release to its start), and
//! [`BspBarrier::report_traced`] names the source that ran in that span from a trace of the
//! ranks' CPUs (`bsp_blame.rs`). Without a trace, [`BspBarrier::report`] leaves the class
//! unknown (`None`).
//!
//! Nothing in the timed loop allocates: the slots, the statistics and their histogram exist
//! before the gate opens.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use ticklab_schema::bsp::{BspBlame, BspReport, BspTally};
use ticklab_schema::host_noise::SourceRef;
use ticklab_schema::workload::Barrier;

use super::error::{HarnessError, os_error};
use super::gate::Gate;
use super::os::{now_ns, pin_to};
use super::pingpong::{futex_wait, futex_wake_n};
use super::stop::Stop;

/// A gap between two clock reads of a computing rank longer than this is a detour (ns); the
/// same 1 µs as `host noise`'s default threshold.
pub(crate) const DETOUR_THRESHOLD_NS: u64 = 1_000;

/// Blame: the latest rank lost most inside its compute part.
const BLAME_COMPUTE: usize = 0;
/// Blame: the latest rank saw the release late.
const BLAME_RELEASE: usize = 1;

/// Late iterations kept with their span for [`BspBarrier::report_traced`] (40 bytes each,
/// reserved before the start line); later ones keep the unnamed blame of their part.
pub(crate) const MAX_LATE_KEPT: usize = 1 << 16;

/// What one rank reports about the iteration it arrives at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Arrival {
    /// When it arrived (ns, `CLOCK_MONOTONIC`).
    pub at_ns: u64,
    /// Time lost to detours inside its compute part (ns).
    pub lost_ns: u64,
    /// How long after the release it started computing (ns).
    pub late_start_ns: u64,
    /// Its largest detour while computing: start (ns, `CLOCK_MONOTONIC`), 0 if none.
    pub detour_at_ns: u64,
    /// Its length (ns), 0 if none.
    pub detour_ns: u64,
}

/// A late iteration, kept for naming its source after the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LateIteration {
    /// The last rank to arrive.
    pub rank: u32,
    /// What delayed it: `BLAME_COMPUTE` or `BLAME_RELEASE`.
    pub part: usize,
    /// The iteration's excess (ns).
    pub excess_ns: u64,
    /// The span that delayed the rank (ns, `CLOCK_MONOTONIC`): its largest detour while
    /// computing, or from the release to its start when it saw the release late.
    pub from_ns: u64,
    /// The span's end.
    pub to_ns: u64,
}

/// One rank's slot, on its own cache line so arrivals do not bounce each other's lines.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Slot {
    at_ns: AtomicU64,
    lost_ns: AtomicU64,
    late_start_ns: AtomicU64,
    detour_at_ns: AtomicU64,
    detour_ns: AtomicU64,
    /// The rank thread's kernel tid (its `sched_switch` pid), once it started.
    tid: AtomicU32,
}

/// What a rank does after the barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Compute the next iteration; the barrier released the ranks at this time (ns).
    Go(u64),
    /// The job is over.
    Done,
}

/// The statistics of the closed iterations (kept by each iteration's last arriver).
#[derive(Debug)]
struct Stats {
    /// The closed iterations; blame parts are `BLAME_COMPUTE` and `BLAME_RELEASE`.
    tally: BspTally,
    /// The release that started the current iteration (ns).
    release_ns: u64,
    /// The first [`MAX_LATE_KEPT`] late iterations (capacity reserved: no allocation).
    late: Vec<LateIteration>,
    /// Per blame part, the late iterations not kept in `late`: (iterations, excess).
    unkept: [(u64, u64); 2],
}

/// The barrier of one bulk-synchronous job and its statistics (see the module docs).
#[derive(Debug)]
pub(crate) struct BspBarrier {
    /// The ranks' CPUs, in rank order.
    cpus: Vec<u32>,
    ranks: u32,
    work_ns: u64,
    barrier: Barrier,
    limit: Option<u64>,
    arrived: AtomicU32,
    /// The futex word: bumped once per release.
    generation: AtomicU32,
    /// Raised by the last arriver with the final release.
    done: AtomicBool,
    /// A rank could not start (pinning failed): every rank leaves after the gate.
    failed: AtomicBool,
    release_ns: AtomicU64,
    slots: Vec<Slot>,
    stats: Mutex<Stats>,
}

impl BspBarrier {
    /// A barrier for one rank per CPU of `cpus`, `work_ns` each, ending after `limit`
    /// iterations (or when the stop callback of [`BspBarrier::arrive`] says so). Allocates
    /// everything it uses.
    pub(crate) fn new(cpus: &[u32], work_ns: u64, limit: Option<u64>, barrier: Barrier) -> Self {
        let ranks = cpus.len() as u32;
        debug_assert!(ranks >= 1, "a job has a rank");
        BspBarrier {
            cpus: cpus.to_vec(),
            ranks,
            work_ns,
            barrier,
            limit,
            arrived: AtomicU32::new(0),
            generation: AtomicU32::new(0),
            done: AtomicBool::new(limit == Some(0)),
            failed: AtomicBool::new(false),
            release_ns: AtomicU64::new(0),
            slots: (0..ranks).map(|_| Slot::default()).collect(),
            stats: Mutex::new(Stats {
                tally: BspTally::new(ranks as usize, 2),
                release_ns: 0,
                late: Vec::with_capacity(MAX_LATE_KEPT),
                unkept: [(0, 0); 2],
            }),
        }
    }

    /// The ranks' CPUs, in rank order.
    pub(crate) fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// Rank `rank`'s thread has kernel tid `tid`.
    pub(crate) fn set_tid(&self, rank: u32, tid: u32) {
        self.slots[rank as usize].tid.store(tid, Ordering::Relaxed);
    }

    /// The ranks' kernel tids, in rank order (0 for a rank that never started).
    pub(crate) fn tids(&self) -> Vec<u32> {
        self.slots
            .iter()
            .map(|s| s.tid.load(Ordering::Relaxed))
            .collect()
    }

    /// Iteration 0 starts at `t0` (ns); call once, before any rank computes.
    pub(crate) fn start(&self, t0: u64) {
        self.release_ns.store(t0, Ordering::Relaxed);
        self.stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .release_ns = t0;
    }

    /// The job is over before its first iteration (limit 0, a failed rank).
    pub(crate) fn over_before_start(&self) -> bool {
        self.done.load(Ordering::Acquire) || self.failed.load(Ordering::Acquire)
    }

    /// Marks the job failed; call before the gate.
    pub(crate) fn fail(&self) {
        self.failed.store(true, Ordering::Release);
    }

    /// Rank `rank` arrives at the barrier of generation `generation` (the number of releases
    /// it has seen). The last arriver closes the iteration, asks `stop` whether to end the
    /// job, and releases the others. Returns what to do next. Allocates nothing.
    pub(crate) fn arrive(
        &self,
        rank: u32,
        generation: u32,
        a: Arrival,
        now: impl Fn() -> u64,
        stop: impl Fn() -> bool,
    ) -> Step {
        if self.check_in(rank, a) {
            self.release(generation, now, stop)
        } else {
            self.wait(generation)
        }
    }

    /// Records rank `rank`'s arrival; returns whether it was the last of the iteration.
    pub(crate) fn check_in(&self, rank: u32, a: Arrival) -> bool {
        let slot = &self.slots[rank as usize];
        slot.at_ns.store(a.at_ns, Ordering::Relaxed);
        slot.lost_ns.store(a.lost_ns, Ordering::Relaxed);
        slot.late_start_ns.store(a.late_start_ns, Ordering::Relaxed);
        slot.detour_at_ns.store(a.detour_at_ns, Ordering::Relaxed);
        slot.detour_ns.store(a.detour_ns, Ordering::Relaxed);
        // AcqRel: the last arriver's increment reads every earlier one (one release sequence),
        // so it sees every slot written before them.
        let n = self.arrived.fetch_add(1, Ordering::AcqRel) + 1;
        debug_assert!(n <= self.ranks, "more arrivals than ranks");
        n == self.ranks
    }

    /// The last arriver's part: closes the iteration, decides whether the job ends, releases.
    fn release(&self, generation: u32, now: impl Fn() -> u64, stop: impl Fn() -> bool) -> Step {
        let finished = self.close_iteration();
        let done = finished || stop();
        self.arrived.store(0, Ordering::Relaxed);
        if done {
            self.done.store(true, Ordering::Relaxed);
        }
        let release = now();
        self.release_ns.store(release, Ordering::Relaxed);
        self.stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .release_ns = release;
        // Release: publishes the reset counter, `done` and the release time.
        self.generation
            .store(generation.wrapping_add(1), Ordering::Release);
        if self.barrier == Barrier::Futex && self.ranks > 1 {
            futex_wake_n(&self.generation, true, i32::MAX);
        }
        if done { Step::Done } else { Step::Go(release) }
    }

    /// Any other arriver's part: waits for the release of `generation`.
    fn wait(&self, generation: u32) -> Step {
        match self.barrier {
            Barrier::Spin => {
                while self.generation.load(Ordering::Acquire) == generation {
                    std::hint::spin_loop();
                }
            }
            Barrier::Futex => {
                while self.generation.load(Ordering::Acquire) == generation {
                    futex_wait(&self.generation, generation, true);
                }
            }
        }
        if self.done.load(Ordering::Relaxed) {
            Step::Done
        } else {
            Step::Go(self.release_ns.load(Ordering::Relaxed))
        }
    }

    /// Closes the iteration every rank has arrived at; returns whether the limit is reached.
    fn close_iteration(&self) -> bool {
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        // The latest arrival, not the last increment: a rank may read its clock later and
        // still increment first.
        let (mut last, mut latest) = (0usize, 0u64);
        for (r, s) in self.slots.iter().enumerate() {
            let at = s.at_ns.load(Ordering::Relaxed);
            if r == 0 || at > latest {
                latest = at;
                last = r;
            }
        }
        debug_assert!(
            latest >= st.release_ns + self.work_ns,
            "a rank computes work after the release"
        );
        let len = latest.saturating_sub(st.release_ns);
        let excess = len.saturating_sub(self.work_ns);
        st.tally.record(len);
        if excess > DETOUR_THRESHOLD_NS {
            let s = &self.slots[last];
            let lost = s.lost_ns.load(Ordering::Relaxed);
            let late_start = s.late_start_ns.load(Ordering::Relaxed);
            let kind = if late_start > lost {
                BLAME_RELEASE
            } else {
                BLAME_COMPUTE
            };
            st.tally.blame(last, kind, excess);
            let (from_ns, to_ns) = if kind == BLAME_RELEASE {
                (st.release_ns, st.release_ns + late_start)
            } else {
                let at = s.detour_at_ns.load(Ordering::Relaxed);
                (at, at + s.detour_ns.load(Ordering::Relaxed))
            };
            if st.late.len() < MAX_LATE_KEPT {
                st.late.push(LateIteration {
                    rank: last as u32,
                    part: kind,
                    excess_ns: excess,
                    from_ns,
                    to_ns,
                });
            } else {
                st.unkept[kind].0 += 1;
                st.unkept[kind].1 += excess;
            }
        }
        self.limit.is_some_and(|l| st.tally.completed() >= l)
    }

    /// The unnamed blame of part `kind` (no trace, or none that could name it).
    fn unnamed(&self, kind: usize) -> &'static str {
        match (kind, self.barrier) {
            (BLAME_RELEASE, Barrier::Spin) => "unknown: release seen late",
            (BLAME_RELEASE, Barrier::Futex) => "futex wake-up",
            _ => "unknown: detours while computing",
        }
    }

    /// The job's report, its blame unnamed (no trace of the ranks' CPUs).
    pub(crate) fn report(&self) -> BspReport {
        let st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        st.tally
            .report(&self.cpus, self.barrier, self.work_ns, |kind| {
                (None, self.unnamed(kind).to_string())
            })
    }

    /// The job's report with each kept late iteration blamed on the source `name` gives its
    /// span (`None`: it cannot tell, and the part's unnamed blame stays). A futex barrier's
    /// late release is the rank's own wake-up from sleep, not a source's: it stays `futex
    /// wake-up`. Late iterations beyond [`MAX_LATE_KEPT`] keep their part's unnamed blame.
    pub(crate) fn report_traced(
        &self,
        name: impl Fn(&LateIteration) -> Option<SourceRef>,
    ) -> BspReport {
        let mut r = self.report();
        let st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        let mut rows: Vec<BspBlame> = Vec::new();
        let mut add = |class, name: String, iterations: u64, excess_ns: u64| {
            if iterations == 0 {
                return;
            }
            match rows.iter_mut().find(|b| b.class == class && b.name == name) {
                Some(b) => {
                    b.iterations += iterations;
                    b.excess_ns += excess_ns;
                }
                None => rows.push(BspBlame {
                    class,
                    name,
                    iterations,
                    excess_ns,
                }),
            }
        };
        for l in &st.late {
            let named = (l.part == BLAME_COMPUTE || self.barrier == Barrier::Spin)
                .then(|| name(l))
                .flatten();
            match named {
                Some(s) => add(Some(s.class), s.name, 1, l.excess_ns),
                None => add(None, self.unnamed(l.part).to_string(), 1, l.excess_ns),
            }
        }
        for (kind, &(n, excess)) in st.unkept.iter().enumerate() {
            add(None, self.unnamed(kind).to_string(), n, excess);
        }
        rows.sort_by(BspBlame::order);
        r.blame = rows;
        debug_assert_eq!(r.check(), Ok(()), "every late iteration blamed once");
        r
    }
}

/// What one compute part measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Computed {
    /// When the work was done (ns).
    pub at_ns: u64,
    /// Time lost to detours on the way (ns).
    pub lost_ns: u64,
    /// The largest detour's start (ns; 0 with no detour).
    pub detour_at_ns: u64,
    /// Its length (ns; 0 with no detour).
    pub detour_ns: u64,
}

/// Computes `work_ns` of this CPU's time from `start_ns` (see the module docs). Allocates
/// nothing.
pub(crate) fn compute(work_ns: u64, start_ns: u64, now: impl Fn() -> u64) -> Computed {
    let (mut last, mut done, mut lost) = (start_ns, 0u64, 0u64);
    let (mut detour_at_ns, mut detour_ns) = (0u64, 0u64);
    while done < work_ns {
        let t = now();
        let gap = t.saturating_sub(last);
        if gap > DETOUR_THRESHOLD_NS {
            lost += gap;
            if gap > detour_ns {
                (detour_at_ns, detour_ns) = (last, gap);
            }
        } else {
            done += gap;
        }
        last = t;
    }
    debug_assert!(
        detour_ns <= lost,
        "the largest detour is part of the time lost"
    );
    Computed {
        at_ns: last,
        lost_ns: lost,
        detour_at_ns,
        detour_ns,
    }
}

/// What a rank thread returns: the job's report from rank 0, nothing from the others.
#[derive(Debug)]
pub(crate) enum RankOutput {
    /// Rank 0: the job's report and the window the job ran in (ns).
    Report(Box<BspReport>, u64),
    /// Any other rank.
    Rank,
}

/// Body of rank `rank` on `cpu`: pins, waits at `gate`, runs iterations until the barrier
/// says the job is over.
pub(crate) fn rank(
    job: &BspBarrier,
    rank: u32,
    gate: &Gate,
    stop: &Stop,
    window_over: &Stop,
) -> Result<RankOutput, HarnessError> {
    let cpu = job.cpus[rank as usize];
    let pinned =
        pin_to(cpu).map_err(|e| os_error(&format!("pinning bsp rank {rank} to CPU {cpu}"), e));
    if pinned.is_err() {
        job.fail();
    }
    job.set_tid(rank, super::os::thread_id() as u32);
    let t0 = gate.wait();
    pinned?;
    if rank == 0 {
        job.start(t0);
    }
    // Every rank starts at t0 (the gate's start line, 2 ms ahead).
    while now_ns() < t0 {
        std::hint::spin_loop();
    }
    let mut generation = 0u32;
    let mut release = t0;
    if !job.over_before_start() {
        loop {
            let start = now_ns();
            let c = compute(job.work_ns, start, now_ns);
            let a = Arrival {
                at_ns: c.at_ns,
                lost_ns: c.lost_ns,
                late_start_ns: start.saturating_sub(release),
                detour_at_ns: c.detour_at_ns,
                detour_ns: c.detour_ns,
            };
            match job.arrive(rank, generation, a, now_ns, || {
                stop.is_set() || window_over.is_set()
            }) {
                Step::Go(r) => {
                    release = r;
                    generation = generation.wrapping_add(1);
                }
                Step::Done => break,
            }
        }
    }
    if rank == 0 {
        let end = job.release_ns.load(Ordering::Relaxed).max(t0);
        Ok(RankOutput::Report(Box::new(job.report()), end - t0))
    } else {
        Ok(RankOutput::Rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use ticklab_schema::bsp::BspLastArrival;

    #[test]
    fn one_rank_counts_iterations_and_stops_at_the_limit() {
        let job = BspBarrier::new(&[5], 100, Some(3), Barrier::Spin);
        job.start(0);
        let mut release = 0;
        let mut steps = Vec::new();
        for g in 0..3u32 {
            let a = Arrival {
                at_ns: release + 100 + u64::from(g) * 2_000,
                lost_ns: u64::from(g) * 2_000,
                ..Arrival::default()
            };
            let s = job.arrive(0, g, a, || a.at_ns + 10, || false);
            steps.push(s);
            if let Step::Go(r) = s {
                release = r;
            }
        }
        assert_eq!(steps[0], Step::Go(110));
        assert_eq!(steps[2], Step::Done);
        let r = job.report();
        assert_eq!(r.iterations, 3);
        // 100, 2100, 4100: two late (excess above 1 µs), blamed on compute detours.
        assert_eq!((r.min_ns, r.max_ns), (100, 4_100));
        assert_eq!(r.late_iterations, 2);
        assert_eq!(r.blame.len(), 1);
        assert_eq!(r.blame[0].name, "unknown: detours while computing");
        assert_eq!(r.blame[0].excess_ns, 2_000 + 4_000);
        assert_eq!(r.blame[0].class, None);
        assert_eq!(
            r.last_arrivals,
            vec![BspLastArrival {
                cpu: 5,
                iterations: 2
            }]
        );
        r.check().unwrap();
    }

    #[test]
    fn blame_picks_the_latest_arrival_and_what_delayed_it() {
        // (case, arrivals of ranks 0..3 as (at, lost, late_start), blamed CPU, blame name)
        type Case<'a> = (&'a str, [(u64, u64, u64); 3], Option<u32>, Option<&'a str>);
        let table: &[Case<'_>] = &[
            (
                "on time",
                [(100, 0, 0), (100, 0, 0), (100, 0, 0)],
                None,
                None,
            ),
            (
                "rank 1 hit while computing",
                [(100, 0, 0), (5_100, 5_000, 0), (100, 0, 0)],
                Some(11),
                Some("unknown: detours while computing"),
            ),
            (
                "rank 2 saw the release late",
                [(100, 0, 0), (300, 200, 0), (3_100, 0, 3_000)],
                Some(12),
                Some("futex wake-up"),
            ),
            (
                "within the threshold is not late",
                [(900, 800, 0), (100, 0, 0), (100, 0, 0)],
                None,
                None,
            ),
        ];
        for (case, arr, cpu, name) in table {
            let job = BspBarrier::new(&[10, 11, 12], 100, None, Barrier::Futex);
            job.start(0);
            // Rank 1 increments last: the blame must still go to the latest clock reading.
            let a = |r: usize| Arrival {
                at_ns: arr[r].0,
                lost_ns: arr[r].1,
                late_start_ns: arr[r].2,
                ..Arrival::default()
            };
            assert!(!job.check_in(2, a(2)), "{case}");
            assert!(!job.check_in(0, a(0)), "{case}");
            assert!(job.check_in(1, a(1)), "{case}");
            let step = job.release(0, || 7_000, || false);
            assert_eq!(step, Step::Go(7_000), "{case}");
            let r = job.report();
            assert_eq!(r.iterations, 1, "{case}");
            let latest = arr.iter().map(|x| x.0).max().unwrap();
            assert_eq!(r.max_ns, latest, "{case}");
            assert_eq!(r.last_arrivals.first().map(|l| l.cpu), *cpu, "{case}");
            assert_eq!(r.blame.first().map(|b| b.name.as_str()), *name, "{case}");
            r.check().unwrap();
        }
    }

    #[test]
    fn compute_counts_small_gaps_as_work_and_large_ones_as_lost() {
        // A clock that advances 100 ns per read, with one 5 µs jump.
        let t = Cell::new(0u64);
        let now = || {
            let v = t.get() + if t.get() == 300 { 5_000 } else { 100 };
            t.set(v);
            v
        };
        let c = compute(1_000, 0, now);
        assert_eq!(c.lost_ns, 5_000);
        assert_eq!(c.at_ns, 1_000 + 5_000);
        // The jump came after the read at 300.
        assert_eq!((c.detour_at_ns, c.detour_ns), (300, 5_000));
    }

    #[test]
    fn threads_pass_every_iteration_together_and_the_counts_add_up() {
        for barrier in [Barrier::Spin, Barrier::Futex] {
            for ranks in [1u32, 2, 4] {
                let k = 500u64;
                let cpus: Vec<u32> = (0..ranks).collect();
                let job = BspBarrier::new(&cpus, 2_000, Some(k), barrier);
                let passes: Vec<AtomicU64> = (0..ranks).map(|_| AtomicU64::new(0)).collect();
                job.start(now_ns());
                std::thread::scope(|s| {
                    for r in 0..ranks {
                        let (job, passes) = (&job, &passes);
                        s.spawn(move || {
                            let mut generation = 0u32;
                            let mut release = job.release_ns.load(Ordering::Relaxed);
                            loop {
                                let start = now_ns();
                                let c = compute(job.work_ns, start, now_ns);
                                passes[r as usize].fetch_add(1, Ordering::Relaxed);
                                let a = Arrival {
                                    at_ns: c.at_ns,
                                    lost_ns: c.lost_ns,
                                    late_start_ns: start.saturating_sub(release),
                                    detour_at_ns: c.detour_at_ns,
                                    detour_ns: c.detour_ns,
                                };
                                match job.arrive(r, generation, a, now_ns, || false) {
                                    Step::Go(t) => {
                                        release = t;
                                        generation += 1;
                                    }
                                    Step::Done => break,
                                }
                            }
                        });
                    }
                });
                for p in &passes {
                    assert_eq!(p.load(Ordering::Relaxed), k, "{barrier:?} x{ranks}");
                }
                let r = job.report();
                assert_eq!(r.iterations, k, "{barrier:?} x{ranks}");
                assert!(r.min_ns >= 2_000, "{barrier:?} x{ranks}: {}", r.min_ns);
                let blamed: u64 = r.last_arrivals.iter().map(|l| l.iterations).sum();
                assert_eq!(blamed, r.late_iterations, "{barrier:?} x{ranks}");
                r.check().unwrap();
            }
        }
    }
}

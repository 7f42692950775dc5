//! A bulk-synchronous job (`bsp:N@LIST:work=DUR`, docs/noise.md "The twin"): one rank per
//! listed CPU; in every iteration each rank computes `work_ns` of its CPU's time, then
//! spins at a barrier; the iteration ends when the last rank arrives, and the barrier releases
//! every rank at that instant.
//!
//! The ranks run on their CPUs as busy user tasks (hogs, to the scheduler and the tick). What
//! this module owns is the barrier: it hears each **detour** of a rank (an interval in which
//! the kernel, or another thread, held the rank's CPU: [`BspJob::detour_open`],
//! [`BspJob::detour_close`]) and moves the rank's arrival by the part of the detour that fell
//! inside its compute part. A detour that starts while the rank spins at the barrier delays
//! nothing in that iteration; the part of it that outlasts the release delays the rank's next
//! iteration (the rank notices the release late).
//!
//! Detours arrive in the order of their start times (the event loop takes interrupts in time
//! order, and a handler is atomic); an iteration is closed when a detour starts at or after
//! the latest arrival and no rank is inside a detour that began during its compute part
//! ([`BspJob::advance`]). Ranks whose state is untouched in an iteration cost nothing: each
//! rank's delay is tagged with the iteration it belongs to, so closing an iteration is O(1)
//! plus the ranks whose detour straddled the release. Nothing here allocates after
//! [`BspJob::new`].
//!
//! A **synthetic** noise source ([`SyntheticNoise`]) can be added for the closed-form checks
//! of docs/noise.md: a fixed-length detour drawn at the start of every iteration, landing
//! inside the compute part, either independently per rank with probability `p`
//! (expected excess `d·(1 − (1 − p)^N)`) or on every rank at once with probability `p`
//! (expected excess `d·p`): [`closed_form_excess`].

use crate::engine::Time;
use crate::engine::rng::Stream;
use ticklab_schema::bsp::{BspReport, BspTally};
use ticklab_schema::noise::NoiseClass;
use ticklab_schema::workload::Barrier;

/// No rank / no part.
const NONE: u32 = u32::MAX;

/// How a synthetic detour hits the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyntheticMode {
    /// One Bernoulli(`p`) draw per rank per iteration.
    Independent,
    /// One Bernoulli(`p`) draw per iteration; a hit lands on every rank at the same instant.
    Simultaneous,
}

/// A synthetic noise source of fixed length for the closed-form checks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticNoise {
    /// Length of one detour (ns).
    pub len_ns: u64,
    /// Probability of a hit per draw.
    pub p: f64,
    /// How the draws are made.
    pub mode: SyntheticMode,
}

/// The expected excess per iteration (ns) of `n` ranks under a synthetic source alone, when
/// every hit lands inside the compute part (docs/noise.md, after Petrini et al. SC03 and
/// Hoefler et al. SC10): independent hits give `d·(1 − (1 − p)^N)`, the chance that at least
/// one rank is hit times `d`; simultaneous hits give `d·p` whatever `N`.
pub fn closed_form_excess(s: SyntheticNoise, n: u32) -> f64 {
    let d = s.len_ns as f64;
    match s.mode {
        SyntheticMode::Independent => d * (1.0 - (1.0 - s.p).powi(n as i32)),
        SyntheticMode::Simultaneous => d * s.p,
    }
}

/// Where a rank's open detour began, relative to its iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// No detour open.
    No,
    /// Opened while the rank computed (or carried into a new iteration): it delays the rank.
    Computing,
    /// Opened while the rank spun at the barrier.
    Waiting,
}

/// One rank's state.
#[derive(Debug, Clone, Copy)]
struct Rank {
    /// The iteration `delay_ns` and `top_*` belong to.
    iter: u64,
    /// Time lost inside this iteration's compute part (ns).
    delay_ns: u64,
    /// The part that took the most of `delay_ns`, and how much.
    top_part: u32,
    top_ns: u64,
    open: Open,
    open_since: Time,
    /// End of the last detour that began while the rank waited (it may outlast the release).
    busy_until: Time,
    busy_part: u32,
    straddling: bool,
}

/// The barrier of a bulk-synchronous job and its statistics (see the module docs).
#[derive(Debug, Clone)]
pub struct BspJob {
    cpus: Vec<u32>,
    /// Rank of each CPU, or `NONE`.
    rank_of: Vec<u32>,
    work_ns: u64,
    barrier: Barrier,
    limit: Option<u64>,
    /// Iterations are being counted (the window is open and the limit not reached).
    active: bool,
    iter: u64,
    start: Time,
    max_arrival: Time,
    last: u32,
    ranks: Vec<Rank>,
    /// Ranks whose waiting detour may outlast the release (capacity: every rank).
    straddlers: Vec<u32>,
    /// Ranks inside a detour begun while computing.
    open_computing: u32,
    /// Ranks inside a detour begun while waiting.
    open_waiting: u32,
    synthetic: Option<(SyntheticNoise, Stream)>,
    /// Index of the synthetic source among the blame parts.
    synthetic_part: u32,
    /// The closed iterations' statistics; blame parts are the noise parts and the synthetic
    /// source after them.
    tally: BspTally,
}

impl BspJob {
    /// A job of one rank per CPU of `cpus` on an `nr_cpus` machine, with `nr_parts` noise
    /// parts to blame (the synthetic source, if any, is one more).
    pub fn new(
        cpus: &[u32],
        nr_cpus: usize,
        work_ns: u64,
        iterations: Option<u64>,
        barrier: Barrier,
        nr_parts: usize,
    ) -> BspJob {
        let mut rank_of = vec![NONE; nr_cpus];
        for (r, &c) in cpus.iter().enumerate() {
            debug_assert!((c as usize) < nr_cpus && rank_of[c as usize] == NONE);
            rank_of[c as usize] = r as u32;
        }
        let rank = Rank {
            iter: 0,
            delay_ns: 0,
            top_part: NONE,
            top_ns: 0,
            open: Open::No,
            open_since: 0,
            busy_until: 0,
            busy_part: NONE,
            straddling: false,
        };
        BspJob {
            cpus: cpus.to_vec(),
            rank_of,
            work_ns,
            barrier,
            limit: iterations,
            active: false,
            iter: 0,
            start: 0,
            max_arrival: 0,
            last: NONE,
            ranks: vec![rank; cpus.len()],
            straddlers: Vec::with_capacity(cpus.len()),
            open_computing: 0,
            open_waiting: 0,
            synthetic: None,
            synthetic_part: nr_parts as u32,
            tally: BspTally::new(cpus.len(), nr_parts + 1),
        }
    }

    /// Adds a synthetic source drawn from `rng` (before the window opens).
    pub(crate) fn set_synthetic(&mut self, s: SyntheticNoise, rng: Stream) {
        self.synthetic = Some((s, rng));
    }

    /// The rank running on `cpu`, if any.
    #[inline]
    pub fn rank_of(&self, cpu: u32) -> Option<u32> {
        match self.rank_of.get(cpu as usize) {
            Some(&r) if r != NONE => Some(r),
            _ => None,
        }
    }

    /// Iteration 0 starts at `at` (the window's start); counters restart.
    pub fn open_window(&mut self, at: Time) {
        self.active = self.limit != Some(0);
        self.iter = 0;
        self.start = at;
        self.max_arrival = at + self.work_ns;
        self.last = NONE;
        self.straddlers.clear();
        for r in &mut self.ranks {
            r.iter = 0;
            r.delay_ns = 0;
            r.top_part = NONE;
            r.top_ns = 0;
            r.straddling = false;
            r.busy_until = r.busy_until.min(at);
            if r.open != Open::No {
                // A detour in progress at the start delays iteration 0 from here on.
                if r.open == Open::Waiting {
                    self.open_waiting -= 1;
                    self.open_computing += 1;
                }
                r.open = Open::Computing;
                r.open_since = at;
            }
        }
        self.tally.reset();
        self.draw_synthetic();
    }

    /// When rank `r` arrives at the barrier of the current iteration, as far as known.
    #[inline]
    fn arrival(&self, r: usize) -> Time {
        let k = &self.ranks[r];
        let delay = if k.iter == self.iter { k.delay_ns } else { 0 };
        self.start + self.work_ns + delay
    }

    /// Rank `r`'s state for the current iteration (a stale one is reset first).
    #[inline]
    fn current(&mut self, r: usize) -> &mut Rank {
        let iter = self.iter;
        let k = &mut self.ranks[r];
        if k.iter != iter {
            k.iter = iter;
            k.delay_ns = 0;
            k.top_part = NONE;
            k.top_ns = 0;
        }
        k
    }

    /// Rank `r` loses `ns` of its compute part to `part` in the current iteration.
    #[inline]
    fn delay(&mut self, r: usize, ns: u64, part: u32) {
        if ns == 0 {
            return;
        }
        let k = self.current(r);
        k.delay_ns += ns;
        if ns > k.top_ns {
            k.top_ns = ns;
            k.top_part = part;
        }
        let a = self.arrival(r);
        if a > self.max_arrival {
            self.max_arrival = a;
            self.last = r as u32;
        }
    }

    /// Closes every iteration that has ended by `t`: the latest arrival is at or before `t`
    /// and no rank is inside a detour that could still move its arrival.
    #[inline]
    pub fn advance(&mut self, t: Time) {
        while self.active && self.open_computing == 0 && self.max_arrival <= t {
            self.close_iteration();
        }
    }

    /// A detour opens on rank `r` at `at` (call [`BspJob::advance`] with `at` first).
    #[inline]
    pub fn detour_open(&mut self, r: u32, at: Time) {
        let r = r as usize;
        let computing = self.active && at < self.arrival(r);
        let k = &mut self.ranks[r];
        debug_assert_eq!(
            k.open,
            Open::No,
            "rank {r}: detours on one CPU never overlap"
        );
        k.open_since = at;
        if computing {
            k.open = Open::Computing;
            self.open_computing += 1;
        } else {
            k.open = Open::Waiting;
            self.open_waiting += 1;
        }
    }

    /// The detour of rank `r` opened by [`BspJob::detour_open`] ends at `end`; `part` took
    /// most of it.
    #[inline]
    pub fn detour_close(&mut self, r: u32, end: Time, part: u32) {
        let r = r as usize;
        let k = self.ranks[r];
        match k.open {
            Open::No => {}
            Open::Computing => {
                self.open_computing -= 1;
                self.ranks[r].open = Open::No;
                if self.active {
                    let from = k.open_since.max(self.start);
                    self.delay(r, end.saturating_sub(from), part);
                }
            }
            Open::Waiting => {
                self.open_waiting -= 1;
                let k = &mut self.ranks[r];
                k.open = Open::No;
                if end > k.busy_until {
                    k.busy_until = end;
                    k.busy_part = part;
                }
                if self.active && !k.straddling {
                    k.straddling = true;
                    self.straddlers.push(r as u32);
                }
            }
        }
    }

    /// Ends the current iteration at the latest arrival and starts the next one there.
    fn close_iteration(&mut self) {
        let end = self.max_arrival;
        let len = end - self.start;
        let excess = len - self.work_ns;
        self.tally.record(len);
        if excess > 0 {
            debug_assert!(self.last != NONE, "a late iteration has a last rank");
            if let Some(k) = self.ranks.get(self.last as usize) {
                let part = if k.top_part == NONE {
                    self.synthetic_part
                } else {
                    k.top_part
                };
                self.tally.blame(self.last as usize, part as usize, excess);
            }
        }
        self.iter += 1;
        self.start = end;
        self.max_arrival = end + self.work_ns;
        self.last = NONE;
        if self.limit.is_some_and(|l| self.tally.completed() >= l) {
            self.active = false;
            return;
        }
        // Waiting detours that outlasted the release delay the new iteration.
        for i in 0..self.straddlers.len() {
            let r = self.straddlers[i] as usize;
            self.ranks[r].straddling = false;
            let (until, part) = (self.ranks[r].busy_until, self.ranks[r].busy_part);
            if until > end {
                self.delay(r, until - end, part);
            }
        }
        self.straddlers.clear();
        if self.open_waiting > 0 {
            // A waiting detour still open at the release: it is in the new compute part now.
            for k in &mut self.ranks {
                if k.open == Open::Waiting {
                    k.open = Open::Computing;
                    k.open_since = end;
                    self.open_waiting -= 1;
                    self.open_computing += 1;
                }
            }
        }
        self.draw_synthetic();
    }

    /// The synthetic source's draws for the iteration that starts now.
    fn draw_synthetic(&mut self) {
        let Some((s, mut rng)) = self.synthetic.take() else {
            return;
        };
        let part = self.synthetic_part;
        match s.mode {
            SyntheticMode::Independent => {
                for r in 0..self.ranks.len() {
                    if rng.uniform() < s.p {
                        self.delay(r, s.len_ns, part);
                    }
                }
            }
            SyntheticMode::Simultaneous => {
                if rng.uniform() < s.p {
                    for r in 0..self.ranks.len() {
                        self.delay(r, s.len_ns, part);
                    }
                }
            }
        }
        self.synthetic = Some((s, rng));
    }

    /// Closes what has ended by `end` (the run's end) and builds the report; `part(i)` names
    /// noise part `i`.
    pub fn report(&mut self, end: Time, part: impl Fn(u32) -> (NoiseClass, String)) -> BspReport {
        self.advance(end);
        let synthetic = self.synthetic_part as usize;
        self.tally
            .report(&self.cpus, self.barrier, self.work_ns, |i| {
                if i == synthetic {
                    (Some(NoiseClass::Hardware), "synthetic".to_string())
                } else {
                    let (class, name) = part(i as u32);
                    (Some(class), name)
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::streams;
    use ticklab_schema::bsp::BspLastArrival;

    fn job(n: u32, work_ns: u64) -> BspJob {
        let cpus: Vec<u32> = (0..n).collect();
        let mut j = BspJob::new(&cpus, n as usize, work_ns, None, Barrier::Spin, 4);
        j.open_window(0);
        j
    }

    fn detour(j: &mut BspJob, r: u32, start: Time, end: Time, part: u32) {
        j.advance(start);
        j.detour_open(r, start);
        j.detour_close(r, end, part);
    }

    fn name(i: u32) -> (NoiseClass, String) {
        (NoiseClass::Irq, format!("part {i}"))
    }

    #[test]
    fn a_detour_while_waiting_delays_nothing() {
        // Two ranks, work 100: rank 0 is hit for 30 inside its compute part, rank 1 for 20
        // while it waits (110..130): the iteration ends at 130, not later.
        let mut j = job(2, 100);
        detour(&mut j, 0, 50, 80, 1);
        detour(&mut j, 1, 110, 130, 2);
        let r = j.report(1_000, name);
        assert_eq!(
            r.iterations, 9,
            "130, then 8 clean iterations of 100 up to 930"
        );
        assert_eq!(r.max_ns, 130);
        assert_eq!(r.min_ns, 100);
        assert_eq!(r.late_iterations, 1);
        assert_eq!(r.blame.len(), 1);
        assert_eq!(
            (r.blame[0].name.as_str(), r.blame[0].excess_ns),
            ("part 1", 30)
        );
        assert_eq!(r.last_arrivals[0].cpu, 0);
        r.check().unwrap();
    }

    #[test]
    fn a_waiting_detour_that_outlasts_the_release_delays_the_next_iteration() {
        // Rank 0 is late by 30 (arrives at 130); rank 1 is in a detour 120..150: it starts
        // iteration 1 20 late, which ends at 130 + 100 + 20 = 250.
        let mut j = job(2, 100);
        detour(&mut j, 0, 10, 40, 1);
        detour(&mut j, 1, 120, 150, 2);
        let r = j.report(260, name);
        assert_eq!(r.iterations, 2);
        assert_eq!((r.min_ns, r.max_ns), (120, 130));
        assert_eq!(r.blame.iter().map(|b| b.excess_ns).sum::<u64>(), 50);
    }

    #[test]
    fn the_last_rank_and_its_largest_source_take_the_blame() {
        let mut j = job(3, 1_000);
        detour(&mut j, 0, 100, 150, 0);
        detour(&mut j, 2, 200, 210, 1);
        detour(&mut j, 2, 300, 380, 3);
        let r = j.report(1_100, name);
        assert_eq!(r.iterations, 1);
        assert_eq!(r.max_ns, 1_090);
        assert_eq!(
            r.last_arrivals,
            vec![BspLastArrival {
                cpu: 2,
                iterations: 1
            }]
        );
        assert_eq!(r.blame[0].name, "part 3");
    }

    /// Runs `iters` iterations of `n` ranks under the synthetic source alone.
    fn synthetic_excess(n: u32, s: SyntheticNoise, iters: u64, seed: u64) -> f64 {
        let work = 1_000_000;
        let cpus: Vec<u32> = (0..n).collect();
        let mut j = BspJob::new(&cpus, n as usize, work, Some(iters), Barrier::Spin, 0);
        let (_, rng) = streams(seed, 0);
        j.set_synthetic(s, rng);
        j.open_window(0);
        let r = j.report(u64::MAX / 2, |_| unreachable!("only the synthetic source"));
        assert_eq!(r.iterations, iters);
        r.check().unwrap();
        r.excess_mean_ns
    }

    #[test]
    fn synthetic_noise_follows_the_closed_form() {
        // Iterations per N so that the standard error of the mean excess is at most about
        // 1 % of the expectation (5 % is then five standard errors away).
        let d = 50_000;
        for (mode, p) in [
            (SyntheticMode::Independent, 0.02),
            (SyntheticMode::Simultaneous, 0.1),
        ] {
            let s = SyntheticNoise { len_ns: d, p, mode };
            for n in [1u32, 16, 256, 4096] {
                let want = closed_form_excess(s, n);
                let hit = want / d as f64;
                // Var of a Bernoulli(hit) mean over K draws: hit(1-hit)/K; aim at 1 %.
                let iters = (((1.0 - hit) / hit) * 1e4).ceil().clamp(200.0, 500_000.0) as u64;
                let got = synthetic_excess(n, s, iters, u64::from(n) + 7);
                let err = (got - want) / want;
                assert!(
                    err.abs() < 0.05,
                    "{mode:?} N={n}: excess {got:.0} ns, closed form {want:.0} ns ({:+.1} %, {iters} iterations)",
                    100.0 * err
                );
            }
        }
    }

    #[test]
    fn closed_form_table() {
        let s = |p, mode| SyntheticNoise {
            len_ns: 1_000,
            p,
            mode,
        };
        let cases = [
            (s(0.5, SyntheticMode::Independent), 1, 500.0),
            (s(0.5, SyntheticMode::Independent), 2, 750.0),
            (s(0.0, SyntheticMode::Independent), 4096, 0.0),
            (s(1.0, SyntheticMode::Independent), 3, 1_000.0),
            (s(0.25, SyntheticMode::Simultaneous), 4096, 250.0),
        ];
        for (syn, n, want) in cases {
            assert!(
                (closed_form_excess(syn, n) - want).abs() < 1e-9,
                "{syn:?} {n}"
            );
        }
    }
}

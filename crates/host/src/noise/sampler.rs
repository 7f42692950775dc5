//! The sampler: one pinned thread per CPU reading a cycle counter in a tight loop, every gap
//! above the threshold a detour.
//!
//! # The clock
//!
//! On x86_64 the loop reads the TSC (`rdtsc`): one instruction, no vDSO call, and the same
//! counter the `x86-tsc` trace clock prints, so the trace's events and the sampler's gaps
//! are on one time base without any conversion between clocks. Counts become nanoseconds by
//! the kernel's own conversion: a (TSC, `CLOCK_MONOTONIC_RAW`) pair is read before and after
//! the run, and the ratio of the two spans is the TSC frequency as the kernel's clocksource
//! uses it (over a 10 s run the pair pins it to well under a part per million). Elsewhere the
//! loop reads `CLOCK_MONOTONIC_RAW` through the vDSO, in ns, and the trace clock is
//! `mono_raw` (which prints µs only: attribution is then to the microsecond).
//!
//! # The loop
//!
//! `prev = read(); loop { now = read(); if now − prev > threshold { detour(prev, now − prev) }
//! prev = now }`, looking at the deadline and the stop flag every [`CHECK_EVERY`] reads.
//! A detour's length is the whole gap, the loop's own pass included, as rtla osnoise counts
//! it. Detours are kept (start, length) in a buffer reserved before the start line, so the
//! loop allocates nothing; beyond [`MAX_KEPT`] detours only the totals grow.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::harness::error::HarnessError;
use crate::harness::os;
use crate::harness::stop::Stop;

/// How often (in clock reads) the loop looks at its deadline and the stop flag.
pub(crate) const CHECK_EVERY: u64 = 1024;

/// Detours kept with their start per CPU (16 MiB); further ones only add to the totals.
pub(crate) const MAX_KEPT: usize = 1 << 20;

/// The counter the loop reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    /// The TSC (`rdtsc`), in counts.
    Tsc,
    /// `CLOCK_MONOTONIC_RAW`, in ns.
    MonoRaw,
}

impl Clock {
    /// The clock of this architecture (module docs).
    pub(crate) fn native() -> Clock {
        if cfg!(target_arch = "x86_64") {
            Clock::Tsc
        } else {
            Clock::MonoRaw
        }
    }

    /// The trace clock whose timestamps are this clock's readings.
    pub(crate) fn trace_clock(self) -> &'static str {
        match self {
            Clock::Tsc => "x86-tsc",
            Clock::MonoRaw => "mono_raw",
        }
    }

    /// One reading.
    #[inline(always)]
    pub(crate) fn read(self) -> u64 {
        match self {
            Clock::Tsc => tsc(),
            Clock::MonoRaw => mono_raw_ns(),
        }
    }

    /// How the report names it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Clock::Tsc => "rdtsc",
            Clock::MonoRaw => "clock_gettime(CLOCK_MONOTONIC_RAW) via the vDSO",
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tsc() -> u64 {
    // SAFETY: rdtsc exists on every x86_64 CPU and has no memory effects.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn tsc() -> u64 {
    mono_raw_ns()
}

/// `CLOCK_MONOTONIC_RAW`, ns.
pub(crate) fn mono_raw_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC_RAW exists since 2.6.28.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A reading of the loop's clock and `CLOCK_MONOTONIC_RAW` at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClockPair {
    /// The loop clock.
    pub count: u64,
    /// The ns clock, ns (`CLOCK_MONOTONIC_RAW` for the samplers).
    pub ns: u64,
}

impl ClockPair {
    /// Reads both, the clock between two raw reads (its time is their midpoint).
    pub(crate) fn now(clock: Clock) -> ClockPair {
        ClockPair::now_against(clock, mono_raw_ns)
    }

    /// [`ClockPair::now`] against another ns clock (`ns`, read twice around the counter):
    /// the bsp ranks' `CLOCK_MONOTONIC`, whose rate NTP may slew away from the raw clock's.
    pub(crate) fn now_against(clock: Clock, ns: fn() -> u64) -> ClockPair {
        let a = ns();
        let count = clock.read();
        let b = ns();
        ClockPair {
            count,
            ns: a + (b - a) / 2,
        }
    }
}

/// Nanoseconds per count between two pairs (1 for a ns clock; `None` if they are too close
/// to tell: under 1 ms apart).
pub(crate) fn ns_per_count(a: ClockPair, b: ClockPair) -> Option<f64> {
    let (dc, dn) = (b.count.checked_sub(a.count)?, b.ns.checked_sub(a.ns)?);
    (dn >= 1_000_000 && dc > 0).then(|| dn as f64 / dc as f64)
}

/// What one sampler was asked to do.
#[derive(Debug, Clone)]
pub(crate) struct SamplerSpec {
    /// The CPU to pin to.
    pub cpu: u32,
    /// The clock.
    pub clock: Clock,
    /// Gaps above this many counts are detours.
    pub threshold_counts: u64,
    /// Run this many counts after the first read.
    pub window_counts: u64,
    /// SCHED_FIFO priority, if asked.
    pub fifo: Option<i32>,
}

/// Live totals the coordinator reads for the progress line (counts).
#[derive(Debug, Default)]
pub(crate) struct Live {
    /// Detours so far.
    pub detours: AtomicU64,
    /// Their sum.
    pub noise: AtomicU64,
    /// The longest.
    pub max: AtomicU64,
}

/// What one sampler measured, in clock counts.
#[derive(Debug, Clone)]
pub(crate) struct SamplerOutput {
    /// The CPU.
    pub cpu: u32,
    /// The sampler thread's kernel tid (its `sched_switch` pid).
    pub tid: u32,
    /// `SCHED_FIFO N`, `SCHED_OTHER`, or `SCHED_OTHER (SCHED_FIFO N refused: why)`.
    pub policy: String,
    /// First and last reading.
    pub first: u64,
    /// Last reading.
    pub last: u64,
    /// Clock reads.
    pub reads: u64,
    /// Kept detours, (start, length), in order.
    pub detours: Vec<(u64, u64)>,
    /// Detours in all (kept or not).
    pub count: u64,
    /// Their sum.
    pub noise: u64,
    /// The longest.
    pub max: u64,
    /// Involuntary context switches of the sampler over the run (`/proc/thread-self/status`).
    pub involuntary_switches: Option<u64>,
}

/// The sampler's own involuntary context switches so far.
fn involuntary_switches() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))?
        .trim()
        .parse()
        .ok()
}

/// Runs one sampler on the calling thread: pins, sets the policy, waits at `start`, samples
/// (module docs). Pinning failure is an error; a refused SCHED_FIFO is said in the policy.
pub(crate) fn sample(
    spec: &SamplerSpec,
    start: &std::sync::Barrier,
    stop: &Stop,
    live: &Arc<Live>,
) -> Result<SamplerOutput, HarnessError> {
    let pinned = os::pin_to(spec.cpu).map_err(|source| HarnessError::Pin {
        cpu: spec.cpu,
        source,
    });
    let policy = match spec.fifo {
        Some(p) => match os::set_fifo(p) {
            Ok(()) => format!("SCHED_FIFO {p}"),
            Err(e) => format!("SCHED_OTHER (SCHED_FIFO {p} refused: {e})"),
        },
        None => "SCHED_OTHER".to_string(),
    };
    let mut detours: Vec<(u64, u64)> = Vec::with_capacity(MAX_KEPT);
    let tid = os::thread_id() as u32;
    let switches_before = involuntary_switches();
    // Every sampler reaches the start line, pinned or not, so none waits forever.
    start.wait();
    pinned?;
    let (clock, thr, window) = (spec.clock, spec.threshold_counts, spec.window_counts);
    let (mut count, mut noise, mut max) = (0u64, 0u64, 0u64);
    let first = clock.read();
    let end = first.saturating_add(window);
    let mut prev = first;
    let mut reads = 1u64;
    loop {
        let now = clock.read();
        reads += 1;
        let gap = now.wrapping_sub(prev);
        if gap > thr && now > prev {
            if detours.len() < MAX_KEPT {
                detours.push((prev, gap));
            }
            count += 1;
            noise += gap;
            max = max.max(gap);
            live.detours.store(count, Ordering::Relaxed);
            live.noise.store(noise, Ordering::Relaxed);
            live.max.store(max, Ordering::Relaxed);
        }
        prev = now;
        if reads.is_multiple_of(CHECK_EVERY) && (now >= end || stop.is_set()) {
            break;
        }
    }
    let involuntary_switches = switches_before
        .zip(involuntary_switches())
        .map(|(a, b)| b.saturating_sub(a));
    debug_assert!(max <= noise && (count == 0) == (noise == 0));
    Ok(SamplerOutput {
        cpu: spec.cpu,
        tid,
        policy,
        first,
        last: prev,
        reads,
        detours,
        count,
        noise,
        max,
        involuntary_switches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_per_count_needs_a_millisecond() {
        let p = |count, ns| ClockPair { count, ns };
        assert_eq!(ns_per_count(p(0, 0), p(2_000_000, 1_000_000)), Some(0.5));
        assert_eq!(ns_per_count(p(0, 0), p(2_000, 999_999)), None);
        assert_eq!(ns_per_count(p(5, 0), p(4, 2_000_000)), None);
    }

    #[test]
    fn a_short_run_on_this_cpu_keeps_its_invariants() {
        let clock = Clock::native();
        let a = ClockPair::now(clock);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = ClockPair::now(clock);
        let npc = ns_per_count(a, b).expect("5 ms apart");
        let spec = SamplerSpec {
            cpu: os::allowed_cpus().ok().and_then(|s| s.first()).unwrap_or(0),
            clock,
            threshold_counts: (1_000.0 / npc) as u64,
            window_counts: (20_000_000.0 / npc) as u64,
            fifo: None,
        };
        let barrier = std::sync::Barrier::new(1);
        let out = sample(&spec, &barrier, &Stop::new(), &Arc::default()).unwrap();
        assert!(out.reads > 1);
        assert!(out.max <= out.noise);
        assert_eq!(out.detours.len() as u64, out.count);
        assert!(out.detours.iter().all(|&(_, g)| g > spec.threshold_counts));
        assert!(out.noise <= out.last - out.first);
    }
}

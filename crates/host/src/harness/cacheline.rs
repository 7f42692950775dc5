//! One contended cache line bounced between two pinned threads: the classic core-to-core
//! ping-pong on an atomic.
//!
//! The *initiator* (pinned to CPU A) writes an odd value into the line and spins until it
//! reads the next even value; the *responder* (pinned to CPU B) spins until it reads an odd
//! value and writes that value + 1. Every write needs the line in the writer's cache in the
//! exclusive state, and every read that sees the other side's write pulls the line across:
//! one round trip moves the line twice, so ns per round trip / 2 is one line transfer — the
//! figure the twin's `cacheline_local_ns` / `cacheline_remote_ns` stand for
//! (docs/costs.md §3a, §5).
//!
//! The initiator times batches of [`BATCH_ROUND_TRIPS`] round trips and looks at the window's
//! end and the stop flag between batches; it then writes [`DONE`], on which the responder
//! returns. Both threads are plain SCHED_OTHER spinners: a batch during which either side
//! was preempted (or its vCPU descheduled) is slower, never faster, which is why the caller
//! keeps the per-batch figures and takes a low order statistic.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::error::{HarnessError, os_error};
use super::gate::Gate;
use super::os::{now_ns, pin_to};
use super::stop::Stop;

/// Round trips per timed batch: 200 transfers, 10–50 µs at 25–125 ns each — long enough that
/// the two clock reads around a batch (≈ 20–50 ns each) are below 1 % of it, short enough that
/// a preemption spoils one batch among many (on a loaded two-CPU guest, batches of 512 left
/// a 300 ms window with a single batch).
pub(crate) const BATCH_ROUND_TRIPS: u64 = 100;

/// The value that tells the responder to return (odd, so it is never a turn value the
/// initiator writes: those count up from 1 and cannot reach `u64::MAX` in any window).
const DONE: u64 = u64::MAX;

/// The bounced line, alone in its 128 bytes (adjacent-line prefetch pairs 64-byte lines).
#[repr(align(128))]
struct Line(AtomicU64);

/// Bounces one line between CPUs `a` (initiator) and `b` (responder) for `run_ns` (or until
/// `stop`), returning ns per one-way line transfer of each batch, in order. The calling thread
/// is not pinned: both sides run on threads of their own.
pub(crate) fn bounce(a: u32, b: u32, run_ns: u64, stop: &Stop) -> Result<Vec<f64>, HarnessError> {
    let line = Line(AtomicU64::new(0));
    let gate = Gate::default();
    // Set by a side that could not pin, before it reaches the gate: the gate's mutex makes it
    // visible to both sides once the gate opens, so neither spins for a partner that left.
    let unpinned = AtomicBool::new(false);
    let (initiator, responder) = std::thread::scope(|s| {
        let responder = s.spawn(|| {
            let pinned = pin_to(b);
            if pinned.is_err() {
                unpinned.store(true, Ordering::Relaxed);
            }
            gate.wait();
            pinned.map_err(|e| os_error(&format!("pinning the line bouncer to CPU {b}"), e))?;
            if unpinned.load(Ordering::Relaxed) {
                return Ok(());
            }
            respond(&line.0);
            Ok::<(), HarnessError>(())
        });
        let initiator = s.spawn(|| {
            let pinned = pin_to(a);
            if pinned.is_err() {
                unpinned.store(true, Ordering::Relaxed);
            }
            gate.wait();
            pinned.map_err(|e| os_error(&format!("pinning the line bouncer to CPU {a}"), e))?;
            if unpinned.load(Ordering::Relaxed) {
                return Ok(Vec::new());
            }
            let end = now_ns().saturating_add(run_ns);
            Ok(initiate(&line.0, || stop.is_set() || now_ns() >= end))
        });
        gate.open(2, || ());
        let panicked = |_| HarnessError::Panicked("cache-line bouncer".into());
        (
            initiator.join().map_err(panicked),
            responder.join().map_err(panicked),
        )
    });
    responder??;
    initiator?
}

/// The initiator's loop: timed batches until `over()`, then [`DONE`].
fn initiate(line: &AtomicU64, over: impl Fn() -> bool) -> Vec<f64> {
    let mut batches = Vec::new();
    let mut turn = 0u64;
    while !over() {
        let t = now_ns();
        for _ in 0..BATCH_ROUND_TRIPS {
            line.store(turn + 1, Ordering::Release);
            turn += 2;
            while line.load(Ordering::Acquire) != turn {
                spin_loop();
            }
        }
        let elapsed = now_ns().saturating_sub(t);
        batches.push(elapsed as f64 / (2 * BATCH_ROUND_TRIPS) as f64);
    }
    line.store(DONE, Ordering::Release);
    batches
}

/// The responder's loop: answer each odd value with the next even one until [`DONE`].
fn respond(line: &AtomicU64) {
    loop {
        let v = line.load(Ordering::Acquire);
        if v == DONE {
            return;
        }
        if v & 1 == 1 {
            line.store(v + 1, Ordering::Release);
        } else {
            spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_ends_on_done_and_counts_batches() {
        // The two loops on unpinned threads, a fixed number of batches: the protocol
        // terminates and every batch yields a finite, positive figure.
        let line = AtomicU64::new(0);
        let batches = std::thread::scope(|s| {
            s.spawn(|| respond(&line));
            let n = std::cell::Cell::new(0);
            initiate(&line, || {
                n.set(n.get() + 1);
                n.get() > 3
            })
        });
        assert_eq!(batches.len(), 3);
        assert!(
            batches.iter().all(|x| x.is_finite() && *x > 0.0),
            "{batches:?}"
        );
        assert_eq!(line.load(Ordering::Relaxed), DONE);
    }

    #[test]
    fn live_bounce_is_positive_or_names_the_cpu() {
        let online = super::super::os::online_cpus().unwrap_or_default();
        let cpus: Vec<u32> = online.iter().take(2).collect();
        // One CPU: two spinners on it would take a scheduler slice per transfer.
        let [a, b] = cpus[..] else { return };
        let out = bounce(a, b, 20_000_000, &Stop::new()).unwrap();
        assert!(out.iter().all(|x| x.is_finite() && *x > 0.0), "{out:?}");
        let err = bounce(a, 1 << 20, 1_000_000, &Stop::new()).unwrap_err();
        assert!(err.to_string().contains("CPU 1048576"), "{err}");
    }
}

//! A pinned loop of `clock_gettime(CLOCK_MONOTONIC)` reads: the cost of one timekeeping read,
//! the figure the twin's `xtime_read_ns` stands for.
//!
//! The read goes through the C library to the vDSO ([`super::os::now_ns`], the same call every
//! harness times with). On x86 with the `tsc` or `kvm-clock` clocksource the vDSO does what the
//! kernel's `ktime_get` does: begin a seqcount read section, read the clocksource (`rdtsc`,
//! or the pvclock page and `rdtsc`), scale the cycles since the last update with the
//! timekeeper's mult/shift, and retry if a writer was inside. What differs: no syscall and no
//! kernel entry; the timekeeper data is the copy the kernel publishes to a read-only page
//! mapped into every process (the vDSO data page, updated with the timekeeper), not
//! `tk_core` itself; and the result is converted to a `timespec`. With a clocksource the vDSO
//! cannot read, the C library falls back to the system call and the figure includes it — the
//! caller says which clocksource was in use (docs/host-lab.md).
//!
//! The thread times batches of [`BATCH_READS`] reads and looks at the window's end and the stop
//! flag between batches.

use std::hint::black_box;

use super::error::{HarnessError, os_error};
use super::os::{now_ns, pin_to};
use super::stop::Stop;

/// Reads per timed batch: ≈ 0.2–1 ms at 20–100 ns per read, so the batch's own two reads are
/// noise and a batch rarely spans a preemption.
pub(crate) const BATCH_READS: u64 = 10_000;

/// Reads the clock on a thread pinned to `cpu` for `run_ns` (or until `stop`); returns ns per
/// read of each batch, in order.
pub(crate) fn clock_reads(cpu: u32, run_ns: u64, stop: &Stop) -> Result<Vec<f64>, HarnessError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            pin_to(cpu)
                .map_err(|e| os_error(&format!("pinning the clock reader to CPU {cpu}"), e))?;
            let end = now_ns().saturating_add(run_ns);
            Ok(read_batches(|| stop.is_set() || now_ns() >= end))
        })
        .join()
        .map_err(|_| HarnessError::Panicked("clock reader".into()))?
    })
}

/// Timed batches of reads until `over()`.
fn read_batches(over: impl Fn() -> bool) -> Vec<f64> {
    let mut batches = Vec::new();
    while !over() {
        let t = now_ns();
        for _ in 0..BATCH_READS {
            black_box(now_ns());
        }
        let elapsed = now_ns().saturating_sub(t);
        batches.push(elapsed as f64 / BATCH_READS as f64);
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_counted_and_positive() {
        let n = std::cell::Cell::new(0);
        let b = read_batches(|| {
            n.set(n.get() + 1);
            n.get() > 2
        });
        assert_eq!(b.len(), 2);
        assert!(b.iter().all(|x| x.is_finite() && *x > 0.0), "{b:?}");
    }

    #[test]
    fn live_reads_on_cpu_0_or_a_named_error() {
        let out = clock_reads(0, 5_000_000, &Stop::new()).unwrap();
        assert!(!out.is_empty());
        assert!(out.iter().all(|x| x.is_finite() && *x > 0.0), "{out:?}");
        let err = clock_reads(1 << 20, 1_000_000, &Stop::new()).unwrap_err();
        assert!(err.to_string().contains("CPU 1048576"), "{err}");
    }
}

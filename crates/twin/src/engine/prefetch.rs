//! Cache prefetch hints: the event queue knows which CPU comes next before the current event
//! is handled, so that CPU's state can be on its way from memory while this one runs.
//!
//! At a few dozen CPUs everything the twin touches fits in the L2 cache and a hint buys
//! nothing. At thousands (`experiments/scale-4096.toml`), the CPUs' state is tens of
//! megabytes and the first touch of the next CPU's `Cpu` record and of its hrtimer slab were
//! two cache misses that took about two thirds of the run (`perf annotate` of `Sim::step`,
//! docs/model.md "Speed of the event loop"). A hint never changes what the program computes:
//! a wrong guess only costs memory bandwidth.

/// Bytes of a cache line on every machine the twin is built for.
const LINE: usize = 64;

/// Hints the processor to bring the `len` bytes at `addr` into its caches. `addr` need not
/// point to live memory: a prefetch never faults and never reads into the program.
#[inline(always)]
pub(crate) fn prefetch_bytes(addr: usize, len: usize) {
    let end = addr.saturating_add(len);
    let mut a = addr & !(LINE - 1);
    while a < end {
        prefetch_line(a);
        let Some(next) = a.checked_add(LINE) else {
            break;
        };
        a = next;
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch_line(addr: usize) {
    use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: PREFETCHT0 is a hint: it does not fault on any address, mapped or not, and
    // changes no architectural state; SSE, which it needs, is part of the x86_64 baseline.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(addr as *const i8) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn prefetch_line(_addr: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_change_nothing_and_accept_any_address() {
        let v = vec![7u64; 1000];
        prefetch_bytes(v.as_ptr() as usize, 8000);
        // Unmapped and odd addresses: a prefetch never faults.
        prefetch_bytes(0, 4096);
        prefetch_bytes(usize::MAX - 200, 100);
        assert!(v.iter().all(|&x| x == 7));
    }
}

//! The syscall harness: raw `syscall(SYS_getpid)` in a loop, timed as a whole (E4's test
//! program; `perf bench syscall basic` does the same with getppid, 10 M calls by default).
//!
//! The call goes through `libc::syscall`, so no libc caching or vDSO shortcut can stand in for
//! the user → kernel → user round trip being measured.

use super::error::{HarnessError, os_error};
use super::gate::Gate;
use super::os::{now_ns, pin_to};
use super::stop::Stop;

/// Calls between two looks at the stop flags.
const CHUNK: u64 = 1 << 16;

/// What the loop measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SyscallOutput {
    /// Calls made.
    pub calls: u64,
    /// Nanoseconds they took.
    pub elapsed_ns: u64,
}

/// Makes `calls` raw getpid calls (or fewer when `stopped` says so between chunks).
pub(crate) fn getpid_loop(calls: u64, stopped: impl Fn() -> bool) -> SyscallOutput {
    let started = now_ns();
    let mut done = 0u64;
    while done < calls {
        let chunk = (calls - done).min(CHUNK);
        for _ in 0..chunk {
            // SAFETY: getpid takes no arguments and cannot fail.
            unsafe { libc::syscall(libc::SYS_getpid) };
        }
        done += chunk;
        if stopped() {
            break;
        }
    }
    SyscallOutput {
        calls: done,
        elapsed_ns: now_ns() - started,
    }
}

/// Body of the syscall thread: pins (if asked), waits at `gate`, loops.
pub(crate) fn driver(
    cpu: Option<u32>,
    calls: u64,
    gate: &Gate,
    stop: &Stop,
    window_over: &Stop,
) -> Result<SyscallOutput, HarnessError> {
    let pinned = match cpu {
        Some(c) => {
            pin_to(c).map_err(|e| os_error(&format!("pinning the syscall loop to CPU {c}"), e))
        }
        None => Ok(()),
    };
    gate.wait();
    pinned?;
    Ok(getpid_loop(calls, || stop.is_set() || window_over.is_set()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_exactly_and_stops_between_chunks() {
        let out = getpid_loop(1000, || false);
        assert_eq!(out.calls, 1000);
        assert!(out.elapsed_ns > 0);
        let out = getpid_loop(10 * CHUNK, || true);
        assert_eq!(out.calls, CHUNK);
        assert_eq!(getpid_loop(0, || false).calls, 0);
    }
}

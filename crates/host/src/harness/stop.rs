//! Stopping a run early: an explicit flag, and optionally SIGINT / SIGTERM.
//!
//! Every harness loop polls a [`Stop`]. A stop never loses data: the harnesses return what they
//! measured so far, and the run is marked as interrupted. The signal handler only stores the
//! signal number in a static atomic (async-signal-safe); it is installed with `SA_RESETHAND`,
//! so a second Ctrl-C kills the process the ordinary way if a harness is ever stuck.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

/// How often [`Stop::sleep`] looks at the flag when no signal wakes it.
pub const STOP_POLL_NS: u64 = 100_000_000;

/// The last SIGINT / SIGTERM received by the process (0 = none).
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signo: libc::c_int) {
    SIGNALLED.store(signo, Ordering::SeqCst);
}

/// Why a run stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// [`Stop::request`] was called.
    Requested,
    /// The process received this signal (`SIGINT` = 2, `SIGTERM` = 15).
    Signal(i32),
}

impl StopReason {
    /// Human-readable name: `SIGINT`, `SIGTERM`, `stop requested`.
    pub fn name(self) -> String {
        match self {
            StopReason::Requested => "stop requested".into(),
            StopReason::Signal(libc::SIGINT) => "SIGINT".into(),
            StopReason::Signal(libc::SIGTERM) => "SIGTERM".into(),
            StopReason::Signal(n) => format!("signal {n}"),
        }
    }
}

/// A cheap, cloneable "stop now" flag shared by all threads of a run.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    flag: Arc<AtomicBool>,
    watch_signals: bool,
}

impl Stop {
    /// A flag that only [`Stop::request`] sets.
    pub fn new() -> Self {
        Stop::default()
    }

    /// Installs handlers for SIGINT and SIGTERM and returns a flag that they also set.
    pub fn on_signals() -> std::io::Result<Self> {
        let action = SigAction::new(
            SigHandler::Handler(on_signal),
            SaFlags::SA_RESTART | SaFlags::SA_RESETHAND,
            SigSet::empty(),
        );
        for sig in [Signal::SIGINT, Signal::SIGTERM] {
            // SAFETY: the handler only performs an atomic store, which is async-signal-safe.
            unsafe { sigaction(sig, &action) }.map_err(std::io::Error::from)?;
        }
        Ok(Stop {
            flag: Arc::default(),
            watch_signals: true,
        })
    }

    /// Asks every harness sharing this flag to stop.
    pub fn request(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether a stop was requested or a watched signal arrived.
    #[inline]
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
            || (self.watch_signals && SIGNALLED.load(Ordering::Relaxed) != 0)
    }

    /// Sleeps for `window`, or less when the flag gets set: a watched signal ends the sleep at
    /// once (it interrupts the sleep of the thread it is delivered to); [`Stop::request`] from
    /// another thread is seen within [`STOP_POLL_NS`]. Returns whether the flag ended it.
    pub fn sleep(&self, window: std::time::Duration) -> bool {
        let end = super::os::now_ns()
            .saturating_add(u64::try_from(window.as_nanos()).unwrap_or(u64::MAX));
        loop {
            if self.is_set() {
                return true;
            }
            let now = super::os::now_ns();
            if now >= end {
                return false;
            }
            super::os::sleep_until(end.min(now + STOP_POLL_NS));
        }
    }

    /// Why the flag is set, if it is.
    pub fn reason(&self) -> Option<StopReason> {
        let sig = SIGNALLED.load(Ordering::Relaxed);
        if self.watch_signals && sig != 0 {
            Some(StopReason::Signal(sig))
        } else if self.flag.load(Ordering::Relaxed) {
            Some(StopReason::Requested)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_is_seen_by_clones() {
        let a = Stop::new();
        let b = a.clone();
        assert!(!b.is_set());
        assert_eq!(b.reason(), None);
        a.request();
        assert!(b.is_set());
        assert_eq!(b.reason(), Some(StopReason::Requested));
    }

    #[test]
    fn a_set_flag_ends_a_sleep_at_once_and_an_unset_one_sleeps_it_out() {
        let s = Stop::new();
        assert!(!s.sleep(std::time::Duration::from_millis(1)));
        s.request();
        assert!(s.sleep(std::time::Duration::from_secs(3600)));
    }

    #[test]
    fn reason_names() {
        assert_eq!(StopReason::Signal(libc::SIGINT).name(), "SIGINT");
        assert_eq!(StopReason::Signal(libc::SIGTERM).name(), "SIGTERM");
        assert_eq!(StopReason::Requested.name(), "stop requested");
    }
}

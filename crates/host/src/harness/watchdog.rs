//! The watchdog of a run with frame workers: a thread one SCHED_FIFO priority above them that
//! makes sure a runaway real-time worker cannot keep a CPU past the run, and the one thread
//! that takes SIGINT / SIGTERM while frame workers run (docs/host-lab.md, "Stopping").
//!
//! A frame worker at SCHED_FIFO never yields to SCHED_OTHER tasks on its CPU: if it looped
//! past its window (a bug, or a LOOP nobody meant) and the kernel's RT throttling were off
//! (`/proc/sys/kernel/sched_rt_runtime_us = -1`), that CPU would be lost to everything else,
//! the coordinator included. The workers stop themselves at the window's end and on a stop
//! (their work is sliced, `work.rs`); the watchdog is the backstop that does not depend on
//! their cooperation:
//!
//! * it sleeps until the window's end + [`WATCHDOG_GRACE_NS`], or, once a stop is seen, until
//!   the stop + [`WATCHDOG_GRACE_NS`], whichever comes first;
//! * at that deadline every frame worker still registered as SCHED_FIFO is switched to
//!   SCHED_OTHER (`sched_setscheduler` on its thread id), and the report says how many were;
//! * it ends as soon as the coordinator has joined every worker ([`Watchdog::finish`]).
//!
//! **Signals.** While it runs, SIGINT and SIGTERM are blocked in every other thread of the run
//! (the coordinator blocks them before spawning, the threads inherit the mask) and unblocked
//! in the watchdog alone, so the kernel delivers them to it: it runs at the highest priority
//! of the run, so a signal is taken even when real-time workers fill every CPU, and never in
//! the middle of a measured frame. Its sleep is a futex wait that the signal interrupts; it
//! then rings the coordinator's [`Doorbell`], which ends the window at once.
//!
//! Invariant: a thread id is demoted only while its worker is registered, and a worker
//! unregisters (under the same lock) before its thread ends, so a reused id is never touched.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use super::os::{self, now_ns};
use super::stop::Stop;

/// How long the watchdog lets frame workers run past the window's end, or past a stop,
/// before it takes SCHED_FIFO away from them. Ten times the coordinator's poll interval
/// ([`super::COORDINATOR_POLL_NS`]) and ten thousand work slices: a worker that honours its
/// deadline is long gone by then.
pub const WATCHDOG_GRACE_NS: u64 = 1_000_000_000;

/// A futex word one thread sleeps on (until it changes, or an absolute deadline) and another
/// rings (bumps it).
///
/// Unlike a `Condvar`, the wait returns when a signal handler runs in the waiting thread
/// (`EINTR`), which is what lets the watchdog react to Ctrl-C at once. A ring between reading
/// [`Doorbell::generation`] and waiting is not lost: the wait then returns at once.
#[derive(Debug, Default)]
pub(crate) struct Doorbell {
    word: AtomicU32,
}

/// Why [`Doorbell::wait_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Woken {
    /// [`Doorbell::ring`] was called since the generation was read.
    Rung,
    /// A signal handler ran in this thread.
    Signal,
    /// The deadline passed.
    Deadline,
}

impl Doorbell {
    /// The current generation, to pass to [`Doorbell::wait_until`].
    pub(crate) fn generation(&self) -> u32 {
        self.word.load(Ordering::Acquire)
    }

    /// Rings: wakes the waiter.
    pub(crate) fn ring(&self) {
        self.word.fetch_add(1, Ordering::AcqRel);
        // SAFETY: FUTEX_WAKE on a valid, aligned u32 that outlives the call.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            )
        };
    }

    /// Sleeps until rung after generation `seen`, until a signal handler runs in this
    /// thread, or until `deadline_ns` on `CLOCK_MONOTONIC`.
    pub(crate) fn wait_until(&self, seen: u32, deadline_ns: u64) -> Woken {
        loop {
            if self.generation() != seen {
                return Woken::Rung;
            }
            if now_ns() >= deadline_ns {
                return Woken::Deadline;
            }
            let ts = libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000).min(i64::MAX as u64) as libc::time_t,
                tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
            };
            // SAFETY: FUTEX_WAIT_BITSET on a valid, aligned u32, with an absolute
            // CLOCK_MONOTONIC timeout (the bitset form's default clock) that lives across the
            // call; the second address is unused.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.word.as_ptr(),
                    libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
                    seen,
                    &ts as *const libc::timespec,
                    std::ptr::null::<u32>(),
                    libc::FUTEX_BITSET_MATCH_ANY,
                )
            };
            if rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                return Woken::Signal;
            }
            // 0 (woken, or spuriously), EAGAIN (rung before we slept), ETIMEDOUT: the loop's
            // checks decide.
        }
    }
}

/// The watchdog's shared state: the frame workers it guards, the window, and the bells.
#[derive(Debug)]
pub(crate) struct Watchdog {
    /// Frame workers at SCHED_FIFO: (CPU, thread id).
    fifo: Mutex<Vec<(u32, libc::pid_t)>>,
    /// The end of the window on `CLOCK_MONOTONIC` (`u64::MAX` until the gate opens).
    window_end_ns: AtomicU64,
    /// Set by the coordinator once every worker is joined.
    finished: AtomicBool,
    /// Rung when the window is set or the run is finished.
    bell: Doorbell,
    /// Rung by the watchdog when it takes a signal, to end the coordinator's wait.
    pub(crate) coordinator: Doorbell,
    /// Workers switched to SCHED_OTHER.
    demoted: AtomicU64,
}

impl Default for Watchdog {
    fn default() -> Self {
        Watchdog {
            fifo: Mutex::default(),
            window_end_ns: AtomicU64::new(u64::MAX),
            finished: AtomicBool::new(false),
            bell: Doorbell::default(),
            coordinator: Doorbell::default(),
            demoted: AtomicU64::new(0),
        }
    }
}

/// What the watchdog did, for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WatchdogOutcome {
    /// The SCHED_FIFO priority it ran at (`None`: not permitted or not asked for, so it ran
    /// at SCHED_OTHER, still taking the signals).
    pub(crate) priority: Option<i32>,
    /// Frame workers it had to take SCHED_FIFO away from.
    pub(crate) demoted: u64,
}

impl Watchdog {
    /// Called by a frame worker once it runs at SCHED_FIFO, on its own thread.
    pub(crate) fn register_fifo(&self, cpu: u32) {
        let tid = os::thread_id();
        self.fifo
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((cpu, tid));
    }

    /// Called by a frame worker on its own thread before it returns.
    pub(crate) fn unregister(&self) {
        let tid = os::thread_id();
        self.fifo
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&(_, t)| t != tid);
    }

    /// Called by the coordinator when the gate opens: the window ends at `end_ns`.
    pub(crate) fn set_window_end(&self, end_ns: u64) {
        self.window_end_ns.store(end_ns, Ordering::Release);
        self.bell.ring();
    }

    /// Called by the coordinator once every worker is joined: the watchdog ends.
    pub(crate) fn finish(&self) {
        self.finished.store(true, Ordering::Release);
        self.bell.ring();
    }

    /// Switches every registered worker to SCHED_OTHER; returns how many were.
    fn demote_all(&self) -> u64 {
        let list = self.fifo.lock().unwrap_or_else(|e| e.into_inner());
        let mut n = 0;
        for &(cpu, tid) in list.iter() {
            match os::set_other(tid) {
                Ok(()) => n += 1,
                Err(e) => eprintln!(
                    "ticklab: watchdog: could not take SCHED_FIFO from the frame worker on CPU {cpu}: {e}"
                ),
            }
        }
        n
    }

    /// The watchdog thread's body: takes the signals, sleeps to its deadline, demotes the
    /// workers still at SCHED_FIFO then, and returns once [`Watchdog::finish`] is called.
    /// `priority` is the SCHED_FIFO priority to try (above the workers').
    pub(crate) fn run(&self, priority: Option<i32>, stop: &Stop) -> WatchdogOutcome {
        let priority = priority.and_then(|p| os::set_fifo(p).ok().map(|()| p));
        // Signals were blocked by the coordinator before it spawned the run's threads; take
        // them here (one that came in meanwhile is pending and arrives now).
        os::unblock_stop_signals();
        let mut stop_seen: Option<u64> = None;
        let mut demoted = false;
        loop {
            let seen = self.bell.generation();
            if self.finished.load(Ordering::Acquire) {
                break;
            }
            if stop_seen.is_none() && stop.is_set() {
                stop_seen = Some(now_ns());
                self.coordinator.ring();
            }
            let deadline = stop_seen
                .unwrap_or(u64::MAX)
                .min(self.window_end_ns.load(Ordering::Acquire))
                .saturating_add(WATCHDOG_GRACE_NS);
            if !demoted && now_ns() >= deadline {
                let n = self.demote_all();
                self.demoted.fetch_add(n, Ordering::Relaxed);
                demoted = true;
            }
            self.bell
                .wait_until(seen, if demoted { u64::MAX } else { deadline });
        }
        WatchdogOutcome {
            priority,
            demoted: self.demoted.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doorbell_wakes_its_waiter_and_a_deadline_ends_the_wait() {
        let bell = Doorbell::default();
        let g = bell.generation();
        assert_eq!(bell.wait_until(g, now_ns() + 1_000_000), Woken::Deadline);
        assert_eq!(bell.wait_until(g, 0), Woken::Deadline);
        std::thread::scope(|s| {
            let h = s.spawn(|| bell.wait_until(g, u64::MAX));
            while !h.is_finished() {
                bell.ring();
                std::thread::yield_now();
            }
            assert_eq!(h.join().unwrap(), Woken::Rung);
        });
        // A ring before the wait is not lost.
        assert_eq!(bell.wait_until(g, u64::MAX), Woken::Rung);
    }

    #[test]
    fn the_watchdog_ends_when_the_coordinator_finishes_and_demotes_nobody_in_time() {
        let dog = Watchdog::default();
        let stop = Stop::new();
        let out = std::thread::scope(|s| {
            let h = s.spawn(|| dog.run(None, &stop));
            dog.set_window_end(u64::MAX - 1);
            dog.finish();
            h.join().unwrap()
        });
        assert_eq!(out, WatchdogOutcome::default());
    }

    #[test]
    fn after_the_grace_a_registered_worker_is_demoted_and_an_unregistered_one_is_not() {
        let dog = Watchdog::default();
        let stop = Stop::new();
        let gone = Doorbell::default();
        std::thread::scope(|s| {
            // A registered thread still there when the watchdog passes its deadline (a window
            // that ended at boot): it is switched to SCHED_OTHER (which it already is, so this
            // needs no privilege) and counted.
            let worker = s.spawn(|| {
                dog.register_fifo(0);
                gone.wait_until(0, u64::MAX);
                dog.unregister();
            });
            while dog.fifo.lock().unwrap().is_empty() {
                std::thread::yield_now();
            }
            dog.set_window_end(0);
            let out = s.spawn(|| dog.run(None, &stop));
            while dog.demoted.load(Ordering::Relaxed) == 0 {
                std::thread::yield_now();
            }
            gone.ring();
            worker.join().unwrap();
            assert!(dog.fifo.lock().unwrap().is_empty());
            dog.finish();
            assert_eq!(out.join().unwrap().demoted, 1);
        });
    }
}

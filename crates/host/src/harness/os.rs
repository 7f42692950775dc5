//! Thin, safe wrappers over the Linux calls the harnesses need: the monotonic clock, absolute
//! sleeps, CPU pinning, SCHED_FIFO, timer slack and memory locking.
//!
//! nix 0.32 covers affinity but not `sched_setscheduler` or `prctl(PR_SET_TIMERSLACK)`, so
//! those go through libc. Everything here acts on the calling thread unless it says otherwise.

use std::io;

use ticklab_cmdline::CpuSet;

/// Nanoseconds on `CLOCK_MONOTONIC` (vDSO, no syscall on this host's `tsc` clocksource).
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until `deadline_ns` on `CLOCK_MONOTONIC` with `TIMER_ABSTIME`.
///
/// Returns `true` when the deadline was reached and `false` when a signal interrupted the sleep
/// (the caller decides whether to sleep again).
pub(crate) fn sleep_until(deadline_ns: u64) -> bool {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null with ABSTIME.
    let rc = unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
    rc != libc::EINTR
}

/// Pins the calling thread to one CPU (explicitly: this works on a CPU outside the inherited
/// affinity, as long as it is online and in the cgroup's cpuset).
pub(crate) fn pin_to(cpu: u32) -> io::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu as usize).map_err(io::Error::from)?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(io::Error::from)
}

/// CPUs the calling thread may run on now (`sched_getaffinity`): the affinity it inherited,
/// which `isolcpus=` and `taskset` shrink. Not what decides placement — a thread may pin
/// itself to any CPU of its cgroup's cpuset ([`super::placement`]).
pub fn allowed_cpus() -> io::Result<CpuSet> {
    let set =
        nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).map_err(io::Error::from)?;
    Ok((0..nix::sched::CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .map(|c| c as u32)
        .collect())
}

/// CPUs listed in `/sys/devices/system/cpu/online`, or `None` when the file is unreadable.
pub fn online_cpus() -> Option<CpuSet> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    ticklab_cmdline::parse_cpulist(text.trim(), 1 << 16).ok()
}

/// Number of CPU ids the kernel could ever use (`/sys/devices/system/cpu/possible`), falling
/// back to the highest online CPU + 1. This is the `nr_cpus` to parse workload specs with.
pub fn possible_cpu_count() -> u32 {
    let from = |path: &str| {
        let text = std::fs::read_to_string(path).ok()?;
        let set = ticklab_cmdline::parse_cpulist(text.trim(), 1 << 16).ok()?;
        set.last().map(|c| c + 1)
    };
    from("/sys/devices/system/cpu/possible")
        .or_else(|| from("/sys/devices/system/cpu/online"))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32))
}

/// Switches the calling thread to SCHED_FIFO at `priority`.
pub(crate) fn set_fifo(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Switches thread `tid` (of this process) to SCHED_OTHER, nice 0: what the watchdog does to
/// a real-time worker that outlived its window.
pub(crate) fn set_other(tid: libc::pid_t) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `tid` names a thread of this process (the caller holds it registered);
    // `param` is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The calling thread's kernel thread id (`gettid`).
pub(crate) fn thread_id() -> libc::pid_t {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// The CPU the calling thread runs on now (`sched_getcpu`); `None` if the kernel does not
/// say (it fails only without the getcpu system call).
pub(crate) fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).ok()
}

/// SIGINT and SIGTERM, the signals a [`Stop`](super::Stop) watches.
fn stop_signals() -> nix::sys::signal::SigSet {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    set
}

/// The calling thread's signal mask as it was before [`block_stop_signals`].
#[derive(Debug)]
pub(crate) struct SavedMask(nix::sys::signal::SigSet);

/// Blocks SIGINT and SIGTERM in the calling thread (threads it spawns inherit the mask);
/// returns the old mask for [`restore_signal_mask`].
pub(crate) fn block_stop_signals() -> SavedMask {
    use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
    let mut old = SigSet::empty();
    // pthread_sigmask fails only for an invalid `how`.
    let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&stop_signals()), Some(&mut old));
    SavedMask(old)
}

/// Unblocks SIGINT and SIGTERM in the calling thread (a pending one is delivered now).
pub(crate) fn unblock_stop_signals() {
    use nix::sys::signal::{SigmaskHow, pthread_sigmask};
    let _ = pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&stop_signals()), None);
}

/// Puts back the mask [`block_stop_signals`] saved (a signal that stayed pending is
/// delivered now).
pub(crate) fn restore_signal_mask(saved: SavedMask) {
    use nix::sys::signal::{SigmaskHow, pthread_sigmask};
    let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&saved.0), None);
}

/// Sets the calling thread's timer slack (`prctl(PR_SET_TIMERSLACK)`), in nanoseconds.
pub(crate) fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long argument; the rest are ignored.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The calling thread's timer slack in nanoseconds (the tests check that
/// [`set_timer_slack`] took).
#[cfg(test)]
pub(crate) fn timer_slack() -> io::Result<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no pointer arguments.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    if rc >= 0 {
        Ok(rc as u64)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Locks current and future pages of the whole process in memory, when that cannot starve the
/// run: with `CAP_IPC_LOCK` or an unlimited `RLIMIT_MEMLOCK`. Otherwise it locks nothing and
/// says why — under `MCL_FUTURE` every later allocation (a thread stack, a histogram growing)
/// fails once the limit (8 MiB by default) is reached, which aborts the run (issue 17), and
/// locking only what is mapped now would still not cover those later pages.
pub(crate) fn lock_memory() -> Result<(), MemoryLockError> {
    let limit = memlock_limit();
    if limit.is_some() && !has_cap_ipc_lock() {
        return Err(MemoryLockError::Limited {
            kib: limit.map_or(0, |b| b / 1024),
        });
    }
    // SAFETY: mlockall takes only flags.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(MemoryLockError::Mlockall(io::Error::last_os_error()))
    }
}

/// Why [`lock_memory`] locked nothing (the run goes on; the report says why).
#[derive(Debug, thiserror::Error)]
pub(crate) enum MemoryLockError {
    /// A finite `RLIMIT_MEMLOCK` without `CAP_IPC_LOCK`: locking would starve the run.
    #[error(
        "RLIMIT_MEMLOCK is {kib} KiB and this process lacks CAP_IPC_LOCK: mlockall \
         (MCL_FUTURE) would make allocations above the limit fail, so memory was not locked"
    )]
    Limited {
        /// The soft limit, KiB.
        kib: u64,
    },
    /// `mlockall` failed.
    #[error("mlockall: {0}")]
    Mlockall(io::Error),
}

/// The soft `RLIMIT_MEMLOCK` in bytes, `None` when unlimited.
fn memlock_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) };
    if rc != 0 || lim.rlim_cur == libc::RLIM_INFINITY {
        None
    } else {
        Some(lim.rlim_cur)
    }
}

/// Whether the effective capabilities (`CapEff` in `/proc/self/status`) hold CAP_IPC_LOCK,
/// which lifts `RLIMIT_MEMLOCK`.
fn has_cap_ipc_lock() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim();
            u64::from_str_radix(hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// The capability number of CAP_IPC_LOCK (`include/uapi/linux/capability.h`; libc does not
/// export it).
const CAP_IPC_LOCK: u32 = 14;

/// Undoes [`lock_memory`].
pub(crate) fn unlock_memory() {
    // SAFETY: munlockall takes no arguments and cannot break memory safety.
    unsafe { libc::munlockall() };
}

/// `uname -n` and `uname -r`.
pub(crate) fn uname() -> (String, String) {
    // SAFETY: utsname is plain old data; uname fills it with NUL-terminated strings.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return ("unknown".into(), "unknown".into());
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (field(&u.nodename), field(&u.release))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_sleep_reaches_deadline() {
        let a = now_ns();
        assert!(sleep_until(a + 1_000_000));
        let b = now_ns();
        assert!(b >= a + 1_000_000, "woke {} ns early", a + 1_000_000 - b);
    }

    #[test]
    fn timer_slack_round_trips_on_this_thread() {
        std::thread::spawn(|| {
            set_timer_slack(1).unwrap();
            assert_eq!(timer_slack().unwrap(), 1);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn online_cpus_are_allowed_and_pinnable() {
        let online = online_cpus().expect("online file");
        let allowed = allowed_cpus().unwrap();
        assert!(!online.is_empty());
        assert!(possible_cpu_count() as usize >= online.len());
        let cpu = online.intersection(&allowed).first().unwrap();
        std::thread::spawn(move || {
            pin_to(cpu).unwrap();
            assert_eq!(
                allowed_cpus().unwrap().iter().collect::<Vec<_>>(),
                vec![cpu]
            );
        })
        .join()
        .unwrap();
    }
}

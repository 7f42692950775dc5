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

/// Locks current and future pages of the whole process in memory.
pub(crate) fn lock_memory() -> io::Result<()> {
    // SAFETY: mlockall takes only flags.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

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

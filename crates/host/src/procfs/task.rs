//! One task's files under `/proc/PID/`: the `stat` line (its `comm`, flags and the CPU it last
//! ran on), `status` (its allowed CPUs and context switches) and, on a kernel built with
//! `CONFIG_SCHED_DEBUG`, `sched` (its switches and CPU time in nanoseconds).
//!
//! Each parser takes the file's text; a field it cannot read makes it return `None` (a task
//! that exits between two reads leaves a file cut short, which is not an error of the host).

use ticklab_cmdline::{CpuSet, parse_sysfs_cpulist};

/// `PF_KTHREAD` in the flags field of `/proc/PID/stat` (include/linux/sched.h).
pub const PF_KTHREAD: u64 = 0x0020_0000;

/// The PID a `/proc` entry names (`None` for `self`, `meminfo` and the other files).
pub fn pid_of(entry: &std::fs::DirEntry) -> Option<u32> {
    entry.file_name().to_str()?.parse().ok()
}

/// What `/proc/PID/stat` (or `/proc/PID/task/TID/stat`) says of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStat {
    /// Its PID or TID (field 1).
    pub pid: u32,
    /// Its `comm` (field 2, without the parentheses; it may hold spaces and parentheses).
    pub comm: String,
    /// Its state (field 3: `R` running or runnable, `S` sleeping, ...).
    pub state: char,
    /// The `flags` field (field 9): `PF_*` bits.
    pub flags: u64,
    /// The CPU it last ran on (field 39, `processor`); `None` for a line cut short before it
    /// (the audit's captured fixtures keep only the fields up to `flags`).
    pub processor: Option<u32>,
}

impl TaskStat {
    /// Whether the task is a kernel thread (`PF_KTHREAD`).
    pub fn is_kthread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }
}

/// Parses a `/proc/PID/stat` line. `comm` ends at the line's last `)`; the fields after it
/// are counted from field 3 (`state`).
pub fn parse_task_stat(stat: &str) -> Option<TaskStat> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let pid = stat.get(..open)?.trim().parse().ok()?;
    let comm = stat.get(open + 1..close)?.to_string();
    let mut after = stat.get(close + 1..)?.split_whitespace();
    // Field 3 is index 0 here: flags (9) is index 6, processor (39) index 36.
    let state = after.next()?.chars().next()?;
    let flags = after.nth(5)?.parse().ok()?;
    let processor = match after.nth(36 - 7) {
        Some(p) => Some(p.parse().ok()?),
        None => None,
    };
    Some(TaskStat {
        pid,
        comm,
        state,
        flags,
        processor,
    })
}

/// What `/proc/PID/status` says of a task's CPUs and switches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStatus {
    /// `Cpus_allowed_list`.
    pub allowed: CpuSet,
    /// `voluntary_ctxt_switches` plus `nonvoluntary_ctxt_switches`: every time it left a CPU;
    /// `None` when either line is missing (the audit's captured fixtures keep only the CPUs).
    pub switches: Option<u64>,
}

/// Parses `/proc/PID/status`: `None` without a readable `Cpus_allowed_list`.
pub fn parse_task_status(status: &str) -> Option<TaskStatus> {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    let allowed = parse_sysfs_cpulist(field("Cpus_allowed_list:")?).ok()?;
    let count = |name: &str| field(name)?.parse::<u64>().ok();
    let switches = count("voluntary_ctxt_switches:")
        .zip(count("nonvoluntary_ctxt_switches:"))
        .map(|(v, n)| v.saturating_add(n));
    Some(TaskStatus { allowed, switches })
}

/// What `/proc/PID/sched` (`CONFIG_SCHED_DEBUG`) says of a task's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSched {
    /// `nr_switches`.
    pub switches: u64,
    /// `se.sum_exec_runtime`, ns (the file prints milliseconds with six decimals).
    pub sum_exec_runtime_ns: u64,
}

/// Parses `/proc/PID/sched`; `None` when `nr_switches` or `se.sum_exec_runtime` is missing.
pub fn parse_task_sched(sched: &str) -> Option<TaskSched> {
    let field = |name: &str| {
        sched.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == name).then(|| value.trim())
        })
    };
    let switches = field("nr_switches")?.parse().ok()?;
    let sum_exec_runtime_ns = split_ms_ns(field("se.sum_exec_runtime")?)?;
    Some(TaskSched {
        switches,
        sum_exec_runtime_ns,
    })
}

/// `MS.NNNNNN` (whole milliseconds, then the remaining nanoseconds as six digits) as ns.
fn split_ms_ns(v: &str) -> Option<u64> {
    let (ms, ns) = v.split_once('.').unwrap_or((v, "0"));
    if ms.starts_with('-') || ns.len() > 6 || !ns.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms: u64 = ms.parse().ok()?;
    // Six digits are nanoseconds; fewer are read as the leading digits of six.
    let ns: u64 = format!("{ns:0<6}").parse().ok()?;
    ms.checked_mul(1_000_000)?.checked_add(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KTHREADD: &str = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 23 0 0 \
        18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0";

    #[test]
    fn stat_lines() {
        let t = parse_task_stat(KTHREADD).unwrap();
        assert_eq!((t.pid, t.comm.as_str(), t.state), (2, "kthreadd", 'S'));
        assert_eq!(t.flags, 2_129_984);
        assert!(t.is_kthread());
        assert_eq!(t.processor, Some(1));
        // A comm with spaces and a parenthesis, a user task on CPU 7.
        let user = "77 (a (b) c) R 1 77 77 0 -1 4194560 0 0 0 0 3 4 0 0 20 0 1 0 99 0 0 \
            18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 7 0 0 0 0 0";
        let t = parse_task_stat(user).unwrap();
        assert_eq!((t.pid, t.comm.as_str(), t.state), (77, "a (b) c", 'R'));
        assert!(!t.is_kthread());
        assert_eq!(t.processor, Some(7));
        // Cut short after the flags: no processor.
        let short = parse_task_stat("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0").unwrap();
        assert_eq!((short.flags, short.processor), (2_129_984, None));
        for bad in [
            "",
            "2 kthreadd S 0",
            "x (kthreadd) S 0 0 0 0 -1 2129984 0 0",
            "2 (kthreadd) S 0 0 0 0 -1",
            "2 (kthreadd) S 0 0 0 0 -1 x 0",
            "77 (u) R 1 77 77 0 -1 4194560 0 0 0 0 3 4 0 0 20 0 1 0 99 0 0 \
             18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 x 0 0 0 0 0",
        ] {
            assert_eq!(parse_task_stat(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn status_files() {
        let s = "Name:\trcu_sched\nCpus_allowed_list:\t0\nvoluntary_ctxt_switches:\t93\n\
                 nonvoluntary_ctxt_switches:\t4\n";
        let t = parse_task_status(s).unwrap();
        assert_eq!(t.allowed, CpuSet::from_iter([0]));
        assert_eq!(t.switches, Some(97));
        assert_eq!(
            parse_task_status("Cpus_allowed_list:\t0-1\n"),
            Some(TaskStatus {
                allowed: CpuSet::from_iter([0, 1]),
                switches: None
            })
        );
        assert_eq!(parse_task_status("voluntary_ctxt_switches:\t1\n"), None);
        assert_eq!(
            parse_task_status(
                "Cpus_allowed_list:\tx\nvoluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t0\n"
            ),
            None
        );
    }

    #[test]
    fn sched_files() {
        let s = "rcu_sched (15, #threads: 1)\n----\n\
                 se.exec_start                                :      34595944.859677\n\
                 se.sum_exec_runtime                          :           218.877027\n\
                 nr_switches                                  :                  688\n\
                 nr_voluntary_switches                        :                  620\n";
        assert_eq!(
            parse_task_sched(s),
            Some(TaskSched {
                switches: 688,
                sum_exec_runtime_ns: 218_877_027
            })
        );
        assert_eq!(parse_task_sched("nr_switches : 3\n"), None);
    }

    #[test]
    fn milliseconds_with_nanoseconds() {
        for (text, ns) in [
            ("0.000001", Some(1)),
            ("12.5", Some(12_500_000)),
            ("3", Some(3_000_000)),
            ("1.0000001", None),
            ("-1.000000", None),
            ("1.-00000", None),
            ("x.000000", None),
        ] {
            assert_eq!(split_ms_ns(text), ns, "{text}");
        }
    }
}

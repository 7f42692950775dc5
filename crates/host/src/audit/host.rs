//! The facts every check shares, read once: the audited CPUs, the online set, the release,
//! the build configuration, the boot line, the `nohz_full` and `isolated` sets, and the tasks
//! (kernel threads and their allowed CPUs).

use super::check::AuditError;
use crate::probe::inspect::probes::{kconfig, kernel_info};
use crate::probe::{HostRoot, Probe};
use crate::procfs::Kconfig;
use crate::procfs::task::{parse_task_stat, parse_task_status, pid_of};
use ticklab_cmdline::{CpuSet, HousekeepingArg, KernelCmdline, parse_sysfs_cpulist};

/// One task of `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Its PID.
    pub pid: u32,
    /// Its `comm`.
    pub comm: String,
    /// Whether it is a kernel thread (`PF_KTHREAD`).
    pub kthread: bool,
    /// `Cpus_allowed_list` of `/proc/PID/status`.
    pub allowed: CpuSet,
}

/// What the checks read from the host, once.
#[derive(Debug, Clone)]
pub struct AuditHost {
    /// Where `/proc` and `/sys` are.
    pub root: HostRoot,
    /// The CPUs under audit.
    pub target: CpuSet,
    /// `/sys/devices/system/cpu/online`.
    pub online: CpuSet,
    /// `/proc/sys/kernel/osrelease`.
    pub release: Option<String>,
    /// `(major, minor)` of the release.
    pub version: Option<(u32, u32)>,
    /// The build configuration and the file it came from.
    pub kconfig: Probe<(Kconfig, String)>,
    /// The kernel's part of `/proc/cmdline`, as written.
    pub cmdline_text: Option<String>,
    /// The same, parsed.
    pub cmdline: Probe<KernelCmdline>,
    /// `/sys/devices/system/cpu/nohz_full` (absent on a kernel without `CONFIG_NO_HZ_FULL`).
    pub nohz_full: Probe<CpuSet>,
    /// `/sys/devices/system/cpu/isolated` (the `isolcpus=` domain set).
    pub isolated: Probe<CpuSet>,
    /// Every task of `/proc` whose files could be read.
    pub tasks: Probe<Vec<Task>>,
}

/// A cpulist file of sysfs or procfs.
pub(crate) fn read_cpulist(root: &HostRoot, path: &str) -> Probe<CpuSet> {
    root.read_line(path).and_then(|t| {
        Probe::from_result(
            parse_sysfs_cpulist(&t).map_err(|e| format!("{path}: {t:?} is not a cpulist: {e}")),
        )
    })
}

/// An integer file (`/proc/sys/...`).
pub(crate) fn read_int(root: &HostRoot, path: &str) -> Probe<i64> {
    root.read_line(path).and_then(|t| {
        Probe::from_result(
            t.parse::<i64>()
                .map_err(|_| format!("{path}: {t:?} is not an integer")),
        )
    })
}

/// A hex cpumask as the kernel prints it (`3`, `ff,ffffffff`: 32-bit words, most significant
/// first).
pub(crate) fn parse_hex_cpumask(text: &str) -> Option<CpuSet> {
    let mut set = CpuSet::new();
    let words: Vec<&str> = text.trim().split(',').collect();
    for (i, w) in words.iter().rev().enumerate() {
        if w.is_empty() || w.len() > 8 {
            return None;
        }
        let v = u32::from_str_radix(w, 16).ok()?;
        for bit in 0..32 {
            if v & (1 << bit) != 0 {
                set.insert(u32::try_from(i).ok()?.checked_mul(32)? + bit);
            }
        }
    }
    Some(set)
}

/// A hex cpumask file.
pub(crate) fn read_cpumask(root: &HostRoot, path: &str) -> Probe<CpuSet> {
    root.read_line(path)
        .and_then(|t| match parse_hex_cpumask(&t) {
            Some(s) => Probe::Ok(s),
            None => Probe::NotAvailable(format!("{path}: {t:?} is not a hex cpumask")),
        })
}

fn read_tasks(root: &HostRoot) -> Probe<Vec<Task>> {
    let dir = match std::fs::read_dir(root.path("/proc")) {
        Ok(d) => d,
        Err(e) => return Probe::NotAvailable(crate::probe::explain_io("/proc", &e)),
    };
    let mut tasks = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = pid_of(&entry) else {
            continue;
        };
        // A task that exits between the listing and the read is simply gone.
        let Some(stat) = root
            .read(&format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| parse_task_stat(s))
        else {
            continue;
        };
        let Some(status) = root
            .read(&format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| parse_task_status(s))
        else {
            continue;
        };
        tasks.push(Task {
            pid,
            kthread: stat.is_kthread(),
            comm: stat.comm,
            allowed: status.allowed,
        });
    }
    tasks.sort_by_key(|t| t.pid);
    Probe::Ok(tasks)
}

/// The host's isolated CPUs: `/sys/devices/system/cpu/nohz_full` and `isolated`, and the
/// `nohz_full=` and `isolcpus=` lists of the boot line (which a kernel built without the
/// feature ignores, but which say what the box was meant to isolate).
pub fn isolated_cpus(root: &HostRoot) -> CpuSet {
    let mut set = CpuSet::new();
    for path in [
        "/sys/devices/system/cpu/nohz_full",
        "/sys/devices/system/cpu/isolated",
    ] {
        if let Probe::Ok(s) = read_cpulist(root, path) {
            set = set.union(&s);
        }
    }
    if let Probe::Ok(c) = read_cmdline(root, nr_possible(root)).1 {
        for h in &c.housekeeping {
            set = set.union(match h {
                HousekeepingArg::NohzFull(a) => &a.cpus,
                HousekeepingArg::Isolcpus(a) => &a.list.cpus,
            });
        }
    }
    set
}

/// The number of possible CPUs (highest in `/sys/devices/system/cpu/possible`, plus one): the
/// `nr_cpus` a cpulist of this host is read with.
pub fn possible_cpus(root: &HostRoot) -> u32 {
    nr_possible(root)
}

fn nr_possible(root: &HostRoot) -> u32 {
    read_cpulist(root, "/sys/devices/system/cpu/possible")
        .ok()
        .and_then(CpuSet::last)
        .map_or(1, |l| l + 1)
}

/// `/proc/cmdline`'s kernel part, read with the running release's grammar.
fn read_cmdline(root: &HostRoot, nr_cpus: u32) -> (Option<String>, Probe<KernelCmdline>) {
    let release = kernel_info(root).ok().map(|k| k.release.clone());
    match root.read("/proc/cmdline") {
        Probe::Ok(line) => {
            let kernel_part = KernelCmdline::split_init_args(&line).0.to_string();
            let parsed = Probe::from_result(
                KernelCmdline::parse_for_release(&kernel_part, nr_cpus, release.as_deref())
                    .map_err(|e| format!("/proc/cmdline: {e}")),
            );
            (Some(kernel_part), parsed)
        }
        Probe::NotAvailable(why) => (None, Probe::NotAvailable(why)),
    }
}

impl AuditHost {
    /// Reads the facts; `cpus` (else [`isolated_cpus`]) are audited.
    pub fn read(root: &HostRoot, cpus: Option<&CpuSet>) -> Result<AuditHost, AuditError> {
        let online = read_cpulist(root, "/sys/devices/system/cpu/online")
            .ok()
            .cloned()
            .unwrap_or_default();
        let target = match cpus {
            Some(c) => {
                if let Some(cpu) = c.iter().find(|&c| !online.contains(c)) {
                    return Err(AuditError::CpuNotOnline {
                        cpu,
                        online: online.to_cpulist(),
                    });
                }
                c.clone()
            }
            None => {
                let iso = isolated_cpus(root).intersection(&online);
                if iso.is_empty() {
                    return Err(AuditError::NothingIsolated);
                }
                iso
            }
        };
        let info = kernel_info(root);
        let release = info.ok().map(|k| k.release.clone());
        let version = info.ok().and_then(|k| k.major_minor());
        let (cmdline_text, cmdline) = read_cmdline(root, nr_possible(root));
        Ok(AuditHost {
            root: root.clone(),
            target,
            online,
            kconfig: kconfig(root, release.as_deref()),
            release,
            version,
            cmdline_text,
            cmdline,
            nohz_full: read_cpulist(root, "/sys/devices/system/cpu/nohz_full"),
            isolated: read_cpulist(root, "/sys/devices/system/cpu/isolated"),
            tasks: read_tasks(root),
        })
    }

    /// The online CPUs not under audit: where housekeeping belongs.
    pub fn housekeeping(&self) -> CpuSet {
        self.online.difference(&self.target)
    }

    /// The `nohz_full` set in force (empty when the file is absent).
    pub fn nohz_full_set(&self) -> CpuSet {
        self.nohz_full.ok().cloned().unwrap_or_default()
    }

    /// Whether the build has `CONFIG_<name>=y`; `None` when the config is unreadable.
    pub fn built(&self, name: &str) -> Option<bool> {
        self.kconfig.ok().map(|(k, _)| k.is_y(name))
    }

    /// A boot-line token written as is (`nosmt`, `irqaffinity=0`), for the parameters the
    /// parser keeps unread: the value of `key=` or `Some("")` for a bare `key`.
    pub fn unknown_param(&self, key: &str) -> Option<String> {
        let c = self.cmdline.ok()?;
        c.unknown.iter().rev().find_map(|t| {
            if t == key {
                Some(String::new())
            } else {
                t.strip_prefix(key)
                    .and_then(|r| r.strip_prefix('='))
                    .map(|v| v.trim_matches('"').to_string())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_cpumasks() {
        let cases: &[(&str, Option<&str>)] = &[
            ("3", Some("0-1")),
            ("00000002", Some("1")),
            ("1,00000000", Some("32")),
            ("ffffffff,ffffffff", Some("0-63")),
            ("0", Some("")),
            ("", None),
            ("xyz", None),
            ("123456789", None),
        ];
        for (text, want) in cases {
            let got = parse_hex_cpumask(text).map(|s| s.to_cpulist());
            assert_eq!(got.as_deref(), *want, "{text:?}");
        }
    }
}

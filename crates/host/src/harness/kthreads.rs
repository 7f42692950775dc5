//! The kernel threads' runs in a window: every kernel thread's `/proc/PID/` files read before
//! the window opens and after it ends, and the difference per thread
//! ([`KthreadRuns`], [`Report::kthread_runs`](ticklab_schema::report::Report::kthread_runs)).
//!
//! A run is one context switch away from the CPU (`voluntary_ctxt_switches` plus
//! `nonvoluntary_ctxt_switches`, or `nr_switches` of `/proc/PID/sched` where the kernel has it,
//! which also gives the CPU time). Kernel threads are the host's own work: on an idle
//! housekeeping CPU each run is a wake-up the kernel made for itself (RCU's grace-period and
//! offload threads, workqueue workers), and a twin of the run needs them as background.
//!
//! The reads are made outside the window (before the start snapshot and after the end one), so
//! they add no busy time to it; a thread that started or exited in between is left out.

use std::collections::BTreeMap;

use ticklab_schema::report::KthreadRuns;

use crate::probe::HostRoot;
use crate::procfs::task::{parse_task_sched, parse_task_stat, parse_task_status, pid_of};

/// `/proc/PID/FILE` of `root`, parsed; `None` when it cannot be read or parsed.
fn read_task<T>(root: &HostRoot, pid: u32, file: &str, parse: fn(&str) -> Option<T>) -> Option<T> {
    root.read(&format!("/proc/{pid}/{file}"))
        .ok()
        .and_then(|s| parse(s))
}

/// One kernel thread as read at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KthreadState {
    comm: String,
    cpu: u32,
    bound: bool,
    switches: u64,
    run_ns: Option<u64>,
}

/// Every kernel thread of a `/proc`, by PID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Kthreads(BTreeMap<u32, KthreadState>);

impl Kthreads {
    /// Reads every kernel thread of this host's `/proc` now.
    pub(crate) fn take() -> Kthreads {
        Kthreads::read(&HostRoot::live())
    }

    /// Reads every kernel thread of `root`'s `/proc`. Tasks whose files cannot be read (gone,
    /// or no permission) are left out.
    pub(crate) fn read(root: &HostRoot) -> Kthreads {
        let mut all = BTreeMap::new();
        let Ok(dir) = std::fs::read_dir(root.path("/proc")) else {
            return Kthreads(all);
        };
        for entry in dir.flatten() {
            let Some(pid) = pid_of(&entry) else {
                continue;
            };
            let Some(stat) = read_task(root, pid, "stat", parse_task_stat) else {
                continue;
            };
            let Some(cpu) = stat.processor.filter(|_| stat.is_kthread()) else {
                continue;
            };
            let Some(status) = read_task(root, pid, "status", parse_task_status) else {
                continue;
            };
            let sched = read_task(root, pid, "sched", parse_task_sched);
            let Some(switches) = sched.map(|s| s.switches).or(status.switches) else {
                continue;
            };
            all.insert(
                pid,
                KthreadState {
                    bound: status.allowed.len() == 1 && status.allowed.contains(cpu),
                    cpu,
                    comm: stat.comm,
                    switches,
                    run_ns: sched.map(|s| s.sum_exec_runtime_ns),
                },
            );
        }
        Kthreads(all)
    }

    /// The runs of each thread present at both reads that ran in between, in PID order: its
    /// `comm` and CPU as `end` has them.
    pub(crate) fn runs_since(&self, start: &Kthreads) -> Vec<KthreadRuns> {
        self.0
            .iter()
            .filter_map(|(pid, e)| {
                let s = start.0.get(pid)?;
                let runs = e.switches.checked_sub(s.switches)?;
                (runs > 0).then(|| KthreadRuns {
                    comm: e.comm.clone(),
                    cpu: e.cpu,
                    bound: e.bound,
                    runs,
                    run_ns: e.run_ns.zip(s.run_ns).map(|(e, s)| e.saturating_sub(s)),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One task of a fixture: (pid, comm, flags, cpu, allowed, switches, sched ms text).
    type FixtureTask<'a> = (u32, &'a str, u64, u32, &'a str, u64, Option<&'a str>);

    /// A `/proc` named `name` with `tasks`.
    fn fixture(name: &str, tasks: &[FixtureTask<'_>]) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ticklab-kthreads-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        for &(pid, comm, flags, cpu, allowed, switches, sched) in tasks {
            let d = dir.join("proc").join(pid.to_string());
            std::fs::create_dir(&d).unwrap();
            let mut fields = vec!["0".to_string(); 37];
            fields[0] = "S".into();
            fields[6] = flags.to_string();
            fields[36] = cpu.to_string();
            std::fs::write(
                d.join("stat"),
                format!("{pid} ({comm}) {}\n", fields.join(" ")),
            )
            .unwrap();
            std::fs::write(
                d.join("status"),
                format!(
                    "Name:\t{comm}\nCpus_allowed_list:\t{allowed}\n\
                     voluntary_ctxt_switches:\t{switches}\nnonvoluntary_ctxt_switches:\t0\n"
                ),
            )
            .unwrap();
            if let Some(ms) = sched {
                std::fs::write(
                    d.join("sched"),
                    format!(
                        "{comm} ({pid}, #threads: 1)\n---\nse.sum_exec_runtime : {ms}\n\
                         nr_switches : {switches}\n"
                    ),
                )
                .unwrap();
            }
        }
        std::fs::create_dir(dir.join("proc/self")).unwrap();
        dir
    }

    const KTHREAD: u64 = crate::procfs::task::PF_KTHREAD;

    #[test]
    fn runs_are_the_switches_between_two_reads_of_the_kernel_threads() {
        let before = fixture(
            "before",
            &[
                (1, "init", 0x400100, 0, "0-1", 50, None),
                (15, "rcu_sched", KTHREAD, 0, "0", 100, Some("1.000000")),
                (20, "kworker/u4:1", KTHREAD, 1, "0-1", 7, None),
                (21, "kworker/1:1", KTHREAD, 1, "1", 3, None),
                (30, "gone", KTHREAD, 0, "0", 1, None),
            ],
        );
        let after = fixture(
            "after",
            &[
                (1, "init", 0x400100, 0, "0-1", 90, None),
                (15, "rcu_sched", KTHREAD, 0, "0", 108, Some("1.080000")),
                (
                    20,
                    "kworker/u4:1-events_unbound",
                    KTHREAD,
                    0,
                    "0-1",
                    43,
                    None,
                ),
                (21, "kworker/1:1", KTHREAD, 1, "1", 3, None),
                (40, "new", KTHREAD, 1, "1", 9, None),
            ],
        );
        let runs = Kthreads::read(&HostRoot::at(&after))
            .runs_since(&Kthreads::read(&HostRoot::at(&before)));
        for d in [&before, &after] {
            std::fs::remove_dir_all(d).unwrap();
        }
        assert_eq!(
            runs,
            vec![
                KthreadRuns {
                    comm: "rcu_sched".into(),
                    cpu: 0,
                    bound: true,
                    runs: 8,
                    run_ns: Some(80_000),
                },
                KthreadRuns {
                    comm: "kworker/u4:1-events_unbound".into(),
                    cpu: 0,
                    bound: false,
                    runs: 36,
                    run_ns: None,
                },
            ],
            "user tasks, threads that did not run, and threads not at both reads are left out"
        );
    }

    #[test]
    fn a_missing_proc_reads_as_no_threads() {
        let k = Kthreads::read(&HostRoot::at("/nonexistent"));
        assert_eq!(k, Kthreads::default());
        assert!(k.runs_since(&k).is_empty());
    }

    #[test]
    fn this_hosts_kthreadd_is_read_when_visible() {
        // kthreadd is PID 2 on a Linux host; a PID namespace (a container) hides it.
        let visible = std::fs::read_to_string("/proc/2/stat")
            .ok()
            .and_then(|s| parse_task_stat(&s))
            .is_some_and(|t| t.is_kthread());
        assert_eq!(Kthreads::take().0.contains_key(&2), visible);
    }
}

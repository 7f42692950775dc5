//! Where a workload's threads may be placed: the CPUs this process may be *moved to*, not the
//! affinity it inherited.
//!
//! Every worker pins itself with `sched_setaffinity` to its one CPU. The kernel accepts any
//! CPU that is online and in the task's cpuset (`cpuset_cpus_allowed`), whatever the caller's
//! current mask: `isolcpus=` only shrinks the default affinity that tasks inherit from init,
//! and `taskset -c 0 ticklab ...` only shrinks this process's. So the rule
//! ([`CpuPlacement::check`]) is
//!
//! ```text
//! placeable = online ∩ effective cpuset of the process's cgroup
//! ```
//!
//! and the inherited affinity (`sched_getaffinity`, `Cpus_allowed_list` in `/proc/self/status`)
//! is only shown, never used to refuse.
//!
//! The cpuset is found from `/proc/self/cgroup` and the cgroup mounts of
//! `/proc/self/mountinfo` ([`crate::procfs::cgroup`]): on a v1 hierarchy with the cpuset
//! controller, `cpuset.effective_cpus` (`cpuset.cpus` on kernels without it); else on the v2
//! hierarchy, `cpuset.cpus.effective`. Either is read in the process's cgroup or, failing
//! that, in the nearest ancestor that has it (a v2 cgroup has the file only where its parent
//! enabled `+cpuset`). No cpuset anywhere means no limit: every online CPU. All files are read
//! through a [`HostRoot`], so fixture trees test the walk.

use std::fmt;

use ticklab_cmdline::{CpuSet, parse_cpulist};

use crate::probe::{HostRoot, Probe};
use crate::procfs::cgroup::{CgroupMount, parse_cgroup_mounts, parse_proc_cgroup};

/// Largest CPU number a sysfs or cgroup cpulist may name here.
const MAX_CPUS: u32 = 1 << 16;

/// The cpuset that limits where this process's threads may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpusetLimit {
    /// The process's cgroup (or its nearest ancestor with a cpuset file) allows `cpus`.
    Cgroup {
        /// The process's cgroup, as `/proc/self/cgroup` names it (`/user.slice/x.scope`).
        cgroup: String,
        /// The host path of the file that gave `cpus` (may belong to an ancestor).
        file: String,
        /// The effective CPUs of that cpuset.
        cpus: CpuSet,
    },
    /// No cpuset limits placement (no cpuset controller, or it could not be read): why.
    Unlimited(String),
}

/// What decides placement on this host, as read at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuPlacement {
    /// `/sys/devices/system/cpu/online`.
    pub online: CpuSet,
    /// The cpuset of the process's cgroup.
    pub cpuset: CpusetLimit,
    /// The affinity this process inherited (`Cpus_allowed_list`): shown, never enforced.
    pub inherited: Option<CpuSet>,
    /// `/sys/devices/system/cpu/isolated` (`isolcpus=` domain isolation): shown, placeable.
    pub isolated: CpuSet,
}

/// Why a CPU cannot take a workload thread.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    /// The CPU is not online.
    #[error("CPU {cpu} is not online (online CPUs: {online})")]
    NotOnline {
        /// The CPU asked for.
        cpu: u32,
        /// The online cpulist.
        online: String,
    },
    /// The CPU is online but outside the cpuset of the process's cgroup.
    #[error(
        "CPU {cpu} is outside the cpuset of this process's cgroup {cgroup} ({file}: {cpus}): \
         sched_setaffinity cannot move a thread there; run ticklab from a cgroup whose cpuset \
         includes CPU {cpu}"
    )]
    OutsideCpuset {
        /// The CPU asked for.
        cpu: u32,
        /// The process's cgroup.
        cgroup: String,
        /// The file that gave the set.
        file: String,
        /// The set, as a cpulist.
        cpus: String,
    },
}

impl CpuPlacement {
    /// The CPUs a workload thread may be pinned to: online ∩ the cgroup's cpuset.
    pub fn placeable(&self) -> CpuSet {
        match &self.cpuset {
            CpusetLimit::Cgroup { cpus, .. } => self.online.intersection(cpus),
            CpusetLimit::Unlimited(_) => self.online.clone(),
        }
    }

    /// Whether `cpu` may take a workload thread. The inherited affinity and isolation play no
    /// part: the worker pins itself explicitly.
    pub fn check(&self, cpu: u32) -> Result<(), PlacementError> {
        if !self.online.contains(cpu) {
            return Err(PlacementError::NotOnline {
                cpu,
                online: self.online.to_cpulist(),
            });
        }
        if let CpusetLimit::Cgroup { cgroup, file, cpus } = &self.cpuset
            && !cpus.contains(cpu)
        {
            return Err(PlacementError::OutsideCpuset {
                cpu,
                cgroup: cgroup.clone(),
                file: file.clone(),
                cpus: cpus.to_cpulist(),
            });
        }
        debug_assert!(
            self.placeable().contains(cpu),
            "check agrees with placeable"
        );
        Ok(())
    }

    /// Reads the placement of the process whose `/proc/self` is under `root`.
    ///
    /// An unreadable online list falls back to the cgroup's set, then to the inherited
    /// affinity, then to CPU 0 — the harness then refuses what it cannot see.
    pub fn read(root: &HostRoot) -> CpuPlacement {
        let list = |path: &str| {
            root.read_line(path)
                .ok()
                .and_then(|t| parse_cpulist(t, MAX_CPUS).ok())
        };
        let cpuset = read_cpuset(root);
        let inherited = root.read("/proc/self/status").ok().and_then(|s| {
            let v = s
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
            parse_cpulist(v.trim(), MAX_CPUS).ok()
        });
        let online = list("/sys/devices/system/cpu/online")
            .or_else(|| match &cpuset {
                CpusetLimit::Cgroup { cpus, .. } => Some(cpus.clone()),
                CpusetLimit::Unlimited(_) => None,
            })
            .or_else(|| inherited.clone())
            .unwrap_or_else(|| [0].into_iter().collect());
        CpuPlacement {
            online,
            cpuset,
            inherited,
            isolated: list("/sys/devices/system/cpu/isolated").unwrap_or_default(),
        }
    }

    /// The live host.
    pub fn live() -> CpuPlacement {
        CpuPlacement::read(&HostRoot::live())
    }
}

impl fmt::Display for CpuPlacement {
    /// `0-1 (online 0-1 ∩ cpuset 0-1 of cgroup / from <file>); inherited affinity 0; isolated 1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (online {}", self.placeable(), self.online)?;
        match &self.cpuset {
            CpusetLimit::Cgroup { cgroup, file, cpus } => {
                write!(f, " ∩ cpuset {cpus} of cgroup {cgroup}, from {file})")?
            }
            CpusetLimit::Unlimited(why) => write!(f, "; no cpuset limit: {why})")?,
        }
        match &self.inherited {
            Some(a) => write!(f, "; inherited affinity {a}")?,
            None => write!(f, "; inherited affinity unknown")?,
        }
        if self.isolated.is_empty() {
            write!(f, "; no isolated CPUs")
        } else {
            write!(f, "; isolated {}", self.isolated)
        }
    }
}

/// The cpuset directory of `path` in a hierarchy mounted as `mount` (or at `fallback`).
fn hierarchy_dir(mount: Option<&CgroupMount>, fallback: &str, path: &str) -> (String, String) {
    let (base, root) = match mount {
        Some(m) => (m.mount_point.as_str(), m.root.as_str()),
        None => (fallback, "/"),
    };
    // Paths in /proc/self/cgroup are relative to the hierarchy's root; a mount that shows only
    // a subtree (root != "/") starts below it.
    let rel = path
        .strip_prefix(root.trim_end_matches('/'))
        .filter(|r| r.is_empty() || r.starts_with('/'))
        .unwrap_or(path);
    (base.trim_end_matches('/').to_string(), rel.to_string())
}

/// Reads the first of `files` that holds a cpulist in `base + rel`, then in each ancestor up to
/// `base`. Returns the host path read and the set.
fn walk_up(root: &HostRoot, base: &str, rel: &str, files: &[&str]) -> Option<(String, CpuSet)> {
    let mut dir = rel.trim_end_matches('/').to_string();
    loop {
        for name in files {
            let path = format!("{base}{dir}/{name}");
            if let Probe::Ok(text) = root.read_line(&path)
                && !text.is_empty()
                && let Ok(cpus) = parse_cpulist(&text, MAX_CPUS)
            {
                return Some((path, cpus));
            }
        }
        match dir.rfind('/') {
            Some(i) => dir.truncate(i),
            None => return None,
        }
    }
}

/// The cpuset limit of the process under `root`.
fn read_cpuset(root: &HostRoot) -> CpusetLimit {
    let memberships = match root.read("/proc/self/cgroup") {
        Probe::Ok(text) => match parse_proc_cgroup(&text) {
            Ok(m) => m,
            Err(e) => return CpusetLimit::Unlimited(e.to_string()),
        },
        Probe::NotAvailable(why) => return CpusetLimit::Unlimited(why),
    };
    let mounts = root
        .read("/proc/self/mountinfo")
        .ok()
        .map(|t| parse_cgroup_mounts(t))
        .unwrap_or_default();
    let found = if let Some(m) = memberships.iter().find(|m| m.has_controller("cpuset")) {
        let mount = mounts.iter().find(|h| {
            h.v1_controllers
                .as_ref()
                .is_some_and(|c| c.iter().any(|c| c == "cpuset"))
        });
        let (base, rel) = hierarchy_dir(mount, "/sys/fs/cgroup/cpuset", &m.path);
        let files = [
            "cpuset.effective_cpus",
            "cpuset.cpus",
            "effective_cpus",
            "cpus",
        ];
        walk_up(root, &base, &rel, &files).map(|f| (m.path.clone(), f))
    } else if let Some(m) = memberships.iter().find(|m| m.is_unified()) {
        let mount = mounts.iter().find(|h| h.v1_controllers.is_none());
        let (base, rel) = hierarchy_dir(mount, "/sys/fs/cgroup", &m.path);
        walk_up(root, &base, &rel, &["cpuset.cpus.effective"]).map(|f| (m.path.clone(), f))
    } else {
        return CpusetLimit::Unlimited("/proc/self/cgroup names no cpuset hierarchy".into());
    };
    match found {
        Some((cgroup, (file, cpus))) => CpusetLimit::Cgroup { cgroup, file, cpus },
        None => CpusetLimit::Unlimited(
            "no cpuset controller (no cpuset file in the process's cgroup or its ancestors)".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(cpus: &[u32]) -> CpuSet {
        cpus.iter().copied().collect()
    }

    /// Issue 13's rule: the inherited affinity and isolation never refuse; the cgroup does.
    #[test]
    fn placement_rule_table() {
        // (online, inherited, cgroup cpuset, isolated, cpu, Ok or a word the refusal contains)
        type Case = (
            &'static [u32],
            &'static [u32],
            Option<&'static [u32]>,
            &'static [u32],
            u32,
            Result<(), &'static str>,
        );
        let table: &[Case] = &[
            (&[0, 1], &[0], Some(&[0, 1]), &[1], 1, Ok(())),
            (
                &[0, 1],
                &[0],
                Some(&[0]),
                &[1],
                1,
                Err("cgroup /ticklab-test ("),
            ),
            (
                &[0, 1],
                &[0],
                Some(&[0]),
                &[],
                1,
                Err("(/sys/fs/cgroup/cpuset/ticklab-test/cpuset.effective_cpus: 0)"),
            ),
            (&[0, 1], &[0], None, &[1], 1, Ok(())),
            (&[0, 1], &[0, 1], Some(&[0, 1]), &[], 0, Ok(())),
            (
                &[0, 1],
                &[0, 1],
                Some(&[0, 1, 2, 3]),
                &[],
                2,
                Err("CPU 2 is not online (online CPUs: 0-1)"),
            ),
            (&[0, 1], &[0, 1], None, &[], 7, Err("not online")),
        ];
        for (i, &(online, inherited, cgroup, isolated, cpu, want)) in table.iter().enumerate() {
            let p = CpuPlacement {
                online: set(online),
                cpuset: match cgroup {
                    Some(c) => CpusetLimit::Cgroup {
                        cgroup: "/ticklab-test".into(),
                        file: "/sys/fs/cgroup/cpuset/ticklab-test/cpuset.effective_cpus".into(),
                        cpus: set(c),
                    },
                    None => CpusetLimit::Unlimited("no cpuset controller".into()),
                },
                inherited: Some(set(inherited)),
                isolated: set(isolated),
            };
            match (p.check(cpu), want) {
                (Ok(()), Ok(())) => assert!(p.placeable().contains(cpu), "case {i}"),
                (Err(e), Err(word)) => {
                    assert!(e.to_string().contains(word), "case {i}: {e}");
                    assert!(!p.placeable().contains(cpu), "case {i}");
                }
                (got, _) => panic!("case {i}: CPU {cpu} gave {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn a_v2_tree_without_cpuset_files_is_unlimited() {
        let dir = std::env::temp_dir().join(format!("ticklab-placement-{}", std::process::id()));
        let scope = dir.join("sys/fs/cgroup/user.slice");
        std::fs::create_dir_all(&scope).unwrap();
        std::fs::create_dir_all(dir.join("proc/self")).unwrap();
        std::fs::create_dir_all(dir.join("sys/devices/system/cpu")).unwrap();
        std::fs::write(dir.join("proc/self/cgroup"), "0::/user.slice\n").unwrap();
        std::fs::write(dir.join("sys/devices/system/cpu/online"), "0-3\n").unwrap();
        let p = CpuPlacement::read(&HostRoot::at(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            matches!(p.cpuset, CpusetLimit::Unlimited(ref why) if why.contains("no cpuset controller")),
            "{p:?}"
        );
        assert_eq!(p.placeable(), set(&[0, 1, 2, 3]));
        assert_eq!(p.inherited, None);
        assert!(p.isolated.is_empty());
    }
}

//! Which package (socket) each CPU sits on, and which CPUs share its core: the sysfs topology
//! files `/sys/devices/system/cpu/cpuN/topology/physical_package_id` and
//! `thread_siblings_list`.
//!
//! The cache-line bounce of `host calibrate` ([`super::cacheline`]) needs two CPUs of one
//! package that are not hardware threads of one core (siblings share their L1 and L2, so a
//! line "moving" between them never leaves the core), and, where the host has a second
//! package, two CPUs on different packages. On a VM these files describe the topology the
//! hypervisor chose to show, not where the vCPUs run (docs/host-lab.md).

use ticklab_cmdline::{CpuSet, parse_sysfs_cpulist};

use crate::probe::HostRoot;

/// Where one CPU sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CpuPlace {
    /// The CPU.
    pub cpu: u32,
    /// `physical_package_id`.
    pub package: u32,
    /// `thread_siblings_list`: the hardware threads of its core, itself included.
    pub siblings: CpuSet,
}

/// Why the topology of a CPU could not be read: the file, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TopologyError {
    /// The file is missing or unreadable.
    #[error("{0}: unreadable")]
    Unreadable(String),
    /// The file's text is not what it should hold.
    #[error("{file}: {why}")]
    Malformed {
        /// The file.
        file: String,
        /// What is wrong (`"x" is not a package number`).
        why: String,
    },
}

/// The places of a set of CPUs, in CPU order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CpuTopology {
    places: Vec<CpuPlace>,
}

impl CpuTopology {
    /// Reads the places of `cpus` under `root`. Err names the first file that is missing or
    /// does not parse.
    pub(crate) fn read(
        root: &HostRoot,
        cpus: impl IntoIterator<Item = u32>,
    ) -> Result<CpuTopology, TopologyError> {
        let mut places = Vec::new();
        for cpu in cpus {
            let file = |name: &str| format!("/sys/devices/system/cpu/cpu{cpu}/topology/{name}");
            let read = |name: &str| {
                root.read_line(&file(name))
                    .ok()
                    .cloned()
                    .ok_or_else(|| TopologyError::Unreadable(file(name)))
            };
            let text = read("physical_package_id")?;
            let package = text.parse::<u32>().map_err(|_| TopologyError::Malformed {
                file: file("physical_package_id"),
                why: format!("{text:?} is not a package number"),
            })?;
            let text = read("thread_siblings_list")?;
            let siblings = parse_sysfs_cpulist(&text).map_err(|e| TopologyError::Malformed {
                file: file("thread_siblings_list"),
                why: format!("{text:?}: {e}"),
            })?;
            places.push(CpuPlace {
                cpu,
                package,
                siblings,
            });
        }
        places.sort_by_key(|p| p.cpu);
        places.dedup_by_key(|p| p.cpu);
        Ok(CpuTopology { places })
    }

    /// Number of distinct packages among the CPUs read.
    pub(crate) fn packages(&self) -> usize {
        let mut ids: Vec<u32> = self.places.iter().map(|p| p.package).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }

    /// Two CPUs of one package, lowest numbers first, on different cores when the package has
    /// two cores (`false`), else two hardware threads of one core (`true`: the line never
    /// leaves the core). `None` when no package holds two of the CPUs read.
    pub(crate) fn same_package_pair(&self) -> Option<(u32, u32, bool)> {
        let pairs = || {
            self.places.iter().enumerate().flat_map(move |(i, a)| {
                self.places[i + 1..]
                    .iter()
                    .filter(move |b| b.package == a.package)
                    .map(move |b| (a, b))
            })
        };
        let shares_core = |a: &CpuPlace, b: &CpuPlace| a.siblings.contains(b.cpu);
        pairs()
            .find(|(a, b)| !shares_core(a, b))
            .or_else(|| pairs().next())
            .map(|(a, b)| (a.cpu, b.cpu, shares_core(a, b)))
    }

    /// The lowest-numbered CPU and the lowest-numbered CPU on another package, or `None` on
    /// one package.
    pub(crate) fn cross_package_pair(&self) -> Option<(u32, u32)> {
        let a = self.places.first()?;
        let b = self.places.iter().find(|b| b.package != a.package)?;
        Some((a.cpu, b.cpu))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> HostRoot {
        HostRoot::at(format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR")))
    }

    #[test]
    fn pairs_from_fixture_trees() {
        // (fixture, CPUs, packages, same-package pair, cross-package pair)
        type Row = (
            &'static str,
            Vec<u32>,
            usize,
            Option<(u32, u32, bool)>,
            Option<(u32, u32)>,
        );
        let rows: Vec<Row> = vec![
            // This host: two vCPUs shown as two cores of package 0.
            ("x86-kvm-6.18", vec![0, 1], 1, Some((0, 1, false)), None),
            // 2 packages x 2 cores x 2 threads, siblings n and n+4: 0 and 1 are cores of
            // package 0; 0 and 2 are on different packages.
            (
                "handmade/topology_2pkg_smt",
                (0..8).collect(),
                2,
                Some((0, 1, false)),
                Some((0, 2)),
            ),
            // Only the two threads of one core: the pair is kept and marked as siblings.
            (
                "handmade/topology_2pkg_smt",
                vec![4, 0],
                1,
                Some((0, 4, true)),
                None,
            ),
            // One CPU from each package: no same-package pair.
            (
                "handmade/topology_2pkg_smt",
                vec![1, 3],
                2,
                None,
                Some((1, 3)),
            ),
            // One CPU: nothing to bounce between.
            ("x86-kvm-6.18", vec![1], 1, None, None),
        ];
        for (dir, cpus, packages, local, remote) in rows {
            let t = CpuTopology::read(&fixture(dir), cpus.clone()).unwrap();
            assert_eq!(t.packages(), packages, "{dir} {cpus:?}");
            assert_eq!(t.same_package_pair(), local, "{dir} {cpus:?}");
            assert_eq!(t.cross_package_pair(), remote, "{dir} {cpus:?}");
        }
    }

    #[test]
    fn missing_or_bad_files_are_named() {
        let err = CpuTopology::read(&fixture("x86-kvm-6.18"), [0, 7])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "/sys/devices/system/cpu/cpu7/topology/physical_package_id: unreadable"
        );
        let dir = std::env::temp_dir().join(format!("ticklab-topology-{}", std::process::id()));
        let topo = dir.join("sys/devices/system/cpu/cpu0/topology");
        std::fs::create_dir_all(&topo).unwrap();
        std::fs::write(topo.join("physical_package_id"), "x\n").unwrap();
        let err = CpuTopology::read(&HostRoot::at(&dir), [0])
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"x\" is not a package number"), "{err}");
        std::fs::write(topo.join("physical_package_id"), "0\n").unwrap();
        std::fs::write(topo.join("thread_siblings_list"), "0-\n").unwrap();
        let err = CpuTopology::read(&HostRoot::at(&dir), [0])
            .unwrap_err()
            .to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("thread_siblings_list: \"0-\""), "{err}");
    }
}

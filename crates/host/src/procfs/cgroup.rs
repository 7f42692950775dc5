//! `/proc/self/cgroup` and the cgroup lines of `/proc/self/mountinfo`: which cgroup a process
//! is in, and where each hierarchy is mounted — what it takes to find the process's cpuset
//! (`cpuset.cpus.effective` on cgroup v2, `cpuset.effective_cpus` on v1).
//!
//! `/proc/<pid>/cgroup` has one line per hierarchy, `hierarchy-ID:controller-list:cgroup-path`
//! (cgroups(7)): `0::/user.slice/session-1.scope` is the unified (v2) hierarchy, whose
//! controller list is always empty; `3:cpuset:/` is a v1 hierarchy with the cpuset controller;
//! `9:name=systemd:/` a named v1 hierarchy without controllers. The path is relative to the
//! hierarchy's root.
//!
//! A mountinfo line is `id parent major:minor root mount-point options [optional...] -
//! fstype source super-options` (proc(5)); a cgroup hierarchy is `fstype` `cgroup2` (v2) or
//! `cgroup` (v1, its controllers among the super options). `root` is the cgroup the mount
//! shows at its mount point (`/` unless a container mounted only its own subtree).
//!
//! Pure parsers; [`crate::harness::placement`] reads the files and walks the cpuset tree.

/// One line of `/proc/self/cgroup`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupMembership {
    /// Hierarchy ID (0 for the unified v2 hierarchy).
    pub hierarchy: u32,
    /// Controllers bound to the hierarchy (`cpuset`, `cpu`, `name=systemd`); empty on v2.
    pub controllers: Vec<String>,
    /// The cgroup's path, relative to the hierarchy's root, starting with `/`.
    pub path: String,
}

impl CgroupMembership {
    /// Whether this is the unified (cgroup v2) hierarchy: ID 0 and no controller list.
    pub fn is_unified(&self) -> bool {
        self.hierarchy == 0 && self.controllers.is_empty()
    }

    /// Whether this v1 hierarchy has `controller` bound to it.
    pub fn has_controller(&self, controller: &str) -> bool {
        self.controllers.iter().any(|c| c == controller)
    }
}

/// A `/proc/self/cgroup` line that does not read as `ID:controllers:path`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "/proc/self/cgroup line {line}: expected `hierarchy-ID:controller-list:/path`, found {text:?}"
)]
pub struct CgroupError {
    /// 1-based line number.
    pub line: usize,
    /// The line as read.
    pub text: String,
}

/// Parses `/proc/<pid>/cgroup`. Blank lines are skipped; anything else must be
/// `ID:controllers:/path` (the path may itself contain `:`).
pub fn parse_proc_cgroup(text: &str) -> Result<Vec<CgroupMembership>, CgroupError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || CgroupError {
            line: i + 1,
            text: line.to_string(),
        };
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let hierarchy = id.parse::<u32>().map_err(|_| bad())?;
        if !path.starts_with('/') {
            return Err(bad());
        }
        out.push(CgroupMembership {
            hierarchy,
            controllers: controllers
                .split(',')
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect(),
            path: path.to_string(),
        });
    }
    Ok(out)
}

/// A mounted cgroup hierarchy, from `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupMount {
    /// Where it is mounted (`/sys/fs/cgroup`, `/sys/fs/cgroup/cpuset`).
    pub mount_point: String,
    /// The cgroup shown at the mount point (`/` unless only a subtree is mounted).
    pub root: String,
    /// `None` for cgroup v2; the v1 controllers (super options that name one) otherwise.
    pub v1_controllers: Option<Vec<String>>,
}

/// Super options of a v1 cgroup mount that are not controllers.
const V1_MOUNT_OPTIONS: [&str; 7] = [
    "rw",
    "ro",
    "noprefix",
    "clone_children",
    "xattr",
    "cpuset_v2_mode",
    "favordynmods",
];

/// The cgroup hierarchies in `/proc/<pid>/mountinfo`, in file order. Lines that are not cgroup
/// mounts, or that do not parse, are skipped (mountinfo is only a guide to where to look).
pub fn parse_cgroup_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        let Some((before, after)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = before.split_whitespace().collect();
        let mut tail = after.split_whitespace();
        let (Some(fstype), _source, super_options) = (tail.next(), tail.next(), tail.next()) else {
            continue;
        };
        if fields.len() < 5 {
            continue;
        }
        let v1_controllers = match fstype {
            "cgroup2" => None,
            "cgroup" => Some(
                super_options
                    .unwrap_or("")
                    .split(',')
                    .filter(|o| {
                        !o.is_empty()
                            && !V1_MOUNT_OPTIONS.contains(o)
                            && !o.starts_with("release_agent=")
                    })
                    .map(str::to_string)
                    .collect(),
            ),
            _ => continue,
        };
        out.push(CgroupMount {
            mount_point: unescape_octal(fields[4]),
            root: unescape_octal(fields[3]),
            v1_controllers,
        });
    }
    out
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_cgroup_v1_hybrid_and_v2() {
        let hybrid =
            "9:name=systemd:/\n4:memory:/process_api/ebee\n3:cpuset:/\n2:cpu,cpuacct:/a:b\n0::/\n";
        let m = parse_proc_cgroup(hybrid).unwrap();
        assert_eq!(m.len(), 5);
        assert_eq!(m[0].controllers, ["name=systemd"]);
        assert!(m[2].has_controller("cpuset") && !m[2].is_unified());
        assert_eq!(m[3].controllers, ["cpu", "cpuacct"]);
        assert_eq!(m[3].path, "/a:b", "the path may contain ':'");
        assert!(m[4].is_unified());
        let v2 = parse_proc_cgroup("0::/user.slice/user-0.slice/session-1.scope\n").unwrap();
        assert_eq!(v2[0].path, "/user.slice/user-0.slice/session-1.scope");
    }

    #[test]
    fn proc_cgroup_refusals_name_the_line() {
        for bad in ["0:/", "x::/", "0::relative", "3:cpuset"] {
            let e = parse_proc_cgroup(&format!("0::/\n{bad}\n")).unwrap_err();
            assert_eq!(e.line, 2, "{bad}");
            assert!(e.to_string().contains("hierarchy-ID"), "{e}");
        }
        assert_eq!(parse_proc_cgroup("\n").unwrap(), vec![]);
    }

    #[test]
    fn mountinfo_cgroup_lines() {
        let text = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/cpu,cpuacct rw shared:7 - cgroup cgroup rw,cpu,cpuacct
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,release_agent=/x,name=systemd
41 31 0:38 /kubepods/pod1 /sys/fs/cgroup/my\\040tree rw,relatime - cgroup2 cgroup2 rw,nsdelegate
bad line
";
        let m = parse_cgroup_mounts(text);
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].mount_point, "/sys/fs/cgroup/cpuset");
        assert_eq!(
            m[0].v1_controllers.as_deref(),
            Some(&["cpuset".to_string()][..])
        );
        assert_eq!(
            m[1].v1_controllers.as_deref(),
            Some(&["cpu".to_string(), "cpuacct".to_string()][..])
        );
        assert_eq!(
            m[2].v1_controllers.as_deref(),
            Some(&["name=systemd".to_string()][..])
        );
        assert_eq!(m[3].v1_controllers, None);
        assert_eq!(m[3].root, "/kubepods/pod1");
        assert_eq!(m[3].mount_point, "/sys/fs/cgroup/my tree");
    }
}

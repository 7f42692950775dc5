//! The guest kernel: its image and the build options the tick depends on, read from its
//! config file (`/boot/config-<release>`, the file Debian and most distributions install
//! beside `/boot/vmlinuz-<release>`).
//!
//! [`KernelConfig::parse`] reads `CONFIG_HZ`, the tick build choice (`CONFIG_HZ_PERIODIC`,
//! `CONFIG_NO_HZ_IDLE`, `CONFIG_NO_HZ_FULL`), `CONFIG_HIGH_RES_TIMERS` and
//! `CONFIG_RCU_FANOUT_LEAF`, and the version from the header line
//! (`# Linux/x86 6.1.192 Kernel Configuration`). [`GuestKernel::find`] pairs an image with
//! its config; [`GuestKernel::default_installed`] picks the newest `/boot/vmlinuz-*`.

use std::path::{Path, PathBuf};
use ticklab_cmdline::{KernelBuild, NohzBuild};
use ticklab_schema::scenario::{Kernel, check_hz};

/// The tick-relevant options of a kernel build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelConfig {
    /// Version from the header, as written (`6.1.192`).
    pub version: String,
    /// `(major, minor)`.
    pub version_tuple: (u32, u32),
    /// `CONFIG_HZ`.
    pub hz: u32,
    /// Tick build choice.
    pub nohz: NohzBuild,
    /// `CONFIG_HIGH_RES_TIMERS`.
    pub high_res: bool,
    /// `CONFIG_RCU_FANOUT_LEAF`, when set.
    pub rcu_fanout_leaf: Option<u32>,
    /// Which of the kernel's own periodic timers the build has.
    pub timers: BuiltTimers,
}

/// The kernel's own periodic timers that exist only when their option is built in: a
/// distribution kernel has them all, a trimmed guest kernel (`ticklab vm build` over
/// tinyconfig) only the watchdog. The twin of the guest arms only those the build has
/// ([`crate::twin_guest::guest_background`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BuiltTimers {
    /// `CONFIG_SOFTLOCKUP_DETECTOR`: the per-CPU `watchdog_timer_fn` hrtimer.
    pub softlockup: bool,
    /// `CONFIG_COMPACTION`: kcompactd's proactive-compaction sleep.
    pub compaction: bool,
    /// `CONFIG_PSI` without `CONFIG_PSI_DEFAULT_DISABLED`: `psi_avgs_work`.
    pub psi: bool,
    /// `CONFIG_MEMCG`: `flush_memcg_stats_dwork`.
    pub memcg: bool,
    /// `CONFIG_INET`: the ARP table's `neigh_managed_work`.
    pub inet: bool,
    /// `CONFIG_IPV6` (built in or a module: Debian's initramfs-less guest never loads
    /// modules, so only `=y` counts): the NDISC table's `neigh_managed_work`.
    pub ipv6: bool,
}

impl KernelConfig {
    /// Reads a config file's text; `origin` names it in errors. `CONFIG_HZ` and the version
    /// header are required; the tick choice defaults to periodic when neither NO_HZ option is
    /// set (as Kconfig does).
    pub fn parse(text: &str, origin: &str) -> Result<KernelConfig, String> {
        let mut version = None;
        let mut hz = None;
        let mut idle = false;
        let mut full = false;
        let mut high_res = false;
        let mut fanout_leaf = None;
        let mut timers = BuiltTimers::default();
        let mut psi_default_off = false;
        for line in text.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("# Linux/") {
                // `x86 6.1.192 Kernel Configuration`
                version = rest.split_whitespace().nth(1).map(str::to_string);
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            match key {
                "CONFIG_HZ" => {
                    let n: u32 = value
                        .parse()
                        .map_err(|_| format!("{origin}: CONFIG_HZ={value}: not a number"))?;
                    hz = Some(check_hz(n).map_err(|e| format!("{origin}: CONFIG_HZ={e}"))?);
                }
                "CONFIG_NO_HZ_IDLE" => idle = value == "y",
                "CONFIG_NO_HZ_FULL" => full = value == "y",
                "CONFIG_HIGH_RES_TIMERS" => high_res = value == "y",
                "CONFIG_RCU_FANOUT_LEAF" => fanout_leaf = value.parse().ok(),
                "CONFIG_SOFTLOCKUP_DETECTOR" => timers.softlockup = value == "y",
                "CONFIG_COMPACTION" => timers.compaction = value == "y",
                "CONFIG_PSI" => timers.psi = value == "y",
                "CONFIG_PSI_DEFAULT_DISABLED" => psi_default_off = value == "y",
                "CONFIG_MEMCG" => timers.memcg = value == "y",
                "CONFIG_INET" => timers.inet = value == "y",
                "CONFIG_IPV6" => timers.ipv6 = value == "y",
                _ => {}
            }
        }
        let version = version.ok_or_else(|| {
            format!("{origin}: no '# Linux/<arch> <version> Kernel Configuration' header")
        })?;
        let mut parts = version.split(['.', '-']);
        let major = parts.next().and_then(|s| s.parse().ok());
        let minor = parts.next().and_then(|s| s.parse().ok());
        let (Some(major), Some(minor)) = (major, minor) else {
            return Err(format!(
                "{origin}: version {version:?}: expected MAJOR.MINOR[.PATCH]"
            ));
        };
        let hz = hz.ok_or_else(|| format!("{origin}: no CONFIG_HZ line"))?;
        let nohz = if full {
            NohzBuild::Full
        } else if idle {
            NohzBuild::Idle
        } else {
            NohzBuild::Periodic
        };
        Ok(KernelConfig {
            version,
            version_tuple: (major, minor),
            hz,
            nohz,
            high_res,
            rcu_fanout_leaf: fanout_leaf,
            timers: BuiltTimers {
                psi: timers.psi && !psi_default_off,
                ..timers
            },
        })
    }

    /// The build as the boot-line resolver takes it.
    pub fn build(&self) -> KernelBuild {
        KernelBuild {
            nohz: self.nohz,
            high_res: self.high_res,
            version: self.version_tuple,
            skew_tick_backport: false,
        }
    }

    /// The twin's kernel for this build and boot line.
    pub fn twin_kernel(&self, cmdline: &str) -> Kernel {
        Kernel {
            // The full release (`6.1.192`): stable series took idle-loop rules late.
            version: self.version.clone(),
            hz: self.hz,
            nohz: self.nohz,
            high_res: self.high_res,
            cmdline: cmdline.to_string(),
            rcu_fanout_leaf: self.rcu_fanout_leaf,
            skew_tick_backport: false,
        }
    }
}

/// A bootable kernel image and its build options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestKernel {
    /// The image (`bzImage`).
    pub image: PathBuf,
    /// The config file read.
    pub config_path: PathBuf,
    /// Its options.
    pub config: KernelConfig,
}

impl GuestKernel {
    /// The image at `image` with its config: `config` if given, else `config-<release>`
    /// beside a `vmlinuz-<release>` image.
    pub fn find(image: &Path, config: Option<&Path>) -> Result<GuestKernel, String> {
        if !image.is_file() {
            return Err(format!(
                "--kernel {}: no such file (expected a kernel image; scripts/setup.sh installs one)",
                image.display()
            ));
        }
        let config_path = match config {
            Some(c) => c.to_path_buf(),
            None => {
                let name = image.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let release = name.strip_prefix("vmlinuz-").ok_or_else(|| {
                    format!(
                        "--kernel {}: cannot guess its config (name is not vmlinuz-<release>); give --kernel-config",
                        image.display()
                    )
                })?;
                image.with_file_name(format!("config-{release}"))
            }
        };
        let text = std::fs::read_to_string(&config_path)
            .map_err(|e| format!("kernel config {}: cannot read: {e}", config_path.display()))?;
        let config = KernelConfig::parse(&text, &config_path.display().to_string())?;
        Ok(GuestKernel {
            image: image.to_path_buf(),
            config_path,
            config,
        })
    }

    /// The newest `vmlinuz-*` in `boot` (by version order of the release strings).
    pub fn default_installed(boot: &Path) -> Result<GuestKernel, String> {
        let entries = std::fs::read_dir(boot).map_err(|e| {
            format!(
                "{}: cannot list: {e} (run scripts/setup.sh, or give --kernel)",
                boot.display()
            )
        })?;
        let mut images: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("vmlinuz-"))
            })
            .collect();
        images.sort_by_key(|p| release_key(&p.to_string_lossy()));
        let image = images.pop().ok_or_else(|| {
            format!(
                "{}: no vmlinuz-* kernel (run scripts/setup.sh, or give --kernel)",
                boot.display()
            )
        })?;
        GuestKernel::find(&image, None)
    }
}

/// Sort key of a release string: its numbers in order (`6.1.0-57` → [6, 1, 0, 57]).
fn release_key(s: &str) -> Vec<u64> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN_6_1: &str = "#\n# Automatically generated file; DO NOT EDIT.\n\
        # Linux/x86 6.1.192 Kernel Configuration\n#\nCONFIG_NO_HZ_COMMON=y\n\
        # CONFIG_HZ_PERIODIC is not set\n# CONFIG_NO_HZ_IDLE is not set\nCONFIG_NO_HZ_FULL=y\n\
        CONFIG_HIGH_RES_TIMERS=y\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n";

    #[test]
    fn debian_config_reads() {
        let c = KernelConfig::parse(DEBIAN_6_1, "config").unwrap();
        assert_eq!(c.version, "6.1.192");
        assert_eq!(c.version_tuple, (6, 1));
        assert_eq!(c.hz, 250);
        assert_eq!(c.nohz, NohzBuild::Full);
        assert!(c.high_res);
        assert_eq!(c.rcu_fanout_leaf, None);
        assert_eq!(c.timers, BuiltTimers::default());
        let k = c.twin_kernel("nohz_full=1");
        assert_eq!(
            (k.version.as_str(), k.hz, k.cmdline.as_str()),
            ("6.1.192", 250, "nohz_full=1")
        );
    }

    #[test]
    fn tick_choice_and_errors_table() {
        let head = "# Linux/x86 5.10.0 Kernel Configuration\nCONFIG_HZ=1000\n";
        // (extra lines, expected build or error substring)
        let cases: [(&str, Result<NohzBuild, &str>); 5] = [
            ("", Ok(NohzBuild::Periodic)),
            ("CONFIG_NO_HZ_IDLE=y\n", Ok(NohzBuild::Idle)),
            ("CONFIG_NO_HZ_FULL=y\n", Ok(NohzBuild::Full)),
            ("CONFIG_HZ=123\n", Err("CONFIG_HZ=123")),
            ("CONFIG_HZ=x\n", Err("not a number")),
        ];
        for (extra, want) in cases {
            let got = KernelConfig::parse(&format!("{head}{extra}"), "f").map(|c| c.nohz);
            match want {
                Ok(b) => assert_eq!(got, Ok(b), "{extra}"),
                Err(s) => assert!(got.unwrap_err().contains(s), "{extra}"),
            }
        }
        assert!(
            KernelConfig::parse("CONFIG_HZ=250\n", "f")
                .unwrap_err()
                .contains("header")
        );
        assert!(
            KernelConfig::parse("# Linux/x86 6.1 Kernel Configuration\n", "f")
                .unwrap_err()
                .contains("CONFIG_HZ")
        );
    }

    #[test]
    fn built_timers_table() {
        let head = "# Linux/x86 6.1.192 Kernel Configuration\nCONFIG_HZ=250\n";
        let all = BuiltTimers {
            softlockup: true,
            compaction: true,
            psi: true,
            memcg: true,
            inet: true,
            ipv6: true,
        };
        // (extra lines, expected)
        let cases: [(&str, BuiltTimers); 5] = [
            ("", BuiltTimers::default()),
            (
                "CONFIG_SOFTLOCKUP_DETECTOR=y\nCONFIG_COMPACTION=y\nCONFIG_PSI=y\n\
                 # CONFIG_PSI_DEFAULT_DISABLED is not set\nCONFIG_MEMCG=y\nCONFIG_INET=y\nCONFIG_IPV6=y\n",
                all,
            ),
            (
                "CONFIG_PSI=y\nCONFIG_PSI_DEFAULT_DISABLED=y\n",
                BuiltTimers::default(),
            ),
            (
                "CONFIG_SOFTLOCKUP_DETECTOR=y\n# CONFIG_COMPACTION is not set\n",
                BuiltTimers {
                    softlockup: true,
                    ..BuiltTimers::default()
                },
            ),
            (
                "CONFIG_INET=y\nCONFIG_IPV6=m\n",
                BuiltTimers {
                    inet: true,
                    ..BuiltTimers::default()
                },
            ),
        ];
        for (extra, want) in cases {
            let c = KernelConfig::parse(&format!("{head}{extra}"), "f").unwrap();
            assert_eq!(c.timers, want, "{extra}");
        }
    }

    #[test]
    fn newest_release_sorts_last() {
        let mut v = [
            "vmlinuz-6.1.0-9-amd64",
            "vmlinuz-6.1.0-57-amd64",
            "vmlinuz-5.10.0-30-amd64",
        ];
        v.sort_by_key(|s| release_key(s));
        assert_eq!(v.last(), Some(&"vmlinuz-6.1.0-57-amd64"));
    }
}

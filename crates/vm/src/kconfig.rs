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

/// Why a config file's text is not a usable kernel config; each names the file (`origin`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KconfigError {
    /// A line that no kernel config holds: the file is not a kernel config.
    #[error(
        "{origin}:{line}: {text:?} is not a kernel config line (CONFIG_NAME=VALUE, or a comment); is this a kernel config?"
    )]
    NotAConfigLine {
        /// The file.
        origin: String,
        /// The line number, from 1.
        line: usize,
        /// The line's first 60 characters.
        text: String,
    },
    /// `CONFIG_HZ` is not a number.
    #[error("{origin}: CONFIG_HZ={value}: not a number")]
    HzNotANumber {
        /// The file.
        origin: String,
        /// The value as written.
        value: String,
    },
    /// `CONFIG_HZ` is a number no kernel is built with.
    #[error("{origin}: CONFIG_HZ={why}")]
    Hz {
        /// The file.
        origin: String,
        /// The check's answer (`123: expected one of ...`).
        why: ticklab_schema::scenario::HzError,
    },
    /// No version header.
    #[error("{origin}: no '# Linux/<arch> <version> Kernel Configuration' header")]
    NoHeader {
        /// The file.
        origin: String,
    },
    /// The header's version is not `MAJOR.MINOR[.PATCH]`.
    #[error("{origin}: version {version:?}: expected MAJOR.MINOR[.PATCH]")]
    Version {
        /// The file.
        origin: String,
        /// The version as written.
        version: String,
    },
    /// No `CONFIG_HZ` line.
    #[error("{origin}: no CONFIG_HZ line")]
    NoHz {
        /// The file.
        origin: String,
    },
}

/// Why no guest kernel was found. Every variant is the user's input (a path given or the
/// `/boot` the default reads): exit code 2 in the CLI.
#[derive(Debug, thiserror::Error)]
pub enum GuestKernelError {
    /// `--kernel` names no file.
    #[error(
        "--kernel {}: no such file (expected a kernel image; scripts/setup.sh installs one)",
        .0.display()
    )]
    NoImage(PathBuf),
    /// The image's name gives no config name.
    #[error(
        "--kernel {}: cannot guess its config (name is not vmlinuz-<release>); give --kernel-config",
        .0.display()
    )]
    NoConfigName(PathBuf),
    /// The config file cannot be read.
    #[error("kernel config {}: cannot read: {error}", path.display())]
    ReadConfig {
        /// The config file.
        path: PathBuf,
        /// The read error (part of the message).
        error: std::io::Error,
    },
    /// The config file does not parse.
    #[error(transparent)]
    Config(#[from] KconfigError),
    /// The boot directory cannot be listed.
    #[error("{}: cannot list: {error} (run scripts/setup.sh, or give --kernel)", boot.display())]
    ListBoot {
        /// The directory.
        boot: PathBuf,
        /// The error (part of the message).
        error: std::io::Error,
    },
    /// The boot directory holds no `vmlinuz-*`.
    #[error("{}: no vmlinuz-* kernel (run scripts/setup.sh, or give --kernel)", .0.display())]
    NoneInstalled(PathBuf),
    /// `--kernel` is not an x86 kernel image (no boot header), or cannot be read.
    #[error(transparent)]
    NotAKernel(#[from] BzImageError),
    /// The config file is not a kernel config: too large to be one, or not UTF-8.
    #[error("kernel config {}: {source}", path.display())]
    NotAConfig {
        /// The config file.
        path: PathBuf,
        /// What the reader found.
        #[source]
        source: ticklab_schema::lines::LinesError,
    },
}

/// What an x86 kernel image (`bzImage`, such as `/boot/vmlinuz-*`) is expected to be.
const EXPECTED_BZIMAGE: &str = "expected an x86 kernel image (bzImage, such as /boot/vmlinuz-*)";

/// Why `--kernel` is not an x86 kernel image ([`check_bzimage`]); each names the file.
#[derive(Debug, thiserror::Error)]
pub enum BzImageError {
    /// Shorter than the boot sector and the setup header's signature.
    #[error("--kernel {}: too short for a kernel image; {}", .0.display(), EXPECTED_BZIMAGE)]
    TooShort(PathBuf),
    /// The file cannot be opened or read.
    #[error("--kernel {}: cannot read: {source}; {}", image.display(), EXPECTED_BZIMAGE)]
    Unreadable {
        /// The image.
        image: PathBuf,
        /// The read error.
        #[source]
        source: std::io::Error,
    },
    /// No `HdrS` signature where the boot protocol puts it.
    #[error("--kernel {}: no boot protocol header (HdrS); {}", .0.display(), EXPECTED_BZIMAGE)]
    NoHeader(PathBuf),
}

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
    /// `CONFIG_PREEMPT_RT`: softirqs run in their per-CPU threads.
    pub preempt_rt: bool,
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
    pub fn parse(text: &str, origin: &str) -> Result<KernelConfig, KconfigError> {
        let mut version = None;
        let mut hz = None;
        let mut idle = false;
        let mut full = false;
        let mut high_res = false;
        let mut fanout_leaf = None;
        let mut timers = BuiltTimers::default();
        let mut psi_default_off = false;
        let mut preempt_rt = false;
        for (n, line) in text.lines().map(str::trim).enumerate() {
            if !is_config_line(line) {
                return Err(KconfigError::NotAConfigLine {
                    origin: origin.to_string(),
                    line: n + 1,
                    text: line.chars().take(60).collect(),
                });
            }
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
                    let n: u32 = value.parse().map_err(|_| KconfigError::HzNotANumber {
                        origin: origin.to_string(),
                        value: value.to_string(),
                    })?;
                    hz = Some(check_hz(n).map_err(|why| KconfigError::Hz {
                        origin: origin.to_string(),
                        why,
                    })?);
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
                "CONFIG_PREEMPT_RT" => preempt_rt = value == "y",
                _ => {}
            }
        }
        let version = version.ok_or_else(|| KconfigError::NoHeader {
            origin: origin.to_string(),
        })?;
        let mut parts = version.split(['.', '-']);
        let major = parts.next().and_then(|s| s.parse().ok());
        let minor = parts.next().and_then(|s| s.parse().ok());
        let (Some(major), Some(minor)) = (major, minor) else {
            return Err(KconfigError::Version {
                origin: origin.to_string(),
                version,
            });
        };
        let hz = hz.ok_or_else(|| KconfigError::NoHz {
            origin: origin.to_string(),
        })?;
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
            preempt_rt,
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
            spinlock: None,
            cpu_dma_latency_us: None,
            preempt_rt: self.preempt_rt,
        }
    }
}

/// Whether `line` (trimmed) can be a line of a kernel config: empty, a comment, or
/// `CONFIG_NAME=VALUE` with a name of letters, digits and underscores.
fn is_config_line(line: &str) -> bool {
    if line.is_empty() || line.starts_with('#') {
        return true;
    }
    line.split_once('=').is_some_and(|(k, _)| {
        k.strip_prefix("CONFIG_").is_some_and(|name| {
            !name.is_empty()
                && name.bytes().all(|b| {
                    b.is_ascii_uppercase()
                        || b.is_ascii_digit()
                        || b == b'_'
                        || b.is_ascii_lowercase()
                })
        })
    })
}

/// Largest kernel config read (bytes): a distribution's `.config` is about 300 KiB.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// Offset of the boot protocol's header signature in an x86 kernel image (the setup header
/// follows the boot sector; docs/vm.md).
const BZIMAGE_MAGIC_AT: usize = 0x202;

/// The boot protocol's header signature: the bytes `HdrS`.
const BZIMAGE_MAGIC: &[u8; 4] = b"HdrS";

/// Refuses a file that is not an x86 kernel image (a `bzImage`: the setup header's `HdrS`
/// signature at offset `BZIMAGE_MAGIC_AT`), before QEMU is started on it.
pub fn check_bzimage(image: &Path) -> Result<(), BzImageError> {
    use std::io::Read;
    let mut head = [0u8; BZIMAGE_MAGIC_AT + 4];
    let read = std::fs::File::open(image).and_then(|mut f| f.read_exact(&mut head));
    match read {
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Err(BzImageError::TooShort(image.to_path_buf()))
        }
        Err(source) => Err(BzImageError::Unreadable {
            image: image.to_path_buf(),
            source,
        }),
        Ok(()) if &head[BZIMAGE_MAGIC_AT..] != BZIMAGE_MAGIC => {
            Err(BzImageError::NoHeader(image.to_path_buf()))
        }
        Ok(()) => Ok(()),
    }
}

/// Reads a kernel config file (at most [`MAX_CONFIG_BYTES`], UTF-8).
fn read_config(path: &Path) -> Result<String, GuestKernelError> {
    let f = std::fs::File::open(path).map_err(|error| GuestKernelError::ReadConfig {
        path: path.to_path_buf(),
        error,
    })?;
    ticklab_schema::lines::read_text(f, MAX_CONFIG_BYTES).map_err(|source| {
        GuestKernelError::NotAConfig {
            path: path.to_path_buf(),
            source,
        }
    })
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
    pub fn find(image: &Path, config: Option<&Path>) -> Result<GuestKernel, GuestKernelError> {
        if !image.is_file() {
            return Err(GuestKernelError::NoImage(image.to_path_buf()));
        }
        let config_path = match config {
            Some(c) => c.to_path_buf(),
            None => {
                let name = image.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let release = name
                    .strip_prefix("vmlinuz-")
                    .ok_or_else(|| GuestKernelError::NoConfigName(image.to_path_buf()))?;
                image.with_file_name(format!("config-{release}"))
            }
        };
        check_bzimage(image)?;
        let text = read_config(&config_path)?;
        let config = KernelConfig::parse(&text, &config_path.display().to_string())?;
        Ok(GuestKernel {
            image: image.to_path_buf(),
            config_path,
            config,
        })
    }

    /// The newest standard `vmlinuz-*` in `boot` (by version order of the release strings); a
    /// PREEMPT_RT build only when there is no other.
    pub fn default_installed(boot: &Path) -> Result<GuestKernel, GuestKernelError> {
        let entries = std::fs::read_dir(boot).map_err(|error| GuestKernelError::ListBoot {
            boot: boot.to_path_buf(),
            error,
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
        // The newest standard build, a PREEMPT_RT one (`vmlinuz-6.1.0-57-rt-amd64`, which
        // setup.sh installs beside `vmlinuz-6.1.0-57-amd64` for the noise probe's peer; the
        // two have the same release numbers) only when there is no other: `--kernel` picks it.
        // Then by name, so the choice does not depend on the directory's order.
        images.sort_by_key(|p| {
            let name = p.to_string_lossy().into_owned();
            let standard = !name.contains("-rt-");
            (standard, release_key(&name), std::cmp::Reverse(name))
        });
        let image = images
            .pop()
            .ok_or_else(|| GuestKernelError::NoneInstalled(boot.to_path_buf()))?;
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
    fn the_default_kernel_is_the_standard_build_beside_an_rt_one() {
        let dir = std::env::temp_dir().join(format!("ticklab-boot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut image = vec![0u8; 0x400];
        image[BZIMAGE_MAGIC_AT..BZIMAGE_MAGIC_AT + 4].copy_from_slice(BZIMAGE_MAGIC);
        for release in ["6.1.0-57-rt-amd64", "6.1.0-57-amd64", "6.1.0-9-amd64"] {
            std::fs::write(dir.join(format!("vmlinuz-{release}")), &image).unwrap();
            std::fs::write(dir.join(format!("config-{release}")), DEBIAN_6_1).unwrap();
        }
        let k = GuestKernel::default_installed(&dir).unwrap();
        assert!(
            k.image.ends_with("vmlinuz-6.1.0-57-amd64"),
            "{}",
            k.image.display()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
                Err(s) => assert!(got.unwrap_err().to_string().contains(s), "{extra}"),
            }
        }
        assert!(
            KernelConfig::parse("CONFIG_HZ=250\n", "f")
                .unwrap_err()
                .to_string()
                .contains("header")
        );
        assert!(
            KernelConfig::parse("# Linux/x86 6.1 Kernel Configuration\n", "f")
                .unwrap_err()
                .to_string()
                .contains("CONFIG_HZ")
        );
    }

    #[test]
    fn what_is_not_a_kernel_config_or_image_is_refused() {
        for text in [
            "hello world\n",
            "\u{7f}ELF\n",
            "[run]\nduration = \"1s\"\n",
            "hz=250\n",
        ] {
            let e = KernelConfig::parse(
                &format!("# Linux/x86 6.1 Kernel Configuration\n{text}CONFIG_HZ=250\n"),
                "f",
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains("not a kernel config line"), "{text:?}: {e}");
        }
        let dir = std::env::temp_dir().join(format!("ticklab-bzimage-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (short, plain, good) = (dir.join("short"), dir.join("plain"), dir.join("good"));
        std::fs::write(&short, b"MZ").unwrap();
        std::fs::write(&plain, vec![0u8; 4096]).unwrap();
        let mut image = vec![0u8; 4096];
        image[BZIMAGE_MAGIC_AT..BZIMAGE_MAGIC_AT + 4].copy_from_slice(BZIMAGE_MAGIC);
        std::fs::write(&good, image).unwrap();
        let e = check_bzimage(&short).unwrap_err().to_string();
        assert!(
            e.contains("too short") && e.ends_with("/boot/vmlinuz-*)"),
            "{e}"
        );
        assert!(
            check_bzimage(&plain)
                .unwrap_err()
                .to_string()
                .contains("HdrS")
        );
        assert!(check_bzimage(&good).is_ok());
        std::fs::remove_dir_all(dir).unwrap();
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
    fn preempt_rt_is_read_from_the_config_and_reaches_the_twin() {
        let head = "# Linux/x86 6.1.192 Kernel Configuration\nCONFIG_HZ=250\n";
        // (extra lines, PREEMPT_RT)
        for (extra, want) in [
            ("", false),
            ("CONFIG_PREEMPT_RT=y\n", true),
            ("# CONFIG_PREEMPT_RT is not set\nCONFIG_PREEMPT=y\n", false),
        ] {
            let c = KernelConfig::parse(&format!("{head}{extra}"), "f").unwrap();
            assert_eq!(c.preempt_rt, want, "{extra}");
            assert_eq!(c.twin_kernel("").preempt_rt, want, "{extra}");
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

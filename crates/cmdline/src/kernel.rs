//! One boot line resolved once, for one kernel: [`Kernel::resolve`].
//!
//! Every place that asks what a boot line means (the twin's setup and its guest model, the
//! twin of a VM guest, `host inspect`, the CLI's input check, a sweep's points, scenario
//! validation) calls [`Kernel::resolve`]: the line is read with the cpulist grammar and the
//! parameter handlers of the kernel's release ([`KernelCmdline::parse_for_kernel`]), then
//! resolved against the build ([`TickConfig::resolve`]). One grammar policy, chosen by the
//! version, and one list of messages.

use crate::messages::BootMessage;
use crate::params::KernelCmdline;
use crate::parse::CmdlineError;
use crate::tick_config::{KernelBuild, TickConfig};

/// A kernel as its boot line sees it: the build and the number of possible CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    /// The build (its version picks the grammar and the handlers' rules).
    pub build: KernelBuild,
    /// Possible CPUs.
    pub nr_cpus: u32,
}

/// A boot line as one kernel reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedKernel {
    /// The typed parameters (unknown ones kept as written).
    pub cmdline: KernelCmdline,
    /// The effective tick configuration.
    pub config: TickConfig,
    /// What the boot prints, in boot order, with ticklab's notes last.
    pub messages: Vec<BootMessage>,
}

impl Kernel {
    /// Reads `line` as this kernel's release does and resolves it against the build, the
    /// boot CPU being CPU 0. Err: a known parameter the release refuses, naming the token.
    pub fn resolve(&self, line: &str) -> Result<ResolvedKernel, CmdlineError> {
        let cmdline = KernelCmdline::parse_for_kernel(line, self.nr_cpus, self.build.version)?;
        let (config, messages) = TickConfig::resolve(&cmdline, &self.build, self.nr_cpus, 0);
        Ok(ResolvedKernel {
            cmdline,
            config,
            messages,
        })
    }
}

impl ResolvedKernel {
    /// Unknown parameters that look like a known one: `(as written, the known name)`.
    pub fn near_misses(&self) -> Vec<(String, &'static str)> {
        self.cmdline.near_misses()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tick_config::NohzBuild;

    fn kernel(version: (u32, u32)) -> Kernel {
        Kernel {
            build: KernelBuild {
                nohz: NohzBuild::Full,
                high_res: true,
                version,
                skew_tick_backport: false,
            },
            nr_cpus: 8,
        }
    }

    #[test]
    fn the_release_picks_the_grammar() {
        // `N` (the last CPU) arrived in 5.12: refused before, read after.
        assert!(kernel((5, 10)).resolve("nohz_full=1-N").is_err());
        let r = kernel((6, 1))
            .resolve("nohz_full=1-N")
            .expect("6.1 reads N");
        assert_eq!(r.config.nohz_full.to_cpulist(), "1-7");
        assert_eq!(
            r.messages.last().map(|m| m.text.as_str()),
            Some("NO_HZ: Full dynticks CPUs: 1-7.")
        );
    }

    #[test]
    fn near_misses_come_from_the_one_parse() {
        let r = kernel((6, 1))
            .resolve("nohz_ful=1-3")
            .expect("unknown is kept");
        assert_eq!(
            r.near_misses(),
            vec![("nohz_ful=1-3".to_string(), "nohz_full")]
        );
        assert!(r.config.nohz_full.is_empty());
    }
}

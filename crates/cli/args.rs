//! Argument types shared by the subcommands, each with the one parser that reads it:
//! durations ([`DurationArg`]), `CONFIG_HZ` ([`hz_parser`]), machine presets
//! ([`MachineParser`]), the tick build ([`NohzArg`]) and the built-in experiments
//! ([`Experiment`]).
//!
//! A value clap rejects is a usage error: clap prints it naming the flag and the value and
//! exits with code 2, like every other input error of the binary.

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Arg, Command, ValueEnum};
use std::ffi::OsStr;
use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::{self, Machine};
use ticklab_schema::scenario::{CONFIG_HZ_CHOICES, check_hz};
use ticklab_schema::units::{DurationError, parse_cli_duration};

/// A duration given on the command line (`10s`, `500ms`, `250us`, `2m`, `1h`, `1h30m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DurationArg {
    ns: u64,
}

impl DurationArg {
    /// Nanoseconds (at least 1).
    pub(crate) fn ns(self) -> u64 {
        self.ns
    }

    /// As a [`std::time::Duration`].
    pub(crate) fn as_std(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.ns)
    }
}

/// The `value_parser` of every duration flag: [`ticklab_schema::units::parse_cli_duration`],
/// the project's one duration parser with a bare number read as seconds (`-D 10`, as
/// cyclictest and rtla read it); more than zero, at most a week.
pub(crate) fn parse_duration_arg(s: &str) -> Result<DurationArg, DurationError> {
    parse_cli_duration(s).map(|ns| DurationArg { ns })
}

/// The `value_parser` of `--warmup`: a duration that may be `0s` (or `0`).
pub(crate) fn parse_warmup_arg(s: &str) -> Result<DurationArg, DurationError> {
    ticklab_schema::units::parse_cli_warmup(s).map(|ns| DurationArg { ns })
}

/// The `value_parser` of `--histogram`: a bucket count, checked by
/// [`ticklab_schema::histogram::check_histogram_us`].
pub(crate) fn histogram_parser() -> impl TypedValueParser<Value = u32> {
    clap::value_parser!(u32).try_map(ticklab_schema::histogram::check_histogram_us)
}

/// The help of `--histogram` (both `sim` and `host run`).
pub(crate) const HISTOGRAM_HELP: &str = "Keep per-CPU histograms of frame jitter and wake-up latency, 1 us buckets up to MAX_US (default 1000), printed in the layout of cyclictest -h and kept in the JSON";

/// `--histogram` needs a frame group: an input error otherwise.
pub(crate) fn check_histogram_workload(
    histogram: Option<u32>,
    workload: &ticklab_schema::workload::Workload,
) -> Result<(), String> {
    let has_frames = workload
        .groups
        .iter()
        .any(|g| matches!(g, ticklab_schema::workload::TaskGroup::Frames { .. }));
    if histogram.is_some() && !has_frames {
        return Err(format!(
            "--histogram: workload {} has no frame group (histograms are of frame jitter and wake-up latency)",
            workload.label()
        ));
    }
    if let Some(max_us) = histogram {
        let workers: usize = workload
            .groups
            .iter()
            .map(|g| match g {
                ticklab_schema::workload::TaskGroup::Frames { cpus, .. } => cpus.len(),
                _ => 0,
            })
            .sum();
        ticklab_schema::histogram::check_histogram_total(max_us, workers)
            .map_err(|e| format!("--histogram={max_us}: {e}"))?;
    }
    Ok(())
}

/// The `value_parser` of `--hz`: a number, then [`check_hz`] against [`CONFIG_HZ_CHOICES`].
pub(crate) fn hz_parser() -> impl TypedValueParser<Value = u32> {
    clap::value_parser!(u32).try_map(check_hz)
}

/// The help of `--hz`, listing [`CONFIG_HZ_CHOICES`].
pub(crate) fn hz_help() -> String {
    let choices: Vec<String> = CONFIG_HZ_CHOICES.iter().map(u32::to_string).collect();
    format!("CONFIG_HZ [possible values: {}]", choices.join(", "))
}

/// The `value_parser` of `--machine`: a name of [`machine::PRESETS`] (or one of its aliases),
/// read with [`machine::preset`]; `--help` lists the presets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MachineParser;

impl TypedValueParser for MachineParser {
    type Value = Machine;

    fn parse_ref(
        &self,
        cmd: &Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> Result<Machine, clap::Error> {
        let name = value.to_string_lossy();
        machine::preset(&name).ok_or_else(|| {
            let flag = arg.map_or_else(|| "--machine".to_string(), ToString::to_string);
            let msg = format!(
                "invalid value '{name}' for '{flag}': expected one of {}\n",
                machine::PRESETS.join(", ")
            );
            clap::Error::raw(ErrorKind::InvalidValue, msg).with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(machine::PRESETS.iter().map(PossibleValue::new)))
    }
}

/// Tick build option on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum NohzArg {
    /// CONFIG_HZ_PERIODIC.
    Periodic,
    /// CONFIG_NO_HZ_IDLE.
    Idle,
    /// CONFIG_NO_HZ_FULL.
    Full,
}

impl From<NohzArg> for NohzBuild {
    fn from(n: NohzArg) -> NohzBuild {
        match n {
            NohzArg::Periodic => NohzBuild::Periodic,
            NohzArg::Idle => NohzBuild::Idle,
            NohzArg::Full => NohzBuild::Full,
        }
    }
}

/// The published experiments the twin reproduces (E5 is a benchmark script, E6 the host lab).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Experiment {
    /// nohz_full_aggressive on a Dell XPS 13 7390: irq/s and watts, idle to 8 hogs, against
    /// the 2023 RFC
    #[value(alias = "aggressive-nohz")]
    E1,
    /// skew_tick=1 on a 64-CPU 2012 server (3.0-rt): frame-scheduler jitter without and with
    /// skew
    #[value(alias = "skew-tick")]
    E2,
    /// Context switches in a KVM guest (futex ping-pong): HLT, guest polling (2017),
    /// host halt_poll_ns, idle=poll, cpuidle-haltpoll, against the 2017 figures
    #[value(alias = "guest-poll")]
    E3,
    /// what NO_HZ_FULL costs a getpid() loop on three servers (Xeon, arm64, EPYC), four
    /// kernel configurations, unpinned and pinned
    #[value(alias = "syscall")]
    E4,
}

impl Experiment {
    /// The name the user types (`e1` …).
    pub(crate) fn name(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value()
            .map_or_else(|| format!("{self:?}"), |v| v.get_name().to_string())
    }

    /// A command line that runs this experiment, for `--help`.
    pub(crate) fn example(self) -> &'static str {
        match self {
            Experiment::E1 => "ticklab experiment e1 -D 10s",
            Experiment::E2 => "ticklab experiment e2 -D 60s --flier-us 10",
            Experiment::E3 => "ticklab experiment e3 --switches 200000",
            Experiment::E4 => "ticklab experiment e4 --json",
        }
    }

    /// Measured simulated time per point when `--duration` is not given.
    pub(crate) fn default_duration(self) -> DurationArg {
        let secs = match self {
            Experiment::E1 => 30,
            Experiment::E2 => 3_600,
            // E3 counts switches (`--switches`), not simulated time: never read for E3, but
            // a duration is at least 1 ns.
            Experiment::E3 => 1,
            Experiment::E4 => 59,
        };
        DurationArg {
            ns: secs * 1_000_000_000,
        }
    }
}

/// `--format` of the host measurements: the text table (default), or the Prometheus /
/// OpenMetrics text exposition for node-exporter's textfile collector (docs/metrics.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum MetricsFormat {
    /// The table for a terminal.
    #[default]
    Text,
    /// Gauges in the text exposition format, ending with `# EOF`.
    Openmetrics,
}

/// The lines `ticklab --help` ends with: every experiment, machine preset and kind of workload,
/// each with an example, read from [`Experiment`], [`machine::PRESETS`] and
/// [`ticklab_schema::workload::SPECS`].
pub(crate) fn overview() -> String {
    let mut s = String::from("Experiments (ticklab experiment NAME):\n");
    for e in Experiment::value_variants() {
        if let Some(v) = e.to_possible_value() {
            let help = v.get_help().map(ToString::to_string).unwrap_or_default();
            s += &format!("  {:<4} {help}\n", v.get_name());
            s += &format!("       e.g. {}\n", e.example());
        }
    }
    s += &format!(
        "\nMachine presets (--machine): {}\n",
        machine::PRESETS.join(", ")
    );
    for name in machine::PRESETS {
        if let Some(m) = machine::preset(name) {
            s += &format!("  {name:<18} {}\n", m.description);
        }
    }
    s += "       e.g. ticklab sim --machine kvm-guest-2 -D 10s --workload hogs:1\n";
    s += "\nWorkloads (--workload SPEC, or workload=SPEC in a sweep):\n";
    for (syntax, what, example) in ticklab_schema::workload::SPECS {
        s += &format!(
            "  {syntax:<38} {what}\n{:<41}e.g. --workload {example}\n",
            ""
        );
    }
    s += "\nSweeps: ticklab sweep --set hz=250 --set hz=1000 --set workload=hogs:0..4 --seeds 3 --format csv";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_duration_flag_reads_units() {
        // (input, ns or None)
        let cases = [
            ("10s", Some(10_000_000_000)),
            ("500ms", Some(500_000_000)),
            ("2m", Some(120_000_000_000)),
            ("10", Some(10_000_000_000)), // a bare number is seconds (cyclictest, rtla)
            ("0s", None),
            ("10x", None),
            ("1h30m", Some(5_400_000_000_000)),
            ("1m30s", Some(90_000_000_000)),
        ];
        for (input, want) in cases {
            assert_eq!(
                parse_duration_arg(input).ok().map(DurationArg::ns),
                want,
                "{input}"
            );
        }
    }

    #[test]
    fn default_durations_parse_back() {
        assert_eq!(
            Some(Experiment::E1.default_duration()),
            parse_duration_arg("30s").ok()
        );
        assert_eq!(
            Some(Experiment::E2.default_duration()),
            parse_duration_arg("1h").ok()
        );
    }

    #[test]
    fn overview_names_every_experiment_and_preset() {
        let text = overview();
        let kinds = ticklab_schema::workload::SPECS.iter().map(|s| &s.0);
        for name in ["e1", "e2", "e4", "e.g. ticklab experiment e3"]
            .iter()
            .chain(machine::PRESETS)
            .chain(kinds)
        {
            assert!(text.contains(name), "{name}: {text}");
        }
    }
}

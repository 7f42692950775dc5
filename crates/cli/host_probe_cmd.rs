//! `ticklab host inspect | irqs | why`: thin wiring around `ticklab_host::probe`.

use crate::error::input_error;
use clap::Args;
use ticklab_host::probe::{self, inspect::InspectOptions, irqs};

/// `host inspect` arguments.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Print JSON instead of the screen.
    #[arg(long)]
    pub json: bool,
}

/// `host irqs` arguments.
#[derive(Debug, Args)]
pub struct IrqsArgs {
    /// Sampling window, e.g. `10s`, `500ms`.
    #[arg(long, default_value = "5s")]
    pub duration: String,
    /// Show every row of /proc/interrupts, not just LOC, RES, CAL and IWI.
    #[arg(long)]
    pub all: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `host why` arguments.
#[derive(Debug, Args)]
pub struct WhyArgs {
    /// Observation window.
    #[arg(long, default_value = "5s")]
    pub duration: String,
}

fn duration(text: &str) -> anyhow::Result<std::time::Duration> {
    probe::parse_duration(text).map_err(|e| input_error(format!("--duration: {e}")))
}

fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// Runs `host inspect`.
pub fn inspect(args: &InspectArgs) -> anyhow::Result<()> {
    let report = probe::inspect::inspect(&InspectOptions::live());
    if args.json {
        print_json(&report)
    } else {
        print!("{report}");
        Ok(())
    }
}

/// Runs `host irqs`.
pub fn irqs(args: &IrqsArgs) -> anyhow::Result<()> {
    let window = duration(&args.duration)?;
    let root = probe::HostRoot::live();
    let (before, after) =
        irqs::sample_window(&root, window).map_err(|e| anyhow::anyhow!("/proc/interrupts: {e}"))?;
    let rates = irqs::rates_between(&before, &after, args.all);
    if args.json {
        print_json(&rates)
    } else {
        print!("{rates}");
        Ok(())
    }
}

/// Runs `host why`.
pub fn why(_args: &WhyArgs) -> anyhow::Result<()> {
    anyhow::bail!("host why is not built yet")
}

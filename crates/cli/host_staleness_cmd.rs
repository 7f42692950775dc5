//! `ticklab host staleness`: how stale `CLOCK_MONOTONIC_COARSE` gets, read by a spinning
//! thread on one CPU (`ticklab_host::probe::coarse_staleness`).

use clap::Args;
use ticklab_host::probe::coarse_staleness;

use crate::args::{DurationArg, parse_duration_arg};
use crate::error::{Classified, input_error, library_error};
use crate::output::emit;

/// `host staleness` arguments.
#[derive(Debug, Args)]
pub(crate) struct StalenessArgs {
    /// The CPU the reader spins on.
    #[arg(long, default_value_t = 1)]
    pub(crate) cpu: u32,
    /// Window, e.g. `5s`.
    #[arg(short = 'D', short_alias = 'd', long, default_value = "5s", value_parser = parse_duration_arg)]
    pub(crate) duration: DurationArg,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs `host staleness`.
pub(crate) fn staleness(a: &StalenessArgs) -> anyhow::Result<()> {
    let online = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let cpus = [a.cpu];
    let r = crate::progress::measure(
        crate::progress::Window {
            settle: std::time::Duration::ZERO,
            window: a.duration.as_std(),
            cpus: Some(&cpus),
            after: "reporting",
            live: false,
            command: "host staleness",
        },
        || coarse_staleness::measure(a.cpu, a.duration.ns()),
    )
    .map_err(|e| {
        if Classified::is_input(&e) {
            input_error(format!("{e} (this process may use {online} CPU(s))"))
        } else {
            library_error(e)
        }
    })?;
    if a.json {
        return emit(&(serde_json::to_string_pretty(&r)? + "\n"));
    }
    emit(&format!(
        "CLOCK_MONOTONIC - CLOCK_MONOTONIC_COARSE on CPU {} over {:.1} s ({} read pairs):\n\
         mean {:.3} ms, max {:.3} ms; the coarse clock moved {} times, its longest step {:.3} ms\n",
        r.cpu,
        r.duration_ns as f64 / 1e9,
        r.samples,
        r.mean_lag_ns / 1e6,
        r.max_lag_ns as f64 / 1e6,
        r.coarse_updates,
        r.max_coarse_step_ns as f64 / 1e6
    ))
}

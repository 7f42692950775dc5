//! `ticklab host run | calibrate` (being written).

use clap::Args;

/// `host run` arguments.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Workload spec, as for `ticklab sim`.
    #[arg(long)]
    pub workload: String,
    /// Run length.
    #[arg(long, default_value = "10s")]
    pub duration: String,
}

/// `host calibrate` arguments.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Total measurement budget.
    #[arg(long, default_value = "60s")]
    pub duration: String,
}

/// Runs `host run`.
pub fn run(_args: &RunArgs) -> anyhow::Result<()> {
    anyhow::bail!("host run is not built yet")
}
/// Runs `host calibrate`.
pub fn calibrate(_args: &CalibrateArgs) -> anyhow::Result<()> {
    anyhow::bail!("host calibrate is not built yet")
}

//! `ticklab host inspect | irqs | why` (being written).

use clap::Args;

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
}

/// `host why` arguments.
#[derive(Debug, Args)]
pub struct WhyArgs {
    /// Observation window.
    #[arg(long, default_value = "5s")]
    pub duration: String,
}

/// Runs `host inspect`.
pub fn inspect(_args: &InspectArgs) -> anyhow::Result<()> {
    anyhow::bail!("host inspect is not built yet")
}
/// Runs `host irqs`.
pub fn irqs(_args: &IrqsArgs) -> anyhow::Result<()> {
    anyhow::bail!("host irqs is not built yet")
}
/// Runs `host why`.
pub fn why(_args: &WhyArgs) -> anyhow::Result<()> {
    anyhow::bail!("host why is not built yet")
}

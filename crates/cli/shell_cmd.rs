//! `ticklab completions SHELL` and `ticklab man`: shell completion scripts (clap_complete)
//! and the roff man page (clap_mangen), both generated from the one clap definition, so they
//! never drift from the flags.

use clap::{Args, Command};

/// `ticklab completions` arguments.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to write completions for (bash: `ticklab completions bash >
    /// /etc/bash_completion.d/ticklab`).
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Writes the completion script of `cmd` for the shell to stdout.
pub(crate) fn completions(a: &CompletionsArgs, mut cmd: Command) -> anyhow::Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "ticklab", &mut out);
    crate::host_probe_cmd::emit(&String::from_utf8_lossy(&out))
}

/// Writes the man page of `cmd` (roff, section 1) to stdout: `ticklab man | man -l -`.
pub(crate) fn man(cmd: Command) -> anyhow::Result<()> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out)?;
    crate::host_probe_cmd::emit(&String::from_utf8_lossy(&out))
}

//! `--trace FILE` and `--trace-window START..END`: the timeline export of `sim`, `compare`,
//! `experiment` and `host why` (Chrome trace-event JSON, docs/trace.md), with the one rule
//! for writing the file.

use crate::error::input_error;
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use ticklab_schema::trace::{DEFAULT_LIMIT_BYTES, TraceWindow, TraceWriter, write_trace};

/// The trace flags every command that can export a timeline takes.
#[derive(Debug, Clone, Args)]
pub(crate) struct TraceArgs {
    /// Write a timeline of the run as Chrome trace-event JSON (open it in ui.perfetto.dev,
    /// chrome://tracing or speedscope; docs/trace.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// The part of the run the trace keeps (`2s..3s`, `..500ms`, `1s..`): simulated time
    /// since boot in the twin, time since the window opened on the host. Default: the whole
    /// run, cut short (with a warning) past about 256 MiB.
    #[arg(long, value_name = "START..END", value_parser = TraceWindow::parse, requires = "trace")]
    pub(crate) trace_window: Option<TraceWindow>,
}

impl TraceArgs {
    /// The window asked for (the whole run by default).
    pub(crate) fn window(&self) -> TraceWindow {
        self.trace_window.unwrap_or(TraceWindow::WHOLE)
    }
}

/// The byte limit of each of `runs` runs sharing one file.
pub(crate) fn limit_per_run(runs: usize) -> usize {
    DEFAULT_LIMIT_BYTES / runs.max(1)
}

/// Writes `runs` into `path` as one trace (through a temporary file renamed into place, so a
/// failed write leaves nothing partial); warns on stderr about runs cut short and says on
/// stderr what it wrote.
pub(crate) fn save(path: &Path, runs: Vec<TraceWriter>, source: &str) -> anyhow::Result<()> {
    for w in runs.iter().filter(|w| w.truncated()) {
        let (s, e) = w.window();
        eprintln!(
            "ticklab: warning: --trace: process {} reached the size limit; its trace ends at \
             {:.6} s (ask for a shorter --trace-window; it began at {:.6} s)",
            w.pid(),
            e as f64 * 1e-9,
            s as f64 * 1e-9
        );
    }
    let n = runs.len();
    let fail = |e: std::io::Error| input_error(format!("--trace {}: {e}", path.display()));
    let name = path
        .file_name()
        .ok_or_else(|| input_error(format!("--trace {}: not a file name", path.display())))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(fail)?);
    let written = write_trace(
        &mut f,
        runs,
        &[
            ("source", source.to_string()),
            ("ticklab", env!("CARGO_PKG_VERSION").to_string()),
        ],
    )
    .and_then(|()| f.flush());
    drop(f);
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(e));
    }
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "ticklab: trace: {} ({:.1} MiB, {n} process{}; open in ui.perfetto.dev)",
        path.display(),
        bytes as f64 / (1 << 20) as f64,
        if n == 1 { "" } else { "es" }
    );
    Ok(())
}

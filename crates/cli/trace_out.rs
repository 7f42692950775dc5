//! `--trace FILE` and `--trace-window START..END`: the timeline export of `sim`, `compare`,
//! `experiment` and `host why` (Chrome trace-event JSON, docs/trace.md), with the one rule
//! for writing the file.

use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use ticklab_trace::{DEFAULT_LIMIT_BYTES, TraceWindow, TraceWriter, write_trace};

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

/// Writes `runs` into `path` as one trace (`crate::output`: a temporary file renamed into
/// place for a regular file, in place for a device, `-` for stdout); warns on stderr about
/// runs cut short and about a window that holds no part of the run, and says on stderr what
/// it wrote.
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
    if !runs.is_empty() && runs.iter().all(|w| empty_window(w.window())) {
        eprintln!(
            "ticklab: warning: --trace-window: no part of the run lies in the window; the trace \
             holds no events (the window is simulated time since boot in the twin, time since \
             the window opened on the host)"
        );
    }
    let n = runs.len();
    let mut bytes = 0u64;
    crate::output::write_with("--trace", path, |w| {
        let mut counted = Counted { inner: w, n: 0 };
        let r = write_trace(
            &mut counted,
            runs,
            &[
                ("source", source.to_string()),
                ("ticklab", env!("CARGO_PKG_VERSION").to_string()),
            ],
        );
        bytes = counted.n;
        r
    })?;
    eprintln!(
        "ticklab: trace: {} ({:.1} MiB, {n} process{}; open in ui.perfetto.dev)",
        path.display(),
        bytes as f64 / (1 << 20) as f64,
        if n == 1 { "" } else { "es" }
    );
    Ok(())
}

/// Whether a resolved trace window `(start, end)` is empty (it began at or after the run's end).
pub(crate) fn empty_window((start, end): (u64, u64)) -> bool {
    start >= end
}

/// A writer that counts the bytes passed through it.
struct Counted<'a> {
    inner: &'a mut dyn Write,
    n: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let k = self.inner.write(buf)?;
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

//! Progress on stderr for long runs: nothing for runs under about two seconds, then a bar.
//! stdout is never touched, so a command's output is the same with or without a terminal.

use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `-q/--quiet`: no bar at all (set once, from the command line, before any work starts).
static QUIET: AtomicBool = AtomicBool::new(false);

/// Turns every progress bar off (`-q/--quiet`).
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `-q/--quiet` was given: no progress and no timing lines on stderr.
pub(crate) fn is_quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// A progress bar on stderr, shown only for runs that last more than about two seconds.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    started: Instant,
    unit: &'static str,
}

impl Progress {
    /// A bar counting up to `total` `unit`s (`points`, `simulated ms`), not shown yet.
    pub(crate) fn new(total: u64, unit: &'static str) -> Progress {
        Progress {
            bar: None,
            total,
            started: Instant::now(),
            unit,
        }
    }

    /// Moves to `pos`; shows the bar once the run has taken more than two seconds.
    pub(crate) fn set(&mut self, pos: u64) {
        if self.bar.is_none() && !is_quiet() && self.started.elapsed() > Duration::from_secs(2) {
            let bar = ProgressBar::new(self.total);
            let style = ProgressStyle::with_template(&format!(
                "{{spinner}} [{{elapsed_precise}}] {{bar:40}} {{pos}}/{{len}} {} (eta {{eta}})",
                self.unit
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            b.set_position(pos);
        }
    }

    /// Clears the bar, if it was shown.
    pub(crate) fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}

/// Runs `work` with a progress callback that worker threads may call with the number of items
/// done (of `total`), then clears the bar.
pub(crate) fn with_progress<T>(
    total: u64,
    unit: &'static str,
    work: impl FnOnce(&(dyn Fn(usize) + Sync)) -> T,
) -> T {
    let p = Mutex::new(Progress::new(total, unit));
    let out = work(&|done| {
        if let Ok(mut p) = p.lock() {
            p.set(done as u64);
        }
    });
    if let Ok(p) = p.into_inner() {
        p.finish();
    }
    out
}

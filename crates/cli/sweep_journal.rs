//! The journal of `sweep -o FILE`: every finished row, appended and synced to `FILE.journal`
//! as its run ends, so that no signal (SIGINT, SIGTERM, SIGKILL) and no crash loses finished
//! work.
//!
//! * At the end the output is written from the journal, in run order (so the bytes do not
//!   depend on the thread count or on the order runs finished), and the journal is removed.
//! * `--resume` reads the journal a stopped sweep left, checks every row against the sweep
//!   being run (its identity, run count, shard, and the point and seed its run index puts
//!   there: `ticklab_sweep::check_run_index`), and runs only the others. A last line
//!   cut short by a SIGKILL mid-write is dropped (that run is run again).
//! * Without `--resume`, a journal already there is refused: it holds finished work.

use crate::error::input_error;
use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use ticklab_sweep::{Shard, SweepRow, check_run_index, read_rows};

/// The append-only file of finished rows.
#[derive(Debug)]
pub(crate) struct Journal {
    path: PathBuf,
    file: Mutex<File>,
}

/// What the sweep is, for checking a journal's rows.
pub(crate) struct SweepIdentity<'a> {
    /// `Grid::id`.
    pub(crate) id: &'a str,
    /// Runs in the whole sweep.
    pub(crate) runs: u64,
    /// The seeds every point runs.
    pub(crate) seeds: &'a [u64],
    /// The shard this process runs.
    pub(crate) shard: Shard,
}

impl Journal {
    /// The journal of output `output`: `output` with `.journal` appended.
    pub(crate) fn path_for(output: &Path) -> PathBuf {
        let mut p = output.as_os_str().to_owned();
        p.push(".journal");
        PathBuf::from(p)
    }

    /// Opens the journal of `output`. With `resume`, the rows already there (checked against
    /// `sweep`) come back; without it, a journal already there is refused.
    pub(crate) fn open(
        output: &Path,
        resume: bool,
        sweep: &SweepIdentity<'_>,
    ) -> anyhow::Result<(Journal, Vec<SweepRow>)> {
        let path = Journal::path_for(output);
        let shown = path.display().to_string();
        let exists = fs::symlink_metadata(&path).is_ok();
        if exists && !resume {
            return Err(input_error(format!(
                "{shown}: the journal of an unfinished sweep (its finished runs): add --resume \
                 to keep them and run the rest, or remove it to start again"
            )));
        }
        let mut kept = Vec::new();
        if exists {
            kept = read_journal(&path, sweep)?;
        }
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o644)
            .open(&path)
            .map_err(|e| input_error(format!("{shown}: cannot open the sweep journal: {e}")))?;
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(input_error(format!(
                "{shown}: the sweep journal must be a regular file"
            )));
        }
        Ok((
            Journal {
                path,
                file: Mutex::new(file),
            },
            kept,
        ))
    }

    /// Where it is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one finished row (one JSON line, one `write`) and syncs it to disk.
    pub(crate) fn append(&self, row: &SweepRow) -> std::io::Result<()> {
        let mut line = serde_json::to_string(row)?;
        line.push('\n');
        let f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        (&*f).write_all(line.as_bytes())?;
        f.sync_data()
    }

    /// Every row in the journal, checked and in run order: what the output is written from.
    pub(crate) fn rows(&self, sweep: &SweepIdentity<'_>) -> anyhow::Result<Vec<SweepRow>> {
        read_journal(&self.path, sweep)
    }

    /// Removes the journal once the output is written.
    pub(crate) fn remove(self) -> anyhow::Result<()> {
        fs::remove_file(&self.path)
            .map_err(|e| anyhow::anyhow!("{}: cannot remove the journal: {e}", self.path.display()))
    }
}

/// Reads a journal's rows, drops a last line cut short (truncating the file to the last
/// whole line), checks each row and returns them in run order.
fn read_journal(path: &Path, sweep: &SweepIdentity<'_>) -> anyhow::Result<Vec<SweepRow>> {
    let shown = path.display().to_string();
    let bad = |what: String| {
        input_error(format!(
            "{shown}: {what}; this journal is not of this sweep (same flags, --seed and \
             --shard?): remove it to start again"
        ))
    };
    let bytes = fs::read(path).map_err(|e| input_error(format!("{shown}: cannot read: {e}")))?;
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if whole < bytes.len() {
        // A SIGKILL during the one write of a row: that run is not finished.
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| input_error(format!("{shown}: cannot open: {e}")))?;
        f.set_len(whole as u64)
            .map_err(|e| anyhow::anyhow!("{shown}: cannot drop its cut line: {e}"))?;
        eprintln!("ticklab: {shown}: dropped a row cut short (its run runs again)");
    }
    let mut rows = read_rows(&bytes[..whole]).map_err(|e| bad(e.to_string()))?;
    rows.sort_by_key(|r| r.run);
    let mut seen = BTreeSet::new();
    for r in &rows {
        check_run_index(r, sweep.id, sweep.runs, sweep.seeds).map_err(|e| bad(e.to_string()))?;
        if !sweep.shard.owns(r.run) {
            return Err(bad(format!(
                "run {} is not of shard {}",
                r.run, sweep.shard
            )));
        }
        if !seen.insert(r.run) {
            return Err(bad(format!("run {} is there twice", r.run)));
        }
    }
    Ok(rows)
}

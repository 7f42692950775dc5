//! `ticklab sweep | merge`: a scenario run at every point of a parameter grid with several
//! seeds (`ticklab_sweep::grid`), in parallel (`ticklab_twin::sweep::run_grid`), one
//! row per run and a summary per point (`ticklab_report::sweep`); a deterministic slice of it
//! with `--shard I/N`, put back together by `merge`.

use crate::error::{input_error, library_error};
use crate::progress::{is_quiet, with_progress};
use crate::sweep_journal::{Journal, SweepIdentity};
use crate::twin_cmd::{ScenarioArgs, build_scenario};
use clap::{Args, ValueEnum};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;
use ticklab_host::harness::Stop;
use ticklab_schema::lines::{LinesError, read_text};
use ticklab_sweep::grid::{Grid, Seeds};
use ticklab_sweep::{Shard, SweepRow, SweepSummary, merge as merge_rows, read_rows};
use ticklab_twin::sweep::SweepError;

/// Output format of `sweep` and `merge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SweepFormat {
    /// One JSON object per line (what `merge` reads).
    Jsonl,
    /// A header line, then one line per row.
    Csv,
}

/// What `sweep` and `merge` write, and where.
#[derive(Debug, Args)]
pub(crate) struct SweepOutput {
    /// Output format.
    #[arg(long, value_enum, default_value_t = SweepFormat::Jsonl)]
    format: SweepFormat,
    /// Write one summary per point over its seeds (mean, min, max, 95 % interval of the
    /// mean) instead of one row per run.
    #[arg(long)]
    summary: bool,
    /// Write to FILE instead of standard output (written once everything has run; `sweep`
    /// keeps each finished row in FILE.journal meanwhile, for --resume).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// `ticklab sweep` arguments.
#[derive(Debug, Args)]
pub(crate) struct SweepArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// The base kernel command line (a `--set cmdline=...` axis replaces it).
    #[arg(long)]
    cmdline: Option<String>,
    /// One value of a swept parameter, KEY=VALUE; repeat a key for more values. Keys:
    /// machine, kernel-version, hz, nohz, cmdline, workload, duration, warmup, cost.FIELD,
    /// seed. Ranges A..B[/STEP] (inclusive) for seed, cost.FIELD and hog counts
    /// (workload=hogs:0..8).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// A sweep file: TOML keys holding lists (`hz = [100, 1000]`, `seeds = 3`); instead of
    /// --set.
    #[arg(long = "file", value_name = "FILE", conflicts_with = "set")]
    file: Option<PathBuf>,
    /// Run every point with N seeds, counting up from --seed (default 1).
    #[arg(long, value_name = "N")]
    seeds: Option<u64>,
    /// Worker threads (default: every CPU).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,
    /// Run only shard I of N (0 <= I < N; runs I, I+N, I+2N, ...) and write its rows as JSON
    /// lines for `ticklab merge`.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// Keep the finished runs an interrupted or killed `sweep -o FILE` left in FILE.journal
    /// (checked against this sweep) and run only the others.
    #[arg(long, requires = "output")]
    resume: bool,
    #[command(flatten)]
    out: SweepOutput,
}

/// `ticklab merge` arguments.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The JSON lines `ticklab sweep --shard I/N` wrote, one file per shard (`-` reads
    /// standard input).
    #[arg(required = true, value_name = "SHARD.jsonl")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    out: SweepOutput,
}

/// The sweep's grid: from `--file` (whose seeds it holds) or from the `--set` options.
fn sweep_grid(a: &SweepArgs, base_seed: u64) -> anyhow::Result<Grid> {
    let seeds = a.seeds.map_or(Seeds::Base, Seeds::Count);
    match &a.file {
        Some(path) => {
            if a.seeds.is_some() {
                return Err(input_error(
                    "--seeds: give the seeds in the sweep file (seeds = N) with --file",
                ));
            }
            let text = read_input(path)?;
            Grid::from_toml(&text, &path.display().to_string(), base_seed)
        }
        None => Grid::from_sets(&a.set, seeds, base_seed),
    }
    .map_err(|e| input_error(e.to_string()))
}

/// The journal beside `-o` (a regular file only, never `/dev/null.journal`), with the rows
/// it already holds when `--resume` picks it up.
fn open_journal(
    a: &SweepArgs,
    sweep: &SweepIdentity<'_>,
) -> anyhow::Result<(Option<Journal>, Vec<SweepRow>)> {
    let journal = match &a.out.output {
        // A journal beside a regular file only: never `/dev/null.journal`.
        Some(path) if crate::output::is_regular_target(path) => {
            Some(Journal::open(path, a.resume, sweep)?)
        }
        _ => None,
    };
    Ok(match journal {
        Some((j, kept)) => (Some(j), kept),
        None => (None, Vec::new()),
    })
}

/// Runs `ticklab sweep`.
pub(crate) fn sweep(a: &SweepArgs) -> anyhow::Result<()> {
    let base = build_scenario(&a.scenario, a.cmdline.as_deref())?;
    let grid = sweep_grid(a, base.run.seed)?;
    let shard = a.shard.unwrap_or(Shard::ALL);
    if a.shard.is_some() && (a.out.summary || a.out.format != SweepFormat::Jsonl) {
        return Err(input_error(
            "--shard writes JSON lines rows for `ticklab merge`; drop --summary and --format \
             and give them to merge",
        ));
    }
    let points = grid.points(&base).map_err(|e| input_error(e.to_string()))?;
    let id = grid.id(&base);
    let threads = a.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |n| n as usize,
    );
    let total = ticklab_twin::sweep::shard_runs(points.len(), grid.seeds().len(), shard);
    // The compute limit over every run of this sweep (of this shard), not its base alone.
    a.scenario
        .run_options()
        .check_events(
            ticklab_twin::sweep::estimated_events(&points, grid.seeds(), shard),
            &format!("the sweep's {total} runs"),
        )
        .map_err(library_error)?;
    let sweep = SweepIdentity {
        id: &id,
        runs: (points.len() * grid.seeds().len()) as u64,
        seeds: grid.seeds(),
        shard,
    };
    if let Some(path) = &a.out.output {
        crate::output::check_target("-o", path)?;
    }
    let (journal, kept) = open_journal(a, &sweep)?;
    let done: BTreeSet<u64> = kept.iter().map(|r| r.run).collect();
    if !done.is_empty() && !is_quiet() {
        eprintln!(
            "ticklab: sweep {id}: resuming, {} of {total} runs already in the journal",
            done.len()
        );
    }
    let stop = Stop::on_signals()?;
    let t0 = Instant::now();
    let wanted = |run: u64| !stop.is_set() && !done.contains(&run);
    let on_row = |row: &SweepRow| -> std::io::Result<()> {
        match &journal {
            Some(j) => j.append(row),
            None => Ok(()),
        }
    };
    let run = |progress: &(dyn Fn(usize) + Sync)| {
        ticklab_twin::sweep::run_grid_each(
            &id,
            &points,
            grid.seeds(),
            shard,
            threads,
            &progress,
            &wanted,
            &on_row,
        )
    };
    let ran = match with_progress(total - done.len() as u64, "runs", run) {
        // The journal's I/O error, kept whole for the exit code (a full disk is not input).
        Err(SweepError::Row(e)) => {
            let j = journal
                .as_ref()
                .map_or(String::new(), |j| j.path().display().to_string());
            return Err(anyhow::Error::from(e).context(format!("{j}: appending a finished row")));
        }
        ran => ran.map_err(library_error)?,
    };
    // The output comes from the journal when there is one (run order, whatever the threads).
    let rows = match &journal {
        Some(j) => j.rows(&sweep)?,
        None => ran,
    };
    let interrupted = stop.reason().map(|r| r.name());
    if !is_quiet() {
        // Timing goes to stderr: stdout stays byte-identical whatever the threads.
        eprintln!(
            "ticklab: sweep {id}: {} runs ({} points × {} seeds{}) in {:.1} s on {threads} threads",
            rows.len(),
            points.len(),
            grid.seeds().len(),
            if a.shard.is_some() {
                format!(", shard {shard}")
            } else {
                String::new()
            },
            t0.elapsed().as_secs_f64()
        );
    }
    write_out(&a.out, &rows)?;
    finish(journal, interrupted, rows.len() as u64, total)
}
/// After the output: an interrupted sweep is an error that says how many runs finished and
/// how to resume; a finished one removes its journal.
fn finish(
    journal: Option<Journal>,
    interrupted: Option<String>,
    finished: u64,
    total: u64,
) -> anyhow::Result<()> {
    if let Some(why) = interrupted {
        let kept = match &journal {
            Some(j) => format!(
                "; {} keeps them: add --resume to run the other {}",
                j.path().display(),
                total - finished
            ),
            None => String::new(),
        };
        return Err(crate::error::interrupted(
            &why,
            &format!(
                "the output holds the {} of {total} runs that finished{kept}",
                finished
            ),
        ));
    }
    if let Some(j) = journal {
        j.remove()?;
    }
    Ok(())
}

/// Runs `ticklab merge`.
pub(crate) fn merge(a: &MergeArgs) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for path in &a.files {
        rows.extend(read_rows_from(path, "")?);
    }
    let rows = merge_rows(rows).map_err(|e| input_error(format!("merge: {e}")))?;
    write_out(&a.out, &rows)
}

/// Reads a sweep file (TOML), or standard input for `-`, within the scenario loader's size
/// limit; errors name the file.
pub(crate) fn read_input(path: &Path) -> anyhow::Result<String> {
    let limit = ticklab_schema::scenario::MAX_SCENARIO_BYTES;
    let (shown, read) = if path.as_os_str() == "-" {
        (
            "standard input".to_string(),
            read_text(std::io::stdin().lock(), limit),
        )
    } else {
        let f = std::fs::File::open(path)
            .map_err(|e| input_error(format!("{}: cannot read: {e}", path.display())))?;
        (path.display().to_string(), read_text(f, limit))
    };
    read.map_err(|e| lines_error(&shown, e))
}

/// Reads the JSON lines of a sweep (`-` = standard input) into rows, line by line within the
/// limits of `ticklab_schema::lines`; errors name the file and the line. `hint` follows the
/// message of a file that cannot be opened.
pub(crate) fn read_rows_from(path: &Path, hint: &str) -> anyhow::Result<Vec<SweepRow>> {
    let (shown, read) = if path.as_os_str() == "-" {
        (
            "standard input".to_string(),
            read_rows(std::io::stdin().lock()),
        )
    } else {
        let f = std::fs::File::open(path)
            .map_err(|e| input_error(format!("{}: cannot read: {e}{hint}", path.display())))?;
        (
            path.display().to_string(),
            read_rows(std::io::BufReader::new(f)),
        )
    };
    read.map_err(|e| lines_error(&shown, e))
}

/// A reading error: the device failing is exit code 1, anything about the content 2.
fn lines_error(shown: &str, e: LinesError) -> anyhow::Error {
    match e {
        LinesError::Io(_) => anyhow::anyhow!("{shown}: {e}"),
        e => input_error(format!("{shown}: {e}")),
    }
}

/// Renders rows (or their summaries) and writes them to stdout or `-o`.
fn write_out(o: &SweepOutput, rows: &[SweepRow]) -> anyhow::Result<()> {
    use ticklab_report::sweep as r;
    let text = match (o.summary, o.format) {
        (false, SweepFormat::Jsonl) => r::rows_jsonl(rows)?,
        (false, SweepFormat::Csv) => r::rows_csv(rows),
        (true, SweepFormat::Jsonl) => r::summaries_jsonl(&SweepSummary::of_rows(rows))?,
        (true, SweepFormat::Csv) => r::summaries_csv(&SweepSummary::of_rows(rows)),
    };
    match &o.output {
        Some(path) => crate::output::write_file("-o", path, text.as_bytes()),
        None => crate::output::emit(&text),
    }
}

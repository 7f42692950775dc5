//! `ticklab sweep | merge`: a scenario run at every point of a parameter grid with several
//! seeds (`ticklab_schema::sweep::grid`), in parallel (`ticklab_twin::sweep::run_grid`), one
//! row per run and a summary per point (`ticklab_report::sweep`); a deterministic slice of it
//! with `--shard I/N`, put back together by `merge`.

use crate::error::input_error;
use crate::progress::{is_quiet, with_progress};
use crate::twin_cmd::{ScenarioArgs, build_scenario};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::time::Instant;
use ticklab_schema::sweep::grid::{Grid, Seeds};
use ticklab_schema::sweep::{Shard, SweepRow, SweepSummary, merge as merge_rows};

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
    /// Write to FILE instead of standard output (written once everything has run).
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

/// Runs `ticklab sweep`.
pub(crate) fn sweep(a: &SweepArgs) -> anyhow::Result<()> {
    let base = build_scenario(&a.scenario, a.cmdline.as_deref())?;
    let seeds = a.seeds.map_or(Seeds::Base, Seeds::Count);
    let grid = match &a.file {
        Some(path) => {
            if a.seeds.is_some() {
                return Err(input_error(
                    "--seeds: give the seeds in the sweep file (seeds = N) with --file",
                ));
            }
            let text = read_input(path)?;
            Grid::from_toml(&text, &path.display().to_string(), base.run.seed)
        }
        None => Grid::from_sets(&a.set, seeds, base.run.seed),
    }
    .map_err(input_error)?;
    let shard = a.shard.unwrap_or(Shard::ALL);
    if a.shard.is_some() && (a.out.summary || a.out.format != SweepFormat::Jsonl) {
        return Err(input_error(
            "--shard writes JSON lines rows for `ticklab merge`; drop --summary and --format \
             and give them to merge",
        ));
    }
    let points = grid.points(&base).map_err(input_error)?;
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
        .map_err(|e| input_error(e.to_string()))?;
    let t0 = Instant::now();
    let run = |progress: &(dyn Fn(usize) + Sync)| {
        ticklab_twin::sweep::run_grid(&id, &points, grid.seeds(), shard, threads, &progress)
    };
    let rows = with_progress(total, "runs", run).map_err(input_error)?;
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
    write_out(&a.out, &rows)
}

/// Runs `ticklab merge`.
pub(crate) fn merge(a: &MergeArgs) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for path in &a.files {
        let text = read_input(path)?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let row: SweepRow = serde_json::from_str(line).map_err(|e| {
                input_error(format!(
                    "{}:{}: expected a row of `ticklab sweep --shard` (JSON lines): {e}",
                    path.display(),
                    i + 1
                ))
            })?;
            rows.push(row);
        }
    }
    let rows = merge_rows(rows).map_err(|e| input_error(format!("merge: {e}")))?;
    write_out(&a.out, &rows)
}

/// Reads a file, or standard input for `-`; errors name the file.
pub(crate) fn read_input(path: &Path) -> anyhow::Result<String> {
    if path.as_os_str() == "-" {
        return std::io::read_to_string(std::io::stdin())
            .map_err(|e| input_error(format!("standard input: cannot read: {e}")));
    }
    std::fs::read_to_string(path)
        .map_err(|e| input_error(format!("{}: cannot read: {e}", path.display())))
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
        Some(path) => std::fs::write(path, text)
            .map_err(|e| input_error(format!("-o {}: cannot write: {e}", path.display()))),
        None => crate::host_probe_cmd::emit(&text),
    }
}

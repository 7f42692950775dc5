//! `ticklab sweep` and `ticklab merge` end to end, with the built binary: shards run as
//! separate processes and merge back into exactly the bytes of one unsharded run, whatever
//! the number of threads, in every output format.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ticklab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .args(args)
        .output()
        .expect("run ticklab")
}

/// A small sweep that still crosses three axes and seeds: 2 HZ × 3 loads × 2 command lines ×
/// 2 seeds = 24 runs on a 2-CPU guest, 100 ms each.
const SWEEP: &[&str] = &[
    "sweep",
    "--machine",
    "kvm-guest-2",
    "--duration",
    "100ms",
    "--warmup",
    "50ms",
    "--set",
    "hz=250",
    "--set",
    "hz=1000",
    "--set",
    "workload=hogs:0..2",
    "--set",
    "cmdline=nohz_full=1",
    "--set",
    "cmdline=nohz_full=1 skew_tick=1",
    "--seeds",
    "2",
    "-q",
];

fn sweep(extra: &[&str]) -> Output {
    let args: Vec<&str> = SWEEP.iter().chain(extra).copied().collect();
    let out = ticklab(&args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ticklab-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

#[test]
fn shards_in_separate_processes_merge_to_the_single_run_byte_for_byte() {
    let dir = tmp_dir("shards");
    let single = sweep(&["--threads", "2"]).stdout;
    assert_eq!(String::from_utf8_lossy(&single).lines().count(), 24);
    // N shard processes at once, as a job array runs them, one thread each.
    let n = 3;
    let files: Vec<PathBuf> = (0..n)
        .map(|i| dir.join(format!("shard-{i}.jsonl")))
        .collect();
    let children: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let shard = format!("{i}/{n}");
            let args: Vec<&str> = SWEEP
                .iter()
                .copied()
                .chain(["--threads", "1", "--shard", &shard, "-o", path_str(f)])
                .collect();
            Command::new(env!("CARGO_BIN_EXE_ticklab"))
                .args(&args)
                .spawn()
                .expect("spawn shard")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("wait shard").success());
    }
    // Each shard holds its own slice only.
    for f in &files {
        let text = std::fs::read_to_string(f).expect("shard output");
        assert_eq!(text.lines().count(), 24 / n);
    }
    // Given in any order, the shards merge to the single run, in every format.
    let mut merge_args: Vec<&str> = vec!["merge"];
    merge_args.extend(files.iter().rev().map(|f| path_str(f)));
    for extra in [
        &[][..],
        &["--format", "csv"],
        &["--summary"],
        &["--summary", "--format", "csv"],
    ] {
        let merged = ticklab(&[&merge_args[..], extra].concat());
        assert!(
            merged.status.success(),
            "{}",
            String::from_utf8_lossy(&merged.stderr)
        );
        let want = if extra.is_empty() {
            single.clone()
        } else {
            sweep(extra).stdout
        };
        assert!(
            merged.stdout == want,
            "merge {extra:?} differs from the single run"
        );
    }
    // A missing shard is refused, naming the runs it lacks, and nothing is written.
    let partial = ticklab(&["merge", path_str(&files[0]), path_str(&files[1])]);
    assert_eq!(partial.status.code(), Some(2));
    assert!(partial.stdout.is_empty());
    assert!(String::from_utf8_lossy(&partial.stderr).contains("missing"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn threads_do_not_change_the_output() {
    let one = sweep(&["--threads", "1", "--format", "csv"]).stdout;
    let three = sweep(&["--threads", "3", "--format", "csv"]).stdout;
    assert!(one == three);
    let text = String::from_utf8_lossy(&one);
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("run,point,hz,cmdline,workload,seed,irq_per_s,"),
        "{header}"
    );
}

#[test]
fn a_sweep_file_is_the_same_sweep_as_the_flags() {
    let dir = tmp_dir("file");
    let file = dir.join("grid.toml");
    std::fs::write(
        &file,
        "hz = [250, 1000]\nworkload = \"hogs:0..2\"\n\
         cmdline = [\"nohz_full=1\", \"nohz_full=1 skew_tick=1\"]\nseeds = 2\n",
    )
    .expect("write sweep file");
    let flags = sweep(&[]).stdout;
    let args = [
        "sweep",
        "--machine",
        "kvm-guest-2",
        "--duration",
        "100ms",
        "--warmup",
        "50ms",
        "--file",
        path_str(&file),
        "-q",
    ];
    let from_file = ticklab(&args);
    assert!(
        from_file.status.success(),
        "{}",
        String::from_utf8_lossy(&from_file.stderr)
    );
    assert!(from_file.stdout == flags);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_sweeps_exit_2_and_name_the_input() {
    // (extra args, text the error must contain)
    let cases: &[(&[&str], &str)] = &[
        (&["--set", "hz=1001"], "hz=1001"),
        (&["--set", "bogus=1"], "\"bogus\""),
        (&["--set", "workload=hogs:3"], "hogs:3"),
        (&["--shard", "3/3"], "0 <= I < N"),
        (&["--shard", "0/2", "--summary"], "--shard"),
        (&["--set", "seed=1"], "either"),
        (
            &["--set", "cost.tick_handler_ns=fast"],
            "cost.tick_handler_ns=fast",
        ),
    ];
    for (extra, want) in cases {
        let args: Vec<&str> = SWEEP.iter().chain(*extra).copied().collect();
        let out = ticklab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
        assert!(out.stdout.is_empty(), "{extra:?}");
    }
    let out = ticklab(&["merge", "/nonexistent/shard.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/shard.jsonl"));
}

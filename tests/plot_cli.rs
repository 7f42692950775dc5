//! `ticklab plot` and `ticklab report --html` end to end: a real (short) sweep read back
//! and drawn, an experiment's figures written to a directory, and bad input refused with
//! exit code 2, naming the input, before anything runs or is written.

use std::path::PathBuf;
use std::process::{Command, Output};

fn ticklab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .args(args)
        .output()
        .expect("run ticklab")
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ticklab-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_sweep_is_plotted_and_reported() {
    let rows = temp("sweep.jsonl");
    let rows_s = rows.to_str().expect("path");
    ok(&ticklab(&[
        "sweep",
        "--hz",
        "1000",
        "--nohz",
        "full",
        "--duration",
        "200ms",
        "--warmup",
        "200ms",
        "--set",
        "cmdline=nohz_full=all",
        "--set",
        "cmdline=nohz_full=all nohz_full_aggressive",
        "--set",
        "workload=idle",
        "--set",
        "workload=hogs:2",
        "--seeds",
        "2",
        "-q",
        "-o",
        rows_s,
    ]));
    let out = ticklab(&["plot", rows_s, "--metric", "irq_per_s"]);
    ok(&out);
    let svg = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(
        svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
        "{svg}"
    );
    assert!(
        svg.contains("cmdline=nohz_full=all nohz_full_aggressive"),
        "one line per cmdline"
    );
    // The same rows give the same bytes.
    let again = ticklab(&["plot", rows_s, "--metric", "irq_per_s"]);
    assert_eq!(svg.as_bytes(), &again.stdout[..]);

    let page = temp("sweep.html");
    ok(&ticklab(&[
        "report",
        rows_s,
        "--html",
        page.to_str().expect("path"),
    ]));
    let html = std::fs::read_to_string(&page).expect("page");
    assert!(
        html.contains("<h2>Figures and their numbers</h2>") && html.contains("<svg"),
        "{html}"
    );
}

#[test]
fn experiment_figures_go_to_a_directory() {
    let dir = temp("e1-figures");
    ok(&ticklab(&[
        "plot",
        "e1",
        "-D",
        "200ms",
        "-o",
        dir.to_str().expect("path"),
    ]));
    for id in ["e1-irq", "e1-watts"] {
        let svg = std::fs::read_to_string(dir.join(format!("{id}.svg"))).expect(id);
        assert!(svg.contains("nohz_full (published)"), "{id}");
    }
}

#[test]
fn bad_input_exits_2_naming_it_and_writes_nothing() {
    let rows = temp("not-rows.jsonl");
    std::fs::write(&rows, "{\"schema_version\":1}\n").expect("write");
    let rows_s = rows.to_str().expect("path");
    let out_file = temp("never.html");
    let out_s = out_file.to_str().expect("path");
    // (args, text the error must contain)
    let cases: &[(&[&str], &str)] = &[
        (&["plot", "e1"], "-o"),
        (&["plot", "e3", "-D", "1s", "-o", "/tmp"], "--duration"),
        (
            &["plot", "e1", "--metric", "watts", "-o", "/tmp"],
            "--metric",
        ),
        (
            &["plot", "/nonexistent/s.jsonl", "--metric", "watts"],
            "/nonexistent/s.jsonl",
        ),
        (
            &["plot", rows_s, "--metric", "watts"],
            "not-rows.jsonl: line 1",
        ),
        (
            &["report", rows_s, "--html", out_s],
            "not-rows.jsonl: line 1",
        ),
    ];
    for (args, want) in cases {
        let out = ticklab(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(!out_file.exists(), "nothing partial");
}

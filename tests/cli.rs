//! End-to-end checks of the `ticklab` binary: exit codes for bad input, the E1 JSON shape, and
//! that a scenario file and the equivalent flags give the same report.

use std::process::Command;

fn ticklab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .args(args)
        .output()
        .expect("run ticklab")
}

#[test]
fn bad_input_exits_2_and_names_the_input() {
    // (args, text the error must contain)
    let cases: &[(&[&str], &str)] = &[
        (
            &["sim", "--cmdline", "nohz_full=2-99", "--duration", "1s"],
            "nohz_full=2-99",
        ),
        (&["sim", "--workload", "hgos:2", "--duration", "1s"], "hgos"),
        (&["sim", "--duration", "10x"], "--duration"),
        (&["sim", "--machine", "vax", "--duration", "1s"], "vax"),
        (&["sim", "--hz", "1001"], "1001"),
        (
            &["sim", "--scenario", "/nonexistent/s.toml"],
            "/nonexistent/s.toml",
        ),
        (&["experiment", "e9"], "e9"),
        // A bad experiment name lists the ones there are.
        (&["experiment", "e9"], "[possible values: e1, e2, e3, e4]"),
        // e4 runs each point to the end of its loop: no --duration.
        (
            &["experiment", "e4", "--duration", "30s"],
            "--duration: e4 runs each point",
        ),
        // A parameter ticklab does not know is refused before anything is written.
        (
            &["host", "run", "--workload", "idle", "--set", "nope=1"],
            "--set \"nope=1\"",
        ),
        (&["host", "haltpoll-sweep", "--cpus", "0"], "--cpus"),
        // The unseen-load check: each load needs a window a 100 Hz p99 can be read from,
        // and its options mean nothing without it (refused before anything is measured).
        (
            &[
                "host",
                "calibrate",
                "--check-unseen",
                "--load-duration",
                "1s",
            ],
            "--load-duration 1.0 s: each load needs at least 2 s",
        ),
        (
            &["host", "calibrate", "--load-duration", "20s"],
            "--check-unseen",
        ),
        (&["host", "calibrate", "--json"], "--check-unseen"),
        // The ping-pong is modelled in a KVM guest only.
        (&["sim", "--workload", "pingpong:futex@0,1"], "kvm-guest-2"),
        // Every duration flag goes through the one parser, and its error names the flag.
        (&["experiment", "e1", "--duration", "0"], "--duration"),
        (
            &["experiment", "e1", "--duration", "0"],
            "duration \"0\" (seconds)",
        ),
        (&["bench", "--duration", "1x"], "unknown unit \"x\""),
        (&["host", "irqs", "--duration", "soon"], "--duration"),
        (&["sim", "--hz", "1001"], "100, 250, 300, 1000"),
        (
            &["sim", "--machine", "vax"],
            "xps13-7390, kvm-guest-2, server-2012-64",
        ),
        (
            &["sim", "--machine", "xps13-7390", "--scenario", "s.toml"],
            "--machine",
        ),
        // Issue 17: an unwritable --save-trace is refused before the window, not after it.
        (
            &[
                "host",
                "why",
                "--duration",
                "10s",
                "--save-trace",
                "/nonexistent/dir/t.txt",
            ],
            "--save-trace /nonexistent/dir/t.txt",
        ),
        (
            &["host", "run", "--workload", "idle", "--pm-qos=-1"],
            "--cpu-dma-latency",
        ),
        // A bsp job the host lab cannot run is refused before any rank starts.
        (
            &["host", "run", "--workload", "bsp:2@0,4096:work=100us"],
            "cpulist \"0,4096\"",
        ),
        (
            &["host", "run", "--workload", "bsp:3@0-1:work=100us"],
            "3 CPUs after `@` (one per rank), found 2",
        ),
        (
            &[
                "host",
                "run",
                "--workload",
                "bsp:1@0:work=100us:barrier=mpi",
            ],
            "barrier `spin` or `futex`",
        ),
        (
            &["host", "run", "--workload", "bsp:1@0:work=0us"],
            "work: duration \"0us\"",
        ),
        // --trace: a bad window, a window without a file, and runs without a timeline.
        (
            &["sim", "--trace", "x.json", "--trace-window", "3s..2s"],
            "--trace-window",
        ),
        (&["sim", "--trace-window", "1s..2s"], "--trace"),
        (&["experiment", "e3", "--trace", "x.json"], "--trace"),
        (
            &[
                "sim",
                "--machine",
                "kvm-guest-2",
                "--workload",
                "pingpong:futex@0,1",
                "--trace",
                "x.json",
            ],
            "--trace",
        ),
    ];
    for (args, needle) in cases {
        let out = ticklab(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(
            out.stdout.is_empty(),
            "{args:?}: no partial output on stdout"
        );
    }
}

#[test]
fn help_lists_every_experiment_and_machine_preset() {
    let out = ticklab(&["--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for name in ["e1", "e2", "xps13-7390", "kvm-guest-2", "server-2012-64"] {
        assert!(text.contains(name), "{name}: {text}");
    }
    let out = ticklab(&["experiment", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("nohz_full_aggressive") && text.contains("skew_tick=1"),
        "{text}"
    );
}

#[test]
fn experiment_names_ignore_case_and_keep_their_aliases() {
    for name in ["E1", "aggressive-nohz"] {
        let out = ticklab(&["experiment", name, "--duration", "100ms", "--json"]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["experiment"], "e1", "{name}");
    }
}

#[test]
fn e1_json_has_a_row_per_mode_and_load() {
    let out = ticklab(&["experiment", "e1", "--duration", "3s", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 2);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    for mode in ["nohz_full", "aggressive"] {
        for load in ["idle", "1", "2", "4", "8"] {
            let row = rows.iter().find(|r| r["mode"] == mode && r["load"] == load);
            let row = row.unwrap_or_else(|| panic!("missing row {mode} {load}"));
            assert!(row["irq_per_s"].as_f64().unwrap() > 0.0);
            assert!(row["watts"].as_f64().unwrap() > 0.0);
        }
    }
}

#[test]
fn scenario_file_equals_flags() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let file = format!("{dir}/experiments/e1-aggressive-2hogs.toml");
    let a = ticklab(&["sim", "--scenario", &file, "--duration", "2s", "--json"]);
    let b = ticklab(&[
        "sim",
        "--machine",
        "xps13-7390",
        "--kernel-version",
        "6.3",
        "--hz",
        "1000",
        "--nohz",
        "full",
        "--cmdline",
        "nohz_full=all nohz_full_aggressive",
        "--workload",
        "hogs:2",
        "--duration",
        "2s",
        "--warmup",
        "2s",
        "--seed",
        "1",
        "--json",
    ]);
    assert!(a.status.success() && b.status.success());
    let mut va: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let mut vb: serde_json::Value = serde_json::from_slice(&b.stdout).unwrap();
    va["label"] = serde_json::Value::Null;
    vb["label"] = serde_json::Value::Null;
    assert_eq!(va, vb);
}

#[test]
fn compare_prints_one_column_per_cmdline() {
    let out = ticklab(&[
        "compare",
        "--duration",
        "2s",
        "--workload",
        "hogs:1",
        "--cmdline",
        "nohz_full=all",
        "--cmdline",
        "nohz_full=all nohz_full_aggressive",
        "--cmdline",
        "nohz=off",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("nohz_full_aggressive") && text.contains("nohz=off"),
        "{text}"
    );
}

#[test]
fn unknown_parameters_are_kept_and_listed() {
    let out = ticklab(&[
        "sim",
        "--cmdline",
        "quiet splash nohz_full=1-7",
        "--duration",
        "1s",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("not modelled: quiet splash"), "{text}");
    assert!(text.contains("Full dynticks CPUs: 1-7"), "{text}");
}

/// Issue 23: a near miss (`nohz_ful=1`) is warned about once per command on stderr, in `sim`
/// (one scenario) and in `compare` with the same typo in two of its command lines.
#[test]
fn near_miss_warning_is_said_once_per_command() {
    let cases: [&[&str]; 3] = [
        &["sim", "--cmdline", "nohz_ful=1", "-D", "1s"],
        &["sim", "--cmdline", "nohz_ful=1", "-D", "1s", "--json"],
        &[
            "compare",
            "--cmdline",
            "nohz_ful=1",
            "--cmdline",
            "nohz_full=1 nohz_ful=1",
            "-D",
            "1s",
        ],
    ];
    for args in cases {
        let out = ticklab(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        let warnings = stderr
            .lines()
            .filter(|l| l.contains("did you mean `nohz_full`?"))
            .count();
        assert_eq!(warnings, 1, "{args:?}: {stderr}");
    }
}

/// Issue 14: a list the scenario's kernel release refuses is an input error that names the
/// token, the kernel's error class and what that kernel does at boot.
#[test]
fn boot_line_errors_say_what_the_kernel_does() {
    // (args, texts the error must contain)
    let cases: &[(&[&str], &[&str])] = &[
        (
            &[
                "sim",
                "--kernel-version",
                "5.10",
                "--cmdline",
                "nohz_full=1-N",
            ],
            &[
                "\"nohz_full=1-N\"",
                "5.12",
                "-EINVAL",
                "incorrect CPU range",
            ],
        ),
        (
            &["sim", "--cmdline", "quiet isolcpus=all"],
            &["token 2", "Skipped unknown flag all"],
        ),
        (
            &["sim", "--cmdline", "rcu_nocbs=0-98765432123456789"],
            &["-EOVERFLOW", "all CPUs set"],
        ),
        (
            &["sim", "--cmdline", "nohz_full=1-8"],
            &["-ERANGE", "at byte 10"],
        ),
    ];
    for (args, needles) in cases {
        let out = ticklab(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for needle in *needles {
            assert!(err.contains(needle), "{args:?}: {err}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // What the release reads is accepted, and what follows `--` is init's.
    let out = ticklab(&[
        "sim",
        "--cmdline",
        "nohz_full=1-3 -- nohz_full=0",
        "--duration",
        "100ms",
        "--warmup",
        "1ms",
    ]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(shown.contains("NO_HZ: Full dynticks CPUs: 1-3."), "{shown}");
    assert!(
        shown.contains("hands the rest to init unread: nohz_full=0"),
        "{shown}"
    );
}

#[test]
fn trace_writes_a_valid_timeline_with_the_same_bytes_twice() {
    let dir = std::env::temp_dir().join(format!("ticklab-cli-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |name: &str| {
        let path = dir.join(name);
        let p = path.to_str().unwrap();
        let args = [
            "sim",
            "--scenario",
            "experiments/e1-aggressive-2hogs.toml",
            "--duration",
            "300ms",
            "--warmup",
            "100ms",
            "--trace",
            p,
            "--trace-window",
            "150ms..400ms",
        ];
        let out = ticklab(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read_to_string(&path).unwrap()
    };
    let a = run("a.json");
    let c = ticklab_trace::check(&a).unwrap();
    assert_eq!(c.tracks, 8, "{c:?}");
    assert!(a == run("b.json"), "same seed, same bytes");
    std::fs::remove_dir_all(&dir).unwrap();
}

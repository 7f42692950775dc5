//! Issue 17 end to end: every reproducer that reaches the binary through a flag or a scenario
//! file exits 2 naming the key (or runs correctly), and a closed or full stdout ends quietly or
//! with one line, never a panic (crates/cli/error.rs, docs/validation.md).

use std::process::{Command, Output, Stdio};
use ticklab_schema::scenario::Scenario;

fn ticklab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .args(args)
        .output()
        .expect("run ticklab")
}

/// A scenario file with an inline machine (what `host calibrate --out` writes): the 2-CPU
/// guest, a 10 ms run.
fn inline_scenario() -> String {
    let text = "machine = \"kvm-guest-2\"\n[kernel]\nversion = \"6.10\"\nhz = 1000\nnohz = \"full\"\n[run]\nduration = \"10ms\"\n";
    Scenario::from_toml(text, "base")
        .expect("the base parses")
        .to_toml()
}

fn write_temp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ticklab-input-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write scenario");
    path
}

const BG: &str = "\n[[background]]\nname = \"b\"\nkind = \"hrtimer\"\nplacement = \"per_cpu\"\nprovenance = \"t\"\n";

#[test]
fn scenario_reproducers_exit_2_naming_the_key() {
    let base = inline_scenario();
    let many_states = {
        let at = base.find("[[machine.idle_states]]").expect("states");
        let state = "[[machine.idle_states]]\nname = \"X\"\nexit_latency_ns = 1\ntarget_residency_ns = 1\npolling = false\ncore_w = 0.0\ncore_w_pkg_active = 0.0\nwake_energy_uj = 0.0\n\n";
        format!("{}{}{}", &base[..at], state.repeat(63), &base[at..])
    };
    // (file name, scenario text, text the error must contain)
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "idle65",
            many_states,
            "machine.idle_states: expected 1 to 10",
        ),
        (
            "nan",
            base.replacen("core_w = 0.0", "core_w = nan", 1),
            "machine.idle_states[0].core_w",
        ),
        (
            "max0",
            base.replace("max_delta_ns = 9223372036854775807", "max_delta_ns = 0"),
            "machine.clockevent",
        ),
        (
            "minmax",
            base.replace("min_delta_ns = 1000", "min_delta_ns = 18446744073709551615"),
            "machine.clockevent",
        ),
        (
            "wide",
            base.replace("cores_per_socket = 2", "cores_per_socket = 2147483649"),
            "machine.topology",
        ),
        (
            "wrap",
            base.replace("cores_per_socket = 2", "cores_per_socket = 2147483650")
                .replace("sockets = 1", "sockets = 2"),
            "machine.topology",
        ),
        (
            "cpus",
            format!("{base}{BG}period_ns = 1000000\ncpus = \"5\"\n"),
            "background[4].cpus: CPU 5",
        ),
        (
            "span",
            format!("{base}{BG}period_ns = 1000000\ncpus = \"0-4294967294\"\n"),
            "CPUs below 8192",
        ),
        (
            "inf",
            format!("{base}{BG}rate_hz = inf\n"),
            "background[4].rate_hz",
        ),
        (
            "p0",
            format!("{base}{BG}period_ns = 0\n"),
            "background[4].period_ns",
        ),
        (
            "unit",
            base.replace("work_unit_ns = 1.0", "work_unit_ns = -1.0"),
            "machine.costs.work_unit_ns",
        ),
        (
            "typo",
            base.replace("threads_per_core = 1", "threads_per_cor = 1"),
            "threads_per_cor",
        ),
        (
            "huge",
            base.replace("cores_per_socket = 2", "cores_per_socket = 4096")
                .replace("duration = \"10000000ns\"", "duration = \"168h\""),
            "--yes",
        ),
    ];
    for (name, text, want) in cases {
        let path = write_temp(&format!("{name}.toml"), &text);
        let out = ticklab(&["sim", "--scenario", path.to_str().expect("utf-8 path")]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
}

#[test]
fn flag_reproducers() {
    // (args, exit code, text stderr must contain)
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["sim", "--workload", "hogs:4294967297", "--duration", "10ms"],
            2,
            "the hog count",
        ),
        (
            &["sim", "--workload", "hogs:4294967296", "--duration", "10ms"],
            2,
            "the hog count",
        ),
        (
            &[
                "sim",
                "--machine",
                "kvm-guest-2",
                "--workload",
                "frames:1000@1:loop=18446744073000000000",
                "--duration",
                "10ms",
            ],
            2,
            "work per frame",
        ),
        (
            &["sim", "--cmdline", "nohz_ful=1-3", "--duration", "10ms"],
            0,
            "did you mean `nohz_full`?",
        ),
        (
            &[
                "sim",
                "--cmdline",
                "cpuidle.governor=bogus",
                "--duration",
                "10ms",
            ],
            2,
            "--cmdline: kernel command line: cpuidle.governor=bogus",
        ),
        (&["sim", "--cmdline=-foo", "--duration", "10ms"], 0, ""),
        (&["sim", "--scenario", "/dev/zero"], 2, "larger than 4 MiB"),
        (&["experiment", "e2", "--duration", "168h"], 2, "--yes"),
        (&["host", "why", "--cpus", "0-4294967294"], 2, "--cpus"),
    ];
    for (args, code, want) in cases {
        let out = ticklab(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn a_long_repeated_command_line_is_refused_at_the_token_limit() {
    let line = vec!["nohz_full=1-7"; 200_000].join(" ");
    let text = format!(
        "machine = \"xps13-7390\"\n[kernel]\nversion = \"6.3\"\nhz = 1000\nnohz = \"full\"\ncmdline = \"{line}\"\n[run]\nduration = \"10ms\"\n"
    );
    let path = write_temp("long-cmdline.toml", &text);
    let out = ticklab(&["sim", "--scenario", path.to_str().expect("utf-8 path")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bytes") || err.contains("parameters"), "{err}");
}

/// A reader that goes away before the output is written: exit 141, nothing on stderr.
#[test]
fn a_closed_stdout_ends_quietly() {
    let commands: &[&[&str]] = &[
        &["sim", "--duration", "100ms"],
        &[
            "compare",
            "--cmdline",
            "",
            "--cmdline",
            "nohz_full=1-7",
            "--duration",
            "100ms",
        ],
        &["experiment", "e1", "--duration", "100ms"],
        &["experiment", "e1", "--duration", "100ms", "--json"],
        &["bench", "--duration", "100ms"],
    ];
    for args in commands {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ticklab"))
            .args(*args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ticklab");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0 | 141)),
            "{args:?}: {:?} {err}",
            out.status
        );
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// A full disk: one line on stderr and exit 1.
#[test]
fn a_full_stdout_is_one_line() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // not Linux: nothing to check
    };
    let out = Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .args(["sim", "--duration", "100ms"])
        .stdout(full)
        .output()
        .expect("run ticklab");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("No space left on device"), "{err}");
}

/// Issue 25 item 3: every entry point that runs the twin refuses work above the compute limit
/// without `--yes`, and counts the whole command's work: two configurations (or a sweep's
/// two seeds) each under the limit but over it together are refused. None of these starts a
/// run, so each returns at once.
#[test]
fn the_compute_limit_holds_at_every_entry() {
    let m = &["--machine", "server-2012-64"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        // One run above the limit: 64 CPUs × 168 h at HZ=1000.
        ([&["sim"], &m[..], &["-D", "168h"]].concat(), "--yes"),
        // The guest model counts its round trips.
        (
            vec![
                "sim",
                "--machine",
                "kvm-guest-2",
                "--workload",
                "pingpong:futex@0,1:n=100000000000",
            ],
            "--yes",
        ),
        // Each configuration is under the limit (64 CPUs × 60 h ≈ 1.4e10), both are above.
        (
            [
                &["compare"],
                &m[..],
                &["-D", "60h", "--cmdline", "", "--cmdline", "nohz=off"],
            ]
            .concat(),
            "2 runs",
        ),
        // The sweep's runs summed, not its base alone.
        (
            [&["sweep"], &m[..], &["-D", "60h", "--seeds", "2"]].concat(),
            "the sweep's 2 runs",
        ),
        // E3's guest model at 10^11 switches per configuration.
        (
            vec!["experiment", "e3", "--switches", "100000000000"],
            "--switches: ",
        ),
    ];
    for (args, want) in cases {
        let out = ticklab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("above the limit"), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: no partial output");
    }
}

//! The command-line conventions kernel engineers expect (issue 16): cyclictest's `-D` and
//! rtla's `-d` for the duration, compound durations, `-q`, `--scenario -`, completions and a
//! man page generated from the one clap definition.

use std::io::Write;
use std::process::{Command, Stdio};

mod common;
use common::{stdout_of as ok, ticklab};

const SIM: &[&str] = &["sim", "--machine", "kvm-guest-2", "--json", "-q"];

#[test]
fn duration_short_flags_and_compound_units_agree() {
    let with = |flag: &[&str]| ok(&[SIM, flag].concat());
    let long = with(&["--duration", "1m30s"]);
    assert!(long.contains("\"duration_ns\": 90000000000"), "{long}");
    // cyclictest spells it -D, rtla -d; 90s is the same duration written another way.
    for other in [
        &["-D", "1m30s"][..],
        &["-d", "1m30s"],
        &["-D", "90s"],
        &["-d", "1m30000ms"],
    ] {
        assert_eq!(with(other), long, "{other:?}");
    }
    // A compound duration in the wrong order is refused, naming it.
    let bad = ticklab(&[SIM, &["-D", "30m1h"]].concat());
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("\"30m1h\""));
}

#[test]
fn scenario_dash_reads_standard_input() {
    let text = "machine = \"kvm-guest-2\"\nworkload = \"hogs:1\"\n[kernel]\nversion = \"6.3\"\n\
                hz = 250\nnohz = \"full\"\ncmdline = \"nohz_full=1\"\n[run]\nduration = \"200ms\"\n";
    let dir = std::env::temp_dir().join(format!("ticklab-stdin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("s.toml");
    std::fs::write(&file, text).expect("write scenario");
    let from_file = ok(&[
        "sim",
        "--json",
        "-q",
        "--scenario",
        file.to_str().unwrap_or(""),
    ]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .args(["sim", "--json", "-q", "--scenario", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn ticklab");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait ticklab");
    assert!(out.status.success());
    // The label names the origin; everything else is the same report.
    let strip = |s: &str| {
        s.lines()
            .filter(|l| !l.contains("\"label\""))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        strip(&String::from_utf8_lossy(&out.stdout)),
        strip(&from_file)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn completions_and_man_page_cover_the_subcommands() {
    let bash = ok(&["completions", "bash"]);
    assert!(bash.contains("_ticklab()"), "{bash}");
    for sub in ["sweep", "merge", "experiment", "completions"] {
        assert!(bash.contains(sub), "bash completion lacks {sub}");
    }
    assert!(ok(&["completions", "zsh"]).contains("#compdef ticklab"));
    let man = ok(&["man"]);
    assert!(man.contains(".TH ticklab 1"), "{man}");
    assert!(man.contains("sweep"));
    let bad = ticklab(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn every_subcommand_has_a_man_page_with_examples() {
    let sim = ok(&["man", "sim"]);
    assert!(sim.contains(".TH ticklab-sim 1"), "{sim}");
    assert!(sim.contains(".SH EXAMPLES"), "{sim}");
    let run = ok(&["man", "host", "run"]);
    assert!(run.contains(".TH ticklab-host-run 1"), "{run}");
    let bad = ticklab(&["man", "frob"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("frob"));
    let dir = std::env::temp_dir().join(format!("ticklab-man-{}", std::process::id()));
    let out = ticklab(&["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for page in [
        "ticklab.1",
        "ticklab-sim.1",
        "ticklab-host-calibrate.1",
        "ticklab-vm.1",
    ] {
        assert!(dir.join(page).is_file(), "{page} not written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_gives_an_example_of_every_experiment_preset_and_workload() {
    let help = ok(&["--help"]);
    for want in [
        "e.g. ticklab experiment e1",
        "e.g. ticklab experiment e4",
        "e.g. ticklab sim --machine",
        "e.g. --workload hogs:2@1,3",
        "e.g. --workload pingpong:futex@0,1",
        "epyc-7252-2s",
        "ticklab sweep --set",
    ] {
        assert!(help.contains(want), "--help lacks {want:?}");
    }
}

//! Snapshots of `ticklab sim`'s text for each kind of workload result (issue 15: the text
//! mode prints every result it has, and says "not modelled" where the machine has no power
//! model). The twin is deterministic, so the whole stdout is the snapshot.

use std::process::Command;

/// `ticklab sim --machine kvm-guest-2 --hz 250` with `args`.
fn guest(args: &[&str]) -> String {
    let mut all = vec!["--machine", "kvm-guest-2", "--hz", "250"];
    all.extend_from_slice(args);
    sim(&all)
}

fn sim(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .arg("sim")
        .args(args)
        .output()
        .expect("run ticklab");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn frames_on_a_guest_print_the_frame_and_wakeup_tables_and_no_watts() {
    insta::assert_snapshot!(guest(&[
        "--workload",
        "frames:1000@1:loop=50000",
        "--duration",
        "1s",
    ]));
}

#[test]
fn frames_with_histogram_print_both_histograms_in_cyclictest_layout() {
    insta::assert_snapshot!(guest(&[
        "--workload",
        "frames:1000@1:loop=50000",
        "--duration",
        "1s",
        "--histogram=16",
    ]));
}

#[test]
fn a_syscall_loop_prints_its_line_and_breakdown() {
    insta::assert_snapshot!(guest(&[
        "--workload",
        "syscall:getpid@1:n=200000",
        "--duration",
        "1s",
    ]));
}

#[test]
fn a_pingpong_prints_its_round_trip() {
    insta::assert_snapshot!(guest(&["--workload", "pingpong:futex@0,1:n=2000"]));
}

#[test]
fn a_machine_with_a_power_model_still_prints_watts() {
    let text = sim(&["--workload", "hogs:1", "--duration", "1s"]);
    assert!(
        text.contains("package: ") && text.contains(" W, "),
        "{text}"
    );
    assert!(!text.contains("not modelled"), "{text}");
}

#[test]
fn histogram_without_frames_is_refused_with_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .args([
            "sim",
            "--workload",
            "hogs:1",
            "--duration",
            "1s",
            "--histogram",
        ])
        .output()
        .expect("run ticklab");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--histogram: workload hogs:1"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .args(["host", "run", "--workload", "frames:100@0", "--histogram=0"])
        .output()
        .expect("run ticklab");
    assert_eq!(out.status.code(), Some(2));
}

/// `nohz_full=` on a build without NO_HZ_FULL: the kernel's "nohz unsupported" message is
/// not left among the kernel messages only, the text says so on a line of its own.
#[test]
fn nohz_full_on_a_kernel_built_without_it_gets_a_line_of_its_own() {
    // A hog on CPU 1 of a build with NO_HZ `nohz` (idle or full) and `nohz_full=1`.
    let run = |nohz| {
        guest(&[
            "--nohz",
            nohz,
            "--cmdline",
            "nohz_full=1",
            "--workload",
            "hogs:1@1",
            "--duration",
            "100ms",
        ])
    };
    let text = run("idle");
    let line = "nohz_full: not possible on this kernel: built without CONFIG_NO_HZ_FULL";
    let at = text
        .lines()
        .position(|l| l.starts_with(line))
        .unwrap_or_else(|| panic!("no line {line:?} in\n{text}"));
    // Right under the cmdline, above the table, not after the kernel messages.
    assert!(
        text.lines()
            .nth(at - 1)
            .is_some_and(|l| l.starts_with("cmdline: ")),
        "{text}"
    );
    // The same build with the option does not get it.
    let full = run("full");
    assert!(!full.contains(line), "{full}");
}

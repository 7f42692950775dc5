//! `ticklab host audit` end to end on the host crate's fixture trees (`--root`): the report,
//! `--json`, and the exit codes (3 when a check fails, 2 for bad input, 0 otherwise).

use std::process::Command;

fn fixture(rel: &str) -> String {
    format!("{}/crates/host/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn ticklab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .args(args)
        .output()
        .expect("run ticklab")
}

#[test]
fn a_failed_check_exits_3_after_the_whole_report() {
    let root = fixture("handmade/audit_4cpu_nohz_full");
    let out = ticklab(&["host", "audit", "--root", &root]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stdout.contains("FAIL  managed_irqs"), "{stdout}");
    assert!(
        stdout.ends_with("19 checks: 7 pass, 11 warn, 1 fail, 0 n/a, 0 unknown\n"),
        "{stdout}"
    );
    assert_eq!(stderr, "ticklab: 1 check(s) failed: managed_irqs\n");

    let out = ticklab(&["host", "audit", "--root", &root, "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["cpus"], "2-3");
    let checks = doc["checks"].as_array().expect("checks");
    assert_eq!(checks.len(), 19);
    let managed = checks
        .iter()
        .find(|c| c["id"] == "managed_irqs")
        .expect("managed_irqs");
    assert_eq!(managed["status"], "fail");
    assert!(
        managed["fix"]
            .as_str()
            .is_some_and(|f| f.contains("managed_irq"))
    );
}

#[test]
fn no_failed_check_exits_0() {
    // The tuned host's CPU 3 alone: warnings (its sibling, its governor), but the managed NVMe
    // queue that fails the audit of 2-3 is on CPU 2.
    let root = fixture("handmade/audit_4cpu_nohz_full");
    let out = ticklab(&["host", "audit", "--root", &root, "--cpus", "3"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn bad_input_exits_2() {
    let captured = fixture("x86-kvm-6.18");
    let cases: &[(&[&str], &str)] = &[
        (&["--cpus", "7"], "--cpus: cpulist \"7\": CPUs below 2"),
        (&["--cpus", "x"], "--cpus"),
        (&[], "name the CPUs with --cpus"),
    ];
    for (extra, want) in cases {
        let mut args = vec!["host", "audit", "--root", &captured];
        args.extend_from_slice(extra);
        let out = ticklab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: partial output");
    }
    let out = ticklab(&["host", "audit", "--root", "/nonexistent", "--cpus", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--root /nonexistent"));
}

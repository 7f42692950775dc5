//! `--format openmetrics` of `host irqs` and `host run`, checked the way Prometheus checks an
//! exposition: `promtool check metrics` (Debian's `prometheus` package; scripts/setup.sh
//! installs it) must accept what the binary writes on this host. `#[ignore]`d where promtool
//! is absent; CI runs the ignored tests as root after installing it.

use std::io::Write;
use std::process::{Command, Stdio};

mod common;
use common::stdout_of as ticklab;

/// Runs `promtool check metrics` on `text`; panics with promtool's words when it objects.
fn promtool_check(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (apt-get install prometheus, or scripts/setup.sh)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {said}\n--- text ---\n{text}"
    );
}

/// What every exposition must have whatever promtool's version checks.
fn common_shape(text: &str, family: &str) {
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(text.contains(&format!("# HELP {family} ")), "{text}");
    assert!(text.contains(&format!("# TYPE {family} gauge")), "{text}");
}

#[test]
#[ignore = "needs promtool"]
fn host_irqs_openmetrics_passes_promtool() {
    let text = ticklab(&[
        "host",
        "irqs",
        "--duration",
        "200ms",
        "--all",
        "--format",
        "openmetrics",
    ]);
    common_shape(&text, "ticklab_host_interrupts_per_second");
    assert!(text.contains("irq=\"LOC\""), "{text}");
    promtool_check(&text);
}

#[test]
#[ignore = "needs promtool"]
fn host_run_openmetrics_passes_promtool() {
    // Every workload kind the metrics cover: frames, a hog, a ping-pong, a syscall loop.
    let text = ticklab(&[
        "host",
        "run",
        "--workload",
        "frames:100@0:loop=0+hogs:1@1+pingpong:pipe@0,1:n=2000+syscall:getpid@0:n=100000",
        "--duration",
        "300ms",
        "--no-fifo",
        "--no-mlock",
        "--format",
        "openmetrics",
    ]);
    common_shape(&text, "ticklab_local_timer_interrupts_per_second");
    for family in [
        "ticklab_frame_jitter_seconds",
        "ticklab_pingpong_switch_seconds",
        "ticklab_syscall_call_seconds",
    ] {
        assert!(text.contains(&format!("\n{family}{{")), "{family}: {text}");
    }
    promtool_check(&text);
}

#[test]
fn openmetrics_and_json_are_exclusive() {
    let out = Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .args(["host", "irqs", "--json", "--format", "openmetrics"])
        .output()
        .expect("run ticklab");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--format") && err.contains("--json"), "{err}");
}

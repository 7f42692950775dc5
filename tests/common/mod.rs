//! What the integration tests share: running the built `ticklab` binary.
// Each test crate compiles this module on its own and uses part of it.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs the built binary with `args`.
pub(crate) fn ticklab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ticklab"))
        .args(args)
        .output()
        .expect("run ticklab")
}

/// Runs the built binary with `args`, asserts it succeeded (stderr in the message) and
/// returns its stdout.
pub(crate) fn stdout_of(args: &[&str]) -> String {
    let out = ticklab(args);
    assert!(
        out.status.success(),
        "ticklab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

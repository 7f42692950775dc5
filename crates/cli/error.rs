//! Errors the binary maps to exit codes, and the one exit-code policy of every command.
//!
//! | code | when |
//! |---|---|
//! | 0 | the command did its work (a warning on stderr does not change that) |
//! | 1 | anything else failed (I/O, a tool missing, the host refused something, a full disk) |
//! | 2 | bad input: a flag, a scenario file, a machine, a workload spec, a command line |
//! | 3 | `host audit` ran and at least one check failed (the report is on stdout) |
//! | 4 | the host was too loaded to measure: `host calibrate` refused to fit from a contaminated phase (without `--force`, or `--tolerate-steal` where steal was all) |
//! | 130 | interrupted by SIGINT or SIGTERM, after a partial report (one line on stderr says so) |
//! | 141 | stdout was closed by the reader (`ticklab … \| head`): stop quietly, as a tool killed by SIGPIPE does |
//!
//! Bad input (a malformed command line, a cpulist out of range, a scenario typo, a missing
//! file, no permission) is an [`InputError`]. An interrupted run is an [`Interrupted`] error
//! (the command prints its partial report first). A write to stdout that fails is classified
//! by [`exit_for_io`]: a closed pipe ends quietly, anything else (`> /dev/full`) is one line on
//! stderr and code 1. [`exit_code`] is the whole policy; `main` applies it to every command.
//!
//! The libraries return typed errors (the twin's [`ticklab_twin::SimError`] and
//! [`ticklab_twin::sweep::SweepError`]; the host lab's
//! [`ticklab_host::harness::HarnessError`], [`ticklab_host::calibrate::CalibrateError`],
//! [`ticklab_host::calibrate::SimulatorError`] (the twin's error behind a seam),
//! [`ticklab_host::probe::why::WhyError`], [`ticklab_host::audit::AuditError`] and
//! [`ticklab_host::probe::coarse_staleness::StalenessError`]; the VM lab's
//! [`ticklab_vm::GuestKernelError`], [`ticklab_vm::KconfigError`],
//! [`ticklab_vm::CompareError`], [`ticklab_vm::kbuild::BuildError`] and the kernel cache's and
//! patches' errors). Each says here whether the user's input is at fault ([`Classified`]),
//! and [`library_error`] is the one place that turns that answer into an exit code; the
//! policy table test holds one row per kind. [`message`] is how `main` prints any of them.

use std::fmt;
use std::io;

/// Exit code of a bad input.
pub(crate) const EXIT_INPUT: u8 = 2;
/// Exit code of a `host audit` with a failed check: the audit itself worked, so neither 1
/// (I/O) nor 2 (input).
pub(crate) const EXIT_AUDIT_FAILED: u8 = 3;
/// Exit code of a measurement refused because other load contaminated it (`host calibrate`
/// without `--force`, or `--tolerate-steal` where steal was all): neither the user's input
/// (2) nor a failure to read or run (1).
pub(crate) const EXIT_CONTAMINATED: u8 = 4;
/// Exit code of a failure that is not the user's input.
pub(crate) const EXIT_FAILURE: u8 = 1;
/// Exit code when the reader of stdout went away: 128 + SIGPIPE, what a shell reports for a
/// program the signal killed.
pub(crate) const EXIT_BROKEN_PIPE: u8 = 128 + 13;

/// An error in what the user gave us; exit code 2.
#[derive(Debug)]
pub(crate) struct InputError(pub(crate) String);

impl InputError {
    /// Wraps a message naming the input and what was expected.
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        InputError(msg.into())
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// Shorthand: `Err(input_error(...))?`.
pub(crate) fn input_error(msg: impl Into<String>) -> anyhow::Error {
    InputError::new(msg).into()
}

/// A library error that knows whether the user's input is at fault.
pub(crate) trait Classified: std::error::Error + Send + Sync + 'static {
    /// Bad input (exit code 2) rather than the host's failure (exit code 1).
    fn is_input(&self) -> bool;
}

impl Classified for ticklab_host::harness::HarnessError {
    fn is_input(&self) -> bool {
        ticklab_host::harness::HarnessError::is_input(self)
    }
}

impl Classified for ticklab_host::calibrate::CalibrateError {
    fn is_input(&self) -> bool {
        ticklab_host::calibrate::CalibrateError::is_input(self)
    }
}

impl Classified for ticklab_host::probe::why::WhyError {
    /// A CPU that is not online is the user's `--cpus`; the rest are the host's.
    fn is_input(&self) -> bool {
        matches!(
            self,
            ticklab_host::probe::why::WhyError::CpuNotOnline { .. }
        )
    }
}

/// Every way of not finding a guest kernel is the user's `--kernel`, `--kernel-config` or
/// the `/boot` the default reads.
impl Classified for ticklab_vm::GuestKernelError {
    fn is_input(&self) -> bool {
        true
    }
}

/// A config file that does not parse is the user's.
impl Classified for ticklab_vm::KconfigError {
    fn is_input(&self) -> bool {
        true
    }
}

/// A scenario the twin refused is the user's (a file, flags, a command line, a sweep point);
/// a report missing the result its run was for is the twin's.
impl Classified for ticklab_twin::SimError {
    fn is_input(&self) -> bool {
        ticklab_twin::SimError::is_input(self)
    }
}

/// A sweep's run the twin refused is classified as the twin's error; the journal's I/O error
/// (`sweep -o FILE`) is the machine's.
impl Classified for ticklab_twin::sweep::SweepError<io::Error> {
    fn is_input(&self) -> bool {
        match self {
            ticklab_twin::sweep::SweepError::Run { source, .. } => source.is_input(),
            ticklab_twin::sweep::SweepError::Row(_) => false,
        }
    }
}

/// The twin behind a library's seam: the binary's adapters box a [`ticklab_twin::SimError`],
/// classified as itself; any other error there is a stand-in's refusal of the input.
impl Classified for ticklab_host::calibrate::SimulatorError {
    fn is_input(&self) -> bool {
        self.get_ref()
            .downcast_ref::<ticklab_twin::SimError>()
            .is_none_or(ticklab_twin::SimError::is_input)
    }
}

/// The twin refusing a guest's scenario is classified as the twin's error; a recorded
/// workload that no longer parses is the user's (the record given to `vm table --retwin`).
impl Classified for ticklab_vm::CompareError {
    fn is_input(&self) -> bool {
        match self {
            ticklab_vm::CompareError::Twin(e) => e.is_input(),
            ticklab_vm::CompareError::Workload { .. } => true,
        }
    }
}

/// A CPU the staleness reader cannot be pinned to is the user's `--cpu`; a panic is ours.
impl Classified for ticklab_host::probe::coarse_staleness::StalenessError {
    fn is_input(&self) -> bool {
        ticklab_host::probe::coarse_staleness::StalenessError::is_input(self)
    }
}

/// `--kernel WORD` naming no build, or a build that is not a usable kernel: the user's.
impl Classified for ticklab_vm::kbuild::cache::KernelLookupError {
    fn is_input(&self) -> bool {
        true
    }
}

/// A `--patch` file that cannot be read or is not a unified diff is the user's.
impl Classified for ticklab_vm::kbuild::patch::PatchReadError {
    fn is_input(&self) -> bool {
        true
    }
}

/// `host audit`'s CPUs not online, or nothing isolated to audit: the user's `--cpus` or the
/// boot line they audit.
impl Classified for ticklab_host::audit::AuditError {
    fn is_input(&self) -> bool {
        true
    }
}

/// A build the user's series, patch or fragment cannot make is theirs; a missing tool, too
/// little space or a failed step is the machine's.
impl Classified for ticklab_vm::kbuild::BuildError {
    fn is_input(&self) -> bool {
        matches!(self, ticklab_vm::kbuild::BuildError::Input(_))
    }
}

/// The exit-code policy for a library's typed error: the user's input is an [`InputError`]
/// (exit code 2) with the library's message; anything else keeps the error and its causes
/// (exit code 1).
pub(crate) fn library_error<E: Classified>(e: E) -> anyhow::Error {
    if e.is_input() {
        input_error(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

/// [`library_error`] for an error about one input, which an input error's message names
/// first (`--cpus: CPU 7 is not online ...`).
pub(crate) fn library_error_naming<E: Classified>(input: &str, e: E) -> anyhow::Error {
    if e.is_input() {
        input_error(format!("{input}: {e}"))
    } else {
        anyhow::Error::new(e)
    }
}

/// A run stopped early by SIGINT or SIGTERM, after it printed its partial report (marked as
/// interrupted): exit code [`EXIT_INTERRUPTED`], whichever of the two signals it was.
#[derive(Debug)]
pub(crate) struct Interrupted(pub(crate) String);

/// Exit code of an interrupted run.
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Interrupted {}

/// The error a host command returns after printing a partial report because `reason` (a
/// signal's name) stopped it.
pub(crate) fn interrupted(reason: &str, what: &str) -> anyhow::Error {
    Interrupted(format!("interrupted by {reason}: {what}")).into()
}

/// `host audit` found a failed check (after printing its report): exit code
/// [`EXIT_AUDIT_FAILED`].
#[derive(Debug)]
pub(crate) struct AuditFailed(pub(crate) String);

impl fmt::Display for AuditFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AuditFailed {}

/// A measurement refused because other load contaminated it: exit code
/// [`EXIT_CONTAMINATED`].
#[derive(Debug)]
pub(crate) struct Contaminated(pub(crate) String);

impl fmt::Display for Contaminated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Contaminated {}

/// What `main` does with the end of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Exit with this code and print nothing more.
    Quiet(u8),
    /// Print `ticklab: <message>` on stderr ([`message`]: the error and its causes) and exit
    /// with this code.
    Report(u8),
}

impl Exit {
    /// The process exit code.
    pub(crate) fn code(&self) -> u8 {
        match self {
            Exit::Quiet(c) | Exit::Report(c) => *c,
        }
    }
}

/// A failed write to stdout: quiet for a closed pipe, reported otherwise.
pub(crate) fn exit_for_io(e: &io::Error) -> Exit {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Exit::Quiet(EXIT_BROKEN_PIPE)
    } else {
        Exit::Report(EXIT_FAILURE)
    }
}

/// The exit-code policy (module docs) for an error a command returned.
pub(crate) fn exit_code(e: &anyhow::Error) -> Exit {
    for cause in e.chain() {
        if cause.downcast_ref::<AuditFailed>().is_some() {
            return Exit::Report(EXIT_AUDIT_FAILED);
        }
        if cause.downcast_ref::<Contaminated>().is_some() {
            return Exit::Report(EXIT_CONTAMINATED);
        }
        if cause.downcast_ref::<Interrupted>().is_some() {
            // The partial report is above; one line says why it is partial.
            return Exit::Report(EXIT_INTERRUPTED);
        }
        if let Some(io) = cause
            .downcast_ref::<io::Error>()
            .filter(|io| io.kind() == io::ErrorKind::BrokenPipe)
        {
            return exit_for_io(io);
        }
        if cause
            .downcast_ref::<serde_json::Error>()
            .is_some_and(|j| j.io_error_kind() == Some(io::ErrorKind::BrokenPipe))
        {
            return Exit::Quiet(EXIT_BROKEN_PIPE);
        }
    }
    if e.downcast_ref::<InputError>().is_some() {
        Exit::Report(EXIT_INPUT)
    } else {
        Exit::Report(EXIT_FAILURE)
    }
}

/// The line `main` prints for an error: its message and each cause after it, joined by `: `,
/// leaving out a cause whose text the line already holds. A library error that names its
/// cause in its own message (`twin: scenario: ...`) and also keeps it as its `source` (so
/// that [`exit_code`] can find an `io::Error` below it) is then said once, not twice.
pub(crate) fn message(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.is_empty() {
            line = text;
        } else if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

/// The error of a `print!` to stdout that panicked (`failed printing to stdout: …`): the
/// standard library formats the `io::Error` into the panic message, whose `(os error N)`
/// gives the errno back. `None` for any other panic.
pub(crate) fn stdout_panic_error(payload: &(dyn std::any::Any + Send)) -> Option<io::Error> {
    let msg = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())?;
    let rest = msg.strip_prefix("failed printing to stdout: ")?;
    let errno = rest
        .rsplit_once("(os error ")
        .and_then(|(_, n)| n.strip_suffix(')'))
        .and_then(|n| n.parse::<i32>().ok());
    Some(match errno {
        Some(n) => io::Error::from_raw_os_error(n),
        None => io::Error::other(rest.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_host::calibrate::SimulatorError;
    use ticklab_host::harness::HarnessError;
    use ticklab_host::probe::coarse_staleness::StalenessError;
    use ticklab_schema::workload::Workload;
    use ticklab_twin::sweep::SweepError;
    use ticklab_twin::{ConfigError, SimError};
    use ticklab_vm::CompareError;
    use ticklab_vm::kbuild::BuildError;
    use ticklab_vm::kbuild::cache::KernelLookupError;
    use ticklab_vm::kbuild::patch::PatchReadError;

    #[test]
    // Over 100 lines because it is one table: a row per error type and the exit code it must give.
    fn exit_code_policy_table() {
        let pipe = || io::Error::from(io::ErrorKind::BrokenPipe);
        let cases: Vec<(anyhow::Error, Exit)> = vec![
            (input_error("bad flag"), Exit::Report(2)),
            (anyhow::anyhow!("other"), Exit::Report(1)),
            (interrupted("SIGINT", "partial"), Exit::Report(130)),
            (interrupted("SIGTERM", "partial"), Exit::Report(130)),
            (
                AuditFailed("2 checks failed".into()).into(),
                Exit::Report(3),
            ),
            (pipe().into(), Exit::Quiet(141)),
            (
                anyhow::Error::from(pipe()).context("writing"),
                Exit::Quiet(141),
            ),
            (serde_json::Error::io(pipe()).into(), Exit::Quiet(141)),
            (
                io::Error::from_raw_os_error(libc_enospc()).into(),
                Exit::Report(1),
            ),
            // The libraries' typed errors, through library_error.
            (
                library_error(SimError::from(ConfigError::SyscallAllIsolated)),
                Exit::Report(2),
            ),
            (
                library_error(SimError::NoSyscallResult { run: "e4".into() }),
                Exit::Report(1),
            ),
            (
                library_error(SweepError::<io::Error>::Run {
                    scenario: "base".into(),
                    seed: 1,
                    source: Box::new(SimError::Unsupported("two syscall loops".into())),
                }),
                Exit::Report(2),
            ),
            (
                library_error(SweepError::Row(io::Error::from_raw_os_error(libc_enospc()))),
                Exit::Report(1),
            ),
            (
                library_error(CompareError::Twin(SimulatorError::new(
                    SimError::Unsupported("two syscall loops".into()),
                ))),
                Exit::Report(2),
            ),
            (
                library_error(CompareError::Twin(SimulatorError::new(
                    SimError::NoSyscallResult { run: "e4".into() },
                ))),
                Exit::Report(1),
            ),
            (
                library_error(CompareError::Workload {
                    spec: "bogus".into(),
                    source: Workload::parse("bogus", 2).unwrap_err(),
                }),
                Exit::Report(2),
            ),
            (
                library_error(ticklab_host::calibrate::CalibrateError::Twin(
                    SimulatorError::new(SimError::Unsupported("two syscall loops".into())),
                )),
                Exit::Report(1),
            ),
            (
                library_error(StalenessError::Pin {
                    cpu: 7,
                    source: io::Error::from_raw_os_error(22),
                }),
                Exit::Report(2),
            ),
            (library_error(StalenessError::Panicked), Exit::Report(1)),
            (
                library_error(HarnessError::Pin {
                    cpu: 7,
                    source: io::Error::from_raw_os_error(22),
                }),
                Exit::Report(2),
            ),
            (
                library_error(KernelLookupError::Ambiguous {
                    word: "cccc".into(),
                    keys: vec!["cccc1111".into(), "cccc2222".into()],
                }),
                Exit::Report(2),
            ),
            (
                library_error(PatchReadError::NotADiff("notes.txt".into())),
                Exit::Report(2),
            ),
            (
                library_error(BuildError::Input("no package for 5.99".into())),
                Exit::Report(2),
            ),
            (
                library_error(BuildError::Environment("make: cannot run".into())),
                Exit::Report(1),
            ),
            (
                library_error(ticklab_host::audit::AuditError::NothingIsolated),
                Exit::Report(2),
            ),
        ];
        for (e, want) in cases {
            assert_eq!(exit_code(&e), want, "{e:#}");
        }
    }

    #[test]
    fn a_cause_the_message_already_names_is_said_once() {
        #[derive(Debug)]
        struct Outer(io::Error);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "twin: {}", self.0)
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let io = || io::Error::from_raw_os_error(libc_enospc());
        let e = anyhow::Error::new(Outer(io()));
        assert_eq!(message(&e), format!("twin: {}", io()));
        // A cause the message does not name is added after it, as `{:#}` does.
        let e = anyhow::Error::from(io()).context("writing the output to stdout");
        assert_eq!(message(&e), format!("{e:#}"));
    }

    /// ENOSPC on Linux.
    fn libc_enospc() -> i32 {
        28
    }

    #[test]
    fn stdout_panics_give_their_errno_back() {
        let epipe: Box<dyn std::any::Any + Send> =
            Box::new("failed printing to stdout: Broken pipe (os error 32)".to_string());
        let e = stdout_panic_error(epipe.as_ref()).map(|e| e.kind());
        assert_eq!(e, Some(io::ErrorKind::BrokenPipe));
        let full: Box<dyn std::any::Any + Send> = Box::new(
            "failed printing to stdout: No space left on device (os error 28)".to_string(),
        );
        let e = stdout_panic_error(full.as_ref()).map(|e| e.raw_os_error());
        assert_eq!(e, Some(Some(28)));
        let other: Box<dyn std::any::Any + Send> = Box::new("index out of bounds");
        assert!(stdout_panic_error(other.as_ref()).is_none());
    }
}

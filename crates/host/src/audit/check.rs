//! What every check of `host audit` returns ([`Check`] with its [`Status`]), and why an audit
//! could not start ([`AuditError`]): the types each group of checks builds on.

use serde::Serialize;

/// The verdict of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The CPUs are isolated as far as this check goes.
    Pass,
    /// Something will disturb the CPUs now and then, or a choice that costs latency.
    Warn,
    /// The isolation asked for is not in force: the kernel will disturb the CPUs regularly.
    Fail,
    /// The check does not apply to this host (the evidence says why).
    NotApplicable,
    /// What the check needs could not be read (the evidence says why).
    Unknown,
}

impl Status {
    /// The word of the report's first column.
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::NotApplicable => "n/a",
            Status::Unknown => "??",
        }
    }
}

/// One check's verdict, with what it read and what to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// A stable name (`irq_affinity`, `timer_migration`), the key of `--json` and the tests.
    pub id: &'static str,
    /// What is checked, in a few words.
    pub title: &'static str,
    /// The verdict.
    pub status: Status,
    /// What was read, one fact a line (file and value).
    pub evidence: Vec<String>,
    /// What to change to pass (empty on a pass).
    pub fix: Option<String>,
}

impl Check {
    /// A check with its verdict and evidence, and no fix yet.
    pub(crate) fn new(id: &'static str, title: &'static str, status: Status) -> Self {
        Check {
            id,
            title,
            status,
            evidence: Vec::new(),
            fix: None,
        }
    }

    /// Adds a line of evidence.
    pub(crate) fn with(mut self, evidence: impl Into<String>) -> Self {
        self.evidence.push(evidence.into());
        self
    }

    /// Sets the fix.
    pub(crate) fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// Why an audit could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    /// No CPUs named and the host isolates none.
    #[error(
        "no CPU to audit: this host isolates none (no nohz_full= or isolcpus= on the boot line, \
         /sys/devices/system/cpu/nohz_full and isolated empty); name the CPUs with --cpus"
    )]
    NothingIsolated,
    /// A named CPU is not online.
    #[error("CPU {cpu} is not online (online: {online})")]
    CpuNotOnline {
        /// The CPU.
        cpu: u32,
        /// The online cpulist.
        online: String,
    },
}

//! The `host audit` report: a header naming the CPUs and the kernel, one block per check
//! (verdict, title, evidence, fix), and the count of each verdict.

use super::{Audit, Status, TargetSource};
use std::fmt;

impl fmt::Display for Audit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match self.source {
            TargetSource::Named => "named",
            TargetSource::Isolated => "the host's nohz_full/isolcpus set",
        };
        writeln!(
            f,
            "isolation audit of CPU {} ({source}); kernel {}",
            self.cpus,
            self.release.as_deref().unwrap_or("(release unreadable)")
        )?;
        if let Some(c) = &self.cmdline {
            writeln!(f, "boot line: {c}")?;
        }
        for c in &self.checks {
            writeln!(f, "{:<4}  {:<22} {}", c.status.label(), c.id, c.title)?;
            for e in &c.evidence {
                writeln!(f, "{:28}{e}", "")?;
            }
            if let Some(fix) = &c.fix {
                writeln!(f, "{:28}fix: {fix}", "")?;
            }
        }
        writeln!(
            f,
            "{} checks: {} pass, {} warn, {} fail, {} n/a, {} unknown",
            self.checks.len(),
            self.count(Status::Pass),
            self.count(Status::Warn),
            self.count(Status::Fail),
            self.count(Status::NotApplicable),
            self.count(Status::Unknown)
        )
    }
}

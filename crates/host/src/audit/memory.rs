//! Checks of memory-management work that lands on every CPU: transparent hugepages
//! (compaction and khugepaged collapsing pages under a task) and the `vmstat` update
//! interval (the per-CPU statistics folded by a work item).

use super::check::{Check, Status};
use super::host::{AuditHost, read_int};
use crate::probe::Probe;

/// The bracketed choice of a sysfs selector (`always [madvise] never` → `madvise`).
fn selected(text: &str) -> Option<&str> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    text.get(start + 1..end)
}

/// `transparent_hugepages`: THP is not `always` (in which case page faults may compact
/// memory and khugepaged collapses pages of the isolated task, with TLB-flush IPIs).
pub fn transparent_hugepages(host: &AuditHost) -> Check {
    const ID: &str = "transparent_hugepages";
    const TITLE: &str = "transparent hugepages not always";
    const DIR: &str = "/sys/kernel/mm/transparent_hugepage";
    let enabled = match host.root.read_line(&format!("{DIR}/enabled")) {
        Probe::Ok(t) => t,
        Probe::NotAvailable(_) if !host.root.path(DIR).exists() => {
            return Check::new(ID, TITLE, Status::NotApplicable).with(format!(
                "{DIR} is absent (kernel built without CONFIG_TRANSPARENT_HUGEPAGE)"
            ));
        }
        Probe::NotAvailable(why) => return Check::new(ID, TITLE, Status::Unknown).with(why),
    };
    let defrag = host.root.read_line(&format!("{DIR}/defrag")).ok().cloned();
    let (Some(mode), defrag_mode) = (selected(&enabled), defrag.as_deref().and_then(selected))
    else {
        return Check::new(ID, TITLE, Status::Unknown).with(format!(
            "{DIR}/enabled: {enabled:?} has no [selected] choice"
        ));
    };
    let check = Check::new(ID, TITLE, Status::Pass).with(format!(
        "{DIR}/enabled: {mode}, defrag: {}",
        defrag_mode.unwrap_or("?")
    ));
    if mode != "always" && defrag_mode != Some("always") {
        return check;
    }
    Check {
        status: Status::Warn,
        ..check
    }
    .with("with always, faults may stall in compaction and khugepaged rewrites the task's page tables (TLB-flush IPIs to its CPU)")
    .fix(format!(
        "echo madvise > {DIR}/enabled; echo madvise > {DIR}/defrag (or boot with transparent_hugepage=madvise)"
    ))
}

/// `vmstat_interval`: `vm.stat_interval` is longer than the 1 s default, so the per-CPU
/// vmstat work item visits a CPU seldom.
pub fn vmstat_interval(host: &AuditHost) -> Check {
    const ID: &str = "vmstat_interval";
    const TITLE: &str = "vmstat interval relaxed";
    const PATH: &str = "/proc/sys/vm/stat_interval";
    match read_int(&host.root, PATH) {
        Probe::Ok(v) if v > 1 => Check::new(ID, TITLE, Status::Pass).with(format!("{PATH}: {v} s")),
        Probe::Ok(v) => Check::new(ID, TITLE, Status::Warn)
            .with(format!(
                "{PATH}: {v} s: vmstat_update may run on each CPU with counters to fold every {v} s"
            ))
            .fix("sysctl vm.stat_interval=10"),
        Probe::NotAvailable(why) => Check::new(ID, TITLE, Status::Unknown).with(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selected_choice() {
        let cases: &[(&str, Option<&str>)] = &[
            ("always [madvise] never", Some("madvise")),
            ("[always] madvise never", Some("always")),
            (
                "always defer defer+madvise [madvise] never",
                Some("madvise"),
            ),
            ("always madvise never", None),
            ("[unterminated", None),
        ];
        for (t, want) in cases {
            assert_eq!(selected(t), *want, "{t:?}");
        }
    }
}

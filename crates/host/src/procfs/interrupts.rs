//! `/proc/interrupts`: per-CPU interrupt counters.
//!
//! The header names the CPU columns (`CPU0 CPU1 ...`); offline CPUs are simply missing, so
//! column *k* is CPU `cpus[k]`, not CPU *k*. Each following row is `NAME: count... description`.
//! Rows come in three shapes:
//!
//! * numbered device IRQs (`24: 1 0 IO-APIC 5-edge ACPI:Ged`),
//! * x86 per-CPU architecture rows with a mnemonic (`LOC`, `RES`, `CAL`, `IWI`, `TLB`, `NMI`,
//!   ...), and arm64's `IPI<n>` rows,
//! * global single-number rows (`ERR:`, `MIS:`, arm64 `Err:`).
//!
//! [`Interrupts::row_of`] maps the architecture-neutral [`IrqKind`]s onto whichever row the
//! architecture uses: the local timer is `LOC` on x86 and the per-CPU `arch_timer` row on arm64.

use serde::Serialize;

/// The parsed file.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Interrupts {
    /// CPU numbers of the columns, from the header.
    pub cpus: Vec<u32>,
    /// Rows in file order.
    pub rows: Vec<IrqRow>,
}

/// One row.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IrqRow {
    /// The name before the colon: `LOC`, `24`, `IPI0`, `ERR`.
    pub name: String,
    /// Per-CPU counts, aligned with [`Interrupts::cpus`]; empty for a global row.
    pub per_cpu: Vec<u64>,
    /// The single count of a global row (`ERR`, `MIS`).
    pub global: Option<u64>,
    /// Everything after the counts (chip, hwirq, trigger, action names, or the
    /// human-readable description of an architecture row), whitespace-collapsed.
    pub description: String,
}

impl IrqRow {
    /// Sum over all CPUs (or the global count).
    pub fn total(&self) -> u64 {
        self.global.unwrap_or(0) + self.per_cpu.iter().sum::<u64>()
    }

    /// Whether this is a numbered device interrupt.
    pub fn is_numbered(&self) -> bool {
        self.name.bytes().all(|b| b.is_ascii_digit())
    }
}

/// Architecture-neutral names for the per-CPU interrupts that matter for the tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum IrqKind {
    /// Local timer: x86 `LOC`, arm64 the per-CPU `arch_timer` IRQ.
    LocalTimer,
    /// Reschedule IPIs: x86 `RES`, arm64 "Rescheduling interrupts".
    Reschedule,
    /// Function-call IPIs: x86 `CAL`, arm64 "Function call interrupts".
    FunctionCall,
    /// irq_work: x86 `IWI`, arm64 "IRQ work interrupts".
    IrqWork,
    /// TLB shootdowns: x86 `TLB`.
    Tlb,
    /// Non-maskable interrupts: x86 `NMI`.
    Nmi,
}

impl IrqKind {
    /// The x86 mnemonic, used as a column name everywhere.
    pub fn mnemonic(self) -> &'static str {
        match self {
            IrqKind::LocalTimer => "LOC",
            IrqKind::Reschedule => "RES",
            IrqKind::FunctionCall => "CAL",
            IrqKind::IrqWork => "IWI",
            IrqKind::Tlb => "TLB",
            IrqKind::Nmi => "NMI",
        }
    }

    /// The description text arm64 prints on its IPI rows, if any.
    fn ipi_description(self) -> Option<&'static str> {
        match self {
            IrqKind::Reschedule => Some("Rescheduling interrupts"),
            IrqKind::FunctionCall => Some("Function call interrupts"),
            IrqKind::IrqWork => Some("IRQ work interrupts"),
            _ => None,
        }
    }
}

impl Interrupts {
    /// The row with this exact name.
    pub fn row(&self, name: &str) -> Option<&IrqRow> {
        self.rows.iter().find(|r| r.name == name)
    }

    /// The row that counts `kind` on this architecture.
    pub fn row_of(&self, kind: IrqKind) -> Option<&IrqRow> {
        if let Some(r) = self.row(kind.mnemonic()) {
            return Some(r);
        }
        match kind {
            IrqKind::LocalTimer => self.rows.iter().find(|r| {
                !r.per_cpu.is_empty()
                    && r.description.split_whitespace().next_back() == Some("arch_timer")
            }),
            _ => {
                let want = kind.ipi_description()?;
                self.rows
                    .iter()
                    .find(|r| r.name.starts_with("IPI") && r.description == want)
            }
        }
    }

    /// Count of row `row` on CPU `cpu` (`None` if either is absent).
    pub fn count(&self, row: &IrqRow, cpu: u32) -> Option<u64> {
        let col = self.cpus.iter().position(|&c| c == cpu)?;
        row.per_cpu.get(col).copied()
    }
}

/// Why a text is not `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a /proc/interrupts: {0}")]
pub struct InterruptsError(pub String);

/// Parses the header line into CPU numbers.
fn parse_header(line: &str) -> Option<Vec<u32>> {
    line.split_whitespace()
        .map(|t| t.strip_prefix("CPU")?.parse().ok())
        .collect()
}

/// Parses one row for `ncpus` columns.
fn parse_row(line: &str, ncpus: usize) -> Option<IrqRow> {
    let (name, rest) = line.split_once(':')?;
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let mut counts = Vec::with_capacity(ncpus);
    let mut tokens = rest.split_whitespace().peekable();
    while counts.len() < ncpus {
        match tokens.peek().and_then(|t| t.parse::<u64>().ok()) {
            Some(n) => {
                counts.push(n);
                tokens.next();
            }
            None => break,
        }
    }
    let description = tokens.collect::<Vec<_>>().join(" ");
    let (per_cpu, global) = if counts.len() == ncpus {
        (counts, None)
    } else if counts.len() == 1 {
        (Vec::new(), Some(counts[0]))
    } else {
        return None;
    };
    Some(IrqRow {
        name: name.to_string(),
        per_cpu,
        global,
        description,
    })
}

/// Parses the text of `/proc/interrupts`. Rows that do not fit the header are an error,
/// naming the line, since a silently dropped LOC row would be read as "no ticks".
pub fn parse_interrupts(text: &str) -> Result<Interrupts, InterruptsError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines
        .next()
        .ok_or_else(|| InterruptsError("empty text".into()))?;
    let cpus = parse_header(header)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| InterruptsError(format!("header is not `CPU<n>...`: {header:?}")))?;
    let mut rows = Vec::new();
    for (i, line) in lines {
        let row = parse_row(line, cpus.len())
            .ok_or_else(|| InterruptsError(format!("line {}: cannot read {line:?}", i + 1)))?;
        rows.push(row);
    }
    Ok(Interrupts { cpus, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let cases: &[(&str, Option<Vec<u32>>)] = &[
            ("           CPU0       CPU1       ", Some(vec![0, 1])),
            ("CPU0 CPU2 CPU3", Some(vec![0, 2, 3])),
            ("CPU0 CPUx", None),
            ("", Some(vec![])),
        ];
        for (line, want) in cases {
            assert_eq!(parse_header(line), *want, "{line:?}");
        }
    }

    #[test]
    fn rows() {
        let r = parse_row("LOC:      19419      17709   Local timer interrupts", 2).unwrap();
        assert_eq!(
            (r.name.as_str(), r.per_cpu.clone()),
            ("LOC", vec![19419, 17709])
        );
        assert_eq!(r.description, "Local timer interrupts");

        let r = parse_row(
            " 28:  0  0 PCI-MSIX-0000:00:01.0   0-edge      virtio0-config",
            2,
        )
        .unwrap();
        assert_eq!(r.name, "28");
        assert!(r.is_numbered());
        assert_eq!(r.description, "PCI-MSIX-0000:00:01.0 0-edge virtio0-config");

        let r = parse_row("ERR:          0", 2).unwrap();
        assert_eq!((r.global, r.per_cpu.len()), (Some(0), 0));

        // arm64: the hwirq number after the chip name is not a count.
        let r = parse_row(" 11:  5  6  GICv3  30 Level     arch_timer", 2).unwrap();
        assert_eq!(r.per_cpu, vec![5, 6]);
        assert_eq!(r.description, "GICv3 30 Level arch_timer");

        // Two counts on a four-CPU machine fit neither shape.
        assert!(parse_row("BAD: 1 2 thing", 4).is_none());
        assert!(parse_row("no colon here", 2).is_none());
    }

    #[test]
    fn offline_cpu_columns() {
        let text = "      CPU0  CPU2\nLOC:  10  30  Local timer interrupts\n";
        let irqs = parse_interrupts(text).unwrap();
        let loc = irqs.row_of(IrqKind::LocalTimer).unwrap();
        assert_eq!(irqs.count(loc, 2), Some(30));
        assert_eq!(irqs.count(loc, 1), None);
    }

    #[test]
    fn errors_name_the_line() {
        let err = parse_interrupts("CPU0 CPU1\nLOC: 1 2 x\nRES: oops\n").unwrap_err();
        assert!(err.0.contains("line 3"), "{err}");
        assert!(parse_interrupts("").is_err());
        assert!(parse_interrupts("cpu  1 2 3\n").is_err());
    }
}

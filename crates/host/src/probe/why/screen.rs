//! The `host why` report as text: the method, what is missing, then one block per CPU.

use std::fmt;

use super::WhyReport;

impl fmt::Display for WhyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "tick attribution over {:.2} s{}",
            self.elapsed_s,
            if self.interrupted {
                " (interrupted)"
            } else {
                ""
            }
        )?;
        writeln!(f, "method: {}", self.method)?;
        let per_s = |n: u64| n as f64 / self.elapsed_s.max(1e-9);
        for c in &self.cpus {
            writeln!(f)?;
            let mut head = Vec::new();
            if let Some(n) = c.loc_traced {
                head.push(format!(
                    "{n} local timer interrupts traced ({:.1}/s)",
                    per_s(n)
                ));
            }
            if let Some(n) = c.loc_proc {
                head.push(format!("LOC in /proc/interrupts {n} ({:.1}/s)", per_s(n)));
            }
            if let Some(k) = &c.conclusion {
                writeln!(f, "{}.", k.sentence)?;
                if let Some(b) = &k.boot_change {
                    writeln!(f, "  boot line: {b}")?;
                }
                if let Some(o) = &k.other_change {
                    writeln!(f, "  to stop it: {o}")?;
                }
            }
            writeln!(f, "CPU {}: {}", c.cpu, head.join("; "))?;
            if let Some(frac) = c.tick_stopped_fraction {
                write!(f, "  tick stopped {:.1}% of the window", frac * 100.0)?;
                if let Some(s) = c.tick_stops {
                    write!(f, " ({s} stops")?;
                    if let Some(i) = c.idle_entries {
                        write!(f, ", {i} idle entries")?;
                    }
                    write!(f, ")")?;
                }
                if let Some(g) = c.tick_gap_fraction {
                    write!(f, "; from gaps between ticks {:.1}%", g * 100.0)?;
                }
                writeln!(f)?;
            } else if let Some(g) = c.tick_gap_fraction {
                writeln!(
                    f,
                    "  tick not running {:.1}% of the window (from gaps between ticks; \
                     tick-state events missing)",
                    g * 100.0
                )?;
            }
            if !c.interrupts_by_cause.is_empty() {
                writeln!(f, "  local timer interrupts by cause:")?;
                for (name, n) in &c.interrupts_by_cause {
                    writeln!(f, "    {name:<28} {n:>7} {:>9.1}/s", per_s(*n))?;
                }
            }
            if !c.outside_irq.is_empty() {
                writeln!(f, "  hrtimer callbacks outside a local timer interrupt:")?;
                for (name, n) in &c.outside_irq {
                    writeln!(f, "    {name:<28} {n:>7}")?;
                }
            }
            if !c.stop_failures.is_empty() {
                writeln!(
                    f,
                    "  tick could not stop (tick_stop success=0), by dependency:"
                )?;
                for (dep, n) in &c.stop_failures {
                    writeln!(f, "    {dep:<28} {n:>7}")?;
                }
            }
            if let Some(n) = c.hrtimer_interrupts {
                writeln!(f, "  hrtimer interrupts (.nr_events delta): {n}")?;
            }
            if !c.queued_hrtimers.is_empty() {
                writeln!(f, "  hrtimers seen queued (samples):")?;
                for (name, n) in &c.queued_hrtimers {
                    writeln!(f, "    {name:<28} {n:>7}")?;
                }
            }
        }
        if !self.missing.is_empty() {
            writeln!(f)?;
            for m in &self.missing {
                writeln!(f, "note: {m}")?;
            }
        }
        Ok(())
    }
}

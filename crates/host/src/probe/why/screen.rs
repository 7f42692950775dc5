//! The `host why` report as text: the method, what is missing, then one block per CPU.

use std::fmt;

use super::WhyReport;

/// Tasks named per CPU in the evidence; the rest are counted.
const TASKS_SHOWN: usize = 6;

impl fmt::Display for WhyReport {
    // Over 100 lines because it is the screen written top to bottom, one block per line of the
    // layout in the module documentation (header, then per CPU: counts, evidence, tasks, verdict).
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
        if let Some(w) = &self.workload {
            writeln!(
                f,
                "workload: {w} (started before the window, stopped after it)"
            )?;
        }
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
            if let Some(b) = c.busy_fraction {
                write!(f, "  busy {:.1}% of the window", b * 100.0)?;
                if !c.tasks.is_empty() {
                    let shown: Vec<String> = c
                        .tasks
                        .iter()
                        .take(TASKS_SHOWN)
                        .map(|t| {
                            format!(
                                "{}[{}] {:.1}% ({} in)",
                                t.comm,
                                t.pid,
                                t.share * 100.0,
                                t.switches_in
                            )
                        })
                        .collect();
                    write!(f, "; tasks (share, switches in): {}", shown.join(", "))?;
                    if c.tasks.len() > TASKS_SHOWN {
                        write!(f, ", and {} more", c.tasks.len() - TASKS_SHOWN)?;
                    }
                }
                writeln!(f)?;
            }
            if let (Some(n), Some(all)) = (c.idle_ticks, c.tick_callbacks)
                && all > 0
            {
                writeln!(f, "  tick callbacks in the idle task: {n} of {all}")?;
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
            if !c.armed_timers.is_empty() {
                writeln!(f, "  hrtimers by the task that armed them (hrtimer_start):")?;
                for t in &c.armed_timers {
                    let who = if t.pid == 0 && t.comm == super::ARMED_BEFORE {
                        t.comm.clone()
                    } else {
                        format!("{}[{}]", t.comm, t.pid)
                    };
                    write!(f, "    {:<20} {who:<28} {:>7}", t.function, t.expiries)?;
                    if let Some(ms) = t.median_interval_ms {
                        write!(f, "  every {ms:.3} ms (median)")?;
                    }
                    writeln!(f)?;
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

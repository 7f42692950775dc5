//! The scenario file `host calibrate` writes: a `#` comment header with what the scenario has
//! no field for (the raw measurements, wake-up latency, the fit log, harness warnings), then
//! the scenario's TOML, which `ticklab sim --scenario FILE` loads (TOML comments are ignored).

use super::Calibration;

impl Calibration {
    /// The scenario file: a `#` comment header (measurements, fit log) then the TOML.
    pub fn file_text(&self) -> String {
        let m = &self.measurements;
        let mut s = format!(
            "# ticklab host calibrate: {} ({}), {} CPUs, HZ={}\n",
            m.hostname, m.release, m.nr_cpus, m.hz
        );
        let list = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.1}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        s += &format!(
            "# idle {:.1} s: LOC/s per CPU [{}], busy fraction [{}]\n",
            m.idle_s,
            list(&m.idle_loc),
            m.idle_busy
                .iter()
                .map(|x| format!("{x:.3}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        s += &format!("# {}\n", m.steal_line());
        s += &format!(
            "# one hog on CPU {}: LOC/s per CPU [{}]\n",
            m.hog_cpu,
            list(&m.hog_loc)
        );
        s += &format!(
            "# syscall getpid {:.1} ns; pipe round trip same CPU {:.0} ns, cross CPU {}\n",
            m.syscall_ns,
            m.same_cpu_rt_ns,
            m.cross_cpu_rt_ns
                .map_or("n/a (one CPU)".into(), |v| format!("{v:.0} ns"))
        );
        match &m.wakeup {
            Some(w) => {
                s += &format!(
                    "# wake-up latency (frames 1 kHz, {} samples): min {:.1} us, median {:.1} us, p99 {:.1} us\n",
                    w.samples, w.min_us, w.p50_us, w.p99_us
                )
            }
            None => s += "# wake-up latency: not measured\n",
        }
        if let Some(w) = &m.busy_wakeup {
            s += &format!(
                "# wake-up latency beside a hog on CPU {} ({} samples): min {:.1} us, p25 {:.2} us, median {:.2} us, p75 {:.2} us, p99 {:.1} us\n",
                m.hog_cpu, w.samples, w.min_us, w.p25_us, w.p50_us, w.p75_us, w.p99_us
            );
        }
        for n in &self.notes {
            s += &format!("# {n}\n");
        }
        for f in self.ledger.entries() {
            s += &format!("# fitted {}: {}\n", f.name, f.how);
        }
        for line in super::sensitivity::lines(self.ledger.entries().len(), &self.sensitivity) {
            s += &format!("# {line}\n");
        }
        for line in self.fit_quality.iter().flat_map(|c| c.lines()) {
            s += &format!("# {line}\n");
        }
        for w in &m.warnings {
            s += &format!("# warning: {w}\n");
        }
        s += &self.scenario.to_toml();
        if !s.ends_with('\n') {
            s.push('\n');
        }
        s
    }
}

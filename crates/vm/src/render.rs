//! Plain-text and Markdown renderings of [`VmComparison`]s. Pure functions of their input.
//!
//! [`comparison_text`] (`ticklab vm compare`):
//!
//! ```text
//! vm compare: <release> (config <version>, HZ=<hz>), QEMU <ACCEL>[ — <fallback>], <n> vCPUs
//! boot line "<cmdline>", workload <label>, window <s> s, boot to power-off <s> s
//! <table: CPU | role kernel | role twin | LOC/s kernel | LOC/s twin | diff | error % | band | verdict | busy % kernel | busy % twin>
//! [under TCG: latency, jitter and syscall cost are emulated and not compared]
//! ```
//!
//! [`validation_markdown`] (`ticklab vm table`, docs/vm-validation.md): one row per CPU per
//! point. Numbers: LOC/s and diff with 1 decimal, error in % with 1 decimal, `-` when
//! missing; the verdict is `ok`, `MISS` or `-` (no band).

use std::fmt::Write;
use ticklab_report::cpu::role_name;
use ticklab_report::format::{MISSING, fixed, new_table, opt_fixed, right_align_from};

use crate::compare::{Band, CpuComparison, MissReason, VmComparison};

fn band_name(b: Band) -> &'static str {
    match b {
        Band::Ticking => "ticking",
        Band::Quiet => "quiet",
        Band::Between => "between",
    }
}

/// The verdict column: `ok`, `MISS`, `not judged` (an oversubscribed point) or `-` (no band).
fn verdict(v: &VmComparison, c: &CpuComparison) -> &'static str {
    match v.verdict(c) {
        Some(true) => "ok",
        Some(false) => "MISS",
        None if v.oversubscribed().is_some() && c.verdict().is_some() => NOT_JUDGED,
        None => MISSING,
    }
}

/// The verdict of a CPU in a point that is shown but not judged.
const NOT_JUDGED: &str = "not judged";

/// The reason column: why an oversubscribed point is not judged, and empty unless the CPU
/// missed its band otherwise.
fn reason(v: &VmComparison, c: &CpuComparison) -> String {
    if let Some(o) = v.oversubscribed() {
        return o.reason();
    }
    miss_reason_text(v, c).to_string()
}

/// The words of a judged CPU's miss reason (empty when it did not miss).
fn miss_reason_text(v: &VmComparison, c: &CpuComparison) -> &'static str {
    match v.miss_reason(c) {
        None => "",
        Some(MissReason::EmulatorTickLoss) => {
            "emulator: ticks lost while QEMU waited for a host CPU"
        }
        Some(MissReason::Twin) => "twin differs",
        Some(MissReason::TwinIpi) => "twin differs (IPI/s)",
        Some(MissReason::EmulatorLateWakeups) => {
            "emulator: the frame worker woke late and overran while QEMU waited for a host CPU"
        }
    }
}

/// An IPI rate, `-` when not counted.
fn ipi(x: Option<f64>) -> String {
    opt_fixed(x, 1)
}

fn error_pct(c: &CpuComparison) -> String {
    opt_fixed(c.rel_error.map(|e| e * 100.0), 1)
}

fn wait(v: &VmComparison) -> String {
    opt_fixed(v.host_wait.map(|w| w.ms_per_s()), 0)
}

fn accel_line(v: &VmComparison) -> String {
    let mut s = format!("QEMU {}", v.accel.name().to_uppercase());
    if let Some(f) = &v.kvm_fallback {
        let _ = write!(s, " ({f})");
    }
    s
}

/// The text of `ticklab vm compare` (see the module documentation).
pub fn comparison_text(v: &VmComparison) -> String {
    let mut s = format!(
        "vm compare: {} (config {}, HZ={}), {}, {} vCPUs\n",
        v.kernel_release,
        v.kernel_version,
        v.hz,
        accel_line(v),
        v.vcpus
    );
    let _ = writeln!(
        s,
        "boot line {:?}, workload {}, window {:.2} s, boot to power-off {:.1} s, QEMU waited {} ms/s for a host CPU",
        v.cmdline,
        v.workload,
        v.kernel_seconds,
        v.wall_s,
        wait(v)
    );
    let header = [
        "CPU",
        "role kernel",
        "role twin",
        "LOC/s kernel",
        "LOC/s twin",
        "diff",
        "error %",
        "band",
        "verdict",
        "busy % kernel",
        "busy % twin",
    ];
    let mut t = new_table(header.iter().map(|h| h.to_string()).collect());
    for c in &v.cpus {
        t.add_row(vec![
            c.cpu.to_string(),
            role_name(c.kernel_role).to_string(),
            role_name(c.twin_role).to_string(),
            fixed(c.kernel_loc_per_s, 1),
            fixed(c.twin_loc_per_s, 1),
            fixed(c.diff_loc_per_s, 1),
            error_pct(c),
            band_name(c.band).to_string(),
            match verdict(v, c) {
                // As `host run --twin` marks it: the miss may be the other load's.
                "MISS" if v.contaminated(c.cpu) => {
                    ticklab_report::comparison::contaminated_verdict("MISS")
                }
                w => w.to_string(),
            },
            opt_fixed(c.kernel_busy_pct, 1),
            opt_fixed(c.twin_busy_pct, 1),
        ]);
    }
    right_align_from(&mut t, 3);
    s.push_str(&t.to_string());
    s.push('\n');
    if let Some(o) = v.oversubscribed() {
        let _ = writeln!(
            s,
            "{}: the host cannot run this point's vCPUs in real time",
            o.label()
        );
    }
    for c in &v.contamination {
        let _ = writeln!(s, "CPU {} contaminated: {}", c.cpu(), c.text());
    }
    if let Some(line) = ticklab_report::comparison::contamination_line(&v.contamination) {
        s += &line;
        s.push('\n');
    }
    if v.accel.emulated() {
        s.push_str(
            "under TCG: latency, jitter and syscall cost are emulated and not compared; \
             counts (LOC/s, busy %) are compared, since the guest kernel's own code decides \
             them, though an emulator waiting for a host CPU can lose ticks (such misses are \
             marked as the emulator's)\n",
        );
    }
    s
}

/// One line naming the kernels and accelerators of a validation run (`kernel
/// 6.1.0-57-amd64 (config 6.1.192, HZ=250), QEMU TCG`), each distinct one once.
pub fn validation_header(points: &[VmComparison]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for v in points {
        let d = format!(
            "kernel {} (config {}, HZ={}), QEMU {}",
            v.kernel_release,
            v.kernel_version,
            v.hz,
            v.accel.name().to_uppercase()
        );
        if !seen.contains(&d) {
            seen.push(d);
        }
    }
    seen.join("; ")
}

/// The kernel column of a validation row: the guest's release (`uname -r` in the guest) and
/// its HZ, which tell two builds of one source apart (`6.1.192 HZ=100`).
pub fn kernel_label(v: &VmComparison) -> String {
    format!("{} HZ={}", v.kernel_release, v.hz)
}

/// The distinct [`kernel_label`]s of `points`, in order of first appearance.
fn kernels(points: &[VmComparison]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for v in points {
        let k = kernel_label(v);
        if !seen.contains(&k) {
            seen.push(k);
        }
    }
    seen
}

/// The Markdown validation table over many points, in the given order. Points from more than
/// one kernel get a leading kernel column and a judged/missed count per kernel.
// Over 100 lines because it writes one table: the header and, per point, its refused, unjudged
// or judged row, all sharing the column layout.
pub fn validation_markdown(points: &[VmComparison]) -> String {
    let kernels = kernels(points);
    let by_kernel = kernels.len() > 1;
    let mut s = String::new();
    if by_kernel {
        s.push_str("| kernel ");
    }
    s.push_str(
        "| vCPUs | boot line | workload | QEMU wait ms/s | CPU | role | LOC/s kernel | LOC/s twin | diff | error % | band | IPI/s kernel | IPI/s twin | verdict | reason |\n",
    );
    if by_kernel {
        s.push_str("|---");
    }
    s.push_str("|---:|---|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---|---|\n");
    for v in points {
        let line = if v.cmdline.is_empty() {
            "(default)".to_string()
        } else {
            format!("`{}`", v.cmdline)
        };
        let kernel = if by_kernel {
            format!("| {} ", kernel_label(v))
        } else {
            String::new()
        };
        if let Some(why) = &v.refused {
            let _ = writeln!(
                s,
                "{kernel}| {} | {line} | {} | {} | - | - | - | - | - | - | - | - | - | refused | {why} |",
                v.vcpus,
                v.workload,
                wait(v),
            );
        }
        for c in &v.cpus {
            let _ = writeln!(
                s,
                "{kernel}| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                v.vcpus,
                line,
                v.workload,
                wait(v),
                c.cpu,
                role_name(c.kernel_role),
                fixed(c.kernel_loc_per_s, 1),
                fixed(c.twin_loc_per_s, 1),
                fixed(c.diff_loc_per_s, 1),
                error_pct(c),
                band_name(c.band),
                ipi(c.kernel_ipi_per_s),
                ipi(c.twin_ipi_per_s.filter(|_| c.ipi_within.is_some())),
                verdict(v, c),
                reason(v, c)
            );
        }
    }
    let judged = points.iter().flat_map(VmComparison::judged).count();
    let refused = points.iter().filter(|v| v.refused.is_some()).count();
    let oversubscribed = points
        .iter()
        .filter(|v| v.oversubscribed().is_some())
        .count();
    let misses = points.iter().flat_map(VmComparison::misses).count();
    let emulator = points
        .iter()
        .flat_map(|v| v.misses().filter_map(move |c| v.miss_reason(c)))
        .filter(|r| r.is_emulator())
        .count();
    let pct = if judged > 0 {
        format!(
            " ({:.1} %)",
            100.0 * (judged - misses) as f64 / judged as f64
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "\n{} points ({refused} refused, {oversubscribed} not judged: oversubscribed), {judged} CPUs judged, {} within their band{pct}, \
         {misses} missed ({emulator} of them put down to the emulator, {} where the twin \
         differs).",
        points.len(),
        judged - misses,
        misses - emulator
    );
    if by_kernel {
        for k in &kernels {
            let of_k: Vec<&VmComparison> =
                points.iter().filter(|v| &kernel_label(v) == k).collect();
            let judged = of_k.iter().flat_map(|v| v.judged()).count();
            let misses = of_k.iter().flat_map(|v| v.misses()).count();
            let n = of_k.len();
            let _ = writeln!(
                s,
                "* {k}: {n} point{}, {judged} CPUs judged, {misses} missed.",
                if n == 1 { "" } else { "s" }
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qemu::Accel;
    use ticklab_schema::report::CpuRole;

    fn cpu(cpu: u32, role: CpuRole, k: f64, t: f64) -> CpuComparison {
        let band = Band::of(k);
        CpuComparison {
            cpu,
            kernel_role: role,
            twin_role: role,
            kernel_loc_per_s: k,
            twin_loc_per_s: t,
            diff_loc_per_s: t - k,
            rel_error: (k > 0.0).then(|| (t - k) / k),
            band,
            within: band.within(k, t),
            kernel_busy_pct: Some(0.5),
            twin_busy_pct: Some(0.4),
            kernel_stopped_pct: None,
            twin_stopped_pct: Some(99.0),
            kernel_idle_entries_per_s: None,
            twin_idle_entries_per_s: None,
            kernel_ipi_per_s: Some(1.0),
            twin_ipi_per_s: None,
            ipi_within: None,
            kernel_frame_overruns: None,
        }
    }

    pub(crate) fn sample() -> VmComparison {
        VmComparison {
            kernel_release: "6.1.0-57-amd64".into(),
            kernel_version: "6.1.192".into(),
            hz: 250,
            accel: Accel::Tcg,
            kvm_fallback: Some("KVM did not run the guest: failed to set MSR 0x10a".into()),
            vcpus: 2,
            cmdline: "nohz_full=1".into(),
            workload: "hogs x1".into(),
            workload_spec: "hogs:1@1".into(),
            kernel_seconds: 5.0,
            cpus: vec![
                cpu(0, CpuRole::Timekeeping, 259.0, 251.2),
                cpu(1, CpuRole::NohzFull, 0.0, 12.5),
            ],
            wall_s: 13.2,
            host_wait: Some(crate::qemu::HostWait {
                wall_s: 5.1,
                run_delay_s: 0.051,
            }),
            refused: None,
            contamination: Vec::new(),
            host_cpus: Some(2),
            runnable_vcpus: Some(1),
        }
    }

    #[test]
    fn miss_reasons_of_a_point() {
        // CPU 1 of the sample misses (0.0 against 12.5 LOC/s, quiet); QEMU waited 10 ms/s.
        let mut v = sample();
        v.cpus[1].kernel_frame_overruns = Some(104);
        assert_eq!(v.miss_reason(&v.cpus[1]), Some(MissReason::Twin));
        assert_eq!(v.miss_reason(&v.cpus[0]), None);
        v.host_wait = Some(crate::qemu::HostWait {
            wall_s: 5.0,
            run_delay_s: 4.0,
        });
        assert_eq!(
            v.miss_reason(&v.cpus[1]),
            Some(MissReason::EmulatorLateWakeups)
        );
        v.cpus[1].kernel_frame_overruns = Some(0);
        assert_eq!(v.miss_reason(&v.cpus[1]), Some(MissReason::Twin));
        // LOC/s in band, IPIs not.
        v.cpus[1] = cpu(1, CpuRole::NohzFull, 0.0, 0.4);
        v.cpus[1].ipi_within = Some(false);
        assert_eq!(v.miss_reason(&v.cpus[1]), Some(MissReason::TwinIpi));
        assert!(!MissReason::TwinIpi.is_emulator());
    }

    /// More always-runnable vCPUs than host CPUs: no CPU of the point is judged, its misses
    /// are no misses and the text says why; at the host's count it is judged as before, and
    /// a record without the host's count is judged.
    #[test]
    fn an_oversubscribed_point_is_shown_not_judged() {
        let mut v = sample();
        assert_eq!(v.misses().count(), 1, "CPU 1 misses when judged");
        v.runnable_vcpus = Some(3);
        assert_eq!(
            v.oversubscribed().map(|o| o.label()),
            Some("not judged (oversubscribed: 3 runnable vCPUs on 2 host CPUs)".into())
        );
        assert_eq!((v.judged().count(), v.misses().count()), (0, 0));
        assert_eq!(v.miss_reason(&v.cpus[1]), None);
        let text = comparison_text(&v);
        assert!(
            text.contains("not judged (oversubscribed: 3 runnable vCPUs on 2 host CPUs): "),
            "{text}"
        );
        assert!(!text.contains("MISS"), "{text}");
        let table = validation_markdown(std::slice::from_ref(&v));
        assert!(
            table.contains("1 points (0 refused, 1 not judged: oversubscribed), 0 CPUs judged"),
            "{table}"
        );
        v.runnable_vcpus = Some(2);
        assert_eq!((v.judged().count(), v.misses().count()), (2, 1));
        v.runnable_vcpus = Some(4);
        v.host_cpus = None;
        assert_eq!((v.judged().count(), v.misses().count()), (2, 1));
    }

    /// A guest whose host lab found CPU 1 stolen from: its miss is marked beside the verdict,
    /// CPU 0's ok is not, and the lines under the table say what and which.
    #[test]
    fn a_contaminated_cpu_is_marked_beside_its_miss() {
        let mut v = sample();
        v.contamination = vec![ticklab_schema::report::Contamination::Steal {
            cpu: 1,
            steal_pct: 12.5,
        }];
        let text = comparison_text(&v);
        let row = |cpu: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("| {cpu} ")))
                .unwrap_or_else(|| panic!("no row of CPU {cpu} in\n{text}"))
                .to_string()
        };
        assert!(row("1").contains("MISS (contaminated)"), "{text}");
        assert!(!row("0").contains("contaminated"), "{text}");
        assert!(text.contains("CPU 1 contaminated: "), "{text}");
        assert!(
            text.contains("contaminated: CPU 1 (other load or steal)"),
            "{text}"
        );
        // Without contamination nothing of it shows.
        assert!(!comparison_text(&sample()).contains("contaminated"));
    }

    #[test]
    fn comparison_snapshot() {
        insta::assert_snapshot!(comparison_text(&sample()));
    }

    #[test]
    fn markdown_snapshot() {
        let mut idle = sample();
        idle.cmdline = String::new();
        idle.workload = "idle".into();
        // A frame worker on the nohz_full CPU: its IPIs judged (CPU 1 misses on them), and
        // a refused ping-pong point.
        let mut frames = sample();
        frames.workload = "frames A 60Hz x1".into();
        frames.cpus = vec![
            cpu(0, CpuRole::Timekeeping, 259.0, 259.0),
            cpu(1, CpuRole::NohzFull, 0.0, 0.4),
        ];
        frames.cpus[1].kernel_ipi_per_s = Some(60.2);
        frames.cpus[1].twin_ipi_per_s = Some(30.0);
        frames.cpus[1].ipi_within = Some(false);
        let mut pingpong = sample();
        pingpong.workload = "pingpong futex 0<->1".into();
        pingpong.cpus.clear();
        pingpong.refused = Some("ping-pong: not modelled".into());
        // 4 vCPUs spinning in idle=poll on a 2-CPU host: shown, not judged, though CPU 1
        // would miss.
        let mut poll = sample();
        poll.cmdline = "idle=poll".into();
        poll.workload = "idle".into();
        poll.vcpus = 4;
        poll.runnable_vcpus = Some(4);
        let table = validation_markdown(&[sample(), idle.clone(), frames, pingpong, poll]);
        assert!(
            table.contains("| not judged | oversubscribed: 4 runnable vCPUs on 2 host CPUs |"),
            "{table}"
        );
        insta::assert_snapshot!(table);
        assert_eq!(
            validation_header(&[sample(), idle]),
            "kernel 6.1.0-57-amd64 (config 6.1.192, HZ=250), QEMU TCG"
        );
    }

    #[test]
    fn markdown_with_a_kernel_column_snapshot() {
        // Two builds of one source differ only by HZ: the column must tell them apart.
        let mut hz100 = sample();
        hz100.kernel_release = "6.1.192".into();
        hz100.hz = 100;
        let mut hz1000 = hz100.clone();
        hz1000.hz = 1000;
        let text = validation_markdown(&[sample(), hz100, hz1000.clone()]);
        assert!(text.starts_with("| kernel | vCPUs |"), "{text}");
        assert!(text.contains("| 6.1.192 HZ=100 | 2 |"), "{text}");
        insta::assert_snapshot!(text);
        // One kernel: no column, as before.
        assert!(validation_markdown(&[hz1000]).starts_with("| vCPUs |"));
    }
}

//! `ticklab vm [compare | table]`: a real kernel under QEMU, measured by the host lab inside,
//! and the twin of that guest beside it. The work is in `ticklab-vm`; this module reads the
//! flags (bad input → exit code 2 before anything boots), runs the twin, and prints.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use ticklab_schema::workload::Workload;
use ticklab_vm::twin_guest::{GuestPoint, guest_scenario};
use ticklab_vm::{
    Accel, AccelChoice, BootOptions, CompareRecord, GuestKernel, GuestProbe, MissReason,
    VmComparison, boot_guest, compare_cpus,
};

use crate::args::{DurationArg, parse_duration_arg};
use crate::error::input_error;

/// `ticklab vm` arguments: one boot; a subcommand compares or tabulates.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct VmArgs {
    #[command(subcommand)]
    cmd: Option<VmCommand>,
    #[command(flatten)]
    boot: BootArgs,
    /// What ticklab does inside: `run` the workload (host run), `inspect`, `why`, or
    /// `staleness` (a spinning reader of CLOCK_MONOTONIC_COARSE on --probe-cpu; the workload
    /// is ignored).
    #[arg(long, value_enum, default_value = "run")]
    probe: ProbeArg,
    /// The CPU `--probe staleness` spins on.
    #[arg(long, default_value_t = 1)]
    probe_cpu: u32,
    /// Print the guest's host run report as JSON (the host lab's schema), for `--probe run`.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum VmCommand {
    /// Boot once and set the twin of the guest beside it, per CPU.
    Compare(CompareArgs),
    /// Render `vm compare --json` files as the Markdown validation table.
    Table(TableArgs),
    /// Build a guest kernel from a Debian linux-source package into the kernel cache.
    Build(crate::vm_build_cmd::BuildArgs),
    /// List the kernels in the cache (what `--kernel NAME|KEY` accepts).
    Kernels(crate::vm_build_cmd::KernelsArgs),
}

/// `vm compare` arguments.
#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    #[command(flatten)]
    boot: BootArgs,
    /// Print the comparison, the guest's report and the twin's report as JSON.
    #[arg(long)]
    json: bool,
}

/// `vm table` arguments.
#[derive(Debug, Args)]
pub(crate) struct TableArgs {
    /// `ticklab vm compare --json` output files, in table order.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print only the one-line description of the kernel and accelerator (for the doc's
    /// header) instead of the table.
    #[arg(long)]
    header: bool,
    /// Exit with code 1 when a judged CPU is outside its band for a reason other than ticks
    /// lost in the emulator.
    #[arg(long)]
    check: bool,
    /// Re-run the twin of each recorded guest with this build (the kernel's measurement is
    /// kept; the kernel config is read again from --kernel-config), and write the records
    /// back: for checking a twin change against guests already measured.
    #[arg(long)]
    retwin: bool,
    /// The guest kernel's config file for --retwin (default: that of the newest
    /// /boot/vmlinuz-*).
    #[arg(long, value_name = "PATH")]
    kernel_config: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ProbeArg {
    Run,
    Inspect,
    Why,
    Staleness,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AccelArg {
    /// KVM if it runs the guest, else TCG.
    Auto,
    Kvm,
    Tcg,
}

/// The flags of one boot.
#[derive(Debug, Clone, Args)]
pub(crate) struct BootArgs {
    /// Kernel image, or the name or key of a `vm build` kernel (default: the newest
    /// /boot/vmlinuz-*, which scripts/setup.sh installs).
    #[arg(long, value_name = "PATH|NAME|KEY")]
    kernel: Option<PathBuf>,
    /// Its config file (default: config-RELEASE beside a vmlinuz-RELEASE image).
    #[arg(long, value_name = "PATH")]
    kernel_config: Option<PathBuf>,
    /// The guest's boot line, in the kernel's syntax (ticklab adds only the console).
    #[arg(long, default_value = "")]
    cmdline: String,
    /// Guest vCPUs.
    #[arg(long, default_value_t = 2)]
    vcpus: u32,
    /// Workload spec for the host lab inside (`idle`, `hogs:1@1`, `frames:…`, `pingpong:…`,
    /// `syscall:…`).
    #[arg(long, default_value = "idle")]
    workload: String,
    /// Measured window inside the guest.
    #[arg(short = 'D', short_alias = 'd', long, default_value = "5s", value_parser = parse_duration_arg)]
    duration: DurationArg,
    /// Quiet time between boot and the window (boot-time work settles).
    #[arg(long, default_value = "3s", value_parser = parse_duration_arg)]
    settle: DurationArg,
    /// Accelerator.
    #[arg(long, value_enum, default_value = "auto")]
    accel: AccelArg,
    /// Guest memory, MiB.
    #[arg(long, default_value_t = 512)]
    memory: u32,
    /// QEMU binary.
    #[arg(long, default_value = "qemu-system-x86_64", value_name = "PATH")]
    qemu: PathBuf,
    /// busybox-static binary.
    #[arg(long, default_value = "/bin/busybox", value_name = "PATH")]
    busybox: PathBuf,
    /// Keep the initramfs, console.log and data.txt in this directory.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
}

/// A checked boot request: the kernel found, the workload and boot line parsed.
struct Prepared {
    options: BootOptions,
    workload: Workload,
}

fn prepare(a: &BootArgs, probe: GuestProbe) -> anyhow::Result<Prepared> {
    if a.vcpus == 0 || a.vcpus > 64 {
        return Err(input_error(format!(
            "--vcpus {}: expected 1 to 64",
            a.vcpus
        )));
    }
    let kernel = match &a.kernel {
        Some(k) => ticklab_vm::kbuild::cache::resolve_kernel(
            &ticklab_vm::kbuild::cache::KernelCache::from_env(),
            k,
            a.kernel_config.as_deref(),
        ),
        None => GuestKernel::default_installed(std::path::Path::new("/boot")),
    }
    .map_err(input_error)?;
    let workload = Workload::parse(&a.workload, a.vcpus)
        .map_err(|e| input_error(format!("--workload: {e}")))?;
    ticklab_cmdline::KernelCmdline::parse(&a.cmdline, a.vcpus)
        .map_err(|e| input_error(format!("--cmdline: {e}")))?;
    let ticklab = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find the running ticklab binary: {e}"))?;
    let secs = |d: DurationArg| d.as_std().as_secs_f64();
    // Boot under TCG takes ~5 s on this machine; allow a loaded host ten times that, plus
    // the settle time and three times the window.
    let timeout = Duration::from_secs_f64(60.0 + secs(a.settle) + 3.0 * secs(a.duration));
    Ok(Prepared {
        options: BootOptions {
            kernel,
            qemu: a.qemu.clone(),
            busybox: a.busybox.clone(),
            ticklab,
            cmdline: a.cmdline.clone(),
            vcpus: a.vcpus,
            memory_mib: a.memory,
            probe,
            settle_s: secs(a.settle).ceil() as u32,
            accel: match a.accel {
                AccelArg::Auto => AccelChoice::Auto,
                AccelArg::Kvm => AccelChoice::Only(Accel::Kvm),
                AccelArg::Tcg => AccelChoice::Only(Accel::Tcg),
            },
            keep: a.keep.clone(),
            timeout,
        },
        workload,
    })
}

fn duration_word(d: DurationArg) -> String {
    format!("{}ms", d.ns().div_ceil(1_000_000))
}

pub(crate) fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Runs `ticklab vm` (and dispatches its subcommands).
pub(crate) fn vm(a: &VmArgs) -> anyhow::Result<()> {
    match &a.cmd {
        Some(VmCommand::Compare(c)) => return compare(c),
        Some(VmCommand::Table(t)) => return table(t),
        Some(VmCommand::Build(b)) => return crate::vm_build_cmd::vm_build(b),
        Some(VmCommand::Kernels(k)) => return crate::vm_build_cmd::vm_kernels(k),
        None => {}
    }
    let b = &a.boot;
    let probe = match a.probe {
        ProbeArg::Run => GuestProbe::Run {
            workload: b.workload.clone(),
            duration: duration_word(b.duration),
        },
        ProbeArg::Inspect => GuestProbe::Inspect,
        ProbeArg::Why => GuestProbe::Why {
            duration: duration_word(b.duration),
        },
        ProbeArg::Staleness => {
            if a.probe_cpu >= b.vcpus {
                return Err(input_error(format!(
                    "--probe-cpu {}: expected a CPU of the guest, 0 to {}",
                    a.probe_cpu,
                    b.vcpus.saturating_sub(1)
                )));
            }
            GuestProbe::Staleness {
                cpu: a.probe_cpu,
                duration: duration_word(b.duration),
            }
        }
    };
    let is_run = matches!(probe, GuestProbe::Run { .. });
    let p = prepare(b, probe)?;
    let boot = boot_guest(&p.options)?;
    let o = &boot.output;
    let accel = match &o.kvm_fallback {
        Some(f) => format!("{} ({f})", o.accel.name().to_uppercase()),
        None => o.accel.name().to_uppercase(),
    };
    eprintln!(
        "vm: {} under QEMU {accel}, {} vCPUs, boot line {:?}: boot to power-off {:.1} s (initramfs {:.1} MiB)",
        p.options.kernel.image.display(),
        b.vcpus,
        b.cmdline,
        o.wall_s,
        boot.initramfs_bytes as f64 / (1 << 20) as f64
    );
    if !is_run {
        if o.guest_rc != 0 {
            anyhow::bail!("ticklab in the guest exited with {}", o.guest_rc);
        }
        return emit(&(o.data.clone() + "\n"));
    }
    let run = boot.host_run().map_err(anyhow::Error::msg)?;
    if a.json {
        return emit(&(serde_json::to_string_pretty(&run)? + "\n"));
    }
    let mut text = String::new();
    if o.accel.emulated() {
        text.push_str(
            "(guest under TCG: LOC/s, busy % and idle counts are comparable; latency, jitter \
             and ns/call figures below are EMULATED, not hardware's)\n",
        );
    }
    text += &ticklab_report::host_run_report(&run.report, &Default::default());
    emit(&text)
}

/// Runs `ticklab vm compare`.
fn compare(a: &CompareArgs) -> anyhow::Result<()> {
    let b = &a.boot;
    let probe = GuestProbe::Run {
        workload: b.workload.clone(),
        duration: duration_word(b.duration),
    };
    let p = prepare(b, probe)?;
    let boot = boot_guest(&p.options)?;
    let run = boot.host_run().map_err(anyhow::Error::msg)?;
    let point = Point {
        config: &p.options.kernel.config,
        cmdline: &b.cmdline,
        vcpus: b.vcpus,
        workload_spec: &b.workload,
        workload: &p.workload,
        accel: boot.output.accel,
        kvm_fallback: boot.output.kvm_fallback.clone(),
        wall_s: boot.output.wall_s,
        host_wait: boot.output.host_wait,
    };
    let record = with_twin(&point, run)?;
    if a.json {
        let doc = ticklab_schema::versioned::Versioned::new(
            ticklab_schema::report::REPORT_SCHEMA_VERSION,
            &record,
        );
        emit(&(serde_json::to_string_pretty(&doc)? + "\n"))
    } else {
        emit(&ticklab_vm::render::comparison_text(&record.comparison))
    }
}

/// One guest boot's parameters, as the twin of the guest needs them.
struct Point<'a> {
    config: &'a ticklab_vm::KernelConfig,
    cmdline: &'a str,
    vcpus: u32,
    workload_spec: &'a str,
    workload: &'a Workload,
    accel: Accel,
    kvm_fallback: Option<String>,
    wall_s: f64,
    host_wait: Option<ticklab_vm::qemu::HostWait>,
}

/// Simulates the twin of the guest and sets it beside the guest's report.
fn with_twin(p: &Point<'_>, run: ticklab_host::harness::HostRun) -> anyhow::Result<CompareRecord> {
    let has_driver = run.report.cpus.iter().any(|c| !c.idle_states.is_empty());
    let scenario = guest_scenario(&GuestPoint {
        config: p.config,
        cmdline: p.cmdline,
        vcpus: p.vcpus,
        workload: p.workload,
        duration_ns: run.report.duration_ns,
        guest_has_cpuidle_driver: has_driver,
        accel: p.accel,
        guest: &run.report,
    });
    let twin = ticklab_twin::simulate(&scenario, |_| {}).map_err(|e| input_error(e.to_string()))?;
    let release = match &run.report.source {
        ticklab_schema::report::Source::Host { kernel, .. } => kernel.clone(),
        ticklab_schema::report::Source::Twin { .. } => String::new(),
    };
    let comparison = VmComparison {
        kernel_release: release,
        kernel_version: p.config.version.clone(),
        hz: p.config.hz,
        accel: p.accel,
        kvm_fallback: p.kvm_fallback.clone(),
        vcpus: p.vcpus,
        cmdline: p.cmdline.to_string(),
        workload: ticklab_report::workload_label(&twin),
        workload_spec: p.workload_spec.to_string(),
        kernel_seconds: run.report.seconds(),
        cpus: compare_cpus(&run.report, &twin),
        wall_s: p.wall_s,
        host_wait: p.host_wait,
    };
    Ok(CompareRecord {
        comparison,
        kernel: run,
        twin,
    })
}

/// The record with its twin simulated again by this build.
fn retwin(c: CompareRecord, config: Option<&std::path::Path>) -> anyhow::Result<CompareRecord> {
    let kernel = match config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| input_error(format!("--kernel-config {}: {e}", path.display())))?;
            ticklab_vm::KernelConfig::parse(&text, &path.display().to_string())
                .map_err(input_error)?
        }
        None => {
            GuestKernel::default_installed(std::path::Path::new("/boot"))
                .map_err(input_error)?
                .config
        }
    };
    let v = &c.comparison;
    let workload = Workload::parse(&v.workload_spec, v.vcpus)
        .map_err(|e| input_error(format!("workload {:?}: {e}", v.workload_spec)))?;
    let point = Point {
        config: &kernel,
        cmdline: &v.cmdline,
        vcpus: v.vcpus,
        workload_spec: &v.workload_spec,
        workload: &workload,
        accel: v.accel,
        kvm_fallback: v.kvm_fallback.clone(),
        wall_s: v.wall_s,
        host_wait: v.host_wait,
    };
    with_twin(&point, c.kernel)
}

/// Runs `ticklab vm table`.
fn table(a: &TableArgs) -> anyhow::Result<()> {
    let mut points = Vec::new();
    for f in &a.files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| input_error(format!("{}: cannot read: {e}", f.display())))?;
        let mut c: CompareRecord = serde_json::from_str(&text).map_err(|e| {
            input_error(format!(
                "{}: not `ticklab vm compare --json` output: {e}",
                f.display()
            ))
        })?;
        if a.retwin {
            c = retwin(c, a.kernel_config.as_deref())
                .map_err(|e| anyhow::anyhow!("{}: {e:#}", f.display()))?;
            std::fs::write(
                f,
                serde_json::to_string_pretty(&ticklab_schema::versioned::Versioned::new(
                    ticklab_schema::report::REPORT_SCHEMA_VERSION,
                    &c,
                ))? + "\n",
            )
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", f.display()))?;
        }
        points.push(c.comparison);
    }
    if a.header {
        return emit(&(ticklab_vm::render::validation_header(&points) + "\n"));
    }
    emit(&ticklab_vm::render::validation_markdown(&points))?;
    let twin_misses = points
        .iter()
        .flat_map(|v| {
            v.misses().filter(move |c| {
                let wait = v.host_wait.map(|w| w.ms_per_s());
                MissReason::of(c.band, c.kernel_loc_per_s, c.twin_loc_per_s, wait)
                    == MissReason::Twin
            })
        })
        .count();
    if a.check && twin_misses > 0 {
        anyhow::bail!("{twin_misses} CPU(s) outside their band where the twin differs");
    }
    Ok(())
}

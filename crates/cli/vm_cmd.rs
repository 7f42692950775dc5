//! `ticklab vm [compare | table]`: a real kernel under QEMU, measured by the host lab inside,
//! and the twin of that guest beside it. The work is in `ticklab-vm`; this module reads the
//! flags (bad input → exit code 2 before anything boots), runs the twin, and prints.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use ticklab_schema::workload::Workload;
use ticklab_vm::{
    Accel, AccelChoice, BootOptions, BootPoint, CompareRecord, GuestKernel, GuestProbe, MissReason,
    boot_guest_with, with_twin,
};

use crate::args::{DurationArg, parse_duration_arg};
use crate::error::{input_error, library_error};
use crate::output::emit;

/// `ticklab vm` arguments: one boot; a subcommand compares or tabulates.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct VmArgs {
    #[command(subcommand)]
    cmd: Option<VmCommand>,
    #[command(flatten)]
    boot: BootArgs,
    /// What ticklab does inside: `run` the workload (host run), `inspect`, `why` (host why
    /// with the workload running, `host why --workload`), `audit`
    /// (host audit of the CPUs the boot line isolates; exit code 3 when a check fails), `noise`
    /// (host noise on --noise-cpus, then rtla osnoise on the same CPUs when the kernel has
    /// the osnoise tracer; docs/noise.md) or `staleness` (a spinning reader of
    /// CLOCK_MONOTONIC_COARSE on --probe-cpu; the workload is ignored).
    #[arg(long, value_enum, default_value = "run")]
    probe: ProbeArg,
    /// The CPUs `--probe noise` samples (a cpulist of the guest's).
    #[arg(long, default_value = "1", value_name = "CPULIST")]
    noise_cpus: String,
    /// The rtla binary packed beside ticklab for `--probe noise` (`none`: no peer).
    #[arg(long, default_value = "/usr/bin/rtla", value_name = "PATH")]
    rtla: PathBuf,
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
    Audit,
    Noise,
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

/// Least guest memory (MiB): a distribution kernel and the initramfs ticklab builds boot in
/// it.
const MIN_MEMORY_MIB: u32 = 64;

/// Most guest memory (MiB): far above what a measuring guest needs, below what makes QEMU
/// refuse on a usual host.
const MAX_MEMORY_MIB: u32 = 1 << 20;

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
    if !(MIN_MEMORY_MIB..=MAX_MEMORY_MIB).contains(&a.memory) {
        return Err(input_error(format!(
            "--memory {}: expected {MIN_MEMORY_MIB} to {MAX_MEMORY_MIB} (MiB of guest memory)",
            a.memory
        )));
    }
    let kernel = match &a.kernel {
        Some(k) => ticklab_vm::kbuild::cache::resolve_kernel(
            &ticklab_vm::kbuild::cache::KernelCache::from_env(),
            k,
            a.kernel_config.as_deref(),
        )
        .map_err(library_error)?,
        None => {
            GuestKernel::default_installed(std::path::Path::new("/boot")).map_err(library_error)?
        }
    };
    let workload = Workload::parse(&a.workload, a.vcpus)
        .map_err(|e| input_error(format!("--workload: {e}")))?;
    // The boot line as the guest's release reads it, the one resolution the twin of the
    // guest uses too.
    ticklab_cmdline::Kernel {
        build: kernel.config.build(),
        nr_cpus: a.vcpus,
    }
    .resolve(&a.cmdline)
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

/// What `ticklab vm` runs inside the guest, from `--probe` and its arguments.
fn guest_probe(a: &VmArgs) -> anyhow::Result<GuestProbe> {
    let b = &a.boot;
    Ok(match a.probe {
        ProbeArg::Run => GuestProbe::Run {
            workload: b.workload.clone(),
            duration: duration_word(b.duration),
        },
        ProbeArg::Inspect => GuestProbe::Inspect,
        // The config is the guest kernel's, which `prepare` finds; filled in below.
        ProbeArg::Audit => GuestProbe::Audit {
            config: PathBuf::new(),
        },
        // The workload runs inside the guest while `host why` observes (an idle guest
        // passes none).
        ProbeArg::Why => GuestProbe::Why {
            duration: duration_word(b.duration),
            workload: (b.workload != "idle").then(|| b.workload.clone()),
        },
        ProbeArg::Noise => {
            crate::host_noise_cmd::guest_probe(&a.noise_cpus, b.vcpus, b.duration.ns(), &a.rtla)?
        }
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
    })
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
    let probe = guest_probe(a)?;
    let is_run = matches!(probe, GuestProbe::Run { .. });
    let mut p = prepare(b, probe)?;
    if let GuestProbe::Audit { config } = &mut p.options.probe {
        config.clone_from(&p.options.kernel.config_path);
    }
    if let GuestProbe::Noise { peer: Some(_), .. } = &p.options.probe {
        // The peer runs as long again after ticklab, and under TCG the guest reads its
        // trace back slowly: allow a loaded host two minutes more.
        p.options.timeout += 3 * b.duration.as_std() + Duration::from_secs(120);
    }
    let boot = crate::progress::vm_boot(b.duration.as_std(), |on_phase| {
        boot_guest_with(&p.options, on_phase)
    })?;
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
    if let GuestProbe::Noise { .. } = &p.options.probe {
        return emit(&crate::host_noise_cmd::guest_text(o, &p.options.kernel)?);
    }
    if let GuestProbe::Audit { .. } = &p.options.probe {
        // The audit's own verdict travels out as its exit code: 3 is a failed check, with
        // the report above it; anything else non-zero is the guest's failure.
        emit(&(o.data.clone() + "\n"))?;
        return match o.guest_rc {
            0 => Ok(()),
            3 => Err(crate::error::AuditFailed(
                "a check failed inside the guest (the report above names it)".into(),
            )
            .into()),
            rc => anyhow::bail!("ticklab in the guest exited with {rc}"),
        };
    }
    if !is_run {
        if o.guest_rc != 0 {
            anyhow::bail!("ticklab in the guest exited with {}", o.guest_rc);
        }
        return emit(&(o.data.clone() + "\n"));
    }
    let run = boot.host_run()?;
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
    let boot = crate::progress::vm_boot(b.duration.as_std(), |on_phase| {
        boot_guest_with(&p.options, on_phase)
    })?;
    let run = boot.host_run()?;
    let point = BootPoint {
        config: &p.options.kernel.config,
        cmdline: &b.cmdline,
        vcpus: b.vcpus,
        workload_spec: &b.workload,
        workload: &p.workload,
        accel: boot.output.accel,
        kvm_fallback: boot.output.kvm_fallback.clone(),
        wall_s: boot.output.wall_s,
        host_wait: boot.output.host_wait,
        host_cpus: boot.output.host_cpus,
    };
    let record = with_twin(&point, run, &twin).map_err(library_error)?;
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

/// The twin of a guest through its single entry: the event loop, whose per-CPU counters are
/// what the comparison reads, and no compute limit (the length is the guest's measured
/// window).
fn twin(
    s: &ticklab_schema::scenario::Scenario,
) -> Result<ticklab_schema::report::Report, ticklab_host::calibrate::SimulatorError> {
    let options = ticklab_twin::RunOptions {
        engine: Some(ticklab_twin::Engine::EventLoop),
        ..ticklab_twin::RunOptions::unlimited()
    };
    ticklab_twin::run(s, options).map_err(ticklab_host::calibrate::SimulatorError::new)
}

/// The record with its twin simulated again by this build, for the guest kernel's config
/// (`--kernel-config`, or that of the newest installed kernel).
fn retwin_file(
    c: CompareRecord,
    config: Option<&std::path::Path>,
) -> anyhow::Result<CompareRecord> {
    let kernel = match config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| input_error(format!("--kernel-config {}: {e}", path.display())))?;
            ticklab_vm::KernelConfig::parse(&text, &path.display().to_string())
                .map_err(library_error)?
        }
        None => {
            GuestKernel::default_installed(std::path::Path::new("/boot"))
                .map_err(library_error)?
                .config
        }
    };
    ticklab_vm::retwin(c, &kernel, &twin).map_err(library_error)
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
            c = retwin_file(c, a.kernel_config.as_deref())
                .map_err(|e| anyhow::anyhow!("{}: {}", f.display(), crate::error::message(&e)))?;
            let text = serde_json::to_string_pretty(&ticklab_schema::versioned::Versioned::new(
                ticklab_schema::report::REPORT_SCHEMA_VERSION,
                &c,
            ))? + "\n";
            crate::output::write_file("--retwin", f, text.as_bytes())?;
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
            v.misses()
                .filter(move |c| !v.miss_reason(c).is_some_and(MissReason::is_emulator))
        })
        .count();
    if a.check && twin_misses > 0 {
        anyhow::bail!("{twin_misses} CPU(s) outside their band where the twin differs");
    }
    Ok(())
}

//! `ticklab vm build` and `ticklab vm kernels`: guest kernels built from Debian's source
//! packages into the kernel cache, and the cache listed. The work is in
//! `ticklab_vm::kbuild`; this module reads the flags (bad input → exit code 2 before anything
//! is built) and prints.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use ticklab_cmdline::NohzBuild;
use ticklab_vm::kbuild::cache::{KernelCache, SHORT_KEY};
use ticklab_vm::kbuild::fragment::ConfigFragment;
use ticklab_vm::kbuild::patch::PatchFile;
use ticklab_vm::kbuild::{BuildError, BuildRequest, Outcome, build};

use crate::error::{input_error, library_error};

/// The project's fragment, built in: `--config` defaults to it, so the binary builds the
/// guest kernel from any directory.
const PROJECT_FRAGMENT: &str = include_str!("../../kernel-config/ticklab-guest.config");
const PROJECT_FRAGMENT_NAME: &str = "kernel-config/ticklab-guest.config (built in)";

#[derive(Debug, Clone, Copy, ValueEnum)]
enum NohzArg {
    /// CONFIG_HZ_PERIODIC.
    Periodic,
    /// CONFIG_NO_HZ_IDLE.
    Idle,
    /// CONFIG_NO_HZ_FULL.
    Full,
}

/// `vm build` arguments.
#[derive(Debug, Args)]
pub(crate) struct BuildArgs {
    /// Kernel series: the Debian package linux-source-SERIES (installed if missing).
    #[arg(long, default_value = "6.1", value_name = "SERIES")]
    source: String,
    /// CONFIG_HZ: 100, 250, 300 or 1000.
    #[arg(long, default_value_t = 250)]
    hz: u32,
    /// The tick build choice.
    #[arg(long, value_enum, default_value = "full")]
    nohz: NohzArg,
    /// Kconfig fragment merged over tinyconfig (default: the project's
    /// kernel-config/ticklab-guest.config, built into this binary).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// A patch (unified diff, -p1) applied to the source; repeat for several, in order.
    #[arg(long = "patch", value_name = "PATH")]
    patches: Vec<PathBuf>,
    /// The name `--kernel` will accept (default: SERIES-hzHZ-NOHZ+PATCH…).
    #[arg(long)]
    name: Option<String>,
    /// make -j (default: the CPUs this process may use).
    #[arg(long)]
    jobs: Option<u32>,
    /// Print the build's manifest as JSON.
    #[arg(long)]
    json: bool,
    /// Apply the patches and check the configuration, but do not compile (a minute, not a
    /// build): what CI runs.
    #[arg(long)]
    check: bool,
}

/// `vm kernels` arguments.
#[derive(Debug, Args)]
pub(crate) struct KernelsArgs {
    /// Print the manifests as a JSON array.
    #[arg(long)]
    json: bool,
}

fn build_error(e: BuildError) -> anyhow::Error {
    library_error(e)
}

/// Runs `ticklab vm build`.
pub(crate) fn vm_build(a: &BuildArgs) -> anyhow::Result<()> {
    let (fragment_file, text) = match &a.config {
        Some(p) => (
            p.clone(),
            std::fs::read_to_string(p)
                .map_err(|e| input_error(format!("--config {}: cannot read: {e}", p.display())))?,
        ),
        None => (
            PathBuf::from(PROJECT_FRAGMENT_NAME),
            PROJECT_FRAGMENT.to_string(),
        ),
    };
    let fragment = ConfigFragment::parse(&text, &fragment_file.display().to_string())
        .map_err(|e| input_error(format!("--config: {e}")))?;
    for tick in [
        "CONFIG_HZ",
        "CONFIG_NO_HZ_FULL",
        "CONFIG_NO_HZ_IDLE",
        "CONFIG_HZ_PERIODIC",
    ] {
        if fragment.get(tick).is_some() {
            return Err(input_error(format!(
                "--config {}: sets {tick}; the tick choice is --hz and --nohz",
                fragment_file.display()
            )));
        }
    }
    ticklab_schema::scenario::check_hz(a.hz).map_err(|e| input_error(format!("--hz {e}")))?;
    let patches = a
        .patches
        .iter()
        .map(|p| PatchFile::read(p).map_err(library_error))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(n) = &a.name
        && (n.is_empty() || n.contains('/') || n.chars().any(char::is_whitespace))
    {
        return Err(input_error(format!(
            "--name {n:?}: expected a non-empty name without '/' or spaces"
        )));
    }
    let jobs = match a.jobs {
        Some(0) => return Err(input_error("--jobs 0: expected at least 1")),
        Some(j) => j,
        None => std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
    };
    let req = BuildRequest {
        series: a.source.clone(),
        fragment_file,
        fragment,
        hz: a.hz,
        nohz: match a.nohz {
            NohzArg::Periodic => NohzBuild::Periodic,
            NohzArg::Idle => NohzBuild::Idle,
            NohzArg::Full => NohzBuild::Full,
        },
        patches,
        name: a.name.clone(),
        jobs,
        cache: KernelCache::from_env(),
        check_only: a.check,
    };
    let t0 = std::time::Instant::now();
    let kernel = match build(&req, &mut |m| eprintln!("{m}")).map_err(build_error)? {
        Outcome::Checked {
            source,
            options,
            key,
        } => {
            return crate::output::emit(&format!(
                "check: {} patch(es) apply to {source}; all {options} fragment lines survive \
                 make olddefconfig (key {})\n",
                req.patches.len(),
                &key[..SHORT_KEY]
            ));
        }
        Outcome::Cached(k) => {
            eprintln!(
                "build: cached (built {:.0} s ago in {:.0} s); found in {:.2} s",
                now_s().saturating_sub(k.manifest.built_unix_s),
                k.manifest.build_wall_s,
                t0.elapsed().as_secs_f64()
            );
            k
        }
        Outcome::Built(k) => {
            eprintln!("build: done in {:.0} s", t0.elapsed().as_secs_f64());
            k
        }
    };
    let m = &kernel.manifest;
    if a.json {
        return crate::output::emit(&(serde_json::to_string_pretty(m)? + "\n"));
    }
    crate::output::emit(&format!(
        "{}  {}  {}\n",
        m.name,
        &m.key[..SHORT_KEY],
        kernel.image().display()
    ))
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Runs `ticklab vm kernels`.
pub(crate) fn vm_kernels(a: &KernelsArgs) -> anyhow::Result<()> {
    let cache = KernelCache::from_env();
    let all = cache.list();
    if a.json {
        let v: Vec<_> = all.iter().map(|k| &k.manifest).collect();
        return crate::output::emit(&(serde_json::to_string_pretty(&v)? + "\n"));
    }
    if all.is_empty() {
        eprintln!(
            "no kernels in {} (`ticklab vm build` makes one)",
            cache.kernels_dir().display()
        );
        return Ok(());
    }
    let mut s = format!(
        "{:<12}  {:<40}  {:<10}  {:>4}  {:<8}  {:>7}  patches\n",
        "key", "name", "release", "HZ", "nohz", "build s"
    );
    for k in &all {
        let m = &k.manifest;
        let patches: Vec<&str> = m.patches.iter().map(|p| p.file.as_str()).collect();
        s += &format!(
            "{:<12}  {:<40}  {:<10}  {:>4}  {:<8}  {:>7.0}  {}\n",
            &m.key[..SHORT_KEY],
            m.name,
            m.kernel_release,
            m.hz,
            m.nohz,
            m.build_wall_s,
            if patches.is_empty() {
                "-".to_string()
            } else {
                patches.join(", ")
            }
        );
    }
    crate::output::emit(&s)
}

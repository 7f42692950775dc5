//! Building guest kernels from Debian's source packages (`ticklab vm build`).
//!
//! A build takes a kernel series (`6.1`: the `linux-source-6.1` package, installed on demand),
//! the project's Kconfig fragment (`kernel-config/ticklab-guest.config`), a tick choice
//! (`--hz`, `--nohz`) and patches, and leaves a bootable image with its `.config` in the
//! [`cache`], keyed by what went in; a second build of the same inputs returns the cached
//! image without touching the compiler. The steps, in order:
//!
//! 1. [`tools`]: the build tools and headers present (each missing one named with its
//!    package), free space under the cache root;
//! 2. [`source`]: the package installed, its tarball extracted once per package version;
//! 3. a hard-linked copy of the tree per build (`cp -al`; `patch` replaces the files it
//!    changes, so the shared tree is never written), then [`patch`] applies the patches;
//! 4. `make tinyconfig`, the fragment merged (`scripts/kconfig/merge_config.sh`),
//!    `make olddefconfig`, and every fragment line checked in the result ([`fragment`]):
//!    an option the source cannot give is an error, not a silently different kernel;
//! 5. `make bzImage` with its output in `build.log` and a progress line every few seconds;
//! 6. image, config, log and manifest moved into the cache; the build tree removed.

pub mod cache;
mod error;
pub mod fragment;
pub mod patch;
pub mod source;
pub mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ticklab_cmdline::NohzBuild;

use cache::{BuildInputs, CachedKernel, KernelCache, Manifest, PatchRecord};
pub use error::BuildError;
use fragment::ConfigFragment;
use patch::{ApplyError, PatchFile};

/// One build request, checked by the caller (the fragment read, the patches read).
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// Kernel series (`6.1`).
    pub series: String,
    /// The fragment file (named in the manifest).
    pub fragment_file: PathBuf,
    /// Its lines.
    pub fragment: ConfigFragment,
    /// `CONFIG_HZ` (one of Kconfig's choices: 100, 250, 300, 1000).
    pub hz: u32,
    /// The tick build choice.
    pub nohz: NohzBuild,
    /// The patches, in order.
    pub patches: Vec<PatchFile>,
    /// The build's name (default [`cache::default_name`]).
    pub name: Option<String>,
    /// `make -j`.
    pub jobs: u32,
    /// Where the cache lives.
    pub cache: KernelCache,
    /// Stop after the configuration is checked (the patches applied, the fragment merged and
    /// every line found in the result), without compiling: what CI can afford.
    pub check_only: bool,
}

/// What a build request produced.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The kernel was already in the cache.
    Cached(Box<CachedKernel>),
    /// The kernel was built now.
    Built(Box<CachedKernel>),
    /// `check_only`: the patches apply and the fragment survives on this source.
    Checked {
        /// `linux-source-6.1 6.1.192-3`.
        source: String,
        /// Option lines checked in the final config.
        options: usize,
        /// The cache key the build would have.
        key: String,
    },
}

impl BuildRequest {
    /// The fragment as merged: the project's lines and the tick choice.
    pub fn effective_fragment(&self) -> ConfigFragment {
        let mut f = self.fragment.clone();
        f.add_tick_choice(self.hz, self.nohz);
        f
    }
}

fn env_err(what: impl std::fmt::Display) -> BuildError {
    BuildError::Environment(what.to_string())
}

/// Runs `cmd` to completion with its output appended to `log`; an error names `what` and
/// points at the log.
fn run_logged(mut cmd: Command, log: &Path, what: &str) -> Result<(), BuildError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| env_err(format!("{}: {e}", log.display())))?;
    let err = file.try_clone().map_err(env_err)?;
    let st = cmd
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(err))
        .status()
        .map_err(|e| env_err(format!("{what}: cannot run: {e}")))?;
    if st.success() {
        Ok(())
    } else {
        Err(env_err(format!(
            "{what} failed ({st}); the last lines of {}:\n{}",
            log.display(),
            log_tail(log, 25)
        )))
    }
}

fn log_tail(log: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The object count and last step of kbuild's short output (`  CC      kernel/time/…`).
fn make_progress(log_text: &str) -> (usize, &str) {
    let steps = log_text
        .lines()
        .filter(|l| l.starts_with("  ") && l.len() > 10 && l.as_bytes()[2].is_ascii_uppercase());
    let mut n = 0;
    let mut last = "";
    for l in steps {
        n += 1;
        last = l.trim();
    }
    (n, last)
}

/// Runs the compile step, reporting progress every `every`.
fn compile(
    tree: &Path,
    obj: &Path,
    jobs: u32,
    log: &Path,
    every: Duration,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BuildError> {
    let file =
        std::fs::File::create(log).map_err(|e| env_err(format!("{}: {e}", log.display())))?;
    let err = file.try_clone().map_err(env_err)?;
    let mut child = Command::new("make")
        .arg("-C")
        .arg(tree)
        .arg(format!("O={}", obj.display()))
        .arg(format!("-j{jobs}"))
        .arg("bzImage")
        .stdin(Stdio::null())
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(err))
        .spawn()
        .map_err(|e| env_err(format!("make: cannot run: {e}")))?;
    let t0 = Instant::now();
    let mut next = every;
    let st = loop {
        if let Some(st) = child.try_wait().map_err(env_err)? {
            break st;
        }
        std::thread::sleep(Duration::from_millis(200));
        if t0.elapsed() >= next {
            next += every;
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let (n, last) = make_progress(&text);
            progress(&format!(
                "build: {:>4.0} s, {n} steps, at {last}",
                t0.elapsed().as_secs_f64()
            ));
        }
    };
    if st.success() {
        Ok(())
    } else {
        Err(env_err(format!(
            "make bzImage failed ({st}); the last lines of {}:\n{}",
            log.display(),
            log_tail(log, 25)
        )))
    }
}

/// An exclusive lock on `path` held while the value lives (so two builds of one key do not
/// share a tree).
struct Lock {
    _held: std::fs::File,
}

impl Lock {
    fn take(path: &Path, progress: &mut dyn FnMut(&str)) -> Result<Lock, BuildError> {
        use std::os::fd::AsRawFd;
        let f =
            std::fs::File::create(path).map_err(|e| env_err(format!("{}: {e}", path.display())))?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            progress("build: another build of this kernel is running; waiting for it");
            // SAFETY: as above, blocking this time.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
                return Err(env_err(format!(
                    "{}: cannot lock: {}",
                    path.display(),
                    std::io::Error::last_os_error()
                )));
            }
        }
        Ok(Lock { _held: f })
    }
}

/// Builds (or finds in the cache) the kernel `req` describes. `progress` hears each step.
pub fn build(req: &BuildRequest, progress: &mut dyn FnMut(&str)) -> Result<Outcome, BuildError> {
    let package = source::package_name(&req.series)?;
    ticklab_schema::scenario::check_hz(req.hz)
        .map_err(|e| BuildError::Input(format!("--hz {e}")))?;
    check_tools()?;
    let version = match source::installed_version(&package) {
        Some(v) => v,
        None => source::install(&package, progress)?,
    };
    let fragment = req.effective_fragment();
    let fragment_text = fragment.render();
    let key = cache::cache_key(&BuildInputs {
        package: &package,
        package_version: &version,
        fragment: &fragment_text,
        patches: req.patches.iter().map(|p| p.bytes.as_slice()).collect(),
    });
    let cache = &req.cache;
    if let Some(k) = cache.get(&key).filter(|_| !req.check_only) {
        return Ok(Outcome::Cached(Box::new(k)));
    }
    for d in [cache.builds_dir(), cache.sources_dir(), cache.kernels_dir()] {
        std::fs::create_dir_all(&d)
            .map_err(|e| env_err(format!("{}: cannot create: {e}", d.display())))?;
    }
    let _lock = Lock::take(&cache.builds_dir().join(format!("{key}.lock")), progress)?;
    if let Some(k) = cache.get(&key).filter(|_| !req.check_only) {
        // The build we waited for made it.
        return Ok(Outcome::Cached(Box::new(k)));
    }
    let t0 = Instant::now();
    let pristine = source_tree(cache, &package, &version, progress)?;

    let work = cache.builds_dir().join(&key);
    fresh_dir(&work)?;
    let tree = work.join("tree");
    let obj = work.join("obj");
    let log = work.join("build.log");
    progress(&format!("build: {package} {version} → {}", work.display()));
    let source_label = format!("{package} {version}");
    patched_tree(req, &pristine, &tree, &log, &source_label, progress)?;

    configure(
        req,
        &fragment,
        &fragment_text,
        &Dirs {
            tree: &tree,
            obj: &obj,
            work: &work,
            log: &log,
        },
        &source_label,
        progress,
    )?;
    if req.check_only {
        std::fs::remove_dir_all(&work)
            .map_err(|e| env_err(format!("{}: cannot remove: {e}", work.display())))?;
        return Ok(Outcome::Checked {
            source: source_label,
            options: fragment.lines().len(),
            key,
        });
    }

    progress(&format!(
        "build: compiling with make -j{} (log: {})",
        req.jobs,
        log.display()
    ));
    let make_log = work.join("make.log");
    compile(
        &tree,
        &obj,
        req.jobs,
        &make_log,
        Duration::from_secs(15),
        progress,
    )?;
    let wall = t0.elapsed().as_secs_f64();

    install(
        req,
        &key,
        (&package, &version),
        &Dirs {
            tree: &tree,
            obj: &obj,
            work: &work,
            log: &log,
        },
        &make_log,
        wall,
    )
}

/// Refuses a build on a machine without the tools it needs, naming their packages.
fn check_tools() -> Result<(), BuildError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let missing = tools::missing_packages(&path, |h| h.is_file());
    if !missing.is_empty() {
        return Err(env_err(format!(
            "a kernel build needs, and this machine lacks: {} (apt-get install the packages named; scripts/setup.sh does)",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// The pristine source tree of `package` at `version` in the cache, extracted from its
/// tarball when it is not there yet; refuses when the disk cannot hold it and a build.
fn source_tree(
    cache: &KernelCache,
    package: &str,
    version: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, BuildError> {
    let tarball = source::tarball(package)?;
    let have_tree = cache
        .sources_dir()
        .join(format!("{package}_{version}"))
        .join(package)
        .join("Makefile")
        .is_file();
    if !have_tree {
        tools::check_space(
            cache.root(),
            tools::NEED_FOR_SOURCE,
            "extracting the source",
        )
        .map_err(env_err)?;
    }
    let pristine = source::extracted(&cache.sources_dir(), package, version, &tarball, progress)?;
    tools::check_space(cache.root(), tools::NEED_FOR_BUILD, "a kernel build").map_err(env_err)?;
    Ok(pristine)
}

/// `dir`, emptied: removed if a failed build left it, then created.
fn fresh_dir(dir: &Path) -> Result<(), BuildError> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .map_err(|e| env_err(format!("{}: cannot remove: {e}", dir.display())))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| env_err(format!("{}: {e}", dir.display())))
}

/// The build's tree: a hard-linked copy of the pristine source with the request's patches
/// applied in order (a patch that does not apply is the input's fault).
fn patched_tree(
    req: &BuildRequest,
    pristine: &Path,
    tree: &Path,
    log: &Path,
    source_label: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BuildError> {
    let mut cp = Command::new("cp");
    cp.arg("-al").arg(pristine).arg(tree);
    run_logged(cp, log, "cp -al (hard-linked copy of the source)")?;
    for p in &req.patches {
        progress(&format!("build: applying {}", p.path.display()));
        patch::apply(tree, p, source_label).map_err(|e| match e {
            ApplyError::Refused(m) => BuildError::Input(m),
            ApplyError::Tool(m) => BuildError::Environment(m),
        })?;
    }
    Ok(())
}

/// A build's directories: the hard-linked source tree, the object tree, the work directory
/// holding both, and the log of the configuration steps.
struct Dirs<'a> {
    tree: &'a Path,
    obj: &'a Path,
    work: &'a Path,
    log: &'a Path,
}

/// tinyconfig, the fragment merged, olddefconfig; refuses a fragment line that did not
/// survive, and a config that needs OpenSSL headers this machine lacks.
fn configure(
    req: &BuildRequest,
    fragment: &ConfigFragment,
    fragment_text: &str,
    d: &Dirs<'_>,
    source_label: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BuildError> {
    let (tree, obj, work, log) = (d.tree, d.obj, d.work, d.log);
    progress("build: configuring (tinyconfig + fragment, olddefconfig)");
    let frag_file = work.join("ticklab.config");
    std::fs::write(&frag_file, fragment_text)
        .map_err(|e| env_err(format!("{}: {e}", frag_file.display())))?;
    let make = |target: &str| {
        let mut c = Command::new("make");
        c.arg("-C")
            .arg(tree)
            .arg(format!("O={}", obj.display()))
            .arg(target);
        c
    };
    run_logged(make("tinyconfig"), log, "make tinyconfig")?;
    let mut merge = Command::new(tree.join("scripts/kconfig/merge_config.sh"));
    merge
        .current_dir(tree)
        .arg("-m")
        .arg("-O")
        .arg(obj)
        .arg(obj.join(".config"))
        .arg(&frag_file);
    run_logged(merge, log, "merge_config.sh")?;
    run_logged(make("olddefconfig"), log, "make olddefconfig")?;
    let config_text = std::fs::read_to_string(obj.join(".config"))
        .map_err(|e| env_err(format!("{}: {e}", obj.join(".config").display())))?;
    let final_config = ConfigFragment::parse(&config_text, ".config").map_err(env_err)?;
    let dropped = fragment.dropped(&final_config);
    if !dropped.is_empty() {
        let list: Vec<String> = dropped.iter().map(|d| format!("  {d}")).collect();
        return Err(BuildError::Input(format!(
            "{}: {} line(s) did not survive `make olddefconfig` on {source_label}:\n{}",
            req.fragment_file.display(),
            dropped.len(),
            list.join("\n")
        )));
    }
    let needs_openssl = ["CONFIG_MODULE_SIG", "CONFIG_SYSTEM_TRUSTED_KEYRING"]
        .iter()
        .any(|o| final_config.get(o) == Some(&fragment::OptionValue::Yes));
    if needs_openssl && !Path::new(tools::OPENSSL_HEADER.0).is_file() {
        return Err(env_err(format!(
            "this config signs modules or embeds keys and needs {} ({} is missing)",
            tools::OPENSSL_HEADER.1,
            tools::OPENSSL_HEADER.0
        )));
    }
    Ok(())
}

/// Moves the built image, its config, the logs and a manifest into the cache under `key`
/// (through a partial directory renamed at the end), removes the work directory and returns
/// the cached kernel.
fn install(
    req: &BuildRequest,
    key: &str,
    (package, version): (&str, &str),
    d: &Dirs<'_>,
    make_log: &Path,
    wall: f64,
) -> Result<Outcome, BuildError> {
    let (obj, work, log, cache) = (d.obj, d.work, d.log, &req.cache);
    let release = std::fs::read_to_string(obj.join("include/config/kernel.release"))
        .map(|s| s.trim().to_string())
        .map_err(|e| env_err(format!("kernel.release: {e}")))?;
    let dest_tmp = cache.kernels_dir().join(format!(".{key}.partial"));
    let _ = std::fs::remove_dir_all(&dest_tmp);
    std::fs::create_dir_all(&dest_tmp)
        .map_err(|e| env_err(format!("{}: {e}", dest_tmp.display())))?;
    let copy = |from: &Path, to: &str| {
        std::fs::copy(from, dest_tmp.join(to))
            .map(|_| ())
            .map_err(|e| env_err(format!("{} → {to}: {e}", from.display())))
    };
    copy(&obj.join("arch/x86/boot/bzImage"), "bzImage")?;
    copy(&obj.join(".config"), "config")?;
    let mut full_log = std::fs::read_to_string(log).unwrap_or_default();
    full_log += &std::fs::read_to_string(make_log).unwrap_or_default();
    std::fs::write(dest_tmp.join("build.log"), full_log).map_err(env_err)?;
    let built_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let manifest = Manifest {
        key: key.to_string(),
        name: req.name.clone().unwrap_or_else(|| {
            cache::default_name(
                &req.series,
                req.hz,
                req.nohz,
                &req.patches
                    .iter()
                    .map(|p| p.path.clone())
                    .collect::<Vec<_>>(),
            )
        }),
        package: package.to_string(),
        package_version: version.to_string(),
        kernel_release: release,
        hz: req.hz,
        nohz: cache::nohz_word(req.nohz).to_string(),
        fragment_file: req.fragment_file.display().to_string(),
        patches: req
            .patches
            .iter()
            .map(|p| PatchRecord {
                file: p.path.display().to_string(),
                sha256: cache::sha256_hex(&p.bytes),
            })
            .collect(),
        jobs: req.jobs,
        build_wall_s: wall,
        built_unix_s,
    };
    std::fs::write(
        dest_tmp.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).map_err(env_err)? + "\n",
    )
    .map_err(env_err)?;
    let dest = cache.kernels_dir().join(key);
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(&dest_tmp, &dest).map_err(|e| env_err(format!("{}: {e}", dest.display())))?;
    std::fs::remove_dir_all(work)
        .map_err(|e| env_err(format!("{}: cannot remove: {e}", work.display())))?;
    let kernel = cache
        .get(key)
        .ok_or_else(|| env_err(format!("{}: written but not readable back", dest.display())))?;
    Ok(Outcome::Built(Box::new(kernel)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_progress_counts_kbuild_steps() {
        let log = "make[1]: Entering directory '/x/obj'\n  SYNC    include/config/auto.conf\n  CC      kernel/time/tick-sched.o\nIn file included from x.c:1:\n  AR      kernel/time/built-in.a\n";
        assert_eq!(make_progress(log), (3, "AR      kernel/time/built-in.a"));
        assert_eq!(make_progress(""), (0, ""));
    }

    #[test]
    fn bad_series_and_hz_are_input_errors_before_any_work() {
        let req = |series: &str, hz: u32| BuildRequest {
            series: series.into(),
            fragment_file: "f".into(),
            fragment: ConfigFragment::default(),
            hz,
            nohz: NohzBuild::Full,
            patches: vec![],
            name: None,
            jobs: 1,
            check_only: false,
            // A cache root that must never be created by a refused request.
            cache: KernelCache::at("/nonexistent/ticklab-test-cache"),
        };
        let mut heard = Vec::new();
        for (s, hz, want) in [("6", 1000, "--source"), ("6.1", 123, "--hz")] {
            match build(&req(s, hz), &mut |m| heard.push(m.to_string())) {
                Err(BuildError::Input(e)) => assert!(e.contains(want), "{e}"),
                other => panic!("{s} {hz}: {other:?}"),
            }
        }
        assert!(heard.is_empty());
        assert!(!Path::new("/nonexistent/ticklab-test-cache").exists());
    }
}

//! The kernel cache: one directory per build, named by the hash of what went into it.
//!
//! ```text
//! <root>/kernels/<key>/bzImage        the image QEMU boots
//! <root>/kernels/<key>/config         its final .config (what `KernelConfig` reads)
//! <root>/kernels/<key>/manifest.json  what went in: source, tick choice, patches, timings
//! <root>/kernels/<key>/build.log      make's output
//! ```
//!
//! The key ([`cache_key`]) is SHA-256 over the source package and its Debian version, the
//! effective fragment as merged (the project's lines plus the tick choice, rendered one line
//! per option, so comments do not count), and each patch's bytes in order. Names of files do
//! not enter it: the same inputs under another name are the same kernel. The default root is
//! `/var/cache/ticklab`; `TICKLAB_CACHE` moves it.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::kconfig::{GuestKernel, GuestKernelError};

/// The default cache root.
pub const DEFAULT_ROOT: &str = "/var/cache/ticklab";

/// Hex digits of a key shown by `vm kernels` (the full key is in the manifest).
pub const SHORT_KEY: usize = 12;

/// Fewest hex digits `--kernel` accepts as a key prefix.
pub const MIN_KEY_PREFIX: usize = 6;

/// Everything that decides what a build produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildInputs<'a> {
    /// Debian package (`linux-source-6.1`).
    pub package: &'a str,
    /// Its version (`6.1.192-3`).
    pub package_version: &'a str,
    /// The fragment as merged ([`super::fragment::ConfigFragment::render`]).
    pub fragment: &'a str,
    /// The patches' bytes, in the order they are applied.
    pub patches: Vec<&'a [u8]>,
}

/// Lower-case hex SHA-256 of the inputs. Each field is length-prefixed, so no two different
/// inputs share a byte stream.
pub fn cache_key(i: &BuildInputs<'_>) -> String {
    let mut h = Sha256::new();
    let mut field = |tag: &str, bytes: &[u8]| {
        h.update(tag.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    // Bump the version when the build recipe itself changes what comes out.
    field("ticklab-kernel-build-v1", b"");
    field("package", i.package.as_bytes());
    field("version", i.package_version.as_bytes());
    field("fragment", i.fragment.as_bytes());
    for p in &i.patches {
        field("patch", p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex SHA-256 of one file's bytes (patches in the manifest).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One applied patch, as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PatchRecord {
    /// The file as given.
    pub file: String,
    /// SHA-256 of its bytes.
    pub sha256: String,
}

/// What a cached build is: `manifest.json`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    /// The cache key (the directory's name).
    pub key: String,
    /// The name `--kernel` accepts (`6.1-hz1000-full+nohz_full_aggressive`).
    pub name: String,
    /// Debian source package.
    pub package: String,
    /// Its version.
    pub package_version: String,
    /// `make kernelrelease` (`6.1.192`).
    pub kernel_release: String,
    /// `CONFIG_HZ`.
    pub hz: u32,
    /// Tick build choice (`periodic`, `idle`, `full`).
    pub nohz: String,
    /// The fragment file given.
    pub fragment_file: String,
    /// The patches, in order.
    pub patches: Vec<PatchRecord>,
    /// `make -j` jobs.
    pub jobs: u32,
    /// Configure and compile wall time, seconds.
    pub build_wall_s: f64,
    /// When the build finished, seconds since the Unix epoch.
    pub built_unix_s: u64,
}

/// A cached build.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedKernel {
    /// Its directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

impl CachedKernel {
    /// The image.
    pub fn image(&self) -> PathBuf {
        self.dir.join("bzImage")
    }

    /// The final `.config`.
    pub fn config(&self) -> PathBuf {
        self.dir.join("config")
    }

    /// The image with its build options, for booting.
    pub fn guest_kernel(&self) -> Result<GuestKernel, GuestKernelError> {
        GuestKernel::find(&self.image(), Some(&self.config()))
    }
}

/// The cache root and its layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelCache {
    root: PathBuf,
}

impl KernelCache {
    /// The cache at `root`.
    pub fn at(root: impl Into<PathBuf>) -> KernelCache {
        KernelCache { root: root.into() }
    }

    /// `$TICKLAB_CACHE`, else [`DEFAULT_ROOT`].
    pub fn from_env() -> KernelCache {
        KernelCache::at(
            std::env::var_os("TICKLAB_CACHE")
                .filter(|v| !v.is_empty())
                .map_or_else(|| PathBuf::from(DEFAULT_ROOT), PathBuf::from),
        )
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Finished builds live here.
    pub fn kernels_dir(&self) -> PathBuf {
        self.root.join("kernels")
    }

    /// Extracted source packages live here (one tree per package version).
    pub fn sources_dir(&self) -> PathBuf {
        self.root.join("src")
    }

    /// Builds in progress live here (removed when done).
    pub fn builds_dir(&self) -> PathBuf {
        self.root.join("build")
    }

    /// The finished build with this key, if there is one (an entry without a readable
    /// manifest and image is not finished).
    pub fn get(&self, key: &str) -> Option<CachedKernel> {
        let dir = self.kernels_dir().join(key);
        let text = std::fs::read_to_string(dir.join("manifest.json")).ok()?;
        let manifest: Manifest = serde_json::from_str(&text).ok()?;
        let k = CachedKernel { dir, manifest };
        (k.image().is_file() && k.config().is_file()).then_some(k)
    }

    /// Every finished build, newest first.
    pub fn list(&self) -> Vec<CachedKernel> {
        let Ok(dir) = std::fs::read_dir(self.kernels_dir()) else {
            return Vec::new();
        };
        let mut v: Vec<CachedKernel> = dir
            .filter_map(Result::ok)
            .filter_map(|e| self.get(e.file_name().to_str()?))
            .collect();
        v.sort_by(|a, b| {
            (b.manifest.built_unix_s, &b.manifest.key)
                .cmp(&(a.manifest.built_unix_s, &a.manifest.key))
        });
        v
    }

    /// The build `word` names: a key prefix of at least [`MIN_KEY_PREFIX`] hex digits, or a
    /// name (the newest build of that name). `Ok(None)`: nothing matches; `Err`: a key prefix
    /// that matches several builds.
    pub fn lookup(&self, word: &str) -> Result<Option<CachedKernel>, KernelLookupError> {
        let all = self.list();
        let hexish = word.len() >= MIN_KEY_PREFIX && word.bytes().all(|b| b.is_ascii_hexdigit());
        if hexish {
            let by_key: Vec<&CachedKernel> = all
                .iter()
                .filter(|k| k.manifest.key.starts_with(&word.to_ascii_lowercase()))
                .collect();
            match by_key.as_slice() {
                [one] => return Ok(Some((*one).clone())),
                [] => {}
                many => {
                    return Err(KernelLookupError::Ambiguous {
                        word: word.into(),
                        keys: many
                            .iter()
                            .map(|k| k.manifest.key[..SHORT_KEY].to_string())
                            .collect(),
                    });
                }
            }
        }
        Ok(all.into_iter().find(|k| k.manifest.name == word))
    }
}

/// `--kernel WORD`: an image path if `WORD` is a file, else a cached build by key prefix or
/// name. `config` overrides the config file in both cases.
pub fn resolve_kernel(
    cache: &KernelCache,
    word: &Path,
    config: Option<&Path>,
) -> Result<GuestKernel, KernelLookupError> {
    if word.is_file() {
        return Ok(GuestKernel::find(word, config)?);
    }
    let text = word.to_string_lossy();
    if !text.contains('/')
        && let Some(k) = cache.lookup(&text)?
    {
        return Ok(match config {
            Some(c) => GuestKernel::find(&k.image(), Some(c))?,
            None => k.guest_kernel()?,
        });
    }
    Err(KernelLookupError::NotFound {
        word: word.to_path_buf(),
        kernels: cache.kernels_dir(),
    })
}

/// Why `--kernel WORD` names no guest kernel ([`resolve_kernel`], [`KernelCache::lookup`]).
#[derive(Debug, thiserror::Error)]
pub enum KernelLookupError {
    /// A key prefix that matches several cached builds (their short keys).
    #[error(
        "--kernel {word}: key prefix matches {} cached kernels ({}); give more digits",
        keys.len(),
        keys.join(", ")
    )]
    Ambiguous {
        /// The word given.
        word: String,
        /// The short keys it matches.
        keys: Vec<String>,
    },
    /// Neither a file nor a cached build's name or key.
    #[error(
        "--kernel {}: no such file, and no kernel of that name or key in {} (`ticklab vm kernels` lists them; `ticklab vm build` makes one)",
        word.display(),
        kernels.display()
    )]
    NotFound {
        /// The word given.
        word: PathBuf,
        /// The cache's directory of finished builds.
        kernels: PathBuf,
    },
    /// The image or config it names is not a usable guest kernel.
    #[error(transparent)]
    Kernel(#[from] GuestKernelError),
}

/// The default name of a build: `<series>-hz<HZ>-<nohz>` and `+<patch stem>` per patch
/// (`6.1-hz1000-full+nohz_full_aggressive`).
pub fn default_name(
    series: &str,
    hz: u32,
    nohz: ticklab_cmdline::NohzBuild,
    patches: &[PathBuf],
) -> String {
    let mut s = format!("{series}-hz{hz}-{}", nohz_word(nohz));
    for p in patches {
        let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("patch");
        s.push('+');
        s.push_str(stem);
    }
    s
}

/// `periodic` / `idle` / `full`.
pub fn nohz_word(n: ticklab_cmdline::NohzBuild) -> &'static str {
    match n {
        ticklab_cmdline::NohzBuild::Periodic => "periodic",
        ticklab_cmdline::NohzBuild::Idle => "idle",
        ticklab_cmdline::NohzBuild::Full => "full",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs<'a>(fragment: &'a str, patches: Vec<&'a [u8]>) -> BuildInputs<'a> {
        BuildInputs {
            package: "linux-source-6.1",
            package_version: "6.1.192-3",
            fragment,
            patches,
        }
    }

    #[test]
    fn key_is_stable_and_hex() {
        let k = cache_key(&inputs("CONFIG_SMP=y\n", vec![]));
        assert_eq!(k.len(), 64);
        assert!(
            k.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_eq!(k, cache_key(&inputs("CONFIG_SMP=y\n", vec![])));
        // SHA-256 itself, against the standard test vector.
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn every_input_moves_the_key() {
        let base = cache_key(&inputs("CONFIG_SMP=y\n", vec![b"p1"]));
        let mut other_version = inputs("CONFIG_SMP=y\n", vec![b"p1"]);
        other_version.package_version = "6.1.192-4";
        let mut other_package = inputs("CONFIG_SMP=y\n", vec![b"p1"]);
        other_package.package = "linux-source-6.12";
        let variants = [
            cache_key(&other_version),
            cache_key(&other_package),
            cache_key(&inputs("CONFIG_SMP=n\n", vec![b"p1"])),
            cache_key(&inputs("CONFIG_SMP=y\n", vec![])),
            cache_key(&inputs("CONFIG_SMP=y\n", vec![b"p2"])),
            cache_key(&inputs("CONFIG_SMP=y\n", vec![b"p1", b"p1"])),
        ];
        for v in &variants {
            assert_ne!(*v, base);
        }
        // Field boundaries are part of the stream: moving bytes between fields changes it.
        assert_ne!(
            cache_key(&inputs("CONFIG_SMP=y\n", vec![b"ab", b"c"])),
            cache_key(&inputs("CONFIG_SMP=y\n", vec![b"a", b"bc"]))
        );
        // And patch order matters (they apply in order).
        assert_ne!(
            cache_key(&inputs("", vec![b"a", b"b"])),
            cache_key(&inputs("", vec![b"b", b"a"]))
        );
    }

    fn manifest(key: &str, name: &str, t: u64) -> Manifest {
        Manifest {
            key: key.into(),
            name: name.into(),
            package: "linux-source-6.1".into(),
            package_version: "6.1.192-3".into(),
            kernel_release: "6.1.192".into(),
            hz: 1000,
            nohz: "full".into(),
            fragment_file: "kernel-config/ticklab-guest.config".into(),
            patches: vec![],
            jobs: 2,
            build_wall_s: 1.0,
            built_unix_s: t,
        }
    }

    const CONFIG: &str =
        "# Linux/x86 6.1.192 Kernel Configuration\nCONFIG_HZ=1000\nCONFIG_NO_HZ_FULL=y\n";

    /// A cache in a temporary directory with fake finished builds (no kernel is built).
    fn fixture(entries: &[(&str, &str, u64)]) -> (KernelCache, PathBuf) {
        let root = std::env::temp_dir().join(format!(
            "ticklab-cache-test-{}-{}",
            std::process::id(),
            entries.len()
        ));
        let _ = std::fs::remove_dir_all(&root);
        let cache = KernelCache::at(&root);
        for (key, name, t) in entries {
            let dir = cache.kernels_dir().join(key);
            std::fs::create_dir_all(&dir).unwrap();
            // The x86 boot header's signature where `--kernel` checks for it.
            let mut image = vec![0u8; 0x400];
            image[0x202..0x206].copy_from_slice(b"HdrS");
            std::fs::write(dir.join("bzImage"), image).unwrap();
            std::fs::write(dir.join("config"), CONFIG).unwrap();
            std::fs::write(
                dir.join("manifest.json"),
                serde_json::to_string(&manifest(key, name, *t)).unwrap(),
            )
            .unwrap();
        }
        // An unfinished entry (no manifest) is not listed.
        std::fs::create_dir_all(cache.kernels_dir().join("deadbeef00")).unwrap();
        (cache, root)
    }

    #[test]
    fn lookup_by_key_prefix_and_name_table() {
        let (cache, root) = fixture(&[
            ("aaaa11110000", "6.1-hz1000-full", 10),
            ("aaaa22220000", "6.1-hz1000-full", 20),
            ("bbbb33330000", "6.1-hz100-full", 5),
        ]);
        let names: Vec<String> = cache
            .list()
            .iter()
            .map(|k| k.manifest.key.clone())
            .collect();
        assert_eq!(names, ["aaaa22220000", "aaaa11110000", "bbbb33330000"]);
        // (word, Ok(key) | Ok("") for none | Err(substring))
        // (word, the key found, "" for none)
        let cases: [(&str, &str); 6] = [
            ("bbbb33", "bbbb33330000"),
            ("AAAA1111", "aaaa11110000"),
            ("aaaa", ""), // too short for a key, and no such name
            ("aaaa22", "aaaa22220000"),
            ("6.1-hz1000-full", "aaaa22220000"), // the newest of that name
            ("6.1-hz250-full", ""),
        ];
        for (word, want) in cases {
            let got = cache
                .lookup(word)
                .map(|k| k.map(|k| k.manifest.key).unwrap_or_default())
                .map_err(|e| e.to_string());
            assert_eq!(got.as_deref(), Ok(want), "{word}");
        }
        let e = cache.lookup("aaaa00").map(|k| k.is_none());
        assert!(matches!(e, Ok(true)), "{e:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn ambiguous_prefix_and_unknown_kernel_are_errors() {
        let (cache, root) = fixture(&[("cccc11110000", "a", 1), ("cccc11112222", "b", 2)]);
        let e = cache.lookup("cccc1111").unwrap_err().to_string();
        assert!(e.contains("matches 2 cached kernels"), "{e}");
        let e = resolve_kernel(&cache, Path::new("no-such-kernel"), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no such file, and no kernel") && e.contains("vm kernels"),
            "{e}"
        );
        let k = resolve_kernel(&cache, Path::new("b"), None).unwrap();
        assert_eq!(k.config.hz, 1000);
        assert!(k.image.ends_with("cccc11112222/bzImage"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn default_name_table() {
        use ticklab_cmdline::NohzBuild;
        assert_eq!(
            default_name("6.1", 1000, NohzBuild::Full, &[]),
            "6.1-hz1000-full"
        );
        assert_eq!(
            default_name(
                "6.12",
                100,
                NohzBuild::Idle,
                &[PathBuf::from("kernel-patches/nohz_full_aggressive.patch")]
            ),
            "6.12-hz100-idle+nohz_full_aggressive"
        );
    }
}

//! What a kernel build needs from the machine, checked before anything starts: the build
//! tools (each named with the Debian package that provides it) and free disk space.

use std::path::{Path, PathBuf};

/// A program the build runs and the Debian package that installs it.
pub const TOOLS: [(&str, &str); 10] = [
    ("gcc", "gcc"),
    ("make", "make"),
    ("bc", "bc"),
    ("flex", "flex"),
    ("bison", "bison"),
    ("perl", "perl"),
    ("patch", "patch"),
    ("tar", "tar"),
    ("xz", "xz-utils"),
    ("dpkg-query", "dpkg"),
];

/// A header the build compiles against and its Debian package: objtool needs libelf's.
pub const HEADERS: [(&str, &str); 1] = [("/usr/include/gelf.h", "libelf-dev")];

/// The header a config needs only when it signs modules or embeds certificates.
pub const OPENSSL_HEADER: (&str, &str) = ("/usr/include/openssl/opensslv.h", "libssl-dev");

/// Free space needed under the cache root before extracting a source tree, bytes (an
/// extracted 6.1 tree is about 1.4 GB).
pub const NEED_FOR_SOURCE: u64 = 2 << 30;

/// Free space needed for one build's objects, bytes (a trimmed guest build is a few hundred
/// MB).
pub const NEED_FOR_BUILD: u64 = 1 << 30;

/// Whether `name` is an executable file in one of `path`'s directories.
pub fn on_path(name: &str, path: &std::ffi::OsStr) -> bool {
    std::env::split_paths(path).any(|d| {
        let f = d.join(name);
        std::fs::metadata(&f).is_ok_and(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.is_file() && m.permissions().mode() & 0o111 != 0
        })
    })
}

/// The packages to install for what is missing: tools not on `path`, headers not present.
pub fn missing_packages(
    path: &std::ffi::OsStr,
    header_exists: impl Fn(&Path) -> bool,
) -> Vec<String> {
    let mut v: Vec<String> = TOOLS
        .iter()
        .filter(|(tool, _)| !on_path(tool, path))
        .map(|(tool, pkg)| format!("{pkg} (for {tool})"))
        .collect();
    v.extend(
        HEADERS
            .iter()
            .filter(|(h, _)| !header_exists(Path::new(h)))
            .map(|(h, pkg)| format!("{pkg} (for {h})")),
    );
    v
}

/// Free bytes for an unprivileged writer on the file system holding `dir` (or its nearest
/// existing ancestor).
pub fn free_bytes(dir: &Path) -> Option<u64> {
    let mut d = dir;
    while !d.exists() {
        d = d.parent()?;
    }
    let c = std::ffi::CString::new(d.as_os_str().as_encoded_bytes()).ok()?;
    let mut s = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a valid NUL-terminated path; `s` is written by statvfs on success.
    let rc = unsafe { libc::statvfs(c.as_ptr(), s.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled `s`.
    let s = unsafe { s.assume_init() };
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Too little free space for a step of the build: the directory, what it has, what the step
/// (named) needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{}: {:.1} GiB free, {what} needs {:.1} GiB (free some space or set TICKLAB_CACHE)",
    dir.display(),
    *free as f64 / (1u64 << 30) as f64,
    *need as f64 / (1u64 << 30) as f64
)]
pub struct NoSpace {
    /// The directory whose file system was asked.
    pub dir: PathBuf,
    /// Its free bytes (for an unprivileged writer).
    pub free: u64,
    /// The bytes the step needs.
    pub need: u64,
    /// The step (`a kernel build`).
    pub what: String,
}

/// `Err` naming the shortfall when `dir`'s file system has less than `need` bytes free.
pub fn check_space(dir: &Path, need: u64, what: &str) -> Result<(), NoSpace> {
    match free_bytes(dir) {
        Some(free) if free < need => Err(NoSpace {
            dir: dir.to_path_buf(),
            free,
            need,
            what: what.into(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tools_name_their_packages() {
        // An empty PATH and no headers: every package is named once, with what it is for.
        let dir = std::env::temp_dir().join(format!("ticklab-tools-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = std::env::join_paths([&dir]).unwrap();
        let m = missing_packages(&path, |_| false);
        assert_eq!(m.len(), TOOLS.len() + HEADERS.len());
        assert!(m.contains(&"bison (for bison)".to_string()));
        assert!(m.contains(&"xz-utils (for xz)".to_string()));
        assert!(m.contains(&"libelf-dev (for /usr/include/gelf.h)".to_string()));
        // An executable named like a tool in that directory satisfies it; a plain file does not.
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(dir.join("flex"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(dir.join("flex"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("bc"), "").unwrap();
        let m = missing_packages(&path, |_| true);
        assert!(!m.iter().any(|p| p.starts_with("flex")));
        assert!(m.iter().any(|p| p.starts_with("bc ")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn space_check_names_the_shortfall() {
        let tmp = std::env::temp_dir();
        assert!(check_space(&tmp, 0, "x").is_ok());
        let e = check_space(&tmp.join("not/yet/made"), u64::MAX, "a build")
            .unwrap_err()
            .to_string();
        assert!(e.contains("GiB free, a build needs"), "{e}");
    }
}

//! The kernel source: Debian's `linux-source-<series>` package (a tarball under `/usr/src`),
//! installed on demand, extracted once per package version into the cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::error::BuildError;

/// The Debian package holding the source of `series` (`6.1` → `linux-source-6.1`).
pub fn package_name(series: &str) -> Result<String, BuildError> {
    let mut parts = series.split('.');
    let ok = matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(a), Some(b), None) if !a.is_empty() && !b.is_empty()
            && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
    );
    if !ok {
        return Err(BuildError::Input(format!(
            "--source {series:?}: expected a kernel series MAJOR.MINOR (6.1, 6.12), \
             the suffix of a Debian linux-source-* package"
        )));
    }
    Ok(format!("linux-source-{series}"))
}

/// The installed version of `package` (`dpkg-query`), `None` when it is not installed.
pub fn installed_version(package: &str) -> Option<String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${db:Status-Status} ${Version}", package])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (status, version) = text.trim().split_once(' ')?;
    (out.status.success() && status == "installed" && !version.is_empty())
        .then(|| version.to_string())
}

/// Installs `package` with apt-get (as root), refreshing the package lists once if apt does
/// not know it. `progress` hears what is done.
pub fn install(package: &str, progress: &mut dyn FnMut(&str)) -> Result<String, BuildError> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(BuildError::Environment(format!(
            "{package} is not installed and installing it needs root \
             (run scripts/setup.sh, or apt-get install {package})"
        )));
    }
    let get = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .map_err(|e| BuildError::Environment(format!("apt-get: cannot run: {e}")))
    };
    progress(&format!("build: installing {package} (apt-get)"));
    let mut out = get(&["install", "-y", "--no-install-recommends", package])?;
    let unknown = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stderr).contains("Unable to locate package")
    };
    if !out.status.success() && unknown(&out) {
        progress("build: apt-get update (the package lists do not name it)");
        get(&["update", "-q"])?;
        out = get(&["install", "-y", "--no-install-recommends", package])?;
    }
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(if unknown(&out) {
            BuildError::Input(format!(
                "--source: Debian has no package {package} here (`apt-cache search linux-source` lists those there are)"
            ))
        } else {
            BuildError::Environment(format!("apt-get install {package} failed: {err}"))
        });
    }
    installed_version(package).ok_or_else(|| {
        BuildError::Environment(format!(
            "{package}: apt-get succeeded but dpkg does not list it"
        ))
    })
}

/// The source tarball the package installed (`/usr/src/linux-source-6.1.tar.xz`).
pub fn tarball(package: &str) -> Result<PathBuf, BuildError> {
    let out = Command::new("dpkg-query")
        .args(["-L", package])
        .output()
        .map_err(|e| BuildError::Environment(format!("dpkg-query: cannot run: {e}")))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with("/usr/src/") && l.ends_with(".tar.xz"))
        .map(PathBuf::from)
        .ok_or_else(|| {
            BuildError::Environment(format!(
                "{package}: no /usr/src/*.tar.xz among its files (dpkg-query -L {package})"
            ))
        })
}

/// The extracted tree of `package` at `version` under `sources`, extracting it first if
/// needed (into a temporary directory renamed when complete, so a half-extracted tree is
/// never used).
pub fn extracted(
    sources: &Path,
    package: &str,
    version: &str,
    tarball: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, BuildError> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        BuildError::Environment(format!("{}: {what}: {e}", p.display()))
    };
    let dir = sources.join(format!("{package}_{version}"));
    let tree = dir.join(package);
    if tree.join("Makefile").is_file() {
        return Ok(tree);
    }
    let tmp = sources.join(format!(".{package}_{version}.partial"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| io("cannot remove", &tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| io("cannot create", &tmp, e))?;
    progress(&format!(
        "build: extracting {} into {}",
        tarball.display(),
        dir.display()
    ));
    let st = Command::new("tar")
        .arg("-xf")
        .arg(tarball)
        .arg("-C")
        .arg(&tmp)
        .status()
        .map_err(|e| BuildError::Environment(format!("tar: cannot run: {e}")))?;
    if !st.success() || !tmp.join(package).join("Makefile").is_file() {
        return Err(BuildError::Environment(format!(
            "tar -xf {}: failed or gave no {package}/Makefile",
            tarball.display()
        )));
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| io("cannot remove", &dir, e))?;
    }
    std::fs::rename(&tmp, &dir).map_err(|e| io("cannot rename into place", &dir, e))?;
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_to_package_table() {
        let cases: [(&str, Option<&str>); 7] = [
            ("6.1", Some("linux-source-6.1")),
            ("6.12", Some("linux-source-6.12")),
            ("6", None),
            ("6.1.192", None),
            ("6.x", None),
            ("", None),
            ("../6.1", None),
        ];
        for (s, want) in cases {
            match (package_name(s), want) {
                (Ok(p), Some(w)) => assert_eq!(p, w),
                (Err(BuildError::Input(e)), None) => assert!(e.contains("MAJOR.MINOR"), "{e}"),
                (got, _) => panic!("{s:?}: {got:?}"),
            }
        }
    }
}

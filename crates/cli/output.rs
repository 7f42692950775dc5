//! The one writer of every flag that names a single output file (`--trace`, `plot -o`,
//! `report --html`, `sweep -o`, `merge -o`, `host calibrate --out`, `host why --save-trace`,
//! `vm table --retwin`).
//!
//! | target | what happens |
//! |---|---|
//! | `-` | standard output (a closed pipe ends with exit code 141, as everywhere) |
//! | missing, or a regular file | written to a temporary file beside it, then renamed over it: a failed write leaves the old file (or nothing) behind, never half a file; an existing file keeps its permission bits |
//! | a symbolic link | followed: the file it points to is replaced as above, the link stays |
//! | an existing file that is not regular (a character device such as `/dev/null` or `/dev/full`, a FIFO) | opened and written in place: ticklab, often run as root, never replaces a device node with a regular file |
//! | a directory | refused before anything is written (exit code 2): this flag takes a file |
//!
//! Opening or creating the target fails as bad input (exit code 2: a missing directory, no
//! permission); a failing write, flush or rename (ENOSPC on a full disk, EIO) is an I/O
//! failure (exit code 1), as the policy in `crate::error` says.

use crate::error::input_error;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where a single-file output goes, decided from the target before anything is written.
enum Target {
    /// `-`.
    Stdout,
    /// Write in place (a device, a FIFO, a socket).
    InPlace(PathBuf),
    /// Write a temporary file in the same directory, then rename it to `.0` (keeping mode
    /// `.1` of the file it replaces, if any).
    Replace(PathBuf, Option<u32>),
}

/// Writes `bytes` to the file a flag named (see the module docs for the rules).
pub(crate) fn write_file(flag: &str, path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_with(flag, path, |w| w.write_all(bytes))
}

/// Checks, before a long run, that `path` can take the output of `flag`: refuses a directory
/// and a missing parent directory (exit code 2) without creating anything.
pub(crate) fn check_target(flag: &str, path: &Path) -> anyhow::Result<()> {
    match target(flag, path)? {
        Target::Stdout | Target::InPlace(_) => Ok(()),
        Target::Replace(p, _) => {
            let dir = parent_dir(&p);
            match fs::metadata(dir) {
                Ok(m) if m.is_dir() => Ok(()),
                Ok(_) => Err(input_error(format!(
                    "{flag} {}: {} is not a directory",
                    path.display(),
                    dir.display()
                ))),
                Err(e) => Err(input_error(format!(
                    "{flag} {}: directory {}: {e}",
                    path.display(),
                    dir.display()
                ))),
            }
        }
    }
}

/// Whether writing `path` replaces a regular file (or creates one), as opposed to standard
/// output or a device or FIFO written in place: only then does a side file beside it (the
/// sweep journal) belong there.
pub(crate) fn is_regular_target(path: &Path) -> bool {
    !is_stdout(path)
        && match fs::metadata(path) {
            Ok(m) => m.is_file(),
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        }
}

/// Whether `path` names standard output (`-`).
pub(crate) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Writes a command's whole output to stdout. A closed pipe (`| head`) comes back as an error,
/// which `crate::error` turns into the quiet exit code 141, as `sim`'s does.
pub(crate) fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush())?;
    Ok(())
}

/// Streams the output of `fill` to the file a flag named (see the module docs).
pub(crate) fn write_with(
    flag: &str,
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    let io_fail =
        |e: io::Error| anyhow::Error::from(e).context(format!("{flag} {}", path.display()));
    match target(flag, path)? {
        Target::Stdout => {
            let mut out = io::stdout().lock();
            fill(&mut out).and_then(|()| out.flush())?;
            Ok(())
        }
        Target::InPlace(p) => {
            let f = OpenOptions::new()
                .write(true)
                .open(&p)
                .map_err(|e| input_error(format!("{flag} {}: {e}", path.display())))?;
            let mut w = io::BufWriter::new(f);
            fill(&mut w).and_then(|()| w.flush()).map_err(io_fail)
        }
        Target::Replace(p, mode) => {
            let tmp = temp_beside(&p);
            let f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode.unwrap_or(0o666))
                .open(&tmp)
                .map_err(|e| input_error(format!("{flag} {}: {e}", path.display())))?;
            let mut w = io::BufWriter::new(f);
            let written = fill(&mut w)
                .and_then(|()| w.flush())
                .and_then(|()| w.get_ref().sync_data());
            drop(w);
            let done = written.and_then(|()| {
                if let Some(m) = mode {
                    // create_new's mode went through the umask; the replaced file's bits win.
                    fs::set_permissions(&tmp, fs::Permissions::from_mode(m))?;
                }
                fs::rename(&tmp, &p)
            });
            if let Err(e) = done {
                let _ = fs::remove_file(&tmp);
                return Err(io_fail(e));
            }
            Ok(())
        }
    }
}

/// Decides what writing `path` means (module docs), refusing a directory.
fn target(flag: &str, path: &Path) -> anyhow::Result<Target> {
    if is_stdout(path) {
        return Ok(Target::Stdout);
    }
    if path.as_os_str().is_empty() {
        return Err(input_error(format!("{flag}: expected a file name")));
    }
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(input_error(format!(
            "{flag} {}: is a directory; expected a file (or - for standard output)",
            path.display()
        ))),
        Ok(m) if m.is_file() => {
            // Through a symbolic link, replace the file it names and keep the link.
            let real = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            Ok(Target::Replace(real, Some(m.permissions().mode() & 0o7777)))
        }
        Ok(m) => {
            let ft = m.file_type();
            debug_assert!(
                ft.is_char_device() || ft.is_block_device() || ft.is_fifo() || ft.is_socket()
            );
            Ok(Target::InPlace(path.to_path_buf()))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if fs::symlink_metadata(path).is_ok_and(|l| l.file_type().is_symlink()) {
                return Err(input_error(format!(
                    "{flag} {}: a symbolic link to nothing; remove it or name the file",
                    path.display()
                )));
            }
            Ok(Target::Replace(path.to_path_buf(), None))
        }
        Err(e) => Err(input_error(format!("{flag} {}: {e}", path.display()))),
    }
}

/// The directory a file lives in (`.` for a bare name).
fn parent_dir(p: &Path) -> &Path {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// `.<name>.<pid>.tmp` beside `p`: in the same directory, so the rename stays on one file
/// system; the process id keeps two concurrent runs apart.
fn temp_beside(p: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(p.file_name().unwrap_or_default());
    name.push(format!(".{}.tmp", std::process::id()));
    parent_dir(p).join(name)
}

//! What a dynamically linked binary needs to start in an empty root: its ELF interpreter
//! (`PT_INTERP`) and the shared libraries the interpreter resolves for it.
//!
//! [`interpreter`] reads the program headers of a 64-bit little-endian ELF file and returns
//! the `PT_INTERP` path (`None` for a static binary). [`shared_libraries`] asks that
//! interpreter itself (`ld.so --list BINARY`, the mechanism behind `ldd`) and
//! [`parse_list`] reads its answer: one line per library, `name => /path (0xaddr)`, the
//! interpreter as `/path (0xaddr)`, the vDSO without a path.

use std::path::{Path, PathBuf};

/// Why a binary's dependencies could not be found.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    /// The file could not be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The binary.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Not a 64-bit little-endian ELF file, or truncated.
    #[error("{path}: {what} (expected a 64-bit little-endian ELF executable)")]
    Format {
        /// The binary.
        path: PathBuf,
        /// What was wrong.
        what: &'static str,
    },
    /// The interpreter could not list the libraries.
    #[error("{interp} --list {path}: {what}")]
    List {
        /// The interpreter.
        interp: PathBuf,
        /// The binary.
        path: PathBuf,
        /// What went wrong (spawn error or the interpreter's message).
        what: String,
    },
}

const PT_INTERP: u32 = 3;

/// The `PT_INTERP` path of an ELF64 LE image, `Ok(None)` when it has none (static).
pub fn interpreter_of(image: &[u8]) -> Result<Option<String>, &'static str> {
    if image.len() < 64 || &image[..4] != b"\x7fELF" {
        return Err("no ELF magic");
    }
    if image[4] != 2 || image[5] != 1 {
        return Err("not ELFCLASS64 / little-endian");
    }
    let u16_at = |o: usize| {
        image
            .get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |o: usize| {
        image
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |o: usize| {
        image
            .get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    };
    let phoff = u64_at(0x20).ok_or("truncated header")? as usize;
    let phentsize = u16_at(0x36).ok_or("truncated header")? as usize;
    let phnum = u16_at(0x38).ok_or("truncated header")? as usize;
    for i in 0..phnum {
        let ph = phoff.saturating_add(i.saturating_mul(phentsize));
        if u32_at(ph).ok_or("truncated program header")? != PT_INTERP {
            continue;
        }
        let off = u64_at(ph + 8).ok_or("truncated program header")? as usize;
        let size = u64_at(ph + 32).ok_or("truncated program header")? as usize;
        let raw = image
            .get(off..off.saturating_add(size))
            .ok_or("PT_INTERP outside the file")?;
        let path = raw.split(|&b| b == 0).next().unwrap_or_default();
        return String::from_utf8(path.to_vec())
            .map(Some)
            .map_err(|_| "PT_INTERP is not UTF-8");
    }
    Ok(None)
}

/// [`interpreter_of`] for a file.
pub fn interpreter(path: &Path) -> Result<Option<PathBuf>, ElfError> {
    let image = std::fs::read(path).map_err(|source| ElfError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    interpreter_of(&image)
        .map(|i| i.map(PathBuf::from))
        .map_err(|what| ElfError::Format {
            path: path.to_path_buf(),
            what,
        })
}

/// A library the dynamic loader could not find (`libfoo.so.1 => not found`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} not found")]
pub struct MissingLibrary(pub String);

/// The absolute paths in an `ld.so --list` answer, in its order (the interpreter included,
/// the vDSO and unresolved names left out). `not found` libraries are returned as errors.
pub fn parse_list(text: &str) -> Result<Vec<PathBuf>, MissingLibrary> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let target = match line.split_once("=>") {
            Some((name, rest)) => {
                let rest = rest.trim();
                if rest.starts_with("not found") {
                    return Err(MissingLibrary(name.trim().to_string()));
                }
                rest
            }
            None => line,
        };
        let path = target.split_whitespace().next().unwrap_or_default();
        if path.starts_with('/') {
            out.push(PathBuf::from(path));
        }
    }
    Ok(out)
}

/// The interpreter and every shared library `binary` loads (absolute paths, no duplicates);
/// empty for a static binary.
pub fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, ElfError> {
    let Some(interp) = interpreter(binary)? else {
        return Ok(Vec::new());
    };
    let err = |what: String| ElfError::List {
        interp: interp.clone(),
        path: binary.to_path_buf(),
        what,
    };
    let out = std::process::Command::new(&interp)
        .arg("--list")
        .arg(binary)
        .output()
        .map_err(|e| err(e.to_string()))?;
    if !out.status.success() {
        return Err(err(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    let mut libs =
        parse_list(&String::from_utf8_lossy(&out.stdout)).map_err(|e| err(e.to_string()))?;
    if !libs.contains(&interp) {
        libs.push(interp.clone());
    }
    let mut seen = std::collections::BTreeSet::new();
    libs.retain(|p| seen.insert(p.clone()));
    Ok(libs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_lines_table() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd4b1f5000)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f0c)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0b)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f0d)\n";
        assert_eq!(
            parse_list(text).unwrap(),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
        assert_eq!(
            parse_list("\tlibfoo.so.1 => not found\n")
                .unwrap_err()
                .to_string(),
            "libfoo.so.1 not found"
        );
        assert!(parse_list("").unwrap().is_empty());
    }

    #[test]
    fn interpreter_rejects_non_elf_and_truncated() {
        assert_eq!(interpreter_of(b"#!/bin/sh\n"), Err("no ELF magic"));
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 1;
        assert!(interpreter_of(&h).is_err());
        h[4] = 2;
        h[5] = 1;
        // No program headers: a (degenerate) static image.
        assert_eq!(interpreter_of(&h), Ok(None));
        // A program header table pointing past the end.
        h[0x20] = 200;
        h[0x38] = 1;
        h[0x36] = 56;
        assert_eq!(interpreter_of(&h), Err("truncated program header"));
    }

    #[test]
    #[ignore = "reads the running test binary and runs its ELF interpreter"]
    fn this_test_binary_has_an_interpreter_and_libc() {
        let exe = std::env::current_exe().unwrap();
        let libs = shared_libraries(&exe).unwrap();
        assert!(libs.iter().any(|p| p.to_string_lossy().contains("libc.so")));
    }
}

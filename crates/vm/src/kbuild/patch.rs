//! Applying the user's patches to the build's copy of the source, with GNU `patch`.
//!
//! Each patch is first tried with `--dry-run`; only a patch that applies whole is applied,
//! so a failure leaves no half-patched file. A refusal is read back from `patch`'s own words
//! ([`refusal`]) into an error that names the patch file, the source file and the hunk.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One patch file given to the build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchFile {
    /// Where it was read from (named in errors and in the manifest).
    pub path: PathBuf,
    /// Its bytes (hashed into the cache key).
    pub bytes: Vec<u8>,
}

/// Why `--patch` names no usable patch; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum PatchReadError {
    /// The file cannot be read.
    #[error("--patch {}: cannot read: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The read error.
        #[source]
        source: std::io::Error,
    },
    /// The file has no `--- ` and `+++ ` lines.
    #[error("--patch {}: not a unified diff (no '--- ' and '+++ ' lines)", .0.display())]
    NotADiff(PathBuf),
}

impl PatchFile {
    /// Reads a patch file. It must look like a unified diff (a `--- ` and a `+++ ` line).
    pub fn read(path: &Path) -> Result<PatchFile, PatchReadError> {
        let bytes = std::fs::read(path).map_err(|source| PatchReadError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let has = |p: &str| text.lines().any(|l| l.starts_with(p));
        if !(has("--- ") && has("+++ ")) {
            return Err(PatchReadError::NotADiff(path.to_path_buf()));
        }
        Ok(PatchFile {
            path: path.to_path_buf(),
            bytes,
        })
    }
}

/// What `patch --dry-run` said it could not do, read from its output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// These hunks of this file do not apply: `(hunk number, line it was tried at)`.
    Hunks {
        /// The source file.
        file: String,
        /// The failed hunks.
        hunks: Vec<(u32, u32)>,
    },
    /// The patch is already in the tree (or reversed).
    AlreadyApplied {
        /// The source file.
        file: String,
    },
    /// A file the patch changes is not in the tree.
    NoFile {
        /// The name the patch gives.
        file: String,
    },
    /// Something else; `patch`'s output as it was.
    Other(String),
}

/// Reads GNU patch's dry-run output (`checking file X`, `Hunk #N FAILED at L.`,
/// `Reversed (or previously applied) patch detected!`, `can't find file to patch`) into the
/// first thing it refused.
pub fn refusal(output: &str) -> Refusal {
    let mut file = String::new();
    let mut hunks = Vec::new();
    let mut lines = output.lines();
    while let Some(line) = lines.next() {
        let l = line.trim();
        if let Some(f) = l
            .strip_prefix("checking file ")
            .or_else(|| l.strip_prefix("patching file "))
        {
            if !hunks.is_empty() {
                break;
            }
            file = f.trim().trim_matches('\'').to_string();
        } else if let Some(rest) = l.strip_prefix("Hunk #") {
            // `Hunk #2 FAILED at 873.` (also `… at 873 (different line endings).`)
            let mut it = rest.split_whitespace();
            let n = it.next().and_then(|s| s.parse().ok());
            if let (Some(n), Some("FAILED"), Some("at")) = (n, it.next(), it.next()) {
                let at = it
                    .next()
                    .map(|s| s.trim_end_matches('.'))
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                hunks.push((n, at));
            }
        } else if l.starts_with("Reversed (or previously applied) patch detected") {
            return Refusal::AlreadyApplied { file };
        } else if l.starts_with("can't find file to patch") {
            // The names follow in the quoted header (`|--- a/x`, `|+++ b/x`); -p1 drops the
            // first component.
            let header: Vec<&str> = lines
                .by_ref()
                .take_while(|x| !x.starts_with("No file to patch"))
                .collect();
            let named = |p: &str| {
                header
                    .iter()
                    .find_map(|x| x.strip_prefix(p))
                    .and_then(|x| x.split_whitespace().next())
            };
            let raw = named("|+++ ").or_else(|| named("|--- ")).unwrap_or("");
            let name = raw
                .split_once('/')
                .map_or(raw, |(_, rest)| rest)
                .to_string();
            return Refusal::NoFile { file: name };
        }
    }
    if hunks.is_empty() {
        Refusal::Other(output.trim().to_string())
    } else {
        Refusal::Hunks { file, hunks }
    }
}

impl Refusal {
    /// The error text for `patch_path` against `source` (e.g. `linux-source-6.1 6.1.192-3`).
    pub fn describe(&self, patch_path: &Path, source: &str) -> String {
        let p = patch_path.display();
        match self {
            Refusal::Hunks { file, hunks } => {
                let list: Vec<String> = hunks
                    .iter()
                    .map(|(n, at)| format!("hunk #{n} (tried at line {at})"))
                    .collect();
                format!(
                    "--patch {p}: does not apply to {source}: {file}: {} failed",
                    list.join(", ")
                )
            }
            Refusal::AlreadyApplied { file } => format!(
                "--patch {p}: {file} already has this change in {source} (reversed or previously applied patch)"
            ),
            Refusal::NoFile { file } => {
                format!("--patch {p}: {file}: no such file in {source}")
            }
            Refusal::Other(text) => format!("--patch {p}: patch refused it on {source}:\n{text}"),
        }
    }
}

/// Applies `patch` to the tree at `dir` (`-p1`), after a dry run; an `Err` is the refusal's
/// description (bad input), or why `patch` could not run.
pub fn apply(dir: &Path, patch: &PatchFile, source: &str) -> Result<(), ApplyError> {
    let run = |dry: bool| -> Result<std::process::Output, ApplyError> {
        let mut c = Command::new("patch");
        // Absolute: `patch` runs in the tree, the path was given relative to the caller.
        let file = std::path::absolute(&patch.path).unwrap_or_else(|_| patch.path.clone());
        c.args(["-p1", "--forward", "--batch"])
            .arg("-i")
            .arg(file)
            .current_dir(dir);
        // The dry run is verbose: the refusal is read from its per-file and per-hunk lines.
        c.args(if dry {
            ["--dry-run", "--verbose"]
        } else {
            ["--silent", "--no-backup-if-mismatch"]
        });
        c.output().map_err(|e| {
            ApplyError::Tool(format!("patch: cannot run: {e} (install package patch)"))
        })
    };
    let dry = run(true)?;
    if !dry.status.success() {
        let text = String::from_utf8_lossy(&dry.stdout).to_string()
            + &String::from_utf8_lossy(&dry.stderr);
        return Err(ApplyError::Refused(
            refusal(&text).describe(&patch.path, source),
        ));
    }
    let real = run(false)?;
    if !real.status.success() {
        return Err(ApplyError::Tool(format!(
            "patch {}: applied in a dry run but not for real: {}",
            patch.path.display(),
            String::from_utf8_lossy(&real.stderr).trim()
        )));
    }
    Ok(())
}

/// Why a patch was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// The patch does not fit the source (bad input).
    Refused(String),
    /// `patch` itself failed.
    Tool(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    // GNU patch 2.7.6 dry-run output, verbatim shapes.
    const FAILED: &str = "Hmm...  Looks like a unified diff to me...\n\
        The text leading up to this was:\n\
        --------------------------\n\
        |--- a/kernel/time/tick-sched.c\n\
        |+++ b/kernel/time/tick-sched.c\n\
        --------------------------\n\
        checking file kernel/time/tick-sched.c\n\
        Using Plan A...\n\
        Hunk #1 succeeded at 200.\n\
        Hunk #2 FAILED at 873.\n\
        Hunk #3 FAILED at 1090 (different line endings).\n\
        2 out of 3 hunks FAILED\n\
        checking file kernel/time/hrtimer.c\n\
        Hunk #1 succeeded at 1935.\n";

    #[test]
    fn refusal_table() {
        let cases: [(&str, Refusal); 4] = [
            (
                FAILED,
                Refusal::Hunks {
                    file: "kernel/time/tick-sched.c".into(),
                    hunks: vec![(2, 873), (3, 1090)],
                },
            ),
            (
                "checking file drivers/base/cpu.c\nReversed (or previously applied) patch detected!  Skipping patch.\n1 out of 1 hunk ignored\n",
                Refusal::AlreadyApplied {
                    file: "drivers/base/cpu.c".into(),
                },
            ),
            (
                "can't find file to patch at input line 3\nPerhaps you used the wrong -p or --strip option?\nThe text leading up to this was:\n--------------------------\n|--- a/kernel/nope.c\n|+++ b/kernel/nope.c\n--------------------------\nNo file to patch.  Skipping patch.\n",
                Refusal::NoFile {
                    file: "kernel/nope.c".into(),
                },
            ),
            (
                "patch: **** Only garbage was found in the patch input.\n",
                Refusal::Other("patch: **** Only garbage was found in the patch input.".into()),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(refusal(text), want, "{text}");
        }
    }

    #[test]
    fn description_names_patch_file_and_hunks() {
        let d = refusal(FAILED).describe(Path::new("p/x.patch"), "linux-source-6.1 6.1.192-3");
        assert_eq!(
            d,
            "--patch p/x.patch: does not apply to linux-source-6.1 6.1.192-3: \
             kernel/time/tick-sched.c: hunk #2 (tried at line 873), hunk #3 (tried at line 1090) failed"
        );
    }

    #[test]
    fn a_file_that_is_not_a_diff_is_refused_on_reading() {
        let dir = std::env::temp_dir().join(format!("ticklab-patch-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("notes.txt");
        std::fs::write(&f, "just words\n").unwrap();
        let e = PatchFile::read(&f).unwrap_err().to_string();
        assert!(e.contains("not a unified diff"), "{e}");
        let e = PatchFile::read(&dir.join("absent.patch"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_project_patch_is_a_unified_diff_of_the_four_files() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../kernel-patches/nohz_full_aggressive.patch");
        let patch = PatchFile::read(&p).unwrap();
        let text = String::from_utf8(patch.bytes).unwrap();
        let files: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("+++ b/"))
            .collect();
        assert_eq!(
            files,
            [
                "include/linux/tick.h",
                "kernel/time/tick-sched.c",
                "kernel/time/hrtimer.c",
                "drivers/base/cpu.c"
            ]
        );
    }
}

//! Kconfig fragments: the project's `kernel-config/ticklab-guest.config`, the tick lines
//! `ticklab vm build` adds to it (`--hz`, `--nohz`), and the check that every line survived
//! `make olddefconfig` in the final `.config`.
//!
//! The grammar is the one `.config` files use, so the same reader reads both: blank lines and
//! `#` comments are skipped, `CONFIG_NAME=VALUE` sets an option, and the comment
//! `# CONFIG_NAME is not set` unsets one. A later line for the same option replaces an
//! earlier one, as `scripts/kconfig/merge_config.sh` does.

use ticklab_cmdline::NohzBuild;

/// An option's value as written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum OptionValue {
    /// `=y`.
    Yes,
    /// `=m`.
    Module,
    /// `=n` or `# CONFIG_X is not set`.
    No,
    /// A number or a quoted string, as written (`64`, `"ticklab"`).
    Text(String),
}

impl OptionValue {
    fn read(raw: &str) -> OptionValue {
        match raw {
            "y" => OptionValue::Yes,
            "m" => OptionValue::Module,
            "n" => OptionValue::No,
            other => OptionValue::Text(other.to_string()),
        }
    }

    /// The value as a `.config` line writes it (`None` for an unset option).
    fn written(&self) -> Option<&str> {
        match self {
            OptionValue::Yes => Some("y"),
            OptionValue::Module => Some("m"),
            OptionValue::No => None,
            OptionValue::Text(t) => Some(t),
        }
    }
}

impl std::fmt::Display for OptionValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.written().unwrap_or("not set"))
    }
}

/// One option line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigLine {
    /// The option with its `CONFIG_` prefix.
    pub name: String,
    /// Its value.
    pub value: OptionValue,
}

impl ConfigLine {
    fn new(name: &str, value: OptionValue) -> ConfigLine {
        ConfigLine {
            name: name.to_string(),
            value,
        }
    }

    /// The line as a `.config` file writes it.
    pub fn render(&self) -> String {
        match self.value.written() {
            Some(v) => format!("{}={v}", self.name),
            None => format!("# {} is not set", self.name),
        }
    }
}

/// A fragment's option lines, in order, one per option (invariant: names are unique).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConfigFragment {
    lines: Vec<ConfigLine>,
}

/// An option of the fragment that the final `.config` does not have as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The option.
    pub name: String,
    /// What the fragment asked.
    pub wanted: OptionValue,
    /// What the final config has (`None`: the option is not in it at all, usually because a
    /// dependency is missing).
    pub got: Option<OptionValue>,
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.got {
            Some(v) => write!(f, "{}: asked {}, got {v}", self.name, self.wanted),
            None => write!(
                f,
                "{}: asked {}, absent (a dependency is not met)",
                self.name, self.wanted
            ),
        }
    }
}

/// Why a fragment or `.config` line is refused; each names the file and line
/// (`origin:line: …`) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FragmentError {
    /// Neither an assignment nor a comment.
    #[error(
        "{origin}:{line}: {text:?}: expected CONFIG_NAME=VALUE, '# CONFIG_NAME is not set' or a comment"
    )]
    NotALine {
        /// The file.
        origin: String,
        /// The line number, from 1.
        line: usize,
        /// The line, trimmed.
        text: String,
    },
    /// The name before `=` is not `CONFIG_` and a symbol.
    #[error("{origin}:{line}: {name:?}: expected an option name CONFIG_[A-Za-z0-9_]+")]
    BadName {
        /// The file.
        origin: String,
        /// The line number, from 1.
        line: usize,
        /// The name as written.
        name: String,
    },
    /// `CONFIG_X=` with nothing after it.
    #[error(
        "{origin}:{line}: {name}= has no value (expected y, m, n, a number or a quoted string)"
    )]
    NoValue {
        /// The file.
        origin: String,
        /// The line number, from 1.
        line: usize,
        /// The option.
        name: String,
    },
    /// A quoted value without its closing quote.
    #[error("{origin}:{line}: {name}={value}: unterminated string")]
    Unterminated {
        /// The file.
        origin: String,
        /// The line number, from 1.
        line: usize,
        /// The option.
        name: String,
        /// The value as written.
        value: String,
    },
}

/// `CONFIG_` and a Kconfig symbol (letters, digits, underscores; a few symbols have lower case).
fn is_option_name(s: &str) -> bool {
    s.strip_prefix("CONFIG_").is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

impl ConfigFragment {
    /// Reads a fragment or a `.config`; `origin` names it in errors (`file:line: …`).
    pub fn parse(text: &str, origin: &str) -> Result<ConfigFragment, FragmentError> {
        let mut f = ConfigFragment::default();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            let at = i + 1;
            if line.is_empty() {
                continue;
            }
            if let Some(comment) = line.strip_prefix('#') {
                if let Some(name) = comment.trim().strip_suffix(" is not set")
                    && is_option_name(name.trim())
                {
                    f.set(name.trim(), OptionValue::No);
                }
                continue;
            }
            let Some((name, value)) = line.split_once('=') else {
                return Err(FragmentError::NotALine {
                    origin: origin.into(),
                    line: at,
                    text: line.into(),
                });
            };
            let (name, value) = (name.trim(), value.trim());
            if !is_option_name(name) {
                return Err(FragmentError::BadName {
                    origin: origin.into(),
                    line: at,
                    name: name.into(),
                });
            }
            if value.is_empty() {
                return Err(FragmentError::NoValue {
                    origin: origin.into(),
                    line: at,
                    name: name.into(),
                });
            }
            if value.starts_with('"') && (value.len() < 2 || !value.ends_with('"')) {
                return Err(FragmentError::Unterminated {
                    origin: origin.into(),
                    line: at,
                    name: name.into(),
                    value: value.into(),
                });
            }
            f.set(name, OptionValue::read(value));
        }
        Ok(f)
    }

    /// Sets `name` (replacing an earlier line for it).
    pub fn set(&mut self, name: &str, value: OptionValue) {
        match self.lines.iter_mut().find(|l| l.name == name) {
            Some(l) => l.value = value,
            None => self.lines.push(ConfigLine::new(name, value)),
        }
        debug_assert!(
            self.lines.iter().filter(|l| l.name == name).count() == 1,
            "one line per option"
        );
    }

    /// The value of `name`, if the fragment has a line for it.
    pub fn get(&self, name: &str) -> Option<&OptionValue> {
        self.lines.iter().find(|l| l.name == name).map(|l| &l.value)
    }

    /// The option lines in order.
    pub fn lines(&self) -> &[ConfigLine] {
        &self.lines
    }

    /// Adds the tick lines: the HZ choice (`CONFIG_HZ_<hz>=y`, `CONFIG_HZ=<hz>`) and the
    /// tick-mode choice (`CONFIG_HZ_PERIODIC`, `CONFIG_NO_HZ_IDLE` or `CONFIG_NO_HZ_FULL`).
    /// `hz` must be one of Kconfig's HZ choices (the caller checks with `check_hz`).
    pub fn add_tick_choice(&mut self, hz: u32, nohz: NohzBuild) {
        for choice in [100, 250, 300, 1000] {
            let v = if choice == hz {
                OptionValue::Yes
            } else {
                OptionValue::No
            };
            self.set(&format!("CONFIG_HZ_{choice}"), v);
        }
        self.set("CONFIG_HZ", OptionValue::Text(hz.to_string()));
        for (name, mode) in [
            ("CONFIG_HZ_PERIODIC", NohzBuild::Periodic),
            ("CONFIG_NO_HZ_IDLE", NohzBuild::Idle),
            ("CONFIG_NO_HZ_FULL", NohzBuild::Full),
        ] {
            let v = if mode == nohz {
                OptionValue::Yes
            } else {
                OptionValue::No
            };
            self.set(name, v);
        }
    }

    /// The fragment as text, one line per option in order: what the build merges and what the
    /// cache key hashes (so comments and spacing in the source file do not change the key).
    pub fn render(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s += &l.render();
            s.push('\n');
        }
        s
    }

    /// The fragment's lines that `final_config` (a `.config` read with [`Self::parse`]) does
    /// not have as asked. An unset option is satisfied by an absent one.
    pub fn dropped(&self, final_config: &ConfigFragment) -> Vec<Dropped> {
        self.lines
            .iter()
            .filter_map(|l| {
                let got = final_config.get(&l.name);
                let ok = match (&l.value, got) {
                    (OptionValue::No, None) => true,
                    (want, Some(have)) => want == have,
                    (_, None) => false,
                };
                (!ok).then(|| Dropped {
                    name: l.name.clone(),
                    wanted: l.value.clone(),
                    got: got.cloned(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_config_grammar_table() {
        // (text, Ok(rendered) | Err(substring))
        let cases: [(&str, Result<&str, &str>); 10] = [
            ("", Ok("")),
            ("# a comment\n\nCONFIG_SMP=y\n", Ok("CONFIG_SMP=y\n")),
            (
                "# CONFIG_SWAP is not set\n",
                Ok("# CONFIG_SWAP is not set\n"),
            ),
            (
                "CONFIG_NR_CPUS=64\nCONFIG_NR_CPUS=8\n",
                Ok("CONFIG_NR_CPUS=8\n"),
            ),
            (
                "CONFIG_LOCALVERSION=\"-t\"\n",
                Ok("CONFIG_LOCALVERSION=\"-t\"\n"),
            ),
            ("CONFIG_X=n\n", Ok("# CONFIG_X is not set\n")),
            ("SMP=y\n", Err("expected an option name")),
            ("CONFIG_SMP\n", Err("expected CONFIG_NAME=VALUE")),
            ("CONFIG_SMP=\n", Err("has no value")),
            ("CONFIG_S=\"open\n", Err("unterminated string")),
        ];
        for (text, want) in cases {
            let got = ConfigFragment::parse(text, "f.config").map(|f| f.render());
            match want {
                Ok(r) => assert_eq!(got.as_deref(), Ok(r), "{text:?}"),
                Err(s) => {
                    let e = got.unwrap_err().to_string();
                    assert!(e.contains(s) && e.starts_with("f.config:"), "{text:?}: {e}");
                }
            }
        }
    }

    #[test]
    fn errors_name_the_line() {
        let e = ConfigFragment::parse("CONFIG_A=y\n\nbogus\n", "frag")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("frag:3: \"bogus\""), "{e}");
    }

    #[test]
    fn tick_choice_replaces_earlier_lines() {
        let mut f = ConfigFragment::parse("CONFIG_HZ_250=y\nCONFIG_NO_HZ_IDLE=y\n", "f").unwrap();
        f.add_tick_choice(1000, NohzBuild::Full);
        assert_eq!(f.get("CONFIG_HZ_250"), Some(&OptionValue::No));
        assert_eq!(f.get("CONFIG_HZ_1000"), Some(&OptionValue::Yes));
        assert_eq!(f.get("CONFIG_HZ"), Some(&OptionValue::Text("1000".into())));
        assert_eq!(f.get("CONFIG_NO_HZ_IDLE"), Some(&OptionValue::No));
        assert_eq!(f.get("CONFIG_NO_HZ_FULL"), Some(&OptionValue::Yes));
        // One line per option after the overrides.
        let names: std::collections::BTreeSet<_> = f.lines().iter().map(|l| &l.name).collect();
        assert_eq!(names.len(), f.lines().len());
    }

    #[test]
    fn dropped_options_table() {
        let frag = ConfigFragment::parse(
            "CONFIG_A=y\nCONFIG_B=y\n# CONFIG_C is not set\n# CONFIG_D is not set\nCONFIG_E=64\n",
            "frag",
        )
        .unwrap();
        let fin = ConfigFragment::parse(
            "# Linux/x86 6.1.192 Kernel Configuration\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_D=y\nCONFIG_E=32\n",
            ".config",
        )
        .unwrap();
        let d: Vec<String> = frag.dropped(&fin).iter().map(ToString::to_string).collect();
        assert_eq!(
            d,
            [
                "CONFIG_B: asked y, got not set",
                "CONFIG_D: asked not set, got y",
                "CONFIG_E: asked 64, got 32",
            ]
        );
        let absent = ConfigFragment::parse("CONFIG_Z=y\n", "f")
            .unwrap()
            .dropped(&fin);
        assert!(absent[0].to_string().contains("absent"));
    }

    #[test]
    fn project_fragment_reads_and_asks_what_the_guest_needs() {
        let text = include_str!("../../../../kernel-config/ticklab-guest.config");
        let f = ConfigFragment::parse(text, "ticklab-guest.config").unwrap();
        for needed in [
            "CONFIG_SMP",
            "CONFIG_HIGH_RES_TIMERS",
            "CONFIG_FUTEX",
            "CONFIG_BINFMT_ELF",
            "CONFIG_BINFMT_SCRIPT",
            "CONFIG_SERIAL_8250_CONSOLE",
            "CONFIG_PROC_FS",
            "CONFIG_SYSFS",
            "CONFIG_CPU_IDLE",
            "CONFIG_ACPI",
            "CONFIG_BLK_DEV_INITRD",
            "CONFIG_DEVTMPFS",
            "CONFIG_OSNOISE_TRACER",
            "CONFIG_TIMERLAT_TRACER",
        ] {
            assert_eq!(f.get(needed), Some(&OptionValue::Yes), "{needed}");
        }
        // The tick choice is the command's, not the file's.
        assert_eq!(f.get("CONFIG_HZ"), None);
        assert_eq!(f.get("CONFIG_NO_HZ_FULL"), None);
    }
}

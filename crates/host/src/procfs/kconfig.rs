//! Kernel build configuration text (`/proc/config.gz` decompressed, or `/boot/config-<release>`).
//!
//! Lines are `CONFIG_NAME=value` or `# CONFIG_NAME is not set`; only the set ones are kept.

use serde::Serialize;
use std::collections::BTreeMap;

/// The `CONFIG_*` options that are set, by full name, values unquoted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Kconfig {
    /// `CONFIG_NAME` → value (`y`, `m`, a number or a string without its quotes).
    pub options: BTreeMap<String, String>,
}

impl Kconfig {
    /// The value of `name` (with or without the `CONFIG_` prefix).
    pub fn get(&self, name: &str) -> Option<&str> {
        let key = if name.starts_with("CONFIG_") {
            name.to_string()
        } else {
            format!("CONFIG_{name}")
        };
        self.options.get(&key).map(String::as_str)
    }

    /// Whether a bool/tristate option is `y`.
    pub fn is_y(&self, name: &str) -> bool {
        self.get(name) == Some("y")
    }

    /// `CONFIG_HZ`.
    pub fn hz(&self) -> Option<u32> {
        self.get("HZ")?.parse().ok()
    }
}

/// Parses kconfig text; lines that are not `CONFIG_X=v` are ignored.
pub fn parse_kconfig(text: &str) -> Kconfig {
    let options = text
        .lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once('=')?;
            k.starts_with("CONFIG_")
                .then(|| (k.to_string(), v.trim_matches('"').to_string()))
        })
        .collect();
    Kconfig { options }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let k = parse_kconfig(
            "# comment\nCONFIG_HZ_250=y\n# CONFIG_HZ_1000 is not set\nCONFIG_HZ=250\nCONFIG_LOCALVERSION=\"-x\"\nnoise\n",
        );
        assert_eq!(k.hz(), Some(250));
        assert!(k.is_y("HZ_250"));
        assert!(!k.is_y("CONFIG_HZ_1000"));
        assert_eq!(k.get("LOCALVERSION"), Some("-x"));
        assert_eq!(k.options.len(), 3);
    }
}

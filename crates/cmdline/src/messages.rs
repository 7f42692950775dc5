//! What a boot says: the messages [`TickConfig::resolve`](crate::TickConfig::resolve) produces,
//! each marked as the kernel's own line or ticklab's remark ([`MessageOrigin`]).
//!
//! The kernel's lines keep the kernel's wording, so that they can be compared with `dmesg`;
//! ticklab's remarks are never mixed into that text and are shown with a `ticklab: ` prefix.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Who says a boot (or run-time) message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageOrigin {
    /// The kernel prints it, in its own wording.
    Kernel,
    /// ticklab's own remark (shown with a `ticklab: ` prefix, never part of the text).
    Ticklab,
}

/// A message [`TickConfig::resolve`](crate::TickConfig::resolve) produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootMessage {
    /// The kernel's, or ticklab's remark.
    pub origin: MessageOrigin,
    /// The text, without any origin prefix.
    pub text: String,
}

impl BootMessage {
    /// Whether this is ticklab's remark rather than the kernel's.
    pub fn is_ticklab(&self) -> bool {
        self.origin == MessageOrigin::Ticklab
    }
}

impl fmt::Display for BootMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_ticklab() {
            f.write_str("ticklab: ")?;
        }
        f.write_str(&self.text)
    }
}

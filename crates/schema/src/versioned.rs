//! `schema_version` on every JSON document ticklab prints. Reports carry
//! [`REPORT_SCHEMA_VERSION`](crate::report::REPORT_SCHEMA_VERSION) and sweeps
//! `SWEEP_SCHEMA_VERSION` (`ticklab-sweep`) in their own structs; the host
//! probes (`host inspect`, `host irqs`, `host why`) are wrapped in [`Versioned`] with
//! [`HOST_PROBE_SCHEMA_VERSION`] when printed, which puts the key first and leaves their own
//! fields as they were.

use serde::Serialize;

/// Version of the JSON of `host inspect`, `host irqs` and `host why` (docs/schema.md).
/// Adding optional fields keeps it; renaming or removing one bumps it.
pub const HOST_PROBE_SCHEMA_VERSION: u32 = 1;

/// A document with `schema_version` put in front of its own fields (which must serialise as
/// a map: a struct or a map, not a list).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Versioned<'a, T: Serialize> {
    /// The version of `body`'s schema.
    pub schema_version: u32,
    /// The document.
    #[serde(flatten)]
    pub body: &'a T,
}

impl<'a, T: Serialize> Versioned<'a, T> {
    /// `body` with `schema_version` in front.
    pub fn new(schema_version: u32, body: &'a T) -> Self {
        Versioned {
            schema_version,
            body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_comes_first_and_the_fields_stay() {
        #[derive(Serialize)]
        struct Doc {
            b: u32,
            a: &'static str,
        }
        let text =
            serde_json::to_string(&Versioned::new(7, &Doc { b: 1, a: "x" })).unwrap_or_default();
        assert_eq!(text, r#"{"schema_version":7,"b":1,"a":"x"}"#);
    }
}

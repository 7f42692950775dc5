//! Metrics for monitoring: typed metric families and their text exposition.
//!
//! `ticklab host irqs --format openmetrics` and `ticklab host run --format openmetrics` write
//! what they measured in the text format Prometheus scrapes, for node-exporter's textfile
//! collector (a `*.prom` file in its `--collector.textfile.directory`) or any OpenMetrics
//! reader. The producers build [`MetricFamily`]s from their typed results (never from text);
//! [`render`] writes them.
//!
//! One text that both readers accept (docs/metrics.md):
//!
//! * every family is a **gauge**: a window's rates, ratios and quantiles are values of that
//!   window, not counters that only grow (the raw `/proc/interrupts` counters are
//!   node-exporter's own `node_interrupts_total`). This also avoids the one place where the
//!   two formats disagree, the `_total` suffix of counters;
//! * `# HELP` and `# TYPE` before each family's samples; `# UNIT` (OpenMetrics) when the
//!   name ends in a base unit (`_seconds`, `_ratio`, `_watts`), which the Prometheus text
//!   parser reads as a comment;
//! * base units in the names (seconds, not microseconds; ratios, not per cent); rates end in
//!   `_per_second`;
//! * label values escaped (`\\`, `\"`, `\n`); values rounded to twelve significant digits
//!   and written in the shortest decimal form that reads back as that, or `NaN`, `+Inf`,
//!   `-Inf`;
//! * the text ends with `# EOF`, which OpenMetrics requires and the Prometheus text parser
//!   skips as a comment.

use std::fmt::Write;

/// A base unit a metric name may end in (written as OpenMetrics' `# UNIT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds.
    Seconds,
    /// A fraction between 0 and 1.
    Ratio,
    /// Watts.
    Watts,
}

impl Unit {
    /// The unit as written in `# UNIT` and at the end of the name.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Seconds => "seconds",
            Unit::Ratio => "ratio",
            Unit::Watts => "watts",
        }
    }
}

/// One sample: its labels (in the order written) and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// `(name, value)` pairs.
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: f64,
}

/// One gauge family: name, help text, unit and samples.
///
/// Invariants (checked by [`MetricFamily::new`] and [`MetricFamily::push`] in debug builds):
/// the name matches `[a-zA-Z_:][a-zA-Z0-9_:]*` and ends in `_<unit>` when a unit is given;
/// label names match `[a-zA-Z_][a-zA-Z0-9_]*` and do not start with `__`; no two samples
/// carry the same labels.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricFamily {
    name: &'static str,
    help: &'static str,
    unit: Option<Unit>,
    samples: Vec<Sample>,
}

fn is_metric_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_' || c == b':')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':')
}

fn is_label_name(s: &str) -> bool {
    let mut b = s.bytes();
    !s.starts_with("__")
        && matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

impl MetricFamily {
    /// An empty gauge family.
    pub fn new(name: &'static str, help: &'static str, unit: Option<Unit>) -> MetricFamily {
        debug_assert!(is_metric_name(name), "metric name {name:?}");
        debug_assert!(
            unit.is_none_or(|u| name.ends_with(&format!("_{}", u.name()))),
            "{name} must end in its unit"
        );
        MetricFamily {
            name,
            help,
            unit,
            samples: Vec::new(),
        }
    }

    /// Adds one sample.
    pub fn push(&mut self, labels: Vec<(&'static str, String)>, value: f64) {
        debug_assert!(labels.iter().all(|(n, _)| is_label_name(n)), "{labels:?}");
        debug_assert!(
            !self.samples.iter().any(|s| s.labels == labels),
            "{}: duplicate labels {labels:?}",
            self.name
        );
        self.samples.push(Sample { labels, value });
    }

    /// This family with one more sample (builder form of [`MetricFamily::push`]).
    pub fn with(mut self, labels: Vec<(&'static str, String)>, value: f64) -> MetricFamily {
        self.push(labels, value);
        self
    }

    /// The metric name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The samples, in the order pushed.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }
}

fn escape_label_value(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn escape_help(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn value(v: f64, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v == f64::INFINITY {
        out.push_str("+Inf");
    } else if v == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else {
        // Twelve significant digits, then the shortest decimal that reads back as that:
        // `2345.67 / 1e9` is written `0.00000234567`, not `0.0000023456700000000003`.
        // `+ 0.0` turns -0.0 into 0.0.
        let rounded: f64 = format!("{v:.11e}").parse().unwrap_or(v);
        let _ = write!(out, "{}", rounded + 0.0);
    }
}

/// The text exposition of `families` (see the module documentation), families without
/// samples left out, ending with `# EOF`.
pub fn render(families: &[MetricFamily]) -> String {
    let mut out = String::new();
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        let _ = write!(out, "# HELP {} ", f.name);
        escape_help(f.help, &mut out);
        out.push('\n');
        let _ = writeln!(out, "# TYPE {} gauge", f.name);
        if let Some(u) = f.unit {
            let _ = writeln!(out, "# UNIT {} {}", f.name, u.name());
        }
        for s in &f.samples {
            out.push_str(f.name);
            if !s.labels.is_empty() {
                out.push('{');
                for (i, (name, v)) in s.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(name);
                    out.push_str("=\"");
                    escape_label_value(v, &mut out);
                    out.push('"');
                }
                out.push('}');
            }
            out.push(' ');
            value(s.value, &mut out);
            out.push('\n');
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_table() {
        // (name, metric name ok, label name ok)
        let cases = [
            ("ticklab_x", true, true),
            ("_x", true, true),
            ("a:b", true, false),
            ("__x", true, false),
            ("1x", false, false),
            ("", false, false),
            ("x-y", false, false),
        ];
        for (s, metric, label) in cases {
            assert_eq!(is_metric_name(s), metric, "{s}");
            assert_eq!(is_label_name(s), label, "{s}");
        }
    }

    #[test]
    fn render_escapes_and_ends_with_eof() {
        let f = MetricFamily::new("ticklab_t_seconds", "A \\ help\nline.", Some(Unit::Seconds))
            .with(vec![("cpu", "0".into()), ("d", "a\"b\\c\nd".into())], 1.5)
            .with(vec![("cpu", "1".into()), ("d", String::new())], -0.0)
            .with(vec![("cpu", "2".into()), ("d", String::new())], f64::NAN)
            .with(
                vec![("cpu", "3".into()), ("d", String::new())],
                2345.67 / 1e9,
            );
        let empty = MetricFamily::new("ticklab_empty", "Nothing.", None);
        let g = MetricFamily::new("ticklab_g_per_second", "Rate.", None)
            .with(Vec::new(), f64::INFINITY);
        let text = render(&[f, empty, g]);
        assert_eq!(
            text,
            "# HELP ticklab_t_seconds A \\\\ help\\nline.\n\
             # TYPE ticklab_t_seconds gauge\n\
             # UNIT ticklab_t_seconds seconds\n\
             ticklab_t_seconds{cpu=\"0\",d=\"a\\\"b\\\\c\\nd\"} 1.5\n\
             ticklab_t_seconds{cpu=\"1\",d=\"\"} 0\n\
             ticklab_t_seconds{cpu=\"2\",d=\"\"} NaN\n\
             ticklab_t_seconds{cpu=\"3\",d=\"\"} 0.00000234567\n\
             # HELP ticklab_g_per_second Rate.\n\
             # TYPE ticklab_g_per_second gauge\n\
             ticklab_g_per_second +Inf\n\
             # EOF\n"
        );
    }
}

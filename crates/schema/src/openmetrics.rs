//! Metrics for monitoring: typed metric families, the data of the text exposition.
//!
//! `ticklab host irqs --format openmetrics` and `ticklab host run --format openmetrics` write
//! what they measured in the text format Prometheus scrapes, for node-exporter's textfile
//! collector or any OpenMetrics reader. The producers build [`MetricFamily`]s from their
//! typed results (never from text); `ticklab_report::openmetrics::render` writes them
//! (docs/metrics.md). Every family is a gauge; a name ends in its [`Unit`] where it has one.

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

    /// The help text (`# HELP`).
    pub fn help(&self) -> &'static str {
        self.help
    }

    /// The unit the name ends in, if any (`# UNIT`).
    pub fn unit(&self) -> Option<Unit> {
        self.unit
    }

    /// The samples, in the order pushed.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }
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
}

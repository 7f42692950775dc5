//! Run lengths as users write them: `500ms`, `10s`, `2m`, `1h` (a number and a unit).

use std::time::Duration;

/// Parses a run length (`500ms`, `10s`, `2m`, `1h`) with the project's one duration parser,
/// [`ticklab_schema::units::parse_duration`], as a [`Duration`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    ticklab_schema::units::parse_duration(text).map(Duration::from_nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        let table: &[(&str, u64)] = &[
            ("10s", 10_000_000_000),
            ("500ms", 500_000_000),
            ("2m", 120_000_000_000),
            ("1h", 3_600_000_000_000),
            ("1.5s", 1_500_000_000),
            (" 3s ", 3_000_000_000),
            ("1ms", 1_000_000),
            ("3min", 180_000_000_000),
        ];
        for (text, ns) in table {
            assert_eq!(
                parse_duration(text).unwrap(),
                Duration::from_nanos(*ns),
                "{text}"
            );
        }
    }

    #[test]
    fn rejected_forms_name_the_input() {
        for text in [
            "", "10", "s", "10 s", "10sec", "-1s", "0s", "0ms", "1.2.3s", "1e3s", "8d", "200h",
        ] {
            let err = parse_duration(text).expect_err(text);
            assert!(err.contains(&format!("{text:?}")), "{text}: {err}");
        }
    }
}

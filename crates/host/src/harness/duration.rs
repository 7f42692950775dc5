//! Run lengths as users write them: `500ms`, `10s`, `2m`, `1h` (a number and a unit).

use std::time::Duration;

/// Parses a run length: a positive number (decimals allowed) followed by `ms`, `s`, `m` or `h`.
///
/// The unit is required so that `10` is never silently read as ten seconds or ten minutes.
/// The error names the input and what was expected.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let expected = "a number and a unit, e.g. 500ms, 10s, 2m or 1h";
    let value: f64 = number
        .parse()
        .map_err(|_| format!("duration {text:?}: expected {expected}"))?;
    let seconds_per_unit = match unit {
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("duration {text:?}: expected {expected}")),
    };
    let secs = value * seconds_per_unit;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("duration {text:?}: must be longer than zero"));
    }
    if secs > 7.0 * 24.0 * 3600.0 {
        return Err(format!("duration {text:?}: at most a week"));
    }
    Ok(Duration::from_nanos((secs * 1e9).round() as u64))
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
            "", "10", "s", "10 s", "10sec", "-1s", "0s", "0ms", "1.2.3s", "10us", "1e3s", "8d",
            "200h",
        ] {
            let err = parse_duration(text).expect_err(text);
            assert!(err.contains(&format!("{text:?}")), "{text}: {err}");
        }
    }
}

//! Small unit parsers shared by the CLI, scenario files and the host lab.

/// Parses a duration such as `10s`, `500ms`, `250us`, `100ns`, `2m` or `1h` into nanoseconds,
/// or a compound one such as `1h30m`, `2m30s` or `1s500ms` (parts from the largest unit to the
/// smallest, each unit once). Fractions are allowed (`1.5s`); the unit is required, so `10` is
/// never silently read as ten seconds or ten minutes. This is the one duration parser of the
/// project: the CLI, scenario files, sweep grids and the host lab all use it.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    parse_duration_from(s, 1.0)
}

/// A duration given on the command line: [`parse_duration`], except that a bare number
/// (`10`, `2.5`) means seconds, as cyclictest's and rtla's `-D` read it. Scenario files and
/// sweep grids keep [`parse_duration`], where a unit is required.
pub fn parse_cli_duration(s: &str) -> Result<u64, String> {
    parse_duration(&bare_seconds(s)).map_err(|e| as_given(e, s))
}

/// [`parse_warmup`] on the command line: a bare number means seconds (`0` is no warm-up).
pub fn parse_cli_warmup(s: &str) -> Result<u64, String> {
    parse_warmup(&bare_seconds(s)).map_err(|e| as_given(e, s))
}

/// An error of [`parse_duration`] on `bare_seconds(s)`, naming `s` as the user wrote it.
fn as_given(e: String, s: &str) -> String {
    match bare_seconds(s) {
        std::borrow::Cow::Owned(with_unit) => {
            e.replacen(&format!("{with_unit:?}"), &format!("{s:?} (seconds)"), 1)
        }
        std::borrow::Cow::Borrowed(_) => e,
    }
}

/// `s` with an `s` appended when it is a bare number (digits and at most one `.`, after
/// trimming); anything else unchanged, so that its errors name it as given.
fn bare_seconds(s: &str) -> std::borrow::Cow<'_, str> {
    let t = s.trim();
    let bare = !t.is_empty()
        && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && t.bytes().filter(|&b| b == b'.').count() <= 1
        && t.bytes().any(|b| b.is_ascii_digit());
    if bare {
        std::borrow::Cow::Owned(format!("{t}s"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// [`parse_duration`] for a length that may be zero (`0s`, `0ms`): a run's warm-up, which
/// `docs/validation.md` allows to be empty.
pub fn parse_warmup(s: &str) -> Result<u64, String> {
    parse_duration_from(s, 0.0)
}

/// The parser of [`parse_duration`], accepting `least` ns and more.
fn parse_duration_from(s: &str, least: f64) -> Result<u64, String> {
    let t = s.trim();
    let mut rest = t;
    let mut total = 0.0f64;
    let mut last_scale = f64::INFINITY;
    if rest.is_empty() {
        return Err(format!(
            "duration {s:?}: expected a number with a unit like 10s, 500ms, 2m or 1h30m"
        ));
    }
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, after) = rest.split_at(split);
        let value: f64 = num.parse().map_err(|_| {
            format!("duration {s:?}: expected a number with a unit like 10s, 500ms, 2m or 1h30m")
        })?;
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let scale = match unit {
            "s" => 1e9,
            "ms" => 1e6,
            "us" | "µs" => 1e3,
            "ns" => 1.0,
            "m" | "min" => 60e9,
            "h" => 3600e9,
            _ => {
                return Err(format!(
                    "duration {s:?}: unknown unit {unit:?} (expected ns, us, ms, s, m or h)"
                ));
            }
        };
        if scale >= last_scale {
            return Err(format!(
                "duration {s:?}: give the parts from the largest unit to the smallest, each \
                 once (like 1h30m)"
            ));
        }
        last_scale = scale;
        total += value * scale;
        rest = next;
    }
    let ns = total;
    if !(ns.is_finite() && ns >= least) {
        return Err(format!("duration {s:?}: must be longer than zero"));
    }
    if least == 0.0 && ns > 0.0 && ns < 1.0 {
        return Err(format!(
            "duration {s:?}: below a nanosecond; give 0s for no warm-up"
        ));
    }
    if ns > 7.0 * 24.0 * 3600e9 {
        return Err(format!("duration {s:?}: at most a week"));
    }
    Ok(ns.round() as u64)
}

/// Formats nanoseconds compactly (`1.5s`, `250ms`, `40us`, `7ns`).
pub fn format_duration(ns: u64) -> String {
    let (v, unit) = if ns >= 1_000_000_000 {
        (ns as f64 / 1e9, "s")
    } else if ns >= 1_000_000 {
        (ns as f64 / 1e6, "ms")
    } else if ns >= 1_000 {
        (ns as f64 / 1e3, "us")
    } else {
        (ns as f64, "ns")
    };
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_table() {
        let cases: &[(&str, Option<u64>)] = &[
            ("10s", Some(10_000_000_000)),
            ("10", None),
            (" 3s ", Some(3_000_000_000)),
            ("10 s", None),
            ("1.2.3s", None),
            ("8d", None),
            ("200h", None),
            ("1.5s", Some(1_500_000_000)),
            ("500ms", Some(500_000_000)),
            ("250us", Some(250_000)),
            ("1ns", Some(1)),
            ("2m", Some(120_000_000_000)),
            ("1h", Some(3_600_000_000_000)),
            ("0s", None),
            ("-1s", None),
            ("0.1ns", None),
            ("s", None),
            ("10x", None),
            ("", None),
            ("3min", Some(180_000_000_000)),
            ("1ms", Some(1_000_000)),
            ("10sec", None),
            ("0ms", None),
            ("1e3s", None),
            ("5 parsecs", None),
            ("99999999s", None),
            // Compound durations: largest unit first, each unit once.
            ("1h30m", Some(5_400_000_000_000)),
            ("2m30s", Some(150_000_000_000)),
            ("1s500ms", Some(1_500_000_000)),
            ("1h0m1ns", Some(3_600_000_000_001)),
            ("1m1.5s", Some(61_500_000_000)),
            ("1.5h30m", Some(7_200_000_000_000)),
            ("30m1h", None),
            ("1s1s", None),
            ("1h30", None),
            ("1h 30m", None),
            ("1h-30m", None),
            ("167h59m", Some(604_740_000_000_000)),
            ("168h1s", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_duration(input).ok(), *want, "{input:?}");
            if want.is_none() {
                // A refusal names the input as given.
                let e = parse_duration(input).unwrap_err();
                assert!(e.contains(&format!("{input:?}")), "{input:?}: {e}");
            }
        }
    }

    #[test]
    fn cli_durations_read_a_bare_number_as_seconds() {
        let cases: &[(&str, Option<u64>)] = &[
            ("10", Some(10_000_000_000)),
            (" 10 ", Some(10_000_000_000)),
            ("2.5", Some(2_500_000_000)),
            ("0.001", Some(1_000_000)),
            ("10s", Some(10_000_000_000)),
            ("500ms", Some(500_000_000)),
            ("1h30m", Some(5_400_000_000_000)),
            ("0", None),
            ("-1", None),
            (".", None),
            ("1.2.3", None),
            ("604801", None),
            ("1h30", None),
            ("", None),
            ("ten", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_cli_duration(input).ok(), *want, "{input:?}");
        }
        // A refusal names what was given, not the `s` added to it.
        let e = parse_cli_duration("0").unwrap_err();
        assert!(e.contains("\"0\" (seconds)"), "{e}");
        let e = parse_cli_duration("1h30").unwrap_err();
        assert!(e.contains("\"1h30\""), "{e}");
        // Warm-ups may be zero.
        assert_eq!(parse_cli_warmup("0"), Ok(0));
        assert_eq!(parse_cli_warmup("1"), Ok(1_000_000_000));
        assert_eq!(parse_cli_warmup("0s"), Ok(0));
        // Scenario files keep the unit required.
        assert!(parse_duration("10").is_err());
    }

    #[test]
    fn format_roundtrips() {
        for ns in [
            1,
            999,
            1_000,
            40_000,
            250_000_000,
            1_500_000_000,
            3_600_000_000_000,
        ] {
            assert_eq!(parse_duration(&format_duration(ns)), Ok(ns), "{ns}");
        }
    }
}

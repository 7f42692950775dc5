//! Small unit parsers shared by the CLI, scenario files and the host lab.

/// Why a duration was refused: the text as the user wrote it, and what is wrong with it.
///
/// Its `Display` names the input (`duration "10x": unknown unit "x" (expected ...)`); a bare
/// number read as seconds on the command line says so (`"0" (seconds)`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("duration {input:?}{}: {kind}", if *.bare_seconds { " (seconds)" } else { "" })]
pub struct DurationError {
    /// The text as given.
    pub input: String,
    /// Whether it was a bare number that the command line read as seconds.
    pub bare_seconds: bool,
    /// What is wrong with it.
    pub kind: DurationErrorKind,
}

/// What is wrong with a refused duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationErrorKind {
    /// Empty, or a part that is not a number followed by a unit.
    #[error("expected a number with a unit like 10s, 500ms, 2m or 1h30m")]
    NotANumber,
    /// A unit that is not one of ns, us, ms, s, m, h.
    #[error("unknown unit {0:?} (expected ns, us, ms, s, m or h)")]
    UnknownUnit(String),
    /// Parts not from the largest unit to the smallest, or a unit twice.
    #[error("give the parts from the largest unit to the smallest, each once (like 1h30m)")]
    PartsOutOfOrder,
    /// Zero (or negative) where a length must be positive.
    #[error("must be longer than zero")]
    NotPositive,
    /// Above zero but below one nanosecond.
    #[error("below a nanosecond; give 0s for no warm-up")]
    BelowNanosecond,
    /// Longer than the longest run ticklab accepts.
    #[error("at most a week")]
    OverAWeek,
}

/// Parses a duration such as `10s`, `500ms`, `250us`, `100ns`, `2m` or `1h` into nanoseconds,
/// or a compound one such as `1h30m`, `2m30s` or `1s500ms` (parts from the largest unit to the
/// smallest, each unit once). Fractions are allowed (`1.5s`); the unit is required, so `10` is
/// never silently read as ten seconds or ten minutes. This is the one duration parser of the
/// project: the CLI, scenario files, sweep grids and the host lab all use it.
pub fn parse_duration(s: &str) -> Result<u64, DurationError> {
    parse_duration_from(s, 1.0)
}

/// A duration given on the command line: [`parse_duration`], except that a bare number
/// (`10`, `2.5`) means seconds, as cyclictest's and rtla's `-D` read it. Scenario files and
/// sweep grids keep [`parse_duration`], where a unit is required.
pub fn parse_cli_duration(s: &str) -> Result<u64, DurationError> {
    with_bare_seconds(s, parse_duration)
}

/// [`parse_warmup`] on the command line: a bare number means seconds (`0` is no warm-up).
pub fn parse_cli_warmup(s: &str) -> Result<u64, DurationError> {
    with_bare_seconds(s, parse_warmup)
}

/// Runs `parse` on `s`, or on `s` with an `s` appended when it is a bare number (digits and
/// at most one `.`, after trimming); a refusal names `s` as the user wrote it.
fn with_bare_seconds(
    s: &str,
    parse: fn(&str) -> Result<u64, DurationError>,
) -> Result<u64, DurationError> {
    let t = s.trim();
    let bare = !t.is_empty()
        && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && t.bytes().filter(|&b| b == b'.').count() <= 1
        && t.bytes().any(|b| b.is_ascii_digit());
    if !bare {
        return parse(s);
    }
    parse(&format!("{t}s")).map_err(|e| DurationError {
        input: s.to_string(),
        bare_seconds: true,
        kind: e.kind,
    })
}

/// [`parse_duration`] for a length that may be zero (`0s`, `0ms`): a run's warm-up, which
/// `docs/validation.md` allows to be empty.
pub fn parse_warmup(s: &str) -> Result<u64, DurationError> {
    parse_duration_from(s, 0.0)
}

/// The parser of [`parse_duration`], accepting `least` ns and more.
fn parse_duration_from(s: &str, least: f64) -> Result<u64, DurationError> {
    let refuse = |kind| DurationError {
        input: s.to_string(),
        bare_seconds: false,
        kind,
    };
    let t = s.trim();
    let mut rest = t;
    let mut total = 0.0f64;
    let mut last_scale = f64::INFINITY;
    if rest.is_empty() {
        return Err(refuse(DurationErrorKind::NotANumber));
    }
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, after) = rest.split_at(split);
        let value: f64 = num
            .parse()
            .map_err(|_| refuse(DurationErrorKind::NotANumber))?;
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
            // A number without its unit (`1h30`): say what a duration looks like.
            "" => return Err(refuse(DurationErrorKind::NotANumber)),
            _ => return Err(refuse(DurationErrorKind::UnknownUnit(unit.to_string()))),
        };
        if scale >= last_scale {
            return Err(refuse(DurationErrorKind::PartsOutOfOrder));
        }
        last_scale = scale;
        total += value * scale;
        rest = next;
    }
    let ns = total;
    if !(ns.is_finite() && ns >= least) {
        return Err(refuse(DurationErrorKind::NotPositive));
    }
    if least == 0.0 && ns > 0.0 && ns < 1.0 {
        return Err(refuse(DurationErrorKind::BelowNanosecond));
    }
    if ns > 7.0 * 24.0 * 3600e9 {
        return Err(refuse(DurationErrorKind::OverAWeek));
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
                assert_eq!(e.input, *input);
                assert!(
                    e.to_string().contains(&format!("{input:?}")),
                    "{input:?}: {e}"
                );
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
        assert_eq!(
            (e.bare_seconds, &e.kind),
            (true, &DurationErrorKind::NotPositive)
        );
        assert_eq!(
            e.to_string(),
            "duration \"0\" (seconds): must be longer than zero"
        );
        let e = parse_cli_duration("1h30").unwrap_err();
        assert_eq!(
            (e.bare_seconds, &e.kind),
            (false, &DurationErrorKind::NotANumber)
        );
        assert!(e.to_string().contains("\"1h30\""), "{e}");
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

//! Reading input files with bounded memory: the whole-file reader of the scenario and sweep
//! files ([`read_text`]) and the line reader of the JSON-lines files `merge`, `plot`,
//! `report` and `sweep --resume` read back ([`for_each_line`]).
//!
//! Both stop at a limit instead of growing with the input: `ticklab merge /dev/zero` (no
//! newline ever) ends at the per-line limit, `yes | ticklab merge -` at its first line (not a
//! row) and an endless stream of blank lines at the total limit. Lines are handed out one at a
//! time, so memory holds one line plus what the caller keeps of it. The limits are in
//! `docs/validation.md`.

use std::io::{BufRead, Read};

/// Longest line of a JSON-lines file (bytes, without its newline). A sweep row of the largest
/// grid ticklab accepts (every parameter swept, long command lines) is a few KiB.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Largest JSON-lines file read (bytes): enough for the rows of the largest sweep
/// (`ticklab_sweep::grid` allows a million runs; a row is under a KiB) with room to
/// spare, and a stop for a stream that never ends.
pub const MAX_LINES_TOTAL_BYTES: u64 = 1 << 30;

/// Why reading stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinesError {
    /// The reader failed (the message of the I/O error).
    Io(String),
    /// Line `line` (1-based) is longer than the limit.
    LineTooLong {
        /// 1-based line number.
        line: u64,
        /// The limit (bytes).
        limit: usize,
    },
    /// The input is larger than the limit.
    TooLarge {
        /// The limit (bytes).
        limit: u64,
    },
    /// Line `line` (1-based) is not UTF-8 (at this byte of the line).
    NotUtf8 {
        /// 1-based line number.
        line: u64,
        /// Offset of the first bad byte in the line.
        at: usize,
    },
    /// The caller refused line `line` (1-based) with this error.
    Line {
        /// 1-based line number.
        line: u64,
        /// What was wrong with it (the caller's error, as it reads).
        what: String,
    },
}

impl std::fmt::Display for LinesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinesError::Io(e) => write!(f, "cannot read: {e}"),
            LinesError::LineTooLong { line, limit } => write!(
                f,
                "line {line}: longer than {} KiB; not a file of JSON lines",
                limit >> 10
            ),
            LinesError::TooLarge { limit } => {
                write!(
                    f,
                    "larger than {} MiB; not a file ticklab wrote",
                    limit >> 20
                )
            }
            LinesError::NotUtf8 { line, at } => {
                write!(f, "line {line}: not UTF-8 text (byte {at} of the line)")
            }
            LinesError::Line { line, what } => write!(f, "line {line}: {what}"),
        }
    }
}

impl std::error::Error for LinesError {}

/// Calls `f(line_number, line)` for every line of `input` (1-based numbers; the newline and a
/// `\r` before it removed), holding at most `max_line` bytes of one line and reading at most
/// `max_total` bytes in all. An `Err` from `f` (the caller's own error type) stops the reading
/// and comes back as [`LinesError::Line`] with the error's message. A last line without a
/// newline is a line.
pub fn for_each_line<E: std::fmt::Display>(
    mut input: impl BufRead,
    max_line: usize,
    max_total: u64,
    mut f: impl FnMut(u64, &str) -> Result<(), E>,
) -> Result<(), LinesError> {
    let mut buf = Vec::new();
    let mut total = 0u64;
    let mut line = 0u64;
    loop {
        buf.clear();
        // One more byte than a line may hold (plus its newline) tells a long line apart.
        let cap = max_line as u64 + 2;
        let n = (&mut input)
            .take(cap)
            .read_until(b'\n', &mut buf)
            .map_err(|e| LinesError::Io(e.to_string()))?;
        if n == 0 {
            return Ok(());
        }
        line += 1;
        total += n as u64;
        if total > max_total {
            return Err(LinesError::TooLarge { limit: max_total });
        }
        let ended = buf.last() == Some(&b'\n');
        if ended {
            buf.pop();
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        if buf.len() > max_line || (!ended && n as u64 == cap) {
            return Err(LinesError::LineTooLong {
                line,
                limit: max_line,
            });
        }
        let text = std::str::from_utf8(&buf).map_err(|e| LinesError::NotUtf8 {
            line,
            at: e.valid_up_to(),
        })?;
        f(line, text).map_err(|e| LinesError::Line {
            line,
            what: e.to_string(),
        })?;
    }
}

/// Reads all of `input` as UTF-8 text of at most `limit` bytes (the scenario and sweep files:
/// TOML, parsed whole). Errors say which limit was broken; the caller names the file.
pub fn read_text(input: impl Read, limit: u64) -> Result<String, LinesError> {
    let mut bytes = Vec::new();
    input
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| LinesError::Io(e.to_string()))?;
    if bytes.len() as u64 > limit {
        return Err(LinesError::TooLarge { limit });
    }
    String::from_utf8(bytes).map_err(|e| LinesError::NotUtf8 {
        line: 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64,
        at: e.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn lines(input: &[u8], max_line: usize, max_total: u64) -> Result<Vec<String>, LinesError> {
        let mut out = Vec::new();
        for_each_line(input, max_line, max_total, |_, l| {
            out.push(l.to_string());
            Ok::<(), Infallible>(())
        })?;
        Ok(out)
    }

    #[test]
    fn line_table() {
        type Case<'a> = (&'a [u8], Result<&'a [&'a str], LinesError>);
        let cases: &[Case<'_>] = &[
            (b"", Ok(&[])),
            (b"a\nb\n", Ok(&["a", "b"])),
            (b"a\r\nb", Ok(&["a", "b"])),
            (b"\n\n", Ok(&["", ""])),
            (b"12345678\n", Ok(&["12345678"])),
            (
                b"123456789\n",
                Err(LinesError::LineTooLong { line: 1, limit: 8 }),
            ),
            (
                b"ok\n123456789",
                Err(LinesError::LineTooLong { line: 2, limit: 8 }),
            ),
            (b"a\n\xff\n", Err(LinesError::NotUtf8 { line: 2, at: 0 })),
            (
                b"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n",
                Err(LinesError::TooLarge { limit: 20 }),
            ),
        ];
        for (input, want) in cases {
            let got = lines(input, 8, 20);
            let want = want
                .clone()
                .map(|v| v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn an_endless_stream_stops_at_a_limit() {
        let zeros = std::io::BufReader::new(std::io::repeat(0));
        assert_eq!(
            lines_of(zeros),
            Err(LinesError::LineTooLong {
                line: 1,
                limit: MAX_LINE_BYTES
            })
        );
        let blank = std::io::BufReader::new(std::io::repeat(b'\n'));
        assert_eq!(
            for_each_line(blank, 16, 1 << 16, |_, _| Ok::<(), Infallible>(())),
            Err(LinesError::TooLarge { limit: 1 << 16 })
        );
        let yes = std::io::BufReader::new(std::io::repeat(b'y'));
        assert!(read_text(yes, 1024).is_err());
    }

    fn lines_of(r: impl BufRead) -> Result<(), LinesError> {
        for_each_line(r, MAX_LINE_BYTES, MAX_LINES_TOTAL_BYTES, |_, _| {
            Ok::<(), Infallible>(())
        })
    }

    #[test]
    fn the_caller_stops_at_a_bad_line() {
        let e = for_each_line(&b"1\n2\nx\n4\n"[..], 8, 100, |_, l| {
            l.parse::<u32>().map(|_| ())
        })
        .unwrap_err();
        assert!(matches!(e, LinesError::Line { line: 3, .. }), "{e}");
    }

    #[test]
    fn text_limit_and_utf8() {
        assert_eq!(read_text(&b"abc"[..], 3).unwrap(), "abc");
        assert_eq!(
            read_text(&b"abcd"[..], 3),
            Err(LinesError::TooLarge { limit: 3 })
        );
        assert_eq!(
            read_text(&b"a\nb\xff"[..], 10),
            Err(LinesError::NotUtf8 { line: 2, at: 3 })
        );
    }
}

//! The kernel's character classes (`lib/ctype.c`), as far as its boot-line tokenizer and its
//! cpulist parser use them: one definition for both.

/// A byte the kernel's `isspace` accepts: ASCII whitespace. The kernel's table also has 0xA0,
/// which in a UTF-8 string is never the first byte of a character and so never reached: the
/// byte before it already stopped the parse. Outside quotes it ends a boot-line token.
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

#[cfg(test)]
mod tests {
    use super::is_space;

    #[test]
    fn the_six_ascii_spaces_and_nothing_else() {
        let spaces: Vec<u8> = (0..=255u8).filter(|&b| is_space(b)).collect();
        assert_eq!(spaces, vec![0x09, 0x0a, 0x0b, 0x0c, 0x0d, b' ']);
    }
}

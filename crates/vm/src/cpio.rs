//! The initramfs container: a `newc` cpio archive (the "new ASCII" format the kernel's
//! `init/initramfs.c` unpacks), written from scratch.
//!
//! Each member is a 110-byte ASCII header — the magic `070701` and thirteen 8-digit hex
//! fields (inode, mode, uid, gid, nlink, mtime, file size, dev major/minor, rdev major/minor,
//! name size including its NUL, check = 0) — then the NUL-terminated name padded to a
//! multiple of 4 bytes (counting the header), then the data padded to 4. The archive ends
//! with a member named `TRAILER!!!`. Everything here is deterministic: mtimes are 0, inodes
//! count up from 1, members stay in the order they were added.

/// File type bits of `st_mode`.
const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
const S_IFLNK: u32 = 0o120_000;

/// An archive being written in memory.
#[derive(Debug, Default)]
pub struct NewcArchive {
    bytes: Vec<u8>,
    next_ino: u32,
    finished: bool,
}

impl NewcArchive {
    /// An empty archive.
    pub fn new() -> Self {
        NewcArchive {
            bytes: Vec::new(),
            next_ino: 1,
            finished: false,
        }
    }

    /// A directory (`path` without a leading `/`, e.g. `sys/kernel/tracing`).
    pub fn dir(&mut self, path: &str, perm: u32) {
        self.member(path, S_IFDIR | (perm & 0o7777), 2, &[]);
    }

    /// A regular file with these contents.
    pub fn file(&mut self, path: &str, perm: u32, data: &[u8]) {
        self.member(path, S_IFREG | (perm & 0o7777), 1, data);
    }

    /// A symbolic link `path` → `target`.
    pub fn symlink(&mut self, path: &str, target: &str) {
        self.member(path, S_IFLNK | 0o777, 1, target.as_bytes());
    }

    /// Appends the trailer and returns the archive's bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.member("TRAILER!!!", 0, 1, &[]);
        self.finished = true;
        self.bytes
    }

    fn member(&mut self, name: &str, mode: u32, nlink: u32, data: &[u8]) {
        debug_assert!(!self.finished, "no member after the trailer");
        debug_assert!(!name.starts_with('/'), "newc names are relative: {name}");
        let ino = if name == "TRAILER!!!" {
            0
        } else {
            self.next_ino += 1;
            self.next_ino - 1
        };
        let fields = [
            ino,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime
            data.len() as u32,
            0, // dev major
            0, // dev minor
            0, // rdev major
            0, // rdev minor
            name.len() as u32 + 1,
            0, // check
        ];
        self.bytes.extend_from_slice(b"070701");
        for f in fields {
            self.bytes.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        self.bytes.extend_from_slice(name.as_bytes());
        self.bytes.push(0);
        self.pad();
        self.bytes.extend_from_slice(data);
        self.pad();
    }

    /// Pads with NULs to the next multiple of 4 (the archive starts aligned).
    fn pad(&mut self) {
        while !self.bytes.len().is_multiple_of(4) {
            self.bytes.push(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header fields of the member starting at `at`: (name, mode, size, next offset).
    fn read_member(b: &[u8], at: usize) -> (String, u32, usize, usize) {
        assert_eq!(&b[at..at + 6], b"070701");
        let field = |i: usize| {
            let s = std::str::from_utf8(&b[at + 6 + 8 * i..at + 14 + 8 * i]).unwrap();
            u32::from_str_radix(s, 16).unwrap()
        };
        let (mode, size, namesize) = (field(1), field(6) as usize, field(11) as usize);
        let name_start = at + 110;
        let name = std::str::from_utf8(&b[name_start..name_start + namesize - 1]).unwrap();
        let data_start = (name_start + namesize).next_multiple_of(4);
        let next = (data_start + size).next_multiple_of(4);
        (name.to_string(), mode, size, next)
    }

    #[test]
    fn members_read_back_in_order_with_padding() {
        let mut a = NewcArchive::new();
        a.dir("bin", 0o755);
        a.file("init", 0o755, b"#!/bin/sh\n");
        a.symlink("bin/sh", "busybox");
        let b = a.finish();
        assert!(b.len().is_multiple_of(4));
        // (name, mode, size)
        let want = [
            ("bin", 0o040_755, 0),
            ("init", 0o100_755, 10),
            ("bin/sh", 0o120_777, 7),
            ("TRAILER!!!", 0, 0),
        ];
        let mut at = 0;
        for (name, mode, size) in want {
            let (n, m, s, next) = read_member(&b, at);
            assert_eq!((n.as_str(), m, s), (name, mode, size));
            at = next;
        }
        assert_eq!(at, b.len());
    }

    #[test]
    fn header_is_110_ascii_bytes_and_deterministic() {
        let build = || {
            let mut a = NewcArchive::new();
            a.file("x", 0o644, b"abc");
            a.finish()
        };
        let b = build();
        assert_eq!(b, build());
        assert!(b[..110].iter().all(u8::is_ascii_hexdigit));
        // inode 1, then the name "x\0" at 110..112, data at 112 (already aligned).
        assert_eq!(&b[6..14], b"00000001");
        assert_eq!(&b[110..112], b"x\0");
        assert_eq!(&b[112..115], b"abc");
    }
}

//! The cpulist grammar against the kernel's own selftest vectors (the `parselist_tests` table
//! of `lib/test_bitmap.c`, mainline), restated as facts — input, bit count, the set or the
//! error — with the release each outcome belongs to; then the sysfs files the host lab reads,
//! the kernel's quirks, ticklab's own outcomes, and a property that no text panics.

use super::*;

/// A row holds for every release ticklab models.
const ANY: (u32, u32) = (2, 6);

/// What a row expects.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// The set, as its canonical cpulist.
    Cpus(&'static str),
    /// The kernel's error.
    Err(CpulistErrno),
}
use CpulistErrno::{Einval, Eoverflow, Erange};
use Want::{Cpus, Err};

/// One fact: `input` parsed with `nbits` bits gives `want` from release `since` on; a release
/// older than `since` stops at the new syntax with `-EINVAL`.
struct Row {
    input: &'static str,
    nbits: u32,
    want: Want,
    since: (u32, u32),
}

const fn row(input: &'static str, nbits: u32, want: Want, since: (u32, u32)) -> Row {
    Row {
        input,
        nbits,
        want,
        since,
    }
}

const EVEN_0_30: &str = "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30";
const ODD_1_31: &str = "1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31";
const EVERY_4TH_FROM_0: &str = "0,4,8,12,16,20,24,28";
const EVERY_4TH_FROM_1: &str = "1,5,9,13,17,21,25,29";
const ONE_OF_4_THEN_TWO_OF_4: &str =
    "0,4,8,12,16,20,24,28,32-33,36-37,40-41,44-45,48-49,52-53,56-57,60-61";
const THREE_OF_4_THEN_ALL: &str = "0-2,4-6,8-10,12-14,16-18,20-22,24-26,28-30,32-63";
const ONE_TWO_THREE_FOUR_OF_4: &str = "0,4,8,12,16,20,24,28,32-33,36-37,40-41,44-45,48-49,\
    52-53,56-57,60-61,64-66,68-70,72-74,76-78,80-82,84-86,88-90,92-94,96-127";
const HALF_OF_EVERY_256: &str =
    "0-127,256-383,512-639,768-895,1024-1151,1280-1407,1536-1663,1792-1919";

/// The kernel's `parselist_tests` vectors, in its order (69 rows: 68 with an expected result
/// and the one the kernel only times, whose set is given here too).
const KERNEL_VECTORS: &[Row] = &[
    row("0", 8, Cpus("0"), ANY),
    row("1", 8, Cpus("1"), ANY),
    row("0-15", 32, Cpus("0-15"), ANY),
    row("16-31", 32, Cpus("16-31"), ANY),
    row("0-31:1/2", 32, Cpus(EVEN_0_30), GROUPS_SINCE),
    row("1-31:1/2", 32, Cpus(ODD_1_31), GROUPS_SINCE),
    row("0-31:1/4", 32, Cpus(EVERY_4TH_FROM_0), GROUPS_SINCE),
    row("1-31:1/4", 32, Cpus(EVERY_4TH_FROM_1), GROUPS_SINCE),
    row("0-31:4/4", 32, Cpus("0-31"), GROUPS_SINCE),
    row("1-31:4/4", 32, Cpus("1-31"), GROUPS_SINCE),
    row(
        "0-31:1/4,32-63:2/4",
        64,
        Cpus(ONE_OF_4_THEN_TWO_OF_4),
        GROUPS_SINCE,
    ),
    row(
        "0-31:3/4,32-63:4/4",
        64,
        Cpus(THREE_OF_4_THEN_ALL),
        GROUPS_SINCE,
    ),
    row(
        "  ,,  0-31:3/4  ,, 32-63:4/4  ,,  ",
        64,
        Cpus(THREE_OF_4_THEN_ALL),
        GROUPS_SINCE,
    ),
    row(
        "0-31:1/4,32-63:2/4,64-95:3/4,96-127:4/4",
        128,
        Cpus(ONE_TWO_THREE_FOUR_OF_4),
        GROUPS_SINCE,
    ),
    // The kernel times this one and checks only that it parses.
    row(
        "0-2047:128/256",
        2048,
        Cpus(HALF_OF_EVERY_256),
        GROUPS_SINCE,
    ),
    row("", 8, Cpus(""), ANY),
    row("\n", 8, Cpus(""), ANY),
    row(",,  ,,  , ,  ,", 8, Cpus(""), ANY),
    row(" ,  ,,  , ,   ", 8, Cpus(""), ANY),
    row(" ,  ,,  , ,   \n", 8, Cpus(""), ANY),
    row("0-0", 32, Cpus("0"), ANY),
    row("1-1", 32, Cpus("1"), ANY),
    row("15-15", 32, Cpus("15"), ANY),
    row("31-31", 32, Cpus("31"), ANY),
    row("0-0:0/1", 32, Cpus(""), GROUPS_SINCE),
    row("0-0:1/1", 32, Cpus("0"), GROUPS_SINCE),
    row("0-0:1/31", 32, Cpus("0"), GROUPS_SINCE),
    row("0-0:31/31", 32, Cpus("0"), GROUPS_SINCE),
    row("1-1:1/1", 32, Cpus("1"), GROUPS_SINCE),
    row("0-15:16/31", 32, Cpus("0-15"), GROUPS_SINCE),
    row("15-15:1/2", 32, Cpus("15"), GROUPS_SINCE),
    row("15-15:31/31", 32, Cpus("15"), GROUPS_SINCE),
    row("15-31:1/31", 32, Cpus("15"), GROUPS_SINCE),
    row("16-31:16/31", 32, Cpus("16-31"), GROUPS_SINCE),
    row("31-31:31/31", 32, Cpus("31"), GROUPS_SINCE),
    row("N-N", 32, Cpus("31"), LAST_CPU_N_SINCE),
    row("0-0:1/N", 32, Cpus("0"), LAST_CPU_N_SINCE),
    row("0-0:N/N", 32, Cpus("0"), LAST_CPU_N_SINCE),
    row("0-15:16/N", 32, Cpus("0-15"), LAST_CPU_N_SINCE),
    row("15-15:N/N", 32, Cpus("15"), LAST_CPU_N_SINCE),
    row("15-N:1/N", 32, Cpus("15"), LAST_CPU_N_SINCE),
    row("16-N:16/N", 32, Cpus("16-31"), LAST_CPU_N_SINCE),
    row("N-N:N/N", 32, Cpus("31"), LAST_CPU_N_SINCE),
    row(
        "0-N:1/3,1-N:1/3,2-N:1/3",
        32,
        Cpus("0-31"),
        LAST_CPU_N_SINCE,
    ),
    row("0-31:1/3,1-31:1/3,2-31:1/3", 32, Cpus("0-31"), GROUPS_SINCE),
    row(
        "1-10:8/12,8-31:24/29,0-31:0/3",
        32,
        Cpus("1-31"),
        GROUPS_SINCE,
    ),
    row("all", 32, Cpus("0-31"), ALL_SINCE),
    row("0, 1, all,  ", 32, Cpus("0-31"), ALL_SINCE),
    row("all:1/2", 32, Cpus(EVEN_0_30), ALL_SINCE),
    row("ALL:1/2", 32, Cpus(EVEN_0_30), ALL_SINCE),
    row("al", 8, Err(Einval), ANY),
    row("alll", 8, Err(Einval), ANY),
    row("-1", 8, Err(Einval), ANY),
    row("-0", 8, Err(Einval), ANY),
    row("10-1", 8, Err(Einval), ANY),
    row("8-8", 8, Err(Erange), ANY),
    row("0-31", 8, Err(Erange), ANY),
    row("0-31:", 32, Err(Einval), ANY),
    row("0-31:0", 32, Err(Einval), ANY),
    row("0-31:0/", 32, Err(Einval), ANY),
    row("0-31:0/0", 32, Err(Einval), ANY),
    row("0-31:1/0", 32, Err(Einval), ANY),
    row("0-31:10/1", 32, Err(Einval), ANY),
    row("0-98765432123456789:10/1", 8, Err(Eoverflow), ANY),
    row("a-31", 8, Err(Einval), ANY),
    row("0-a1", 8, Err(Einval), ANY),
    row("a-31:10/1", 8, Err(Einval), ANY),
    row("0-31:a/1", 8, Err(Einval), ANY),
    row("0-\n", 8, Err(Einval), ANY),
];

/// What the host lab reads from sysfs (`online`, `possible`, `present`, `isolated`,
/// `nohz_full`, a cgroup's `cpuset.cpus.effective`): canonical lists ending in a newline, or a
/// bare newline for none. Read with the count unknown, as the host does.
const SYSFS_FILES: &[Row] = &[
    row("0-1\n", u32::MAX, Cpus("0-1"), ANY),
    row("\n", u32::MAX, Cpus(""), ANY),
    row("3\n", u32::MAX, Cpus("3"), ANY),
    row("2-3\n", u32::MAX, Cpus("2-3"), ANY),
    row("0-3,8-11\n", u32::MAX, Cpus("0-3,8-11"), ANY),
    row("0,2,4-7,64-127\n", u32::MAX, Cpus("0,2,4-7,64-127"), ANY),
    row("0-8191\n", u32::MAX, Cpus("0-8191"), ANY),
];

/// Consequences of the kernel's grammar that its table does not show, each checked by hand
/// against `bitmap_parselist` (docs/kernel-behaviour.md §4.8).
const KERNEL_QUIRKS: &[Row] = &[
    // Whitespace separates regions like a comma does.
    row("0 1\t2", 8, Cpus("0-2"), ANY),
    // A newline right after a number or range ends the text: what follows is never read.
    row("1\n2", 8, Cpus("1"), ANY),
    row("1\nrubbish", 8, Cpus("1"), ANY),
    row("0-1\n\n7", 8, Cpus("0-1"), ANY),
    // Elsewhere a newline is whitespace between regions.
    row(",\n5", 8, Cpus("5"), ANY),
    row("0-3:1/2\n5", 8, Cpus("0,2,5"), GROUPS_SINCE),
    // A NUL ends the text wherever it is.
    row("1,\u{0},2", 8, Cpus("1"), ANY),
    row("1\u{0}2", 8, Cpus("1"), ANY),
    // After `/group` no separator is required: `N` starts the next region.
    row("0-7:1/2N", 8, Cpus("0,2,4,6-7"), LAST_CPU_N_SINCE),
    row("0-3:1/2all", 8, Cpus("0-7"), ALL_SINCE),
    row("0-7:1/2x", 8, Err(Einval), GROUPS_SINCE),
    // A single CPU or range may not be followed by anything but a separator.
    row("3x", 8, Err(Einval), ANY),
    row("2:1/2", 8, Err(Einval), ANY),
    row("0--3", 8, Err(Einval), ANY),
    row("+1", 8, Err(Einval), ANY),
    row("0x3", 8, Err(Einval), ANY),
    // Leading zeros are decimal, not octal.
    row("010", 16, Cpus("10"), ANY),
    // Checks run in the kernel's order: the range before the bit count.
    row("9-8", 8, Err(Einval), ANY),
    row("0-8:3/2", 8, Err(Einval), GROUPS_SINCE),
    // 4294967295 fits 32 bits, so it is not an overflow; its implicit group size, end + 1,
    // wraps to 0 and the kernel says -EINVAL, not -ERANGE.
    row("4294967295", 8, Err(Einval), ANY),
    row("4294967296", 8, Err(Eoverflow), ANY),
    row("8", 8, Err(Erange), ANY),
    // The first bad region decides, even after good ones.
    row("0-3,9,5", 8, Err(Erange), ANY),
    row("1,x,99", 8, Err(Einval), ANY),
    // `all` is a three-letter prefix; `n` is not `N`.
    row("All", 4, Cpus("0-3"), ALL_SINCE),
    row("all-3", 4, Err(Einval), ANY),
    row("n", 4, Err(Einval), ANY),
    row("1-N", 8, Cpus("1-7"), LAST_CPU_N_SINCE),
    row("N", 1, Cpus("0"), LAST_CPU_N_SINCE),
    // A machine with no CPUs: `N` is the wrapped last bit and the group size wraps to 0.
    row("N", 0, Err(Einval), LAST_CPU_N_SINCE),
    row("0", 0, Err(Erange), ANY),
    row(
        "1,2,10-20,100-2000:2/25",
        2001,
        Cpus(
            "1-2,10-20,100-101,125-126,150-151,175-176,\
        200-201,225-226,250-251,275-276,300-301,325-326,350-351,375-376,400-401,425-426,450-451,\
        475-476,500-501,525-526,550-551,575-576,600-601,625-626,650-651,675-676,700-701,725-726,\
        750-751,775-776,800-801,825-826,850-851,875-876,900-901,925-926,950-951,975-976,\
        1000-1001,1025-1026,1050-1051,1075-1076,1100-1101,1125-1126,1150-1151,1175-1176,\
        1200-1201,1225-1226,1250-1251,1275-1276,1300-1301,1325-1326,1350-1351,1375-1376,\
        1400-1401,1425-1426,1450-1451,1475-1476,1500-1501,1525-1526,1550-1551,1575-1576,\
        1600-1601,1625-1626,1650-1651,1675-1676,1700-1701,1725-1726,1750-1751,1775-1776,\
        1800-1801,1825-1826,1850-1851,1875-1876,1900-1901,1925-1926,1950-1951,1975-1976,\
        2000",
        ),
        GROUPS_SINCE,
    ),
];

/// The release just before `since`.
fn release_before(since: (u32, u32)) -> (u32, u32) {
    match since {
        (major, 0) => (major - 1, 20),
        (major, minor) => (major, minor - 1),
    }
}

fn check(rows: &[Row], table: &str) -> usize {
    let mut checked = 0;
    for r in rows {
        let releases = [r.since, (6, 18)];
        for (grammar, label) in [(CpulistGrammar::MAINLINE, "mainline".to_string())]
            .into_iter()
            .chain(
                releases
                    .iter()
                    .map(|v| (CpulistGrammar::of_kernel(*v), format!("{}.{}", v.0, v.1))),
            )
        {
            let got = parse_cpulist_as(r.input, r.nbits, grammar);
            match r.want {
                Cpus(want) => assert_eq!(
                    got.as_ref()
                        .map(CpuSet::to_cpulist)
                        .map_err(|e| e.to_string()),
                    Ok(want.to_string()),
                    "{table}: {:?} with {} bits on {label}",
                    r.input,
                    r.nbits
                ),
                Err(errno) => assert_eq!(
                    got.as_ref().map_err(|e| e.errno).map(CpuSet::to_cpulist),
                    Result::Err(errno),
                    "{table}: {:?} with {} bits on {label}",
                    r.input,
                    r.nbits
                ),
            }
        }
        if r.since != ANY {
            let old = release_before(r.since);
            let got = parse_cpulist_as(r.input, r.nbits, CpulistGrammar::of_kernel(old));
            assert_eq!(
                got.as_ref().map_err(|e| e.errno).map(CpuSet::to_cpulist),
                Result::Err(Einval),
                "{table}: {:?} on {}.{} (before {}.{}) should be -EINVAL",
                r.input,
                old.0,
                old.1,
                r.since.0,
                r.since.1
            );
        }
        checked += 1;
    }
    checked
}

#[test]
fn kernel_parselist_vectors() {
    assert_eq!(check(KERNEL_VECTORS, "parselist_tests"), 69);
}

#[test]
fn sysfs_files_the_host_reads() {
    check(SYSFS_FILES, "sysfs");
    // `%*pbl` of a mask that was never allocated: some releases print it for nohz_full.
    assert_eq!(parse_sysfs_cpulist("(null)\n"), Ok(CpuSet::new()));
    assert_eq!(
        parse_sysfs_cpulist("1-3\n").map(|s| s.to_cpulist()),
        Ok("1-3".into())
    );
    assert_eq!(
        parse_sysfs_cpulist("garbage").map_err(|e| e.errno),
        Result::Err(Einval)
    );
}

#[test]
fn kernel_quirks() {
    check(KERNEL_QUIRKS, "quirks");
}

#[test]
fn grammar_of_each_release() {
    // (release, groups, N, all)
    for (v, groups, n, all) in [
        ((3, 10), false, false, false),
        ((4, 8), false, false, false),
        ((4, 9), true, false, false),
        ((5, 11), true, false, false),
        ((5, 12), true, true, false),
        ((5, 13), true, true, false),
        ((5, 14), true, true, true),
        ((6, 18), true, true, true),
    ] {
        assert_eq!(
            CpulistGrammar::of_kernel(v),
            CpulistGrammar {
                groups,
                last_cpu_n: n,
                all
            },
            "{v:?}"
        );
    }
}

/// Where ticklab gives an answer the kernel never has to: it always knows its CPU count.
#[test]
fn ticklab_only_outcomes_without_a_cpu_count() {
    for (input, errno) in [
        ("N", CpulistErrno::NeedsCpuCount),
        ("1-N", CpulistErrno::NeedsCpuCount),
        ("all", CpulistErrno::NeedsCpuCount),
        ("8192", Erange),
        ("0-4294967294", Erange),
    ] {
        assert_eq!(
            parse_cpulist(input, u32::MAX).map_err(|e| e.errno),
            Result::Err(errno),
            "{input:?}"
        );
    }
    assert_eq!(CpulistErrno::NeedsCpuCount.kernel_name(), None);
}

#[test]
fn errors_name_the_region_its_offset_and_the_class() {
    // (list, nbits, region, offset, class, words in the message)
    let cases: &[(&str, u32, &str, usize, CpulistErrno, &str)] = &[
        ("0-3,9,5", 8, "9", 4, Erange, "CPUs below 8"),
        ("  ,, 1-x", 8, "1-x", 5, Einval, "found 'x'"),
        ("0-3:2", 8, "0-3:2", 0, Einval, "`/group`"),
        (
            "1, 2-99999999999",
            8,
            "2-99999999999",
            3,
            Eoverflow,
            "fits 32 bits",
        ),
        ("5-2", 8, "5-2", 0, Einval, "start <= end"),
        ("0-7:3/2", 8, "0-7:3/2", 0, Einval, "used <= group"),
    ];
    for (list, nbits, item, offset, errno, words) in cases {
        let e = parse_cpulist(list, *nbits).unwrap_err();
        assert_eq!(
            (e.item.as_str(), e.offset, e.errno),
            (*item, *offset, *errno),
            "{list:?}"
        );
        assert!(e.to_string().contains(words), "{list:?}: {e}");
        assert!(e.to_string().contains(errno.kernel_name().unwrap()), "{e}");
    }
    // An old release names the syntax it lacks.
    let e = parse_cpulist_as("1-N", 8, CpulistGrammar::of_kernel((5, 10))).unwrap_err();
    assert!(e.what.contains("5.12"), "{e}");
    let e = parse_cpulist_as("all", 8, CpulistGrammar::of_kernel((5, 13))).unwrap_err();
    assert!(e.what.contains("5.14"), "{e}");
    let e = parse_cpulist_as("0-7:1/2", 8, CpulistGrammar::of_kernel((4, 8))).unwrap_err();
    assert!(e.what.contains("4.9"), "{e}");
}

proptest::proptest! {
    #[test]
    fn no_text_panics(list in "\\PC{0,40}", nbits in 0u32..300, minor in 0u32..20) {
        let grammar = CpulistGrammar::of_kernel((5, minor));
        if let Ok(set) = parse_cpulist_as(&list, nbits, grammar) {
            // Whatever parses stays within the machine.
            proptest::prop_assert!(set.last().is_none_or(|c| c < nbits));
        }
        let _ = parse_cpulist(&list, u32::MAX);
    }

    #[test]
    fn grammar_shaped_text_never_panics(
        list in "[0-9N,: /a-lA-L\\-\\n]{0,30}",
        nbits in 0u32..100,
    ) {
        if let Ok(set) = parse_cpulist(&list, nbits) {
            proptest::prop_assert!(set.last().is_none_or(|c| c < nbits));
        }
    }

    #[test]
    fn canonical_text_reads_back(cpus in proptest::collection::btree_set(0u32..300, 0..40)) {
        let s: CpuSet = cpus.iter().copied().collect();
        proptest::prop_assert_eq!(parse_cpulist(&s.to_cpulist(), 300).unwrap(), s.clone());
        proptest::prop_assert_eq!(parse_sysfs_cpulist(&format!("{s}\n")).unwrap(), s);
    }
}

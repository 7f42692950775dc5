//! The hog harness: busy threads pinned one per CPU, burning work units until the window ends.

use std::hint::black_box;

use super::error::{HarnessError, os_error};
use super::gate::Gate;
use super::os::pin_to;
use super::stop::Stop;
use super::work::work;

/// Chooses CPUs for `count` hogs without an explicit list: CPUs no other group pinned anything
/// to come first, then the busy ones, each list in CPU order, wrapping around if needed.
pub(crate) fn default_placement(count: u32, usable: &[u32], taken: &[u32]) -> Vec<u32> {
    let mut order: Vec<u32> = usable
        .iter()
        .copied()
        .filter(|c| !taken.contains(c))
        .collect();
    order.extend(usable.iter().copied().filter(|c| taken.contains(c)));
    if order.is_empty() {
        return Vec::new();
    }
    (0..count as usize)
        .map(|i| order[i % order.len()])
        .collect()
}

/// Body of one hog thread: pins, waits at `gate`, spins until `stop` or `window_over`.
/// Returns the number of work units burned.
pub(crate) fn hog(
    cpu: u32,
    gate: &Gate,
    stop: &Stop,
    window_over: &Stop,
) -> Result<u64, HarnessError> {
    let pinned = pin_to(cpu).map_err(|e| os_error(&format!("pinning a hog to CPU {cpu}"), e));
    gate.wait();
    pinned?;
    let mut units = 0u64;
    while !stop.is_set() && !window_over.is_set() {
        black_box(work(1000, units));
        units += 1000;
    }
    Ok(units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_table() {
        // (count, usable, taken, expected)
        type Case<'a> = (u32, &'a [u32], &'a [u32], &'a [u32]);
        let table: &[Case<'_>] = &[
            (2, &[0, 1], &[], &[0, 1]),
            (1, &[0, 1], &[0], &[1]),
            (2, &[0, 1], &[0], &[1, 0]),
            (3, &[0, 1], &[], &[0, 1, 0]),
            (2, &[4, 6, 7], &[6], &[4, 7]),
            (0, &[0, 1], &[], &[]),
            (2, &[], &[], &[]),
        ];
        for (count, usable, taken, want) in table {
            assert_eq!(
                default_placement(*count, usable, taken),
                want.to_vec(),
                "{count} on {usable:?} taken {taken:?}"
            );
        }
    }
}

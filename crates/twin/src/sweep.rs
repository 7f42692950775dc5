//! Parallelism across independent sweep points. Each run stays single-threaded and
//! deterministic; only whole runs are spread over threads, and results come back in input
//! order whatever the scheduling.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Maps `f` over `items` on up to `threads` threads, preserving order.
/// `progress(done)` is called after each item completes.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
    progress: &(impl Fn(usize) + Sync),
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let threads = threads.clamp(1, items.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= items.len() {
                        break;
                    }
                    let r = f(&items[i]);
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some(r);
                    }
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .expect("every sweep point ran")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn order_is_kept() {
        let items: Vec<u64> = (0..50).collect();
        let out = super::parallel_map(&items, 3, |x| x * x, &|_| {});
        assert_eq!(out, items.iter().map(|x| x * x).collect::<Vec<_>>());
    }
}

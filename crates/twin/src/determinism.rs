//! Where two runs part: a listener that hashes every `(time, CPU, event)` per window of
//! simulated time ([`Recorder`]), and [`divergence`], which runs a scenario twice and, when
//! the runs differ, names the first window and the first event in it that differ.
//!
//! The twin promises the same report for the same scenario and seed. When a change breaks
//! that, comparing final JSON says only *that* two runs differ; comparing window digests
//! says *when*, and a second pair of runs logging only that window says *what*. The
//! recorder is an [`Observer`], so it costs nothing when unused (the default listener is
//! [`NoTimeline`](crate::sim::NoTimeline)); used, it does one hash step per event and one
//! push per window, never an allocation per event.

use std::fmt;
use std::hash::{Hash, Hasher};

use crate::engine::Time;
use crate::sim::{Event, Observer};

/// FNV-1a, 64 bits: a hash whose value is fixed by its definition (unlike the standard
/// library's, which may change between releases), so digests can be written down.
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(Fnv::PRIME);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// One window's digest: how many events it saw and their hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowDigest {
    /// Window number (its start is `index × window_ns`).
    pub index: u64,
    /// Events in the window.
    pub events: u64,
    /// FNV-1a over the window's `(time, event)` pairs in order.
    pub hash: u64,
}

/// A listener hashing the events of each window of `window_ns` simulated ns; with a window
/// to log ([`Recorder::logging`]), it also keeps that window's events.
#[derive(Debug, Clone)]
pub struct Recorder {
    window_ns: u64,
    current: WindowDigest,
    hasher: Fnv,
    /// Closed windows with at least one event, in time order.
    windows: Vec<WindowDigest>,
    /// The window whose events are kept, and them.
    log: Option<(u64, Vec<(Time, Event)>)>,
}

impl Recorder {
    /// A recorder of windows of `window_ns` (at least 1).
    pub fn new(window_ns: u64) -> Recorder {
        Recorder {
            window_ns: window_ns.max(1),
            current: WindowDigest {
                index: 0,
                events: 0,
                hash: Fnv::OFFSET,
            },
            hasher: Fnv(Fnv::OFFSET),
            windows: Vec::new(),
            log: None,
        }
    }

    /// [`Recorder::new`], also keeping every event of window `index`.
    pub fn logging(window_ns: u64, index: u64) -> Recorder {
        Recorder {
            log: Some((index, Vec::new())),
            ..Recorder::new(window_ns)
        }
    }

    /// The digests of every window that saw an event, the open one included.
    pub fn digests(&self) -> Vec<WindowDigest> {
        let mut all = self.windows.clone();
        if self.current.events > 0 {
            all.push(WindowDigest {
                hash: self.hasher.finish(),
                ..self.current
            });
        }
        all
    }

    /// The events of the logged window (empty without one).
    pub fn logged(&self) -> &[(Time, Event)] {
        self.log.as_ref().map_or(&[], |(_, v)| v.as_slice())
    }

    /// The window length (ns).
    pub fn window_ns(&self) -> u64 {
        self.window_ns
    }
}

impl Observer for Recorder {
    fn on(&mut self, at: Time, ev: Event) {
        let index = at / self.window_ns;
        if index != self.current.index {
            debug_assert!(index > self.current.index, "events arrive in time order");
            if self.current.events > 0 {
                self.windows.push(WindowDigest {
                    hash: self.hasher.finish(),
                    ..self.current
                });
            }
            self.current = WindowDigest {
                index,
                events: 0,
                hash: Fnv::OFFSET,
            };
            self.hasher = Fnv(Fnv::OFFSET);
        }
        at.hash(&mut self.hasher);
        ev.hash(&mut self.hasher);
        self.current.events += 1;
        if let Some((w, log)) = &mut self.log
            && *w == index
        {
            log.push((at, ev));
        }
    }
}

/// The first place two runs differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The first window whose digest differs.
    pub window: u64,
    /// Its length (ns).
    pub window_ns: u64,
    /// Position of the first differing event in the window (0-based).
    pub event: usize,
    /// That event in the first run (`None`: the first run's window ended before it).
    pub left: Option<(Time, Event)>,
    /// That event in the second run.
    pub right: Option<(Time, Event)>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |ns: u64| ns as f64 / 1e6;
        let start = self.window * self.window_ns;
        write!(
            f,
            "runs differ first in window {} ({:.3}–{:.3} ms simulated), event {}: ",
            self.window,
            ms(start),
            ms(start + self.window_ns),
            self.event
        )?;
        let side = |e: &Option<(Time, Event)>| match e {
            Some((at, ev)) => format!("{ev:?} at {at} ns"),
            None => "nothing (its window ends)".into(),
        };
        write!(f, "{} vs {}", side(&self.left), side(&self.right))
    }
}

/// Runs a scenario twice through `left` and `right` (each builds a simulation with the
/// recorder it is given as its listener, runs it, and returns the recorder) and says where
/// the runs first differ, or `None` when every window's events are the same. A third and
/// fourth run log only the first differing window, to name its first differing event.
pub fn divergence(
    window_ns: u64,
    mut left: impl FnMut(Recorder) -> Recorder,
    mut right: impl FnMut(Recorder) -> Recorder,
) -> Option<Divergence> {
    let a = left(Recorder::new(window_ns)).digests();
    let b = right(Recorder::new(window_ns)).digests();
    let window = match a.iter().zip(&b).find(|(x, y)| x != y) {
        Some((x, y)) => x.index.min(y.index),
        None if a.len() == b.len() => return None,
        None => a.get(b.len()).or(b.get(a.len()))?.index,
    };
    let la = left(Recorder::logging(window_ns, window));
    let lb = right(Recorder::logging(window_ns, window));
    let (ea, eb) = (la.logged(), lb.logged());
    let event = (0..ea.len().max(eb.len()))
        .find(|&i| ea.get(i) != eb.get(i))
        .unwrap_or(0);
    Some(Divergence {
        window,
        window_ns: la.window_ns(),
        event,
        left: ea.get(event).copied(),
        right: eb.get(event).copied(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recorder fed a fixed list of events.
    fn feed(r: Recorder, events: &[(Time, Event)]) -> Recorder {
        let mut r = r;
        for &(at, ev) in events {
            r.on(at, ev);
        }
        r
    }

    #[test]
    fn windows_split_by_time_and_skip_empty_ones() {
        let evs = [
            (5, Event::Tick { cpu: 0 }),
            (9, Event::Tick { cpu: 1 }),
            (35, Event::Tick { cpu: 0 }),
        ];
        let d = feed(Recorder::new(10), &evs).digests();
        assert_eq!(
            d.iter().map(|w| (w.index, w.events)).collect::<Vec<_>>(),
            vec![(0, 2), (3, 1)]
        );
        assert_ne!(d[0].hash, d[1].hash);
    }

    #[test]
    fn the_cpu_and_the_time_count() {
        let a = feed(Recorder::new(10), &[(5, Event::Tick { cpu: 0 })]).digests();
        let b = feed(Recorder::new(10), &[(5, Event::Tick { cpu: 1 })]).digests();
        let c = feed(Recorder::new(10), &[(6, Event::Tick { cpu: 0 })]).digests();
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn a_missing_tail_is_a_difference_too() {
        let evs = [(5, Event::Tick { cpu: 0 }), (25, Event::Tick { cpu: 0 })];
        let d = divergence(10, |r| feed(r, &evs), |r| feed(r, &evs[..1])).expect("differ");
        assert_eq!((d.window, d.event), (2, 0));
        assert_eq!(d.right, None);
    }
}

//! When the frames of a frame group start, and how many a window holds: one rule for the
//! twin and the host lab.
//!
//! Frame `k` of a group at `FREQ` Hz starts `round(k × 10^9 / FREQ)` ns after the group's
//! `t0` (halves round up). A frame belongs to a window of `d` ns when it *starts* inside it:
//! the window holds every `k` with `start(k) < d`, so a 1.5 s window at 2 Hz holds three
//! frames (0, 0.5 s and 1 s) and an empty window none. For a window that is a whole number of
//! frame periods this is `FREQ × d`, the count the published E2 tables use.

/// The start times of one frame group.
///
/// Invariant: `integral_hz == Some(f)` exactly when the frequency is the whole number `f ≥ 1`;
/// then starts are computed in exact integer arithmetic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameClock {
    frequency_hz: f64,
    integral_hz: Option<u64>,
}

impl FrameClock {
    /// The clock of a group at `frequency_hz` (positive and finite; the workload parser
    /// refuses anything else).
    pub fn new(frequency_hz: f64) -> FrameClock {
        debug_assert!(frequency_hz.is_finite() && frequency_hz > 0.0);
        FrameClock {
            frequency_hz,
            integral_hz: (frequency_hz.fract() == 0.0 && frequency_hz >= 1.0)
                .then_some(frequency_hz as u64),
        }
    }

    /// Frames per second.
    pub fn frequency_hz(&self) -> f64 {
        self.frequency_hz
    }

    /// The frequency as a whole number, when it is one.
    pub fn integral_hz(&self) -> Option<u64> {
        self.integral_hz
    }

    /// Start of frame `k` relative to `t0`, in nanoseconds.
    #[inline]
    pub fn offset_ns(&self, k: u64) -> u64 {
        match self.integral_hz {
            // Exact integer rounding (half up) for integral frequencies; u64 whenever it fits
            // (k < ~9e9 frames), which avoids a 128-bit division per frame.
            Some(f) => match k.checked_mul(2_000_000_000).and_then(|n| n.checked_add(f)) {
                Some(n) => n / (2 * f),
                None => ((k as u128 * 2_000_000_000 + f as u128) / (2 * f as u128)) as u64,
            },
            None => (k as f64 * 1e9 / self.frequency_hz).round() as u64,
        }
    }

    /// Frames that start inside a window of `duration_ns` from `t0`: the number of `k` with
    /// `offset_ns(k) < duration_ns`.
    pub fn frames_in(&self, duration_ns: u64) -> u64 {
        if duration_ns == 0 {
            return 0;
        }
        // An estimate from the frequency, then corrected against the exact starts (the
        // rounding of a start can move it across the window's end by one frame).
        let mut n = (duration_ns as f64 * self.frequency_hz / 1e9)
            .ceil()
            .max(1.0) as u64;
        while n > 1 && self.offset_ns(n - 1) >= duration_ns {
            n -= 1;
        }
        while self.offset_ns(n) < duration_ns {
            n += 1;
        }
        debug_assert!(self.offset_ns(n - 1) < duration_ns && self.offset_ns(n) >= duration_ns);
        n
    }
}

/// The three instants of one frame and the figures derived from them (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTiming {
    /// Programmed start (`t0 + offset_ns(k)`).
    pub start_ns: u64,
    /// The worker started running the frame.
    pub running_ns: u64,
    /// The worker finished the frame.
    pub done_ns: u64,
}

impl FrameTiming {
    /// Wake-up latency: running − programmed start (negative when the clock read raced the
    /// start, which a measured run can see).
    #[inline]
    pub fn wakeup_ns(&self) -> i64 {
        self.running_ns as i64 - self.start_ns as i64
    }

    /// Jitter: (done − running) − `undisturbed_ns`. Negative when the frame ran faster than
    /// the calibrated undisturbed duration (host only; the twin's compute never runs faster).
    #[inline]
    pub fn jitter_ns(&self, undisturbed_ns: u64) -> i64 {
        self.done_ns as i64 - self.running_ns as i64 - undisturbed_ns as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_counts_from_the_worker_start_and_wakeup_up_to_it() {
        // (start, running, done, undisturbed) -> (wakeup, jitter)
        for ((s, r, d, u), (w, j)) in [
            ((1_000, 1_000, 1_500, 500), (0, 0)),
            // A 7 µs wake-up adds nothing to the jitter...
            ((1_000, 8_000, 8_500, 500), (7_000, 0)),
            // ...an interrupt during the compute does.
            ((1_000, 3_000, 3_516, 500), (2_000, 16)),
            // A host frame faster than calibrated: negative jitter.
            ((1_000, 1_100, 1_590, 500), (100, -10)),
        ] {
            let t = FrameTiming {
                start_ns: s,
                running_ns: r,
                done_ns: d,
            };
            assert_eq!((t.wakeup_ns(), t.jitter_ns(u)), (w, j));
        }
    }

    #[test]
    fn frame_starts_round_to_the_nearest_ns() {
        // (Hz, k, start ns)
        for (hz, k, ns) in [
            (960.0, 1, 1_041_667),
            (960.0, 2, 2_083_333),
            (960.0, 960, 1_000_000_000),
            (666.0, 1, 1_501_502),
            (300.0, 3, 10_000_000),
            (2.5, 1, 400_000_000),
        ] {
            assert_eq!(FrameClock::new(hz).offset_ns(k), ns, "{hz} Hz frame {k}");
        }
    }

    #[test]
    fn frame_counts_at_the_boundaries() {
        // (duration ns, Hz, frames starting inside)
        for (d, hz, n) in [
            (0, 1000.0, 0),
            (1, 1000.0, 1),
            (1_000_000_000, 1000.0, 1000),
            (1_000_000_001, 1000.0, 1001),
            (999_999_999, 1000.0, 1000),
            (3_600_000_000_000, 960.0, 3_456_000),
            (3_600_000_000_000, 666.0, 2_397_600),
            (3_600_000_000_000, 300.0, 1_080_000),
            (60_000_000_000, 960.0, 57_600),
            (10_000_000, 1.0, 1),
            (1_500_000_000, 2.0, 3),
            (100_000_000, 100_000.0, 10_000),
            (1_000_000_000, 333.333, 334),
        ] {
            assert_eq!(FrameClock::new(hz).frames_in(d), n, "{d} ns at {hz} Hz");
        }
    }
}

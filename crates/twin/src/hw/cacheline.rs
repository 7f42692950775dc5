//! What moving a cache line between CPUs costs: free on the CPU that held it last, one price
//! within a socket, another per interconnect hop between sockets on a ring (docs/costs.md §3a,
//! §5a). The locks of [`super::lock`] and [`super::spinlock`] charge their hand-offs with it.

/// Cache-line transfer costs of a machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferCost {
    /// Between cores of one socket (ns).
    pub local_ns: u64,
    /// Between adjacent sockets, one interconnect hop (ns).
    pub remote_ns: u64,
    /// Between sockets two hops apart (ns).
    pub far_ns: u64,
    /// Sockets in the ring.
    pub sockets: u32,
}

impl TransferCost {
    /// The costs of a machine of `sockets` sockets: a two-hop transfer pays one more hop,
    /// taken as the difference between a cross-socket and an in-socket transfer
    /// (`far = remote + (remote − local)`, E, docs/costs.md §5a).
    pub fn new(local_ns: u64, remote_ns: u64, sockets: u32) -> TransferCost {
        TransferCost {
            local_ns,
            remote_ns,
            far_ns: remote_ns + remote_ns.saturating_sub(local_ns),
            sockets: sockets.max(1),
        }
    }

    /// Interconnect hops between two sockets of the ring.
    #[inline]
    pub fn hops(&self, a: u32, b: u32) -> u32 {
        let d = a.abs_diff(b);
        // Socket numbers are below `sockets`, so the ring distance needs no division (a
        // division per transfer was a tenth of a ticket lock's spin loop); the remainder
        // keeps any other pair of numbers on the ring.
        let d = if d < self.sockets {
            d
        } else {
            d % self.sockets
        };
        d.min(self.sockets - d)
    }

    /// The costs of moving a line to (`cpu`, `socket`) from each socket, looked up once for a
    /// loop over many previous holders (a ticket lock's spin through its pending releases),
    /// where the branches of [`TransferCost::between`] mispredicted on mixed sockets.
    #[inline]
    pub fn to(&self, cpu: u32, socket: u32) -> TransferTo {
        let mut from_socket = [0; TransferTo::SOCKETS];
        let table_len = if self.sockets as usize <= TransferTo::SOCKETS {
            self.sockets as usize
        } else {
            0
        };
        for (s, c) in from_socket.iter_mut().enumerate().take(table_len) {
            *c = self.between(u32::MAX, s as u32, cpu, socket);
        }
        TransferTo {
            cpu,
            socket,
            from_socket,
            table_len,
            cost: *self,
        }
    }

    /// Cost of moving a line last held by (`from_cpu`, `from_socket`) to (`cpu`, `socket`).
    #[inline]
    pub fn between(&self, from_cpu: u32, from_socket: u32, cpu: u32, socket: u32) -> u64 {
        if from_cpu == cpu {
            0
        } else if from_socket == socket {
            self.local_ns
        } else if self.hops(from_socket, socket) <= 1 {
            self.remote_ns
        } else {
            self.far_ns
        }
    }
}

/// [`TransferCost::between`] with the destination fixed: the cost from each source socket in
/// a table (machines of up to [`TransferTo::SOCKETS`] sockets; larger ones ask `between`).
///
/// Invariant: `from(c, s) == cost.between(c, s, cpu, socket)` for every `c` and every socket
/// `s < cost.sockets` (the test `a_destination_table_agrees_with_between`).
#[derive(Debug, Clone, Copy)]
pub struct TransferTo {
    cpu: u32,
    socket: u32,
    from_socket: [u64; TransferTo::SOCKETS],
    /// Entries of `from_socket` filled: the machine's sockets, or 0 when it has more than the
    /// table holds.
    table_len: usize,
    cost: TransferCost,
}

impl TransferTo {
    /// Sockets the table holds.
    pub const SOCKETS: usize = 8;

    /// Cost of moving the line from (`from_cpu`, `from_socket`) to the fixed destination.
    #[inline(always)]
    pub fn from(&self, from_cpu: u32, from_socket: u32) -> u64 {
        let s = from_socket as usize;
        let c = if s < self.table_len {
            self.from_socket[s]
        } else {
            self.cost
                .between(from_cpu, from_socket, self.cpu, self.socket)
        };
        // The line's last holder is the destination itself: nothing moves. A select after the
        // lookup, not a branch before it (a branch first ran 1-3 % slower in E2, in one
        // interleaved run).
        let c = if from_cpu == self.cpu { 0 } else { c };
        debug_assert_eq!(
            c,
            self.cost
                .between(from_cpu, from_socket, self.cpu, self.socket)
        );
        c
    }
}

/// The cost of a transfer between every pair of sockets of a machine of up to
/// [`TransferTo::SOCKETS`] sockets, built once per lock instead of once per arrival: a ticket
/// lock's arrival used to build its [`TransferTo`] row first, about half of the instructions
/// of its spin when one or two releases are pending, which is most arrivals in E2
/// (docs/model.md, "Speed of the event loop").
///
/// Invariant: `to(cpu, socket).from(c, s) == cost.between(c, s, cpu, socket)` for every `c`
/// and every socket `s < cost.sockets` (the test `a_socket_table_agrees_with_between`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TransferTable {
    cost: TransferCost,
    /// `rows[to][from]`: the transfer from socket `from` to a CPU of socket `to`.
    rows: [[u64; TransferTo::SOCKETS]; TransferTo::SOCKETS],
}

impl TransferTable {
    /// The table of `cost`'s machine, or `None` when it has more sockets than the table holds.
    pub(crate) fn new(cost: TransferCost) -> Option<TransferTable> {
        if cost.sockets as usize > TransferTo::SOCKETS {
            return None;
        }
        let mut rows = [[0; TransferTo::SOCKETS]; TransferTo::SOCKETS];
        for (to, row) in rows.iter_mut().enumerate() {
            for (from, c) in row.iter_mut().enumerate() {
                *c = cost.between(u32::MAX, from as u32, 0, to as u32);
            }
        }
        Some(TransferTable { cost, rows })
    }

    /// The costs the table was built from.
    #[inline]
    pub(crate) fn cost(&self) -> TransferCost {
        self.cost
    }

    /// The transfers to (`cpu`, `socket`): a row of the table, nothing computed.
    #[inline(always)]
    pub(crate) fn to(&self, cpu: u32, socket: u32) -> TransferRow<'_> {
        debug_assert!(socket < self.cost.sockets);
        TransferRow {
            cpu,
            socket,
            row: &self.rows[socket as usize % TransferTo::SOCKETS],
            cost: self.cost,
        }
    }
}

/// One destination's row of a [`TransferTable`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct TransferRow<'a> {
    cpu: u32,
    socket: u32,
    row: &'a [u64; TransferTo::SOCKETS],
    cost: TransferCost,
}

/// The cost of moving a line to a fixed destination from each previous holder:
/// [`TransferTo`] (any machine) or [`TransferRow`] (a prebuilt table).
pub(crate) trait TransferFrom {
    /// Cost of moving the line from (`from_cpu`, `from_socket`) to the destination.
    fn from(&self, from_cpu: u32, from_socket: u32) -> u64;
}

impl TransferFrom for TransferTo {
    #[inline(always)]
    fn from(&self, from_cpu: u32, from_socket: u32) -> u64 {
        TransferTo::from(self, from_cpu, from_socket)
    }
}

impl TransferFrom for TransferRow<'_> {
    #[inline(always)]
    fn from(&self, from_cpu: u32, from_socket: u32) -> u64 {
        debug_assert!(from_socket < self.cost.sockets);
        let c = self.row[from_socket as usize % TransferTo::SOCKETS];
        // A select, as in `TransferTo::from`: the destination's own line moves nowhere.
        let c = if from_cpu == self.cpu { 0 } else { c };
        debug_assert_eq!(
            c,
            self.cost
                .between(from_cpu, from_socket, self.cpu, self.socket)
        );
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destination_table_agrees_with_between() {
        for sockets in [1, 2, 3, 4, 8, 9, 16] {
            let cost = TransferCost::new(45, 150, sockets);
            for (cpu, socket) in [(0, 0), (5, sockets - 1), (17, sockets / 2)] {
                let to = cost.to(cpu, socket);
                for from_socket in 0..sockets {
                    for from_cpu in [0, 5, 17, 99] {
                        assert_eq!(
                            to.from(from_cpu, from_socket),
                            cost.between(from_cpu, from_socket, cpu, socket),
                            "{sockets} sockets: ({from_cpu}, {from_socket}) -> ({cpu}, {socket})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_socket_table_agrees_with_between() {
        for sockets in [1, 2, 3, 4, 8] {
            let cost = TransferCost::new(45, 150, sockets);
            let table = TransferTable::new(cost).expect("up to eight sockets");
            assert_eq!(table.cost(), cost);
            for socket in 0..sockets {
                for cpu in [0, 5, 17] {
                    let row = table.to(cpu, socket);
                    for from_socket in 0..sockets {
                        for from_cpu in [0, 5, 17, 99] {
                            assert_eq!(
                                TransferFrom::from(&row, from_cpu, from_socket),
                                cost.between(from_cpu, from_socket, cpu, socket),
                                "{sockets} sockets: ({from_cpu}, {from_socket}) -> ({cpu}, {socket})"
                            );
                        }
                    }
                }
            }
        }
        assert_eq!(TransferTable::new(TransferCost::new(45, 150, 9)), None);
    }

    #[test]
    fn ring_hops_without_a_division() {
        let cost = TransferCost::new(40, 150, 4);
        // (a, b, hops): neighbours both ways round the ring, the far side, the same socket,
        // and numbers past the ring, which wrap.
        for (a, b, hops) in [
            (0, 1, 1),
            (0, 3, 1),
            (0, 2, 2),
            (1, 3, 2),
            (2, 2, 0),
            (0, 5, 1),
            (7, 0, 1),
        ] {
            assert_eq!(cost.hops(a, b), hops, "{a} -> {b}");
        }
    }
}

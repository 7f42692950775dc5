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
        let d = a.abs_diff(b) % self.sockets;
        d.min(self.sockets - d)
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

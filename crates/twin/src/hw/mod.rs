//! Modelled hardware: the per-CPU clock event device, C-state auto-demotion, the package energy
//! meter, the cost of moving a cache line, contended lines and the spinlocks on them by era.

pub(crate) mod auto_demotion;
pub(crate) mod cacheline;
pub(crate) mod clockevents;
pub(crate) mod energy;
pub mod lock;
pub mod spinlock;

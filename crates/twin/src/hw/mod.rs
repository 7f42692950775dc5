//! Modelled hardware: the per-CPU clock event device, C-state auto-demotion, the package energy
//! meter, contended cache lines and the spinlocks on them by era.

pub(crate) mod auto_demotion;
pub(crate) mod clockevents;
pub(crate) mod energy;
pub mod lock;
pub mod spinlock;

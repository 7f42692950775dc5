//! Modelled hardware: the per-CPU clock event device, the package energy meter and contended
//! cache lines.

pub(crate) mod clockevents;
pub(crate) mod energy;
pub mod lock;

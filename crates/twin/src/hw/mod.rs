//! Modelled hardware: the per-CPU clock event device, the package energy meter and contended
//! cache lines.

pub mod clockevents;
pub mod energy;
pub mod lock;

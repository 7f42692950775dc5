//! `host inspect`: the host's tick configuration on one screen.
//!
//! [`inspect`] gathers every probe into an [`Inspection`]; its `Display` is the screen and its
//! `Serialize` is the `--json` output. Each part is a [`Probe`](crate::probe::Probe), so a missing file or a
//! missing privilege shows up as `not available: <why>` next to the rest.
//!
//! * `view.rs` — what an inspection holds: [`InspectOptions`], [`Inspection`] and its views;
//! * [`probes`] — reading `/proc` and `/sys` (or a fixture tree) into those views, and
//!   inferring HZ and the effective tick configuration;
//! * [`screen`] — the one-line summary and the screen (`Display`).

pub mod probes;
pub mod screen;
mod view;

pub use probes::inspect;
pub use view::{
    BuildView, ClocksourceView, CmdlineView, CpuLists, CpuTick, CpusetView, EffectiveTick,
    InspectOptions, Inspection, KernelInfo, PlacementView, TickState,
};

//! Points the host cannot run in real time: more vCPUs that never stop than host CPUs.
//!
//! Under TCG each vCPU is a host thread. A vCPU whose guest halts (HLT in the idle loop)
//! gives its host CPU back; one that always has work does not. When the vCPUs that always
//! run outnumber the host's CPUs, some of them wait for a host CPU whatever else the host
//! does, the guest's timer interrupts arrive late and its ticks are lost
//! (docs/vm-validation.md, "Emulator"): the point measures the emulator, not the kernel. Such
//! a point is run and shown, but judged nowhere.
//!
//! The rule follows from the workload, the boot line and the host alone, never from the
//! wait the emulator measured (which would also excuse real misses). A vCPU is always
//! runnable when
//!
//! * the boot line has `idle=poll`: every vCPU spins in the idle loop instead of halting;
//! * otherwise, it holds a task that never sleeps in the window: a hog, the syscall loop
//!   (it runs its calls for the whole window at the emulator's speed), a rank of a bsp job
//!   with a spin barrier, or one side of a ping-pong pair (one of the two always runs while
//!   the other waits for it: one vCPU's worth).
//!
//! Frame workers, a bsp job with a futex barrier and the harness's own coordinator sleep
//! between their bursts and are not counted. QEMU's own threads are not counted either: on a
//! quiet host two spinning vCPUs on two host CPUs kept their ticks (within 5 %).

use serde::{Deserialize, Serialize};
use ticklab_cmdline::CpuSet;
use ticklab_schema::workload::{Barrier, TaskGroup, Workload};

/// A point whose always-runnable vCPUs exceed the host's CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Oversubscribed {
    /// vCPUs that are always runnable ([`always_runnable_vcpus`]).
    pub runnable_vcpus: u32,
    /// The host's online CPUs when the point ran.
    pub host_cpus: u32,
}

impl Oversubscribed {
    /// Why the point is not judged: `oversubscribed: 4 runnable vCPUs on 2 host CPUs`.
    pub fn reason(&self) -> String {
        format!(
            "oversubscribed: {} runnable vCPUs on {} host CPUs",
            self.runnable_vcpus, self.host_cpus
        )
    }

    /// The whole label: `not judged (oversubscribed: 4 runnable vCPUs on 2 host CPUs)`.
    pub fn label(&self) -> String {
        format!("not judged ({})", self.reason())
    }
}

/// How many of the guest's `vcpus` are always runnable in the window (see the module documentation).
pub fn always_runnable_vcpus(workload: &Workload, idle_poll: bool, vcpus: u32) -> u32 {
    if idle_poll {
        return vcpus;
    }
    // Pinned tasks by CPU (two on one vCPU still need one host CPU), unpinned ones counted.
    let mut pinned = CpuSet::new();
    let mut unpinned = 0u32;
    for g in &workload.groups {
        match g {
            TaskGroup::Hogs { cpus: Some(c), .. } => pinned = pinned.union(c),
            TaskGroup::Hogs { count, cpus: None } => unpinned += count,
            TaskGroup::Syscall { cpu: Some(c), .. } => pinned.insert(*c),
            TaskGroup::Syscall { cpu: None, .. } | TaskGroup::PingPong { .. } => unpinned += 1,
            TaskGroup::Bsp {
                cpus,
                barrier: Barrier::Spin,
                ..
            } => pinned = pinned.union(cpus),
            TaskGroup::Bsp {
                barrier: Barrier::Futex,
                ..
            }
            | TaskGroup::Frames { .. } => {}
        }
    }
    let runnable = (pinned.len() as u32).saturating_add(unpinned).min(vcpus);
    debug_assert!(runnable <= vcpus, "no more runnable vCPUs than vCPUs");
    runnable
}

/// The point is oversubscribed when its always-runnable vCPUs exceed the host's CPUs; `None`
/// when they do not, or when the host's CPU count was not recorded (points run before it
/// was are judged as they were).
pub fn oversubscribed(runnable_vcpus: u32, host_cpus: Option<u32>) -> Option<Oversubscribed> {
    let host_cpus = host_cpus?;
    (runnable_vcpus > host_cpus).then_some(Oversubscribed {
        runnable_vcpus,
        host_cpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runnable_vcpus_by_workload_and_idle_loop() {
        // (workload, vCPUs, idle=poll) -> always-runnable vCPUs
        let cases = [
            ("idle", 2, false, 0),
            ("idle", 4, false, 0),
            ("idle", 4, true, 4),
            ("idle", 2, true, 2),
            ("hogs:1@1", 2, false, 1),
            ("hogs:2", 2, false, 2),
            ("hogs:1", 4, true, 4),
            // Two groups on one CPU still need one host CPU.
            ("hogs:1@1+syscall:getpid@1", 2, false, 1),
            ("hogs:1@0+syscall:getpid@1", 2, false, 2),
            ("syscall:getpid", 2, false, 1),
            // Frame workers sleep between frames; beside a hog only the hog counts.
            ("frames:60@1:loop=1000", 2, false, 0),
            ("hogs:1@1+frames:60@1:loop=1000", 2, false, 1),
            ("pingpong:futex@0,1", 2, false, 1),
            ("bsp:3@0-2:work=1ms:barrier=spin", 3, false, 3),
            ("bsp:3@0-2:work=1ms:barrier=futex", 3, false, 0),
            // Never more than the guest has.
            ("hogs:2+syscall:getpid", 2, false, 2),
        ];
        for (spec, vcpus, poll, want) in cases {
            let w = Workload::parse(spec, vcpus).unwrap();
            assert_eq!(
                always_runnable_vcpus(&w, poll, vcpus),
                want,
                "{spec} on {vcpus} vCPUs, idle=poll {poll}"
            );
        }
    }

    #[test]
    fn oversubscribed_only_above_the_host_cpus() {
        // (runnable vCPUs, host CPUs) -> oversubscribed
        let cases = [
            (4, Some(2), true),
            (3, Some(2), true),
            (2, Some(2), false),
            (1, Some(2), false),
            (0, Some(1), false),
            (4, Some(4), false),
            // Not recorded: judged as before.
            (4, None, false),
        ];
        for (runnable, host, want) in cases {
            assert_eq!(
                oversubscribed(runnable, host).is_some(),
                want,
                "{runnable} on {host:?}"
            );
        }
        assert_eq!(
            oversubscribed(4, Some(2)).unwrap().label(),
            "not judged (oversubscribed: 4 runnable vCPUs on 2 host CPUs)"
        );
    }
}

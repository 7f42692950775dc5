//! Holding a CPU wake-up latency limit for the length of a run (`--cpu-dma-latency`, alias
//! `--pm-qos`), as cyclictest does by default.
//!
//! The kernel's PM QoS interface: a process that opens `/dev/cpu_dma_latency` and writes a
//! limit in microseconds (a binary 32-bit integer) keeps that limit in force for as long as it
//! holds the file open; closing it drops the request. The cpuidle governors then choose no idle
//! state whose exit latency is above the limit — at 0, no state deeper than polling — so a
//! sleeping frame worker's wake-up latency no longer includes an idle-state exit. That is
//! what makes ticklab's wake-up rows comparable with cyclictest's (docs/host-lab.md).
//! Without a cpuidle driver (`current_driver` is `none`) the limit changes nothing.

use std::fs::{File, OpenOptions};
use std::io::Write;

use super::error::{HarnessError, os_error};

/// The PM QoS device for the CPU wake-up latency limit.
pub const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// An open `/dev/cpu_dma_latency` with a limit written to it; dropping it releases the limit.
#[derive(Debug)]
pub(crate) struct CpuDmaLatency {
    _file: File,
    /// The limit held, µs.
    pub(crate) us: u32,
}

impl CpuDmaLatency {
    /// Opens the device and writes `us`. Permission refused (the device is root's) is the
    /// request's fault: [`HarnessError::Input`], before anything runs.
    pub(crate) fn hold(us: u32) -> Result<CpuDmaLatency, HarnessError> {
        let value = i32::try_from(us).map_err(|_| {
            HarnessError::Input(format!(
                "--cpu-dma-latency {us}: expected at most {} µs",
                i32::MAX
            ))
        })?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(CPU_DMA_LATENCY)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound => {
                    HarnessError::Input(format!(
                        "--cpu-dma-latency: {CPU_DMA_LATENCY}: {e} (it needs root and a kernel with PM QoS)"
                    ))
                }
                _ => os_error(&format!("opening {CPU_DMA_LATENCY}"), e),
            })?;
        file.write_all(&value.to_ne_bytes())
            .map_err(|e| os_error(&format!("writing {us} to {CPU_DMA_LATENCY}"), e))?;
        Ok(CpuDmaLatency { _file: file, us })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs root: /dev/cpu_dma_latency is root's"]
    fn the_limit_is_in_force_while_held_and_released_on_drop() {
        use std::io::Read;
        let read = || {
            let mut b = [0u8; 4];
            File::open(CPU_DMA_LATENCY)
                .unwrap()
                .read_exact(&mut b)
                .unwrap();
            i32::from_ne_bytes(b)
        };
        let before = read();
        let held = CpuDmaLatency::hold(0).unwrap();
        assert_eq!(read(), 0);
        drop(held);
        assert_eq!(read(), before);
    }

    #[test]
    fn a_limit_beyond_the_kernel_s_integer_is_bad_input() {
        let e = CpuDmaLatency::hold(u32::MAX).unwrap_err();
        assert!(e.is_input(), "{e}");
    }
}

//! The twin's errors: why a scenario cannot be simulated ([`SimError`]), why it is
//! inconsistent ([`ConfigError`]) and what the guest ping-pong model refuses
//! ([`GuestModelError`]). A leaf module: the event loop's setup, the guest model and the
//! entry all name these types and none of them is imported back.

use ticklab_cmdline::CmdlineError;
use ticklab_schema::scenario::KernelError;

use crate::workloads::pingpong::PingPongGroupError;

/// Why a scenario cannot be simulated.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The kernel command line did not parse.
    #[error("{0}")]
    Cmdline(CmdlineError),
    /// The scenario is inconsistent (names what and what was expected).
    #[error("scenario: {0}")]
    Config(#[from] ConfigError),
    /// The twin does not model this yet (says what).
    #[error("not modelled by the twin yet: {0}")]
    Unsupported(String),
    /// A kernel parameter that parsed but whose value the twin refuses (names the
    /// parameter): an error of the command line, not of the rest of the scenario.
    #[error("kernel command line: {0}")]
    KernelParam(String),
    /// The run is above the compute limit and was not confirmed
    /// ([`RunOptions::check_compute`](crate::RunOptions::check_compute)).
    #[error("{0}")]
    ComputeLimit(ticklab_schema::validate::ValidationError),
    /// The guest ping-pong model refused the scenario (says what it does not model).
    #[error(transparent)]
    GuestModel(GuestModelError),
    /// A run of a syscall-loop scenario (named) reported no syscall loop: the twin's own
    /// failure, not the scenario's.
    #[error("scenario: {run}: the report has no syscall loop")]
    NoSyscallResult {
        /// The run's name.
        run: String,
    },
}

impl SimError {
    /// Whether the scenario (the user's input: a file, flags, a command line, a sweep point)
    /// is at fault; the rest are the twin's own failures.
    pub fn is_input(&self) -> bool {
        !matches!(self, SimError::NoSyscallResult { .. })
    }
}

/// Why a scenario is inconsistent: a value the validation layer refused, or one the machine
/// being built cannot take. Each names the value and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The validation layer ([`Scenario::validate`](ticklab_schema::scenario::Scenario::validate)) refused a value.
    #[error(transparent)]
    Invalid(#[from] ticklab_schema::validate::ValidationError),
    /// The kernel version is not `MAJOR.MINOR[...]` (the schema's [`VersionError`] says what
    /// was found).
    ///
    /// [`VersionError`]: ticklab_schema::scenario::VersionError
    #[error(transparent)]
    KernelVersion(ticklab_schema::scenario::VersionError),
    /// A background source with both or neither of `period_ns` and a positive `rate_hz`.
    #[error("background source {name:?}: expected exactly one of period_ns or a positive rate_hz")]
    BackgroundRate {
        /// The source's name.
        name: String,
    },
    /// A `relative` background source that is not a task-waking periodic hrtimer.
    #[error(
        "background source {name:?}: relative needs wakes_task, period_ns and kind hrtimer (the woken task sleeps its period from the end of its run)"
    )]
    BackgroundRelative {
        /// The source's name.
        name: String,
    },
    /// A `follows_task` background source that wakes no task.
    #[error(
        "background source {name:?}: follows_task needs wakes_task (the timer follows the task it wakes)"
    )]
    BackgroundFollowsTask {
        /// The source's name.
        name: String,
    },
    /// An unpinned syscall loop with every CPU in `isolcpus=`.
    #[error("syscall loop: every CPU is in isolcpus=, none to place it on")]
    SyscallAllIsolated,
    /// A syscall loop pinned to a CPU the machine does not have.
    #[error("syscall loop pinned to CPU {cpu}: expected a CPU below {nr_cpus}")]
    SyscallCpu {
        /// The CPU asked for.
        cpu: u32,
        /// The machine's CPUs.
        nr_cpus: u32,
    },
    /// A frame group whose frequency is not a positive number.
    #[error("frame group {group}: frequency {frequency_hz} Hz, expected > 0")]
    FrameFrequency {
        /// The group's name.
        group: String,
        /// Its frequency as given.
        frequency_hz: f64,
    },
    /// A CPU given a second frame worker.
    #[error("CPU {cpu} has two frame workers (group {group}): one per CPU")]
    TwoFrameWorkers {
        /// The CPU.
        cpu: u32,
        /// The group that placed the second worker.
        group: String,
    },
    /// More CPUs than the engine packs into an event (or none).
    #[error("machine has {nr_cpus} CPUs: expected 1..={max}")]
    MachineSize {
        /// The machine's CPUs.
        nr_cpus: u32,
        /// The engine's limit.
        max: u32,
    },
    /// A warm-up and duration past the event queue's time range.
    #[error(
        "warm-up {warmup_ns} ns + duration {duration_ns} ns: expected at most {max_s} s in all"
    )]
    RunTooLong {
        /// The warm-up.
        warmup_ns: u64,
        /// The measured window.
        duration_ns: u64,
        /// The limit on both together, seconds.
        max_s: u64,
    },
}

impl From<CmdlineError> for SimError {
    fn from(e: CmdlineError) -> Self {
        SimError::Cmdline(e)
    }
}

impl From<KernelError> for SimError {
    fn from(e: KernelError) -> Self {
        match e {
            KernelError::Version(v) => SimError::Config(ConfigError::KernelVersion(v)),
            KernelError::Cmdline(c) => SimError::Cmdline(c),
        }
    }
}

/// Why [`simulate_pingpong`](crate::guest::simulate_pingpong) refused a scenario: what the guest ping-pong model does not
/// model, or a kernel section it cannot read.
#[derive(Debug, thiserror::Error)]
pub enum GuestModelError {
    /// The workload is not one ping-pong group alone.
    #[error("workload {workload}: the guest model runs one ping-pong group alone")]
    NotOnePingPong {
        /// The workload's label.
        workload: String,
    },
    /// The machine is not a KVM guest (its cpuidle driver is neither `haltpoll` nor `none`).
    #[error(
        "machine {machine}: the ping-pong is modelled in a KVM guest (cpuidle driver haltpoll or none, e.g. --machine kvm-guest-2), not on driver {driver:?}"
    )]
    NotAGuest {
        /// The machine's name.
        machine: String,
        /// Its cpuidle driver.
        driver: String,
    },
    /// The kernel section's version or command line does not resolve.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// `cpuidle.governor=` names a governor the model does not have.
    #[error("cpuidle.governor={governor}: not modelled")]
    Governor {
        /// The governor as given.
        governor: String,
    },
    /// The guest idle path names a governor the model does not have.
    #[error("unknown governor")]
    UnknownGovernor,
    /// The ping-pong group cannot run in the two-vCPU guest.
    #[error(transparent)]
    Group(#[from] PingPongGroupError),
}

//! The ping-pong harness: two tasks that wake each other, measuring the context switch.
//!
//! Side A (a harness thread pinned to CPU A) drives the rounds and times them; side B (pinned to
//! CPU B) only answers. A round trip is A → B → A, i.e. two context switches; the report gives
//! both ns per round trip and ns per switch (half of it). No warm-up and no spinning: every wait
//! is a real sleep, as in `perf bench sched pipe`, whose "usecs/op" is one round trip.
//!
//! * [`PingPongMethod::Pipe`]: two pipes, one byte each way. A writes `1` and reads the answer;
//!   B reads and writes back. A `0` byte tells B to quit.
//! * [`PingPongMethod::Futex`]: one shared `u32`: A sets it to 1 and `FUTEX_WAKE`s, then
//!   `FUTEX_WAIT`s while it is 1; B waits while it is 0, sets it back to 0 and wakes A; 2 = quit.
//!
//! B is a forked *process* by default ([`PingPongMode::Processes`], like `perf bench sched pipe`
//! and E3's `contextswitch` benchmark: every switch changes address space) or a thread
//! ([`PingPongMode::Threads`], like `perf bench sched pipe -T`). The futex word lives in a
//! shared anonymous mapping; thread mode uses `FUTEX_PRIVATE_FLAG`.
//!
//! The forked child runs only async-signal-safe code (raw syscalls, no allocation, no panics)
//! and dies with its parent thread (`PR_SET_PDEATHSIG`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};

use ticklab_schema::workload::PingPongMethod;

use super::error::{HarnessError, os_error};
use super::gate::Gate;
use super::os::{now_ns, pin_to};
use super::stop::Stop;

/// Whether side B is a process or a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PingPongMode {
    /// B is a forked process (default; what `perf bench sched pipe` does).
    #[default]
    Processes,
    /// B is a thread of this process (`perf bench sched pipe -T`).
    Threads,
}

impl PingPongMode {
    /// `processes` or `threads`.
    pub fn name(self) -> &'static str {
        match self {
            PingPongMode::Processes => "processes",
            PingPongMode::Threads => "threads",
        }
    }
}

/// What side A measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PingPongOutput {
    /// Round trips completed.
    pub round_trips: u64,
    /// Nanoseconds they took, from the first write/wake to the last answer.
    pub elapsed_ns: u64,
}

const A_TURN: u32 = 0;
const B_TURN: u32 = 1;
const QUIT: u32 = 2;

/// One page of `MAP_SHARED | MAP_ANONYMOUS` memory holding the futex word.
struct SharedWord {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the page is only accessed through `&AtomicU32`, which is Sync.
unsafe impl Send for SharedWord {}
// SAFETY: as above.
unsafe impl Sync for SharedWord {}

impl SharedWord {
    fn new() -> io::Result<Self> {
        let len = 4096;
        // SAFETY: anonymous mapping with no address hint; checked for MAP_FAILED below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedWord { ptr, len })
    }

    fn word(&self) -> &AtomicU32 {
        // SAFETY: the mapping is page-aligned, zero-filled, at least 4 bytes and lives as long
        // as `self`; AtomicU32 has the layout of u32.
        unsafe { AtomicU32::from_ptr(self.ptr.cast()) }
    }
}

impl Drop for SharedWord {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `new` mapped.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

fn futex_op(private: bool, op: libc::c_int) -> libc::c_int {
    if private {
        op | libc::FUTEX_PRIVATE_FLAG
    } else {
        op
    }
}

/// `FUTEX_WAIT` while `word == expected` (returns at once if it already differs).
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, private: bool) {
    // SAFETY: `word` is a valid aligned u32 for the duration of the call; no timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            futex_op(private, libc::FUTEX_WAIT),
            expected,
            std::ptr::null::<libc::timespec>(),
        )
    };
}

/// `FUTEX_WAKE` one waiter.
fn futex_wake(word: &AtomicU32, private: bool) {
    futex_wake_n(word, private, 1);
}

/// `FUTEX_WAKE` up to `n` waiters (the bsp barrier's release wakes them all).
pub(crate) fn futex_wake_n(word: &AtomicU32, private: bool, n: i32) {
    // SAFETY: `word` is a valid aligned u32 for the duration of the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            futex_op(private, libc::FUTEX_WAKE),
            n,
        )
    };
}

/// Side B of the futex protocol. Async-signal-safe: no allocation, no panics.
fn futex_answer(word: &AtomicU32, private: bool) {
    loop {
        let mut v = word.load(Ordering::Acquire);
        while v == A_TURN {
            futex_wait(word, A_TURN, private);
            v = word.load(Ordering::Acquire);
        }
        if v == QUIT {
            return;
        }
        word.store(A_TURN, Ordering::Release);
        futex_wake(word, private);
    }
}

/// One byte through a pipe, retrying on EINTR. Returns the byte count (0 = EOF, < 0 = error).
fn xfer(fd: RawFd, byte: &mut u8, write: bool) -> isize {
    loop {
        // SAFETY: `byte` is a valid one-byte buffer.
        let rc = unsafe {
            if write {
                libc::write(fd, (byte as *mut u8).cast(), 1)
            } else {
                libc::read(fd, (byte as *mut u8).cast(), 1)
            }
        };
        // SAFETY: reading this thread's errno.
        if rc < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        return rc;
    }
}

/// Side B of the pipe protocol. Async-signal-safe: no allocation, no panics.
fn pipe_answer(from_a: RawFd, to_a: RawFd) {
    let mut b = 0u8;
    while xfer(from_a, &mut b, false) == 1 && b != 0 {
        let mut one = 1u8;
        if xfer(to_a, &mut one, true) != 1 {
            return;
        }
    }
}

fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these two fresh descriptors; we own them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Pins the calling thread with raw calls only (safe in a forked child).
fn pin_raw(cpu: u32) -> bool {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only touch it; pid 0 = this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The two ends side B uses and the two side A keeps.
enum Channel {
    Pipe {
        a_write: OwnedFd,
        a_read: OwnedFd,
        b_read: OwnedFd,
        b_write: OwnedFd,
    },
    Futex(SharedWord),
}

impl Channel {
    fn new(method: PingPongMethod) -> io::Result<Self> {
        Ok(match method {
            PingPongMethod::Pipe => {
                let (b_read, a_write) = pipe_pair()?;
                let (a_read, b_write) = pipe_pair()?;
                Channel::Pipe {
                    a_write,
                    a_read,
                    b_read,
                    b_write,
                }
            }
            PingPongMethod::Futex => Channel::Futex(SharedWord::new()?),
        })
    }

    /// Runs side B until told to quit. Async-signal-safe.
    fn answer(&self, private: bool) {
        match self {
            Channel::Pipe {
                b_read, b_write, ..
            } => pipe_answer(b_read.as_raw_fd(), b_write.as_raw_fd()),
            Channel::Futex(w) => futex_answer(w.word(), private),
        }
    }

    /// One round trip from side A; `false` if the other side is gone.
    #[inline]
    fn round_trip(&self, private: bool) -> bool {
        match self {
            Channel::Pipe {
                a_write, a_read, ..
            } => {
                let mut one = 1u8;
                xfer(a_write.as_raw_fd(), &mut one, true) == 1
                    && xfer(a_read.as_raw_fd(), &mut one, false) == 1
            }
            Channel::Futex(w) => {
                let word = w.word();
                word.store(B_TURN, Ordering::Release);
                futex_wake(word, private);
                while word.load(Ordering::Acquire) == B_TURN {
                    futex_wait(word, B_TURN, private);
                }
                true
            }
        }
    }

    /// Tells side B to quit.
    fn quit(&self, private: bool) {
        match self {
            Channel::Pipe { a_write, .. } => {
                let mut zero = 0u8;
                xfer(a_write.as_raw_fd(), &mut zero, true);
            }
            Channel::Futex(w) => {
                w.word().store(QUIT, Ordering::Release);
                futex_wake(w.word(), private);
            }
        }
    }
}

/// Side B, however it runs.
enum Answerer {
    Child(libc::pid_t),
    Thread(std::thread::JoinHandle<()>),
}

fn start_answerer(
    channel: &std::sync::Arc<Channel>,
    mode: PingPongMode,
    cpu_b: u32,
) -> Result<Answerer, HarnessError> {
    match mode {
        PingPongMode::Threads => {
            let ch = channel.clone();
            let handle = std::thread::Builder::new()
                .name(format!("ticklab-pong-cpu{cpu_b}"))
                .spawn(move || {
                    if pin_to(cpu_b).is_ok() {
                        ch.answer(true);
                    }
                })
                .map_err(|e| os_error("spawning the ping-pong thread", e))?;
            Ok(Answerer::Thread(handle))
        }
        PingPongMode::Processes => {
            // SAFETY: getpid has no preconditions.
            let parent = unsafe { libc::getpid() };
            // SAFETY: the child below only makes raw syscalls on memory that fork copied or
            // shared (no allocation, no locks, no unwinding) and ends in _exit.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                return Err(os_error(
                    "fork for the ping-pong process",
                    io::Error::last_os_error(),
                ));
            }
            if pid == 0 {
                // SAFETY: async-signal-safe calls only, see above.
                unsafe {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    if libc::getppid() != parent || !pin_raw(cpu_b) {
                        libc::_exit(1);
                    }
                    if let Channel::Pipe {
                        a_write, a_read, ..
                    } = &**channel
                    {
                        libc::close(a_write.as_raw_fd());
                        libc::close(a_read.as_raw_fd());
                    }
                    channel.answer(false);
                    libc::_exit(0);
                }
            }
            Ok(Answerer::Child(pid))
        }
    }
}

fn finish_answerer(answerer: Answerer) -> Result<(), HarnessError> {
    match answerer {
        Answerer::Thread(h) => h
            .join()
            .map_err(|_| HarnessError::Panicked("ping-pong answerer".into())),
        Answerer::Child(pid) => {
            let mut status = 0;
            // SAFETY: waiting for our own child.
            let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
            if rc < 0 {
                return Err(os_error(
                    "waitpid on the ping-pong process",
                    io::Error::last_os_error(),
                ));
            }
            if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                return Err(HarnessError::Os {
                    what: "the ping-pong process".into(),
                    source: io::Error::other(format!("exited abnormally (status {status:#x})")),
                });
            }
            Ok(())
        }
    }
}

/// What a ping-pong pair is asked to do.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PingPongPlan {
    /// Futex or pipe.
    pub method: PingPongMethod,
    /// CPU of side A.
    pub cpu_a: u32,
    /// CPU of side B.
    pub cpu_b: u32,
    /// Round trips to do.
    pub round_trips: u64,
    /// Process or thread for side B.
    pub mode: PingPongMode,
}

/// Body of side A's thread: sets up B, waits at `gate`, runs the rounds until done or until
/// `stop` / `window_over`, then stops B.
pub(crate) fn driver(
    plan: PingPongPlan,
    gate: &Gate,
    stop: &Stop,
    window_over: &Stop,
) -> Result<PingPongOutput, HarnessError> {
    let private = plan.mode == PingPongMode::Threads;
    let setup = (|| {
        pin_to(plan.cpu_a).map_err(|e| {
            os_error(
                &format!("pinning ping-pong side A to CPU {}", plan.cpu_a),
                e,
            )
        })?;
        let channel = std::sync::Arc::new(
            Channel::new(plan.method).map_err(|e| os_error("creating the ping-pong channel", e))?,
        );
        let answerer = start_answerer(&channel, plan.mode, plan.cpu_b)?;
        Ok::<_, HarnessError>((channel, answerer))
    })();
    gate.wait();
    let (channel, answerer) = setup?;
    let started = now_ns();
    let mut done = 0u64;
    let mut broken = false;
    'rounds: while done < plan.round_trips {
        let chunk = (plan.round_trips - done).min(256);
        for _ in 0..chunk {
            if !channel.round_trip(private) {
                broken = true;
                break 'rounds;
            }
            done += 1;
        }
        if stop.is_set() || window_over.is_set() {
            break;
        }
    }
    let elapsed_ns = now_ns() - started;
    channel.quit(private);
    finish_answerer(answerer)?;
    if broken {
        return Err(HarnessError::Os {
            what: "the ping-pong pipe".into(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(PingPongOutput {
        round_trips: done,
        elapsed_ns,
    })
}

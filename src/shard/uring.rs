//! The io_uring rings glommio creates, with `IORING_SETUP_COOP_TASKRUN` added.
//!
//! A network completion (a socket that became readable, a poll armed by a read that
//! found nothing) is finished by task work on the shard's thread. Without
//! `COOP_TASKRUN` the kernel interrupts the shard for it with an inter-processor
//! interrupt, however busy the shard is with other requests: every request a client
//! sends from another core costs the shard an IPI and a trip through the kernel. With
//! the flag the task work waits for the shard's next system call, and a busy shard
//! makes one every few microseconds (its sends and reads); a parked shard is woken as
//! before. It is what an epoll server gets for free, and it is the kernel's advice for
//! any ring not driven by interrupts (io_uring_setup(2), since Linux 5.19).
//!
//! glommio 0.9 offers no way to pass setup flags, so the link step wraps the one C
//! function that creates its rings, liburing's `io_uring_queue_init_params`
//! (`-Wl,--wrap=io_uring_queue_init_params`, given by this crate's and the bench
//! crate's `build.rs`): glommio's call lands in [`__wrap_io_uring_queue_init_params`],
//! which adds the flag and calls the real function. A kernel that refuses the flag
//! (`EINVAL`, older than 5.19) gets the ring glommio asked for.
//!
//! One consequence for glommio's spin-before-park: a shard that spins in user space
//! makes no system call, so a completion that arrives meanwhile waits for the spin
//! to end (or for the next timer tick). `runtime.spin_before_park` therefore
//! defaults to 0: a shard with nothing to do parks at once, and the kernel wakes it.

use std::os::raw::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

const IORING_SETUP_COOP_TASKRUN: u32 = 1 << 8;

/// The head of liburing's `struct io_uring_params`; only `flags` is read or written,
/// through the caller's pointer.
#[repr(C)]
pub struct ParamsHead {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
}

/// Whether rings created from now on ask for the flag (`runtime.coop_taskrun`).
static ENABLED: AtomicBool = AtomicBool::new(true);
/// Rings created with the flag, and rings the kernel refused it for.
static COOP: AtomicU32 = AtomicU32::new(0);
static REFUSED: AtomicU32 = AtomicU32::new(0);

extern "C" {
    fn __real_io_uring_queue_init_params(entries: c_uint, ring: *mut c_void, params: *mut ParamsHead) -> c_int;
}

/// glommio's ring set-up, through the linker's `--wrap`.
///
/// # Safety
/// The contract of liburing's `io_uring_queue_init_params`: `ring` and `params`
/// point to the caller's valid structures.
#[no_mangle]
pub unsafe extern "C" fn __wrap_io_uring_queue_init_params(entries: c_uint, ring: *mut c_void, params: *mut ParamsHead) -> c_int {
    // SAFETY: `params` is the caller's `struct io_uring_params`, which starts with
    // these three u32 fields; the real function receives it unchanged otherwise.
    unsafe {
        if !ENABLED.load(Ordering::Relaxed) {
            return __real_io_uring_queue_init_params(entries, ring, params);
        }
        let asked = (*params).flags;
        (*params).flags = asked | IORING_SETUP_COOP_TASKRUN;
        let r = __real_io_uring_queue_init_params(entries, ring, params);
        if r != -libc::EINVAL {
            if r >= 0 {
                COOP.fetch_add(1, Ordering::Relaxed);
            }
            return r;
        }
        REFUSED.fetch_add(1, Ordering::Relaxed);
        (*params).flags = asked;
        __real_io_uring_queue_init_params(entries, ring, params)
    }
}

/// Whether the shards started after this call get the flag.
pub fn set_coop_taskrun(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// How many rings got `COOP_TASKRUN`, and how many kernels refused it.
pub fn coop_taskrun_rings() -> (u32, u32) {
    (COOP.load(Ordering::Relaxed), REFUSED.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    /// The running kernel's (major, minor), from /proc.
    fn kernel() -> (u32, u32) {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut parts = release.trim().split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    }

    /// The wrap is in the link: an executor's three rings go through it, and on a
    /// kernel that knows the flag (5.19 and later) they get it.
    #[test]
    fn glommio_rings_are_created_with_coop_taskrun() {
        let (coop, refused) = super::coop_taskrun_rings();
        glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound).io_memory(64 << 10).spawn(|| async {}).unwrap().join().unwrap();
        let (coop_after, refused_after) = super::coop_taskrun_rings();
        let wrapped = (coop_after - coop) + (refused_after - refused);
        assert!(wrapped >= 3, "glommio's rings did not go through the wrap: {wrapped} of 3");
        if kernel() >= (5, 19) {
            assert_eq!(refused_after, refused, "kernel {:?} refused COOP_TASKRUN", kernel());
            assert!(coop_after - coop >= 3);
        }
    }
}

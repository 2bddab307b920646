//! The crate's `unsafe`, all of it: pinning a thread with `sched_setaffinity`, and handing a
//! socket to tokio's reactor as an `AsyncFd`.

use std::io;
use std::net::TcpStream;

use tokio::io::unix::AsyncFd;

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {cpu} is out of range")));
    }
    // SAFETY: cpu_set_t is a plain bitmask for which all-zero is the valid empty set; CPU_SET
    // writes inside it because `cpu < CPU_SETSIZE` (checked above); sched_setaffinity reads
    // exactly `size_of::<cpu_set_t>()` bytes from a pointer to a live local, and pid 0 means
    // the calling thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Registers a connected, non-blocking socket with the current tokio reactor.
pub fn register(stream: TcpStream) -> io::Result<AsyncFd<TcpStream>> {
    // SAFETY: `AsyncFd` takes the `TcpStream` by value, and a `TcpStream` owns its descriptor:
    // it stays open, and `as_raw_fd` returns the same number, until the stream is dropped,
    // which only happens when the `AsyncFd` is dropped. Nothing swaps the inner stream.
    unsafe { AsyncFd::register(stream) }.map_err(io::Error::from)
}

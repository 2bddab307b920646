//! The few direct calls into the OS that the server makes (CPU affinity, memory
//! flags), kept together so that their `unsafe` is in one place.

/// The CPUs this process may run on (its affinity mask, as `taskset` sets it).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bitmask that sched_getaffinity fills; the size passed
    // is its own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// Turns transparent huge pages off or on for this process (PR_SET_THP_DISABLE).
pub fn set_thp_disabled(disabled: bool) {
    // SAFETY: PR_SET_THP_DISABLE takes a flag and three zero arguments; it touches no memory of ours.
    let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, u64::from(disabled), 0u64, 0u64, 0u64) };
    if rc != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "PR_SET_THP_DISABLE not applied");
    }
}

/// Makes `cmd`'s child die with this thread (PR_SET_PDEATHSIG, SIGKILL: a `kill -9` of
/// the server takes it along) and run at niceness `nice`. The signal follows the thread
/// that spawned the child, so spawn from a thread that lives as long as the child should.
pub fn child_dies_with_parent(cmd: &mut std::process::Command, nice: i32) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid is async-signal-safe; read before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe functions (prctl, getppid, setpriority, _exit); it allocates
    // nothing and touches no lock.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between the fork and the prctl.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            libc::setpriority(libc::PRIO_PROCESS, 0, nice);
            Ok(())
        });
    }
}

/// Sends SIGTERM to process `pid` (a child of ours).
pub fn terminate(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return };
    // SAFETY: kill has no memory effects; `pid` is a child this process has not reaped.
    unsafe { libc::kill(pid, libc::SIGTERM) };
}

/// Moves the calling thread to SCHED_IDLE: it runs only when no normal thread wants
/// the CPU. Logged and ignored when refused.
pub fn set_idle_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler with pid 0 changes only the calling thread and reads
    // `param`, a valid sched_param on our stack.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    if rc != 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(), "ingest threads could not move to SCHED_IDLE");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_may_run_somewhere() {
        assert!(!super::allowed_cpus().is_empty());
    }
}

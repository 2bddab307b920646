//! Which CPUs client threads run on, so a benchmark can give the client and the server a core
//! each. The pinning itself is in `sys`.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CPU list {given:?}: expected numbers and ranges like 1 or 0-3,6")]
pub struct CpuListError {
    pub given: String,
}

/// A non-empty list of CPUs as `taskset -c` takes it: `1`, `0-3`, `0,2-3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(Vec<usize>);

impl CpuList {
    pub fn parse(given: &str) -> Result<CpuList, CpuListError> {
        let error = || CpuListError { given: given.to_string() };
        let mut cpus = Vec::new();
        for part in given.split(',') {
            let (low, high) = part.split_once('-').unwrap_or((part, part));
            let low: usize = low.trim().parse().map_err(|_| error())?;
            let high: usize = high.trim().parse().map_err(|_| error())?;
            if low > high || high >= libc::CPU_SETSIZE as usize {
                return Err(error());
            }
            cpus.extend(low..=high);
        }
        Ok(CpuList(cpus))
    }

    /// The CPU for client thread `thread`; threads wrap around the list.
    pub fn for_thread(&self, thread: usize) -> usize {
        self.0[thread % self.0.len()]
    }

    pub fn cpus(&self) -> &[usize] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::sys::pin_current_thread;

    #[test]
    fn parses_lists_and_ranges() {
        assert_eq!(CpuList::parse("1").unwrap().cpus(), [1]);
        assert_eq!(CpuList::parse("0-2,5").unwrap().cpus(), [0, 1, 2, 5]);
        let list = CpuList::parse("0,1").unwrap();
        assert_eq!((list.for_thread(0), list.for_thread(1), list.for_thread(2)), (0, 1, 0));
    }

    #[test]
    fn refuses_bad_lists() {
        for bad in ["", "a", "3-1", "1,", "99999"] {
            assert!(CpuList::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pins_this_thread_to_cpu_0() {
        std::thread::spawn(|| pin_current_thread(0).unwrap()).join().unwrap();
    }
}

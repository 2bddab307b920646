//! A fallible job over many items on a few threads, results in item order. The first error stops
//! the other workers from taking new items, so a bad server answer does not cost a full pass.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;

pub fn parallel_map<I, T, E>(items: &[I], threads: usize, job: impl Fn(&I) -> Result<T, E> + Sync) -> Result<Vec<T>, E>
where
    I: Sync,
    T: Send,
    E: Send,
{
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let worker = || -> Result<Vec<(usize, T)>, E> {
        let mut done = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(index) else { break };
            match job(item) {
                Ok(value) => done.push((index, value)),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        Ok(done)
    };
    let threads = threads.clamp(1, items.len().max(1));
    let outcomes: Vec<_> = thread::scope(|scope| {
        let handles: Vec<_> = (0..threads).map(|_| scope.spawn(worker)).collect();
        handles.into_iter().map(|h| h.join().expect("a worker thread panicked")).collect()
    });
    let mut done = Vec::with_capacity(items.len());
    for outcome in outcomes {
        done.extend(outcome?);
    }
    done.sort_unstable_by_key(|(index, _)| *index);
    Ok(done.into_iter().map(|(_, value)| value).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_item_order_and_stops_on_error() {
        let items: Vec<u32> = (0..100).collect();
        let doubled = parallel_map(&items, 4, |&i| Ok::<_, ()>(i * 2)).unwrap();
        assert_eq!(doubled, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        let failed = parallel_map(&items, 4, |&i| if i == 37 { Err(i) } else { Ok(i) });
        assert_eq!(failed, Err(37));
        assert!(parallel_map(&[] as &[u32], 4, |&i| Ok::<_, ()>(i)).unwrap().is_empty());
    }
}

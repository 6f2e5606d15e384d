//! Work on many items at once, on scoped threads that take the next item as they finish
//! one: the matrix's scenarios, the compile check's compiles.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `work` of every item, `workers` items at a time, in the order of `items`.
///
/// The calling thread works too, so that a spawn the system refuses (a pids limit) only
/// means fewer at once; `workers` of 0 or 1 runs the items one after the other here. A
/// panic in `work` is the caller's panic.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = items.get(i) else {
            break;
        };
        let result = work(item);
        *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    };
    std::thread::scope(|scope| {
        for _ in 1..workers.min(items.len()) {
            if std::thread::Builder::new()
                .spawn_scoped(scope, worker)
                .is_err()
            {
                break;
            }
        }
        worker();
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                // A worker that panicked has panicked the scope above: every item was run.
                .expect("every item was run")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each result stands at its item's place, however many workers took the items.
    #[test]
    fn results_come_in_the_order_of_the_items() {
        let items: Vec<u64> = (0..50).collect();
        let squares: Vec<u64> = items.iter().map(|i| i * i).collect();
        for workers in [0, 1, 4, 100] {
            let seen = parallel_map(&items, workers, |i| {
                // Later items finish first when several run at once.
                std::thread::sleep(std::time::Duration::from_micros(50 - i));
                i * i
            });
            assert_eq!(seen, squares, "{workers} workers");
        }
        assert_eq!(parallel_map(&[] as &[u64], 4, |i| *i), Vec::<u64>::new());
    }

    /// With several workers, items do run at once: two that each wait for the other finish.
    #[test]
    fn several_workers_run_items_at_once() {
        let barrier = std::sync::Barrier::new(2);
        let seen = parallel_map(&["a", "b"], 2, |name| {
            barrier.wait();
            name.to_uppercase()
        });
        assert_eq!(seen, ["A", "B"]);
    }
}

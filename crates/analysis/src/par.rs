//! Running independent analyses at once on a multi-core machine (std threads only).

use std::sync::Mutex;

/// Runs `a` on another thread and `b` on this one, and returns both results. On a single-core
/// machine, or when no thread can be started, both run here, one after the other. A panic in `a`
/// is passed on to the caller, as if `a` had run here.
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB,
    RA: Send,
{
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        return (a(), b());
    }
    // `a` waits in a cell so that it can still run here if the thread cannot be started.
    let cell = Mutex::new(Some(a));
    let (ra, rb) = std::thread::scope(|s| {
        let cell = &cell;
        let spawned = std::thread::Builder::new().spawn_scoped(s, move || {
            let f = cell.lock().ok().and_then(|mut g| g.take());
            f.map(|f| f())
        });
        let rb = b();
        let ra = match spawned {
            Ok(h) => match h.join() {
                Ok(ra) => ra,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(_) => None,
        };
        (ra, rb)
    });
    match ra {
        Some(ra) => (ra, rb),
        None => match cell.into_inner().ok().flatten() {
            Some(a) => (a(), rb),
            None => unreachable!("`a` ran on the thread, which returned its result"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::join;

    #[test]
    fn both_results_come_back() {
        let v: Vec<u64> = (0..1000).collect();
        let (a, b) = join(|| v.iter().sum::<u64>(), || v.len());
        assert_eq!((a, b), (499_500, 1000));
    }

    #[test]
    fn a_panic_on_the_other_thread_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| join(|| -> u8 { panic!("boom") }, || 1));
        assert!(r.is_err());
    }
}

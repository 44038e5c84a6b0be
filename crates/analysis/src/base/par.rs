//! Running independent analyses at once on a multi-core machine (std threads only).

use std::sync::Mutex;

/// Runs `a` on another thread and `b` on this one, and returns both results. On a single-core
/// machine, on a thread that keeps its profile's work ([`xlens_model::threads`]), or when no
/// thread can be started, both run here, one after the other. A panic in `a`
/// is passed on to the caller, as if `a` had run here.
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB,
    RA: Send,
{
    let cores = xlens_model::threads::available();
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

/// Runs `run` on two sets of `jobs` of about equal total cost (`costs`, one per job), one on
/// another thread, and returns both results, the first set's first.
pub fn run_split<J, R, F>(jobs: Vec<J>, costs: &[usize], run: F) -> Vec<R>
where
    J: Send,
    R: Send,
    F: Fn(Vec<J>) -> Vec<R> + Sync,
{
    let (a, b) = xlens_model::balance::split_jobs(jobs, costs);
    let (mut ra, rb) = join(|| run(a), || run(b));
    ra.extend(rb);
    ra
}

/// Runs every job of `jobs` once, on this thread and one other, each thread taking the next
/// job not yet taken when it is done with one (list the costliest first). For independent
/// memoised analyses of one profile, whose costs vary from profile to profile: a fixed split
/// would leave one core waiting.
pub fn each(jobs: &[&(dyn Fn() + Sync)]) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        while let Some(job) = jobs.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
            job();
        }
    };
    join(work, work);
}

#[cfg(test)]
mod tests {
    use super::{each, join};
    use xlens_model::balance::two_way_split;

    fn heavier(costs: &[usize]) -> usize {
        let side = two_way_split(costs);
        let a: usize = costs.iter().zip(&side).filter(|x| *x.1).map(|x| x.0).sum();
        a.max(costs.iter().sum::<usize>() - a)
    }

    #[test]
    fn the_split_is_the_best_one_for_few_jobs() {
        // The lines of the 49 MB JAX profile, in ms: placing the most costly first on the
        // lighter side gives 38 against 28; the best split is the two largest against the rest.
        assert_eq!(heavier(&[17, 17, 10, 11, 11]), 34);
        assert_eq!(heavier(&[5]), 5);
        assert_eq!(heavier(&[]), 0);
        // Beyond 12 jobs the rest go one by one to the lighter side.
        let many: Vec<usize> = (1..=40).collect();
        assert!(heavier(&many) <= 820 / 2 + 40);
    }

    #[test]
    fn both_results_come_back() {
        let v: Vec<u64> = (0..1000).collect();
        let (a, b) = join(|| v.iter().sum::<u64>(), || v.len());
        assert_eq!((a, b), (499_500, 1000));
    }

    #[test]
    fn each_job_runs_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let runs: Vec<AtomicUsize> = (0..7).map(|_| AtomicUsize::new(0)).collect();
        let jobs: Vec<Box<dyn Fn() + Sync + '_>> = (0..7)
            .map(|i| {
                let r = &runs[i];
                Box::new(move || {
                    r.fetch_add(1, Ordering::Relaxed);
                }) as Box<dyn Fn() + Sync>
            })
            .collect();
        let refs: Vec<&(dyn Fn() + Sync)> = jobs.iter().map(|j| j.as_ref()).collect();
        each(&refs);
        assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn a_panic_on_the_other_thread_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| join(|| -> u8 { panic!("boom") }, || 1));
        assert!(r.is_err());
    }
}

//! How many threads the work on one profile may use.
//!
//! Decoding and analysing one profile spread over the machine's cores. A caller that already
//! runs one profile per core (`xlens hosts --jobs N`) says so for its threads with
//! [`one_per_profile`]: the work each of them starts then stays on it, instead of each
//! profile's helpers competing with the other profiles for the same cores.

use std::cell::Cell;

thread_local! {
    static ONE: Cell<bool> = const { Cell::new(false) };
}

/// The threads work on one profile started on this thread may use: the machine's cores, or one
/// on a thread marked by [`one_per_profile`].
pub fn available() -> usize {
    if ONE.with(Cell::get) {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Marks this thread (`true`) as one of several that each work on a profile of their own, so
/// that the work on a profile started here stays on this thread; `false` lifts it.
pub fn one_per_profile(on: bool) {
    ONE.with(|c| c.set(on));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_thread_keeps_its_work_others_do_not() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(available(), cores);
        one_per_profile(true);
        assert_eq!(available(), 1);
        // Another thread is not marked.
        assert_eq!(std::thread::spawn(available).join().ok(), Some(cores));
        one_per_profile(false);
        assert_eq!(available(), cores);
    }
}

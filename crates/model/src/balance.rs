//! Sharing work between threads: a split of jobs of known costs into two sets of about equal
//! cost (used by importers and analyses that run on two cores).

/// Splits `jobs` (of the given costs) into two sets of about equal total cost
/// ([`two_way_split`]), each in the jobs' order.
pub fn split_jobs<T>(jobs: Vec<T>, costs: &[usize]) -> (Vec<T>, Vec<T>) {
    let side = two_way_split(costs);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (j, in_a) in jobs.into_iter().zip(side) {
        if in_a {
            a.push(j);
        } else {
            b.push(j);
        }
    }
    (a, b)
}

/// Splits jobs of the given costs into two sets of about equal total cost (`true`: the first set).
/// The most costly jobs (up to 12) are placed by trying every split of them, the rest one by one
/// on the lighter side, most costly first.
pub fn two_way_split(costs: &[usize]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(costs[i]));
    let exact = order.len().min(12);
    let mut best = (usize::MAX, 0u32);
    for mask in 0..(1u32 << exact) {
        let mut sums = [0usize; 2];
        for (bit, &i) in order[..exact].iter().enumerate() {
            sums[((mask >> bit) & 1) as usize] += costs[i];
        }
        let worst = sums[0].max(sums[1]);
        if worst < best.0 {
            best = (worst, mask);
        }
    }
    let mut side = vec![false; costs.len()];
    let mut sums = [0usize; 2];
    for (bit, &i) in order[..exact].iter().enumerate() {
        let a = (best.1 >> bit) & 1 == 1;
        side[i] = a;
        sums[usize::from(!a)] += costs[i];
    }
    for &i in &order[exact..] {
        let a = sums[0] <= sums[1];
        side[i] = a;
        sums[usize::from(!a)] += costs[i];
    }
    side
}

//! A small deterministic PRNG (splitmix64 to seed, xorshift64* to draw): the same seed gives the
//! same run, so a crash found at `--seed S` can be found again.

/// Pseudo-random numbers, reproducible from one `u64` seed.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator seeded with `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Rng {
        // splitmix64 spreads nearby seeds apart; xorshift needs a non-zero state.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng { state: z | 1 }
    }

    /// The next 64 random bits (xorshift64*).
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo).saturating_add(1))
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u32, den: u32) -> bool {
        self.below(den as usize) < num as usize
    }

    /// One element of a non-empty slice (the first when empty is impossible by construction).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A length biased towards small values: a power of two up to `max`, then a random value
    /// below it (1 at least, `max` at most).
    pub fn small_len(&mut self, max: usize) -> usize {
        if max <= 1 {
            return max;
        }
        let bits = usize::BITS - max.leading_zeros();
        let cap = 1usize << self.below(bits as usize);
        self.range(1, cap.min(max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_numbers() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut z = Rng::new(0);
        assert_ne!(z.next_u64(), z.next_u64());
    }

    #[test]
    fn bounds_hold() {
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            assert!(r.below(5) < 5);
            let l = r.small_len(100);
            assert!((1..=100).contains(&l));
            let x = r.range(3, 9);
            assert!((3..=9).contains(&x));
        }
        assert_eq!(r.below(0), 0);
    }
}

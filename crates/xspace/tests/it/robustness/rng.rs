//! Deterministic randomness (splitmix64 with fixed seeds) and the mutations it drives.

use xlens_model::Profile;

// ------------------------------------------------------------------------------------------------
// Deterministic randomness.

/// splitmix64: tiny, fast, and good enough to drive mutations.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n == 0`).
    pub(super) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// Uniform in `lo..=hi`.
    pub(super) fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    pub(super) fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub(super) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }

    /// A varint value biased towards boundaries (sign bit, 7-bit group edges, extremes).
    pub(super) fn interesting(&mut self) -> u64 {
        const V: [u64; 16] = [
            0,
            1,
            2,
            127,
            128,
            16_383,
            16_384,
            u32::MAX as u64,
            1 << 32,
            i64::MAX as u64,
            i64::MIN as u64,
            u64::MAX,
            (-1i64) as u64,
            (-1000i64) as u64,
            1_700_000_000_000_000_000,
            1_000_000_000_000_000,
        ];
        match self.below(4) {
            0 => V[self.below(V.len())],
            1 => self.next_u64(),
            _ => self.below(1000) as u64,
        }
    }

    /// A short string, sometimes not valid UTF-8.
    pub(super) fn name(&mut self) -> Vec<u8> {
        let n = self.below(12);
        if self.one_in(8) {
            self.bytes(n)
        } else {
            (0..n).map(|_| b'a' + self.below(26) as u8).collect()
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Mutations.

/// One mutation: truncation, bit flips, overwrites, insertions, deletions, splices from `donor`,
/// or the `EF BF BD` replacement that corrupted an upstream sample.
fn mutate_once(rng: &mut Rng, v: &mut Vec<u8>, donor: &[u8]) -> String {
    if v.is_empty() {
        let n = rng.range(1, 4);
        *v = rng.bytes(n);
        return "replace the empty input with random bytes".into();
    }
    let len = v.len();
    match rng.below(7) {
        0 => {
            let at = rng.below(len);
            v.truncate(at);
            format!("truncate at {at}")
        }
        1 => {
            let mut d = Vec::new();
            for _ in 0..rng.range(1, 4) {
                let (at, bit) = (rng.below(len), rng.below(8));
                v[at] ^= 1 << bit;
                d.push(format!("{at}.{bit}"));
            }
            format!("flip bits {}", d.join(" "))
        }
        2 => {
            let at = rng.below(len);
            let n = rng.range(1, 8).min(len - at);
            for b in &mut v[at..at + n] {
                *b = match rng.below(3) {
                    0 => [0x00, 0x7f, 0x80, 0xff][rng.below(4)],
                    _ => rng.next_u64() as u8,
                };
            }
            format!("overwrite {n} bytes at {at}")
        }
        3 => {
            let at = rng.below(len + 1);
            let n = rng.range(1, 8);
            let b = rng.bytes(n);
            v.splice(at..at, b);
            format!("insert {n} bytes at {at}")
        }
        4 => {
            let at = rng.below(len);
            let n = rng.range(1, 16).min(len - at);
            v.drain(at..at + n);
            format!("delete {n} bytes at {at}")
        }
        5 => {
            let from = rng.below(donor.len());
            let n = rng.range(1, 256).min(donor.len() - from);
            let chunk = donor[from..from + n].to_vec();
            let at = rng.below(len + 1);
            if rng.one_in(2) {
                let end = (at + n).min(len);
                v.splice(at..end, chunk);
                format!("splice {n} bytes from {from} over {at}")
            } else {
                v.splice(at..at, chunk);
                format!("splice {n} bytes from {from} in at {at}")
            }
        }
        _ => {
            // Like a profile that went through a lossy UTF-8 conversion.
            let high: Vec<usize> = (0..len).filter(|&i| v[i] >= 0x80).collect();
            if high.is_empty() {
                v[rng.below(len)] = 0xff;
                return "set a byte to 0xff".into();
            }
            let mut at: Vec<usize> = if rng.one_in(8) {
                high
            } else {
                (0..rng.range(1, 8))
                    .map(|_| high[rng.below(high.len())])
                    .collect()
            };
            at.sort_unstable();
            at.dedup();
            for &i in at.iter().rev() {
                v.splice(i..i + 1, [0xef, 0xbf, 0xbd]);
            }
            format!("replace {} high bytes with EF BF BD", at.len())
        }
    }
}

/// One to four stacked mutations of `base`.
pub(super) fn mutate(rng: &mut Rng, base: &[u8]) -> (Vec<u8>, String) {
    let mut v = base.to_vec();
    let n = if rng.one_in(4) { rng.range(2, 4) } else { 1 };
    let d: Vec<String> = (0..n).map(|_| mutate_once(rng, &mut v, base)).collect();
    (v, d.join("; "))
}

#[derive(Default)]
pub(super) struct Tally {
    pub(super) ok: usize,
    pub(super) err: usize,
}

impl Tally {
    pub(super) fn add(&mut self, r: Option<Profile>) {
        match r {
            Some(_) => self.ok += 1,
            None => self.err += 1,
        }
    }
}

//! Timestamps and durations: decimal microseconds as written, to integer picoseconds, exactly.

use super::*;

/// A time in microseconds written as JSON (a number, or a number in a string) in picoseconds,
/// exactly: the decimal digits are read as they are written (`1661203463029566.123` is
/// 1661203463029566123000 ps), not through a double, which keeps only about 16 digits. Exponent
/// forms go through a double. `None` when it is not a finite number or does not fit. (Epoch
/// microseconds in picoseconds exceed `i64`: callers subtract an anchor.)
pub(crate) fn micros_to_ps(raw: Raw<'_>) -> Option<i128> {
    plain_micros_to_ps(raw.get().as_bytes()).or_else(|| any_micros_to_ps(raw))
}

/// [`micros_to_ps`] of the common form, in one pass: digits (at most 18), then optionally `.`
/// and digits; `None` for anything else (which [`any_micros_to_ps`] reads).
pub(super) fn plain_micros_to_ps(b: &[u8]) -> Option<i128> {
    if let Some(ps) = micros_in_words(b).or_else(|| short_micros(b)) {
        return Some(ps);
    }
    let i = stops::digits_end(b, 0);
    if i == 0 || i > 18 {
        return None;
    }
    let int = stops::digits_value(&b[..i]);
    let (mut frac, mut round_up) = (0u64, false);
    if i < b.len() {
        if b[i] != b'.' {
            return None;
        }
        let d = &b[i + 1..];
        if stops::digits_end(d, 0) != d.len() {
            return None;
        }
        // Six digits to the picosecond; the seventh rounds half up; the rest do not count.
        let kept = &d[..d.len().min(6)];
        frac = stops::digits_value(kept) * 10u64.pow(6 - kept.len() as u32);
        round_up = d.get(6).is_some_and(|&c| c >= b'5');
    }
    Some(i128::from(int) * 1_000_000 + i128::from(frac) + i128::from(round_up))
}

/// [`plain_micros_to_ps`] of the form profilers write epoch times in, 9 to 16 digits, a point
/// and 1 to 6 digits (`4458676983543.183`), a word at a time: the integer's digits as two words
/// of eight (the first filled out with zeros before them), the fraction's as one, with zeros
/// before and after it to make the six digits of a picosecond. `None` for any other form.
#[inline]
pub(super) fn micros_in_words(b: &[u8]) -> Option<i128> {
    use stops::{not_digits, word, word_value, ZEROS};
    let n = b.len();
    if n < 11 {
        return None;
    }
    let i = stops::digits_end(b, 0);
    let f = n.checked_sub(i + 1)?;
    if !(9..=16).contains(&i) || b[i] != b'.' || !(1..=6).contains(&f) {
        return None;
    }
    // The first `h` digits, after 8 - h zeros.
    let h = i - 8;
    let high = (word(&b[..8]) << ((8 - h) * 8)) | ZEROS.checked_shr(h as u32 * 8).unwrap_or(0);
    let int = word_value(high) * 100_000_000 + word_value(word(&b[i - 8..i]));
    // Two zeros, the fraction's `f` digits, 6 - f zeros: its value in picoseconds.
    let frac = (((word(&b[n - 8..]) >> ((8 - f) * 8)) | (ZEROS << (f * 8))) << 16) | 0x3030;
    if not_digits(frac) != 0 {
        return None;
    }
    Some(i128::from(int) * 1_000_000 + i128::from(word_value(frac)))
}

/// [`plain_micros_to_ps`] of the short form durations are written in (`156.777`, `2`): 1 to 8
/// digits, then optionally a point and 1 to 6 digits, a byte at a time in `u64`s. `None` for any
/// other form.
#[inline]
pub(super) fn short_micros(b: &[u8]) -> Option<i128> {
    const SCALE: [u64; 7] = [1_000_000, 100_000, 10_000, 1_000, 100, 10, 1];
    if b.len() > 15 {
        return None;
    }
    let digit = |c: u8| c.is_ascii_digit().then(|| u64::from(c - b'0'));
    let point = b.iter().position(|&c| c == b'.').unwrap_or(b.len());
    if !(1..=8).contains(&point) {
        return None;
    }
    let mut int = 0u64;
    for &c in &b[..point] {
        int = int * 10 + digit(c)?;
    }
    let mut frac = 0u64;
    if point < b.len() {
        let d = &b[point + 1..];
        if !(1..=6).contains(&d.len()) {
            return None;
        }
        for &c in d {
            frac = frac * 10 + digit(c)?;
        }
        frac *= SCALE[d.len()];
    }
    Some(i128::from(int * 1_000_000 + frac))
}

/// [`micros_to_ps`] of any form: quoted, signed, with an exponent.
pub(super) fn any_micros_to_ps(raw: Raw<'_>) -> Option<i128> {
    let mut t = raw.get().trim();
    if let Some(s) = t.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        t = s.trim();
    }
    if t.contains(['e', 'E']) {
        let v: f64 = t.parse().ok()?;
        let ps = v * 1e6;
        return (ps.is_finite() && ps.abs() < 1e30).then(|| ps.round() as i128);
    }
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ps: i128 = 0;
    for b in int.bytes() {
        ps = ps.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    if ps > i128::from(i64::MAX) {
        return None;
    }
    ps *= 1_000_000;
    let fb = frac.as_bytes();
    let mut f: i128 = 0;
    for k in 0..6 {
        f = f * 10 + fb.get(k).map_or(0, |b| i128::from(b - b'0'));
    }
    // Below a picosecond: round half up.
    if fb.get(6).is_some_and(|&b| b >= b'5') {
        f += 1;
    }
    ps = ps.checked_add(f)?;
    Some(if neg { -ps } else { ps })
}

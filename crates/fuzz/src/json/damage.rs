//! Damage to the text itself (the JSON no longer parses), and the fuzzer's dictionary.

use super::*;

/// Text-level damage JSON parsers have to survive: a closing bracket removed, a quote
/// removed, a stray comma.
pub fn damage_text(rng: &mut Rng, text: &mut Vec<u8>) {
    let targets: &[u8] = match rng.below(4) {
        0 => b"}",
        1 => b"]",
        2 => b"\"",
        _ => b",:",
    };
    let start = rng.below(text.len().max(1));
    let found = text[start.min(text.len())..]
        .iter()
        .position(|c| targets.contains(c))
        .map(|p| p + start)
        .or_else(|| text.iter().rposition(|c| targets.contains(c)));
    if let Some(p) = found {
        if rng.chance(1, 4) {
            text.insert(p, b',');
        } else {
            text.remove(p);
        }
    }
}

/// Tokens for byte-level mutation of JSON.
pub const DICT: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"null",
    b"true",
    b"NaN",
    b"1e999",
    b"-",
    b"\"ph\":\"X\"",
    b"\"ph\":\"B\"",
    b"\"ph\":\"E\"",
    b"\"ph\":\"M\"",
    b"\"ts\":",
    b"\"dur\":",
    b"\"pid\":",
    b"\"tid\":",
    b"\"args\":{",
    b"\"cat\":\"kernel\"",
    b"{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":0,\"name\":\"a\"},",
    b"\xff\xfe",
    b"\0",
];

//! Events' args as model stats: numbers, lists and strings encoded without building a JSON tree.

use super::*;

/// A JSON value as a stat: integers as `I64` (`U64` above `i64::MAX`), other numbers as `F64`,
/// strings interned, booleans as 0/1, arrays and objects as their JSON text.
pub(super) fn json_stat(p: &mut Profile, v: &serde_json::Value) -> Option<StatValue> {
    use serde_json::Value as V;
    Some(match v {
        V::Null => StatValue::None,
        V::Bool(b) => StatValue::I64(i64::from(*b)),
        V::Number(n) => {
            if let Some(i) = n.as_i64() {
                StatValue::I64(i)
            } else if let Some(u) = n.as_u64() {
                StatValue::U64(u)
            } else {
                StatValue::F64(n.as_f64()?)
            }
        }
        V::String(s) => StatValue::Str(p.strings.intern(s)),
        V::Array(_) | V::Object(_) => StatValue::Str(p.strings.intern(&v.to_string())),
    })
}

/// A raw JSON value as a stat: integers as `I64` (`U64` above `i64::MAX`), other numbers as
/// `F64`, strings interned, booleans as 0/1, null as no value, arrays and objects as their JSON
/// text.
pub(super) fn raw_stat(p: &mut Profile, v: Raw<'_>, ids: &mut Ids) -> StatValue {
    match value_of(v.get()) {
        Value::None => StatValue::None,
        Value::I64(x) => StatValue::I64(x),
        Value::U64(x) => StatValue::U64(x),
        Value::F64(x) => StatValue::F64(x),
        // (Short ones, names and the like, through the table of short strings.)
        Value::Str(s) if s.is_empty() => StatValue::Str(Ids::of(&mut ids.empty, p, "")),
        Value::Str(s) => StatValue::Str(ids.short(p, &s)),
    }
}

/// Encodes an event's `args` object as stats, in the order written; with `kernel`, also
/// `kernel_details` in XSpace's form. `correlation` adds `correlation_id`. With `keep`, only
/// the args it names (and no `kernel_details`); returns how many were left out.
pub(super) fn encode_args(
    p: &mut Profile,
    out: &mut Vec<u8>,
    args: Args<'_, '_>,
    kernel: bool,
    keep: Option<&[&str]>,
    read_ahead: &[StrId],
    ids: &mut Ids,
) -> usize {
    let map = args.pairs;
    if let Some(keep) = keep {
        let mut left_out = 0;
        for (k, v) in map {
            if keep.contains(&k.as_ref()) {
                let key = ids.few(p, k);
                let sv = raw_stat(p, *v, ids);
                encode_stat_arg(p, out, k, key, sv, ids);
            } else {
                left_out += 1;
            }
        }
        return left_out;
    }
    match args.pre {
        Some(pre) if pre.len() == map.len() => {
            for ((k, v), a) in map.iter().zip(pre) {
                let id = |i: u32| read_ahead.get(i as usize).copied();
                let value = match a.value {
                    PreValue::None => Some(StatValue::None),
                    PreValue::I64(x) => Some(StatValue::I64(x)),
                    PreValue::U64(x) => Some(StatValue::U64(x)),
                    PreValue::F64(x) => Some(StatValue::F64(x)),
                    PreValue::Str(i) => id(i).map(StatValue::Str),
                };
                match (id(a.key), value) {
                    (Some(key), Some(value)) => encode_stat_arg(p, out, k, key, value, ids),
                    // Numbers the second thread never sent (cannot happen): read it here.
                    _ => encode_arg(p, out, k, *v, ids),
                }
            }
        }
        _ => {
            for (k, v) in map {
                encode_arg(p, out, k, *v, ids);
            }
        }
    }
    if kernel {
        let get = |k: &str| map.iter().find(|x| x.0 == k).map(|x| x.1.get());
        // (Room for the details of any kernel seen: one allocation.)
        let mut s = String::with_capacity(128);
        // As `r as i64` of the number read as a float (and, for the occupancy, the float as
        // displayed): an integer written plainly is copied as it is written.
        if let Some(r) = get("registers per thread") {
            number_into(&mut s, "regs:", r, true);
        }
        if let Some(m) = get("shared memory") {
            if number_into(&mut s, "static_shared:", m, true) {
                s.truncate(s.len() - 1);
                s.push_str(" dynamic_shared:0 ");
            }
        }
        if let Some(g) = get("grid") {
            list_into(&mut s, "grid:", g);
        }
        if let Some(b) = get("block") {
            list_into(&mut s, "block:", b);
        }
        if let Some(o) = get("est. achieved occupancy %") {
            number_into(&mut s, "occ_pct:", o, false);
        }
        let s = s.trim_end();
        if !s.is_empty() {
            let k = p.strings.intern("kernel_details");
            let v = p.strings.intern(s);
            encode_stat(out, k, StatValue::Str(v));
        }
    }
    0
}

/// `raw` as a plain JSON integer of at most 15 digits (exact as an `f64`, which writes it as it
/// is written); `None` for anything else (a fraction, an exponent, leading zeros, `-0`, white
/// space, a string).
pub(super) fn plain_int(raw: &str) -> Option<&str> {
    let digits = raw.strip_prefix('-').unwrap_or(raw).as_bytes();
    let ok = match digits {
        [b'0'] => digits.len() == raw.len(),
        [b'1'..=b'9', rest @ ..] => rest.len() < 15 && rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    ok.then_some(raw)
}

/// Appends `label`, the number `raw` and a space, as `{label}{v as i64} ` (with `int`) or
/// `{label}{v}` of `v`, the number read as a float; nothing when it is not a number. Returns
/// whether it appended.
pub(super) fn number_into(s: &mut String, label: &str, raw: &str, int: bool) -> bool {
    use std::fmt::Write;
    s.push_str(label);
    if let Some(n) = plain_int(raw) {
        s.push_str(n);
    } else if let Ok(v) = raw.parse::<f64>() {
        // (Writing to a `String` cannot fail.)
        let _ = if int {
            write!(s, "{}", v as i64)
        } else {
            write!(s, "{v}")
        };
    } else {
        s.truncate(s.len() - label.len());
        return false;
    }
    if int {
        s.push(' ');
    }
    true
}

/// Appends `label`, the [`int_list`] of `raw` and a space; nothing when it is not one.
pub(super) fn list_into(s: &mut String, label: &str, raw: &str) {
    let at = s.len();
    s.push_str(label);
    if int_list_into(s, raw) {
        s.push(' ');
    } else {
        s.truncate(at);
    }
}

/// The integers of the JSON array `raw` (`[512, 1, 1]`) joined by commas (`512,1,1`); `None`
/// for anything else (other values in it, or not an array). What serde_json reading it as
/// `Vec<i64>` and a `join` gave, without either (a kernel's grid and block were most of its
/// import).
#[cfg(test)]
pub(super) fn int_list(raw: &str) -> Option<String> {
    let mut out = String::new();
    int_list_into(&mut out, raw).then_some(out)
}

/// [`int_list`], appended to `out`; returns whether `raw` was such a list (when not, what it
/// appended is left for the caller to cut).
pub(super) fn int_list_into(out: &mut String, raw: &str) -> bool {
    let ws = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
    let Some(inner) = raw
        .trim_matches(ws)
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
    else {
        return false;
    };
    if inner.trim_matches(ws).is_empty() {
        return true;
    }
    for (k, item) in inner.split(',').enumerate() {
        let n = item.trim_matches(ws);
        // A JSON integer: no `+`, no leading zeros, no fraction or exponent (and not `-0`,
        // which serde_json reads as a float); within an `i64`, it is written as it reads.
        let digits = n.strip_prefix('-').unwrap_or(n).as_bytes();
        let json = match digits {
            [b'0'] => digits.len() == n.len(),
            [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
            _ => false,
        };
        if !json || n.parse::<i64>().is_err() {
            return false;
        }
        if k > 0 {
            out.push(',');
        }
        out.push_str(n);
    }
    true
}

/// One arg as a stat (`correlation` adds `correlation_id`).
pub(super) fn encode_arg(p: &mut Profile, out: &mut Vec<u8>, k: &str, v: Raw<'_>, ids: &mut Ids) {
    let key = ids.short(p, k);
    let sv = raw_stat(p, v, ids);
    encode_stat_arg(p, out, k, key, sv, ids);
}

/// [`encode_arg`] of the arg `k` (interned as `key`) whose value is `sv`.
pub(super) fn encode_stat_arg(
    p: &mut Profile,
    out: &mut Vec<u8>,
    k: &str,
    key: StrId,
    sv: StatValue,
    ids: &mut Ids,
) {
    encode_stat(out, key, sv);
    if k == "correlation" {
        if let StatValue::I64(c) = sv {
            let key = Ids::of(&mut ids.correlation_id, p, "correlation_id");
            encode_stat(out, key, StatValue::I64(c));
        }
    }
}

/// FNV-1a of a string id (flow ids written as strings).
pub(super) fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

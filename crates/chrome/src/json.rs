//! Reading the JSON: the top-level object (or bare array) and each trace event, borrowed from the
//! input where no escapes force a copy. Events are handed to the importer one at a time as the
//! parser meets them; no tree of the file is built.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// One trace event as written. Fields whose type varies between producers (numbers or strings)
/// are kept as raw JSON text and read by the importer.
#[derive(Deserialize, Default)]
pub(crate) struct RawEvent<'a> {
    #[serde(default, borrow)]
    pub ph: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub cat: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub pid: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub tid: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub ts: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub dur: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub id2: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub bp: Option<Cow<'a, str>>,
    /// The `args` object's keys and raw values, read in the same pass as the event.
    #[serde(default, borrow)]
    pub args: Option<Args<'a>>,
}

/// What the importer does with the parts of a trace file.
pub(crate) trait Sink {
    fn event(&mut self, e: RawEvent<'_>);
    /// A top-level field other than `traceEvents` (`deviceProperties`, `distributedInfo`,
    /// `baseTimeNanoseconds`, ...), as raw JSON.
    fn field(&mut self, key: &str, value: &RawValue);
}

/// Parses a whole trace file into `sink`. The bytes are checked to be UTF-8 once, up front
/// (JSON text is), so the parser need not check each string it borrows (a twentieth of the
/// import's time when it did).
pub(crate) fn parse(bytes: &[u8], sink: &mut dyn Sink) -> Result<(), serde_json::Error> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return Err(de::Error::custom(format!(
                "not UTF-8 text at byte {} (JSON is)",
                e.valid_up_to()
            )))
        }
    };
    // serde_json's recursion limit (128 levels) stays: `args` nest a few levels at most, and the
    // limit turns a hostile file into an error rather than a stack overflow.
    let mut de = serde_json::Deserializer::from_str(text);
    Top { sink }.deserialize(&mut de)?;
    de.end()
}

struct Top<'s> {
    sink: &'s mut dyn Sink,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Chrome trace: an object with `traceEvents`, or an array of events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        Events { sink: self.sink }.visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen_events = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "traceEvents" {
                map.next_value_seed(Events {
                    sink: &mut *self.sink,
                })?;
                seen_events = true;
            } else if matches!(
                key.as_ref(),
                "deviceProperties"
                    | "distributedInfo"
                    | "baseTimeNanoseconds"
                    | "displayTimeUnit"
                    | "schemaVersion"
                    | "traceName"
                    | "cupti_version"
                    | "cuda_runtime_version"
                    | "cuda_driver_version"
                    | "hip_runtime_version"
                    | "hip_driver_version"
                    | "with_flops"
                    | "with_modules"
                    | "with_stack"
            ) {
                let v: &'de RawValue = map.next_value()?;
                self.sink.field(&key, v);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if !seen_events {
            return Err(de::Error::custom(
                "no `traceEvents` array: not a Chrome trace (PyTorch profiler traces have one)",
            ));
        }
        Ok(())
    }
}

struct Events<'s> {
    sink: &'s mut dyn Sink,
}

impl<'de> DeserializeSeed<'de> for Events<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(e) = seq.next_element::<RawEvent<'de>>()? {
            self.sink.event(e);
        }
        Ok(())
    }
}

/// An `args` object: its keys and raw values, in the order written.
#[derive(Default)]
pub(crate) struct Args<'a>(pub Vec<(Cow<'a, str>, &'a RawValue)>);

impl Args<'_> {
    /// The raw value of `key`.
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().find(|x| x.0 == key).map(|x| x.1)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Args<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Args<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Args<'a>, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<Borrowed<'de>>()? {
                    out.push((k.0, map.next_value::<&'de RawValue>()?));
                }
                Ok(Args(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A string borrowed from the input when it has no escapes.
struct Borrowed<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Borrowed<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Borrowed<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Borrowed<'de>, E> {
                Ok(Borrowed(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Borrowed<'de>, E> {
                Ok(Borrowed(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A JSON value that is an id: a number (its text) or a string (unescaped).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Key {
    Num(i64),
    Str(String),
}

impl Key {
    pub fn of(raw: Option<&RawValue>) -> Key {
        let Some(raw) = raw else {
            return Key::Num(0);
        };
        let t = raw.get();
        if t.starts_with('"') {
            let s: Cow<str> = serde_json::from_str(t).unwrap_or(Cow::Borrowed(""));
            // Numeric strings ("7") are the same id as the number.
            match s.parse::<i64>() {
                Ok(n) => Key::Num(n),
                Err(_) => Key::Str(s.into_owned()),
            }
        } else if let Ok(n) = t.parse::<i64>() {
            Key::Num(n)
        } else {
            Key::Str(t.to_string())
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Key::Num(n) => write!(f, "{n}"),
            Key::Str(s) => f.write_str(s),
        }
    }
}

/// A time in microseconds written as JSON (a number, or a number in a string) in picoseconds,
/// exactly: the decimal digits are read as they are written (`1661203463029566.123` is
/// 1661203463029566123000 ps), not through a double, which keeps only about 16 digits. Exponent
/// forms go through a double. `None` when it is not a finite number or does not fit. (Epoch
/// microseconds in picoseconds exceed `i64`: callers subtract an anchor.)
pub(crate) fn micros_to_ps(raw: &RawValue) -> Option<i128> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn microseconds_become_picoseconds_without_rounding() {
        let cases = [
            ("1661203463029566", Some(1_661_203_463_029_566_000_000)),
            ("1661203463029566.123", Some(1_661_203_463_029_566_123_000)),
            ("0.0000005", Some(1)),
            ("0.0000004", Some(0)),
            ("12.5", Some(12_500_000)),
            ("-3.25", Some(-3_250_000)),
            ("\"42.000001\"", Some(42_000_001)),
            ("1.5e3", Some(1_500_000_000)),
            ("1e400", None),
            ("\"abc\"", None),
            ("99999999999999999999", None),
            (
                "9223372036854775807",
                Some(9_223_372_036_854_775_807_000_000),
            ),
            ("null", None),
        ];
        for (text, want) in cases {
            assert_eq!(micros_to_ps(&raw(text)), want, "{text}");
        }
    }

    #[test]
    fn ids_are_numbers_or_strings() {
        assert_eq!(Key::of(Some(&raw("7"))), Key::Num(7));
        assert_eq!(Key::of(Some(&raw("\"7\""))), Key::Num(7));
        assert_eq!(Key::of(Some(&raw("\"Spans\""))), Key::Str("Spans".into()));
        assert_eq!(Key::of(None), Key::Num(0));
    }
}

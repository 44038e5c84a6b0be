use super::*;
use crate::finish::*;

/// Each event's extra stats, by hand: events 0 and 3 of 5 have none, 1 has two, 2 and 4
/// one; an entry naming event 7 (of none here) is in no event's range.
#[test]
fn extra_stats_are_found_by_event() {
    let k = StrId::default();
    let v = |n: i64| StatValue::I64(n);
    let extra = [
        (1, k, v(10)),
        (1, k, v(11)),
        (2, k, v(20)),
        (4, k, v(40)),
        (7, k, v(70)),
    ];
    let starts = extra_starts(&extra, 5);
    let of = |i: usize| -> Vec<StatValue> {
        extra[starts[i] as usize..starts[i + 1] as usize]
            .iter()
            .map(|x| x.2)
            .collect()
    };
    assert_eq!(of(0), vec![]);
    assert_eq!(of(1), vec![v(10), v(11)]);
    assert_eq!(of(2), vec![v(20)]);
    assert_eq!(of(3), vec![]);
    assert_eq!(of(4), vec![v(40)]);
    assert_eq!(starts.len(), 6);
    assert!(extra_starts(&[], 5).is_empty());
}

/// Strings interned through the table of short ones get the ids interning them directly
/// gives, in the same order, however their slots collide: keys of every length from 1 to
/// 40 bytes, differing in their first, middle or last byte, and many that differ only past
/// their first eight bytes, met in turn and again.
#[test]
fn short_strings_intern_as_the_profile_interns_them() {
    let (mut a, mut b) = (Profile::default(), Profile::default());
    let mut ids = Ids::default();
    let mut keys = Vec::new();
    for n in 1..=40usize {
        for c in [b'a', b'b', b'z'] {
            for at in [0, n / 2, n - 1] {
                let mut k = vec![b'k'; n];
                k[at] = c;
                keys.push(String::from_utf8(k).expect("ascii"));
            }
        }
    }
    // Many keys with the same length and first eight bytes, more than there are slots; and
    // (past 16 bytes) with the same first and last eight, differing only between them.
    for n in 9..=32usize {
        for t in 0..200 {
            keys.push(format!("kkkkkkkk{t:0w$}", w = n - 8));
            if n >= 18 {
                keys.push(format!("kkkkkkkk{t:0w$}zzzzzzzz", w = n - 16));
            }
        }
    }
    for round in 0..3 {
        for (i, k) in keys.iter().enumerate() {
            // Each round in another order.
            let k = if round == 1 {
                &keys[keys.len() - 1 - i]
            } else {
                k
            };
            assert_eq!(ids.short(&mut a, k), b.strings.intern(k), "{k}");
        }
    }
    assert_eq!(a.strings.len(), b.strings.len());
    for k in &keys {
        assert_eq!(a.strings.find(k), b.strings.find(k), "{k}");
    }
}

/// Two strings of one length up to 16 bytes that differ in any one byte, or in any two,
/// have different [`words`].
#[test]
fn words_hold_a_short_string_whole() {
    for n in 0..=16usize {
        let base: Vec<u8> = (0..n as u8).map(|i| b'a' + i).collect();
        let mut seen = std::collections::HashMap::new();
        seen.insert(words(&base), base.clone());
        let bytes = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, b'a'];
        for i in 0..n {
            for j in i..n {
                for (c, d) in bytes.iter().flat_map(|&c| bytes.map(|d| (c, d))) {
                    let mut t = base.clone();
                    t[i] = c;
                    t[j] = d;
                    if let Some(other) = seen.insert(words(&t), t.clone()) {
                        assert_eq!(other, t, "length {n}");
                    }
                }
            }
        }
    }
}

/// Tracks found by the text of their pid and tid are the tracks their keys find: for
/// numbers, numbers written as strings, strings, null, absent ids and texts too long to be
/// held in words, met in turn and again, in three classes.
#[test]
fn tracks_by_text_are_the_tracks_by_key() {
    let ids = [
        None,
        Some("0"),
        Some("7"),
        Some("\"7\""),
        Some("-549452224"),
        Some("2910249"),
        Some("\"stream 7\""),
        Some("\"stream 8\""),
        Some("null"),
        Some("12345678901234567"),
        Some("\"a name longer than sixteen\""),
        Some("7.0"),
    ];
    let ids: Vec<Option<Box<RawValue>>> = ids
        .iter()
        .map(|t| t.map(|t| RawValue::from_string(t.to_string()).expect("JSON")))
        .collect();
    let mut a = Importer::default();
    let mut b = Importer::default();
    for round in 0..4 {
        for (n, pid) in ids.iter().enumerate() {
            for (m, tid) in ids.iter().enumerate() {
                if (n + m + round) % 3 == 0 {
                    continue;
                }
                for class in [Class::Thread, Class::Annotations, Class::Async] {
                    let (p, t) = (pid.as_deref().map(Raw::from), tid.as_deref().map(Raw::from));
                    let by_key = b.track(TrackKey {
                        pid: Key::of(p),
                        tid: Key::of(t),
                        class,
                    });
                    assert_eq!(a.track_of(p, t, class), by_key, "{pid:?} {tid:?}");
                }
            }
        }
    }
    assert_eq!(a.keys, b.keys);
}

/// A kernel's grid and block read as serde_json reads them into `Vec<i64>`, joined by commas:
/// on the forms Kineto writes and on every other form nearby (floats, exponents, `+`, leading
/// zeros, empty items, nesting, strings, overflow, white space of JSON and not).
#[test]
fn int_lists_as_serde_json_reads_them() {
    let serde = |t: &str| -> Option<String> {
        let v: Vec<i64> = serde_json::from_str(t).ok()?;
        Some(v.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
    };
    let cases = [
        "[512, 1, 1]",
        "[1,2,3]",
        "[]",
        "[ ]",
        " [ 7 ] ",
        "[\n1,\t2\r]",
        "[-0]",
        "[-5, 0, 9223372036854775807, -9223372036854775808]",
        "[9223372036854775808]",
        "[-9223372036854775809]",
        "[1.0]",
        "[1e2]",
        "[+1]",
        "[01]",
        "[1,]",
        "[,1]",
        "[1 2]",
        "[[1]]",
        "[\"1\"]",
        "[null]",
        "[-]",
        "[1]x",
        "{}",
        "[\u{a0}1]",
        "1",
        "",
    ];
    for c in cases {
        assert_eq!(int_list(c), serde(c), "{c:?}");
    }
    assert_eq!(int_list("[512, 1, 1]").as_deref(), Some("512,1,1"));
}

/// A kernel's registers, shared memory and occupancy are written as the number read as a
/// float and formatted (as an `i64`, or as the float) wrote them, for any form of it.
#[test]
fn kernel_numbers_as_formatting_the_float_writes_them() {
    let cases = [
        "32",
        "0",
        "-0",
        "-5",
        "032",
        "1e3",
        "12.5",
        "100",
        "0.0",
        "123456789012345",
        "999999999999999",
        "1234567890123456",
        "12345678901234567890",
        "-123456789012345",
        "\"32\"",
        "NaN",
        "inf",
        "null",
        "true",
        " 7",
        "7 ",
        "",
        "-",
        "4224",
        "1.5e-7",
    ];
    for raw in cases {
        for int in [true, false] {
            let mut s = String::from("x ");
            let wrote = number_into(&mut s, "regs:", raw, int);
            let want = match raw.parse::<f64>() {
                Ok(v) if int => format!("x regs:{} ", v as i64),
                Ok(v) => format!("x regs:{v}"),
                Err(_) => "x ".to_string(),
            };
            assert_eq!(s, want, "{raw:?} {int}");
            assert_eq!(wrote, raw.parse::<f64>().is_ok(), "{raw:?}");
        }
    }
    let mut s = String::from("a ");
    list_into(&mut s, "grid:", "[1,x]");
    list_into(&mut s, "block:", "[128, 1, 1]");
    assert_eq!(s, "a block:128,1,1 ");
}

/// The block search finds the slice a scan back over every slice finds, for every place and
/// time, on tracks of nested, overlapping and far-apart slices across several blocks.
#[test]
fn block_ends_find_what_a_scan_back_finds() {
    let mut seed = 7u64;
    let mut next = move |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) % n
    };
    for len in [0usize, 1, 63, 64, 65, 200, 700] {
        let mut ev: Vec<Ev> = (0..len)
            .map(|_| {
                // Mostly short slices, some long ones (a step) that cover many after them.
                let dur = if next(20) == 0 { next(5_000) } else { next(30) } as i64;
                Ev {
                    start: next(10_000) as i64,
                    dur,
                    name: StrId(0),
                    stats: (0, 0),
                }
            })
            .collect();
        ev.sort_by(|a, b| a.start.cmp(&b.start).then(b.dur.cmp(&a.dur)));
        let ends = BlockEnds::of(&ev);
        // Times between slices' ends, and on them (a slice ending exactly at `ts` covers it).
        let mut times: Vec<i64> = (-10..15_050).step_by(97).collect();
        times.extend(ev.iter().step_by(5).flat_map(|e| {
            let end = e.start + e.dur;
            [end - 1, end, end + 1]
        }));
        for i in 0..=len + 1 {
            for &ts in &times {
                let want = (0..i.min(len))
                    .rev()
                    .find(|&k| ev[k].start + ev[k].dur >= ts);
                assert_eq!(ends.last(&ev, i, ts), want, "len {len} i {i} ts {ts}");
            }
        }
    }
}

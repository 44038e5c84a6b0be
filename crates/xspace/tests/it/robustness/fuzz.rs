//! Mutated real fixtures, random bytes, random protobuf and random valid XSpaces never panic.

use std::time::Instant;

use super::check::check;
use super::fixtures;
use super::rng::{mutate, Rng, Tally};
use super::wire::{put_varint, shrink, Pb, LEN};

/// Multiplies the number of random cases (`XLENS_ROBUSTNESS_SCALE=50 cargo test --release ...` for
/// a longer search; the default keeps the file at a few seconds in a debug build).
fn scale() -> usize {
    std::env::var("XLENS_ROBUSTNESS_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// Mutating whole multi-megabyte files is slow in a debug build, so most mutations are applied to
/// small, valid XSpaces cut out of the fixtures (every plane kept, a few lines and events of each,
/// with the metadata they refer to).
#[test]
fn mutated_real_fixtures_never_panic() {
    const FULL_FILE_MUTATIONS: usize = 2;
    const SAMPLES: usize = 5;
    const MUTATIONS_PER_SAMPLE: usize = 100;
    let t = Instant::now();
    let mut tally = Tally::default();
    for (fi, (name, bytes)) in fixtures().iter().enumerate() {
        let seed = 0x0dec_0de0 + fi as u64;
        let mut rng = Rng::new(seed);
        let full = check(bytes, &|| format!("{name} as is")).expect("the fixture decodes");
        assert!(full.event_count() > 0);

        // A lossy UTF-8 round trip of the whole file, as happened to the upstream sample.
        let lossy = String::from_utf8_lossy(bytes).into_owned().into_bytes();
        assert!(
            check(&lossy, &|| format!("{name} through lossy UTF-8")).is_none(),
            "{name}: a lossy UTF-8 copy decoded"
        );

        // A few mutations of the whole file (slow in debug: each may decode megabytes).
        for k in 0..FULL_FILE_MUTATIONS {
            let (m, d) = mutate(&mut rng, bytes);
            tally.add(check(&m, &|| {
                format!("{name} (seed {seed:#x}) full mutation {k}: {d}")
            }));
        }

        // Many mutations of small XSpaces cut out of the file.
        for s in 0..SAMPLES * scale() {
            let (sample, n_events) = shrink(bytes, &mut rng, 3, 40);
            let p = check(&sample, &|| format!("{name} sample {s}"))
                .unwrap_or_else(|| panic!("{name}: sample {s} does not decode"));
            assert_eq!(p.event_count(), n_events, "{name} sample {s}");
            assert_eq!(p.planes.len(), full.planes.len(), "{name} sample {s}");
            for k in 0..MUTATIONS_PER_SAMPLE {
                let (m, d) = mutate(&mut rng, &sample);
                tally.add(check(&m, &|| {
                    format!("{name} (seed {seed:#x}) sample {s} mutation {k}: {d}")
                }));
            }
        }
    }
    eprintln!(
        "mutated real fixtures: {} decoded, {} rejected, in {:?}",
        tally.ok,
        tally.err,
        t.elapsed()
    );
    // Both outcomes must occur, or the mutations are not exercising anything.
    assert!(tally.ok > 50 && tally.err > 50);
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(0xb17e5);
    let mut tally = Tally::default();
    for k in 0..2000 * scale() {
        let n = if rng.one_in(2) {
            rng.below(64)
        } else {
            rng.below(4096)
        };
        let mut v = rng.bytes(n);
        // Half of them look like an XSpace with one plane, so the plane decoder sees them.
        if k % 2 == 1 {
            let mut head = vec![0x0a];
            put_varint(&mut head, v.len() as u64);
            v.splice(0..0, head);
        }
        tally.add(check(&v, &|| format!("random bytes #{k}")));
    }
    assert!(tally.err > 0);
}

/// Random protobuf that knows nothing of the schema: small field numbers (which hit the real
/// fields) with any wire type, nested messages, and now and then a bad wire type or a lying length.
fn random_message(rng: &mut Rng, depth: usize) -> Vec<u8> {
    let mut m = Pb::new();
    for _ in 0..rng.below(8) {
        let field = if rng.one_in(8) {
            rng.range(1, 1 << 20) as u64
        } else {
            rng.range(1, 12) as u64
        };
        m = match rng.below(20) {
            0..=6 => m.varint(field, rng.interesting()),
            7 => m.fixed64(field, rng.next_u64()),
            8 => m.fixed32(field, rng.next_u64() as u32),
            9 => m.tag(field, [3, 4, 6, 7][rng.below(4)]),
            10 => {
                // A length that does not match what follows.
                let n = rng.below(16);
                let body = rng.bytes(n);
                let mut m = m.tag(field, LEN);
                put_varint(&mut m.0, (body.len() + rng.range(1, 4)) as u64);
                m.0.extend_from_slice(&body);
                m
            }
            11..=13 => {
                let b = rng.name();
                m.bytes(field, &b)
            }
            _ if depth < 4 => {
                let inner = random_message(rng, depth + 1);
                m.bytes(field, &inner)
            }
            _ => m.varint(field, rng.interesting()),
        };
    }
    m.0
}

#[test]
fn random_protobuf_never_panics() {
    let mut rng = Rng::new(0x9b);
    let mut tally = Tally::default();
    for k in 0..2000 * scale() {
        let m = random_message(&mut rng, 0);
        tally.add(check(&m, &|| format!("random protobuf #{k}")));
    }
    assert!(tally.err > 0);
}

/// A random XSpace that follows the schema (so it must decode), with extreme values. Returns the
/// bytes and the number of events per plane.
fn random_space(rng: &mut Rng) -> (Vec<u8>, Vec<usize>) {
    let mut s = Pb::new();
    let mut counts = Vec::new();
    for _ in 0..rng.range(1, 3) {
        let mut plane = Pb::new().varint(1, rng.interesting()).bytes(2, &rng.name());
        // Ids mostly from a small pool, so that events find their metadata (or not).
        let id = |rng: &mut Rng| {
            if rng.one_in(8) {
                rng.interesting() as i64
            } else {
                rng.below(8) as i64
            }
        };
        let random_stat = |rng: &mut Rng| {
            let st = Pb::new().int(1, id(rng));
            match rng.below(7) {
                0 => st.fixed64(2, rng.next_u64()),
                1 => st.varint(3, rng.interesting()),
                2 => st.varint(4, rng.interesting()),
                3 => st.bytes(5, &rng.name()),
                4 => st.bytes(6, &rng.name()),
                5 => st.int(7, id(rng)),
                _ => st,
            }
        };
        for _ in 0..rng.below(6) {
            let (k, v) = (id(rng), id(rng));
            let mut md = Pb::new().int(1, v).bytes(2, &rng.name());
            if rng.one_in(3) {
                md = md.bytes(3, &rng.name()).bytes(4, &rng.name());
            }
            for _ in 0..rng.below(3) {
                md = md.msg(5, random_stat(rng));
            }
            if rng.one_in(3) {
                md = md.int(6, id(rng));
                let mut packed = Vec::new();
                for _ in 0..rng.below(4) {
                    put_varint(&mut packed, rng.interesting());
                }
                md = md.bytes(6, &packed);
            }
            let entry = if rng.one_in(6) {
                Pb::new().msg(2, md)
            } else {
                Pb::new().int(1, k).msg(2, md)
            };
            plane = plane.msg(4, entry);
        }
        for _ in 0..rng.below(6) {
            let k = id(rng);
            let md = Pb::new()
                .int(1, k)
                .bytes(2, &rng.name())
                .bytes(3, &rng.name());
            plane = plane.msg(5, Pb::new().int(1, k).msg(2, md));
        }
        for _ in 0..rng.below(3) {
            plane = plane.msg(6, random_stat(rng));
        }
        let mut n_events = 0;
        for _ in 0..rng.below(4) {
            let ts = match rng.below(4) {
                0 => 0,
                1 => rng.below(1000) as u64,
                2 => 1_700_000_000_000_000_000 + rng.below(1_000_000) as u64,
                _ => rng.interesting(),
            };
            let mut line = Pb::new()
                .varint(1, rng.interesting())
                .bytes(2, &rng.name())
                .varint(3, ts)
                .varint(9, rng.interesting());
            for _ in 0..rng.below(20) {
                let small = |rng: &mut Rng| {
                    if rng.one_in(6) {
                        rng.interesting()
                    } else {
                        rng.below(100_000) as u64
                    }
                };
                let mut e = Pb::new()
                    .int(1, id(rng))
                    .varint(2, small(rng))
                    .varint(3, small(rng));
                for _ in 0..rng.below(3) {
                    e = e.msg(4, random_stat(rng));
                }
                if rng.one_in(5) {
                    e = e.varint(5, rng.interesting());
                }
                line = line.msg(4, e);
                n_events += 1;
            }
            if rng.one_in(3) {
                line = line.varint(10, rng.interesting()).bytes(11, &rng.name());
            }
            plane = plane.msg(3, line);
        }
        s = s.msg(1, plane);
        counts.push(n_events);
        if rng.one_in(4) {
            s = s.bytes(2 + rng.below(3) as u64, &rng.name());
        }
    }
    (s.0, counts)
}

#[test]
fn random_valid_xspaces_decode_and_survive_mutation() {
    let mut rng = Rng::new(0x5eed);
    let mut tally = Tally::default();
    for k in 0..400 * scale() {
        let (bytes, counts) = random_space(&mut rng);
        let p = check(&bytes, &|| format!("random XSpace #{k}"))
            .unwrap_or_else(|| panic!("random valid XSpace #{k} was rejected"));
        let got: Vec<usize> = p.planes.iter().map(|pl| pl.event_count()).collect();
        assert_eq!(got, counts, "random XSpace #{k}");
        for j in 0..8 {
            let (m, d) = mutate(&mut rng, &bytes);
            tally.add(check(&m, &|| {
                format!("random XSpace #{k} mutation {j}: {d}")
            }));
        }
    }
    assert!(tally.ok > 0 && tally.err > 0);
}

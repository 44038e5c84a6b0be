//! A synthetic profile of any size, for the trace viewer's benchmark (`xlens bench-trace
//! --synthetic N`) and the tests that need more events than a real fixture holds.

use crate::{EventMetadata, EventsBuilder, Line, Plane, Profile, Strings};

/// A synthetic profile for benchmarks: `lines` threads, each a sequence of steps holding nested
/// ops of assorted widths (from nanoseconds to milliseconds) with ~1,000 distinct names, `n`
/// events in all. Deterministic.
pub fn synthetic_profile(n: usize, lines: usize) -> Profile {
    let mut strings = Strings::new();
    let plane_name = strings.intern("/host:CPU");
    let names: Vec<_> = (0..1000)
        .map(|i| strings.intern(&format!("fusion.{i}")))
        .collect();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let per_line = n / lines.max(1);
    let mut out_lines = Vec::new();
    for l in 0..lines.max(1) {
        let mut b = EventsBuilder::with_capacity(per_line, 0);
        let mut t = 0i64;
        let mut made = 0;
        while made < per_line {
            // A parent spanning a batch of children; children of widths 10 ns .. 1 ms.
            let kids = (next() % 200 + 1) as usize;
            let kids = kids.min(per_line.saturating_sub(made + 1));
            let start = t;
            let mut c = t;
            let mut children = Vec::with_capacity(kids);
            for _ in 0..kids {
                let w = 10_000i64 << (next() % 17);
                let gap = (next() % 50_000) as i64;
                children.push((c + gap, w, (1 + next() % 999) as u32));
                c += gap + w;
            }
            b.push(start, c - start + 1000, 0);
            for (s, w, m) in children {
                b.push(s, w, m);
            }
            made += kids + 1;
            t = c + 10_000 + (next() % 1_000_000) as i64;
        }
        out_lines.push(Line {
            id: l as i64,
            name: strings.intern(&format!("thread {l}")),
            events: b.finish(),
            ..Default::default()
        });
    }
    let event_metadata = names
        .iter()
        .enumerate()
        .map(|(i, &name)| EventMetadata {
            id: i as i64,
            name,
            ..Default::default()
        })
        .collect();
    Profile {
        strings,
        planes: vec![Plane {
            name: plane_name,
            event_metadata,
            lines: out_lines,
            ..Default::default()
        }],
        ..Default::default()
    }
}

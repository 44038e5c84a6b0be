use super::*;
use xlens_model::{EventsBuilder, Line, Plane};

/// A profile of one plane whose lines have these timestamps and event starts.
fn profile(lines: &[(i64, Vec<i64>)]) -> Profile {
    let mut plane = Plane::default();
    for (ts, starts) in lines {
        let mut b = EventsBuilder::default();
        for &s in starts {
            b.push(s, 1, 0);
        }
        plane.lines.push(Line {
            timestamp_ns: *ts,
            events: b.finish(),
            ..Default::default()
        });
    }
    Profile {
        planes: vec![plane],
        ..Default::default()
    }
}

/// What placing means, step by step: each line moved by its offset from the earliest line
/// (saturating; lines too far to share the axis stay), then every line moved so that the
/// earliest event is at 0.
fn placed_by_definition(lines: &[(i64, Vec<i64>)]) -> (Vec<Vec<i64>>, i128) {
    let origin = lines
        .iter()
        .filter(|l| !l.1.is_empty())
        .map(|l| l.0)
        .min()
        .unwrap_or(0);
    let mut out: Vec<Vec<i64>> = lines
        .iter()
        .map(|(ts, starts)| {
            let mut v = starts.clone();
            v.sort_unstable();
            if let Ok(d) = i64::try_from((*ts as i128 - origin as i128) * 1000) {
                v.iter_mut().for_each(|s| *s = s.saturating_add(d));
            }
            v
        })
        .collect();
    let min = out
        .iter()
        .filter_map(|v| v.first().copied())
        .min()
        .unwrap_or(0);
    for v in &mut out {
        for s in v.iter_mut() {
            *s = match min.checked_neg() {
                Some(x) => s.saturating_add(x),
                None => s.saturating_add(i64::MAX).saturating_add(1),
            };
        }
    }
    (out, origin as i128 * 1000 + min as i128)
}

#[test]
fn one_pass_placing_equals_the_two_steps() {
    let big = i64::MAX / 1000;
    let cases: Vec<Vec<(i64, Vec<i64>)>> = vec![
        vec![(100, vec![0, 7]), (105, vec![3, 9_000]), (0, vec![])],
        vec![(0, vec![5_000]), (1_700_000_000_000_000_000, vec![7_000])],
        vec![(0, vec![i64::MIN, i64::MAX]), (0, vec![0])],
        vec![(i64::MAX, vec![i64::MIN, 0]), (0, vec![i64::MAX])],
        vec![(i64::MIN, vec![-1, i64::MAX]), (0, vec![5])],
        vec![(-5, vec![i64::MIN + 1]), (0, vec![i64::MIN])],
        vec![
            (big, vec![i64::MAX - 10, 3]),
            (0, vec![-4, 1]),
            (big / 2, vec![0]),
        ],
        vec![
            (3, vec![-20, 40]),
            (1, vec![i64::MAX - 1_000]),
            (2, vec![10]),
        ],
        // Saturates on the first step, comes back down on the second.
        vec![(1, vec![i64::MAX - 10, 0]), (0, vec![500])],
    ];
    for lines in &cases {
        let (want, origin) = placed_by_definition(lines);
        for threads in [1, 2] {
            let mut p = profile(lines);
            place_lines_on_one_axis(&mut p, &mut Warnings::default(), threads, 0, &[]);
            let got: Vec<Vec<i64>> = p.planes[0]
                .lines
                .iter()
                .map(|l| l.events.starts().to_vec())
                .collect();
            assert_eq!(got, want, "{lines:?} on {threads} threads");
            // The wall-clock origin moves with the events (for lines on the axis).
            assert_eq!(p.origin_ps, origin, "{lines:?}");
        }
    }
}

//! Truncation inside a plane is an error at the plane's length, not a shorter profile.

use xlens_xspace::decode;

use super::fixtures;
use super::rng::Rng;
use super::wire::{event, event_md, parse, shrink, space, Field, Pb};

/// Cuts `bytes` strictly inside the payload of top-level plane `plane` and checks the error.
fn assert_cut_reported(label: &str, bytes: &[u8], plane: &Field<'_>, cut: usize) {
    assert!(plane.body_at <= cut && cut < plane.end);
    let e = match decode(&bytes[..cut]) {
        Ok(p) => panic!(
            "{label}: cut at {cut} inside the plane at {} gave a profile with {} planes",
            plane.tag_at,
            p.planes.len()
        ),
        Err(e) => e,
    };
    // The plane's length (just after its one-byte tag) is what runs past the end.
    assert_eq!(
        e.offset,
        plane.tag_at as u64 + 1,
        "{label}: cut at {cut}: {e}"
    );
    assert!(e.offset < cut as u64, "{label}: {e}");
    assert!(e.message.contains("runs past the end"), "{label}: {e}");
    assert_eq!(e.context, "XSpace", "{label}: {e}");
}

#[test]
fn truncation_inside_a_plane_is_an_error() {
    let mut rng = Rng::new(0x7c);
    for (name, bytes) in fixtures() {
        let planes: Vec<Field> = parse(bytes).into_iter().filter(|f| f.num == 1).collect();
        let last = planes.last().unwrap();
        // Whole files: two cuts in the last plane (each decodes every plane before it) and one
        // at the middle of the file when that is inside a plane's payload.
        for cut in [(last.body_at + last.end) / 2, last.end - 1] {
            assert_cut_reported(name, bytes, last, cut);
        }
        let mid = bytes.len() / 2;
        if let Some(p) = planes.iter().find(|p| p.body_at < mid && mid < p.end) {
            assert_cut_reported(name, bytes, p, mid);
        }

        // Small samples: every plane, many cuts.
        for _ in 0..3 {
            let (sample, _) = shrink(bytes, &mut rng, 2, 10);
            let fields = parse(&sample);
            for p in fields.iter().filter(|f| f.num == 1 && f.body_at < f.end) {
                for _ in 0..5 {
                    let cut = p.body_at + rng.below(p.end - p.body_at);
                    assert_cut_reported(name, &sample, p, cut);
                }
                // Inside the length itself, when it has more than one byte.
                if p.body_at - p.tag_at > 2 {
                    let e = decode(&sample[..p.tag_at + 2]).unwrap_err();
                    assert_eq!(e.offset, p.tag_at as u64 + 1, "{name}: {e}");
                    assert!(e.message.contains("truncated varint"), "{name}: {e}");
                }
            }
        }
    }
}

#[test]
fn truncation_deep_inside_a_line_reports_the_innermost_length() {
    // A valid message whose last plane is cut inside an event: the top-level length is what runs
    // past the end, whatever is inside.
    let plane = Pb::new()
        .str(2, "/device:GPU:0")
        .msg(4, event_md(1, "op"))
        .msg(3, Pb::new().str(2, "stream").msg(4, event(1, 0, 10)));
    let bytes = space([Pb::new().str(2, "/host:CPU"), plane]);
    let f = parse(&bytes);
    for cut in f[1].body_at..f[1].end {
        assert_cut_reported("hand-built", &bytes, &f[1], cut);
    }
    // Cut exactly between planes: protobuf cannot tell, so this is one valid plane.
    let p = decode(&bytes[..f[0].end]).unwrap();
    assert_eq!(p.planes.len(), 1);
}

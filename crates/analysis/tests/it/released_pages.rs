//! The XSpace decoder gives back each line's pages once the line is decoded; for a file read
//! into memory (the server's way) those pages then read as zeros. Nothing read from a line
//! after that may come from its bytes: here every line's name starts exactly on a page
//! boundary, the first whole page of the line (a line whose header crosses into a new page, as
//! one line of the 207 MB JAX profile did, came out named with NUL bytes).

use crate::common;

use xlens_store::Format;

fn varint(b: &[u8], i: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let c = b[*i];
        *i += 1;
        v |= u64::from(c & 0x7f) << shift;
        shift += 7;
        if c < 0x80 {
            return v;
        }
    }
}

/// The length-delimited fields `num` of the message in `b[start..end]`, as byte ranges.
fn fields(b: &[u8], start: usize, end: usize, num: u64) -> Vec<(usize, usize)> {
    let (mut i, mut out) = (start, Vec::new());
    while i < end {
        let tag = varint(b, &mut i);
        match tag & 7 {
            0 => {
                varint(b, &mut i);
            }
            1 => i += 8,
            5 => i += 4,
            2 => {
                let len = varint(b, &mut i) as usize;
                if tag >> 3 == num {
                    out.push((i, i + len));
                }
                i += len;
            }
            w => panic!("wire type {w} at {i}"),
        }
    }
    out
}

/// Each line of the XSpace in `b`: (its byte range, where its name starts).
fn lines(b: &[u8]) -> Vec<((usize, usize), usize)> {
    let mut out = Vec::new();
    for (ps, pe) in fields(b, 0, b.len(), 1) {
        for (ls, le) in fields(b, ps, pe, 3) {
            if let Some(&(ns, ne)) = fields(b, ls, le, 2).first() {
                if ne > ns {
                    out.push(((ls, le), ns));
                }
            }
        }
    }
    out
}

fn line_names(p: &xlens_model::Profile) -> Vec<String> {
    p.planes
        .iter()
        .flat_map(|pl| pl.lines.iter())
        .map(|l| p.strings.get(l.name).to_string())
        .collect()
}

#[test]
fn line_names_survive_their_pages_being_given_back() {
    let mut tried = 0;
    for run in ["jax_mlp_small", "jax_tfm_small", "tf_keras_cnn_small"] {
        let path = common::fixture_file(run);
        let orig = xlens_store::read_path(&path, Format::XSpace).expect("fixture");
        let orig = orig.bytes();
        let want = line_names(&common::load(run));
        assert!(want.iter().all(|n| !n.contains('\0')), "{run}: {want:?}");
        // Lines spanning at least three pages, so that the page their name starts on is
        // released with them.
        for ((ls, le), name_at) in lines(orig)
            .into_iter()
            .filter(|((s, e), _)| e - s > 3 * 4096)
            .take(4)
        {
            assert!(ls < name_at && name_at < le);
            // An unknown field (15, bytes) in front moves the name onto a page boundary.
            let mut pad = (4096 - (name_at + 3) % 4096) % 4096;
            if pad < 128 {
                pad += 4096;
            }
            let mut bytes = vec![15 << 3 | 2, (pad as u8 & 0x7f) | 0x80, (pad >> 7) as u8];
            assert!(pad < 1 << 14);
            bytes.resize(3 + pad, b'x');
            assert_eq!((name_at + bytes.len()) % 4096, 0);
            bytes.extend_from_slice(orig);
            let file = std::env::temp_dir().join(format!(
                "xlens-released-{}-{run}-{ls}.xplane.pb",
                std::process::id()
            ));
            std::fs::write(&file, &bytes).expect("temp file");
            let read = xlens_store::read_path(&file, Format::XSpace).expect("read");
            let _ = std::fs::remove_file(&file);
            let p = xlens_loader::decode(&read, Format::XSpace, xlens_loader::Reads::Everything)
                .expect("decode");
            assert_eq!(line_names(&p), want, "{run}, line at byte {ls}");
            tried += 1;
        }
    }
    assert!(tried >= 6, "only {tried} lines long enough");
}

//! Known-bad inputs (corrupt upstream file, text, gzip, empty) and bad fields: errors at the byte.

use xlens_xspace::decode;

use super::check::{check, check_error};
use super::rng::{mutate, Rng};
use super::wire::{event, event_md, stat_i64, Pb};
use super::PROFILE_DIR;

const CORRUPT_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/invalid/corrupted_utf8_head.xplane.pb"
);
/// The upstream corrupt file, in the shared samples beside the checkout.
const CORRUPT_UPSTREAM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/samples/xprof-testdata/invalid/tpu_inference_2.HEAD_corrupted_utf8.xplane.pb"
);
/// How much of the upstream corrupt file the committed fixture holds.
const CORRUPT_FIXTURE_LEN: usize = 64 * 1024;

#[test]
fn known_corrupt_upstream_file_is_rejected() {
    let Ok(bytes) = std::fs::read(CORRUPT_UPSTREAM) else {
        // CI has the shared samples beside the checkout: there this must run.
        assert!(
            std::env::var_os("CI").is_none(),
            "{CORRUPT_UPSTREAM} not present"
        );
        eprintln!("skipped: {CORRUPT_UPSTREAM} not present");
        return;
    };
    let e = decode(&bytes).expect_err("the corrupted upstream file decoded");
    check_error(&e, bytes.len()).unwrap();
    // The committed fixture is this file's head.
    let fixture = std::fs::read(CORRUPT_FIXTURE).unwrap();
    assert!(
        fixture == bytes[..CORRUPT_FIXTURE_LEN],
        "{CORRUPT_FIXTURE} is not the first {CORRUPT_FIXTURE_LEN} bytes of {CORRUPT_UPSTREAM}"
    );
}

#[test]
fn committed_corrupt_fixture_is_rejected() {
    let bytes = std::fs::read(CORRUPT_FIXTURE).unwrap();
    assert_eq!(bytes.len(), CORRUPT_FIXTURE_LEN);
    assert!(bytes.windows(3).any(|w| w == [0xef, 0xbf, 0xbd]));
    let e = decode(&bytes).expect_err("the corrupted file decoded");
    check_error(&e, bytes.len()).unwrap();
    // The first plane's length went through the replacement, so it no longer fits.
    assert_eq!(e.offset, 1, "{e}");
    assert!(e.message.contains("runs past the end"), "{e}");
    // And however it is cut or damaged further, nothing panics.
    let mut rng = Rng::new(0xefbfbd);
    for k in 0..200 {
        let n = rng.range(1, 4096);
        let (m, d) = mutate(&mut rng, &bytes[..n]);
        check(&m, &|| format!("corrupt fixture mutation {k}: {d}"));
    }
}

#[test]
fn text_gzip_and_empty_inputs_are_rejected() {
    let e = decode(b"").unwrap_err();
    assert_eq!(e.offset, 0);
    assert!(e.message.contains("empty"), "{e}");
    assert!(e.to_string().contains("at byte 0"), "{e}");

    let gz = std::fs::read(format!("{PROFILE_DIR}/jax_tfm_small/vm.xplane.pb.gz")).unwrap();
    let inputs: [(&str, &[u8]); 6] = [
        ("JSON", br#"{"traceEvents": []}"#),
        (
            "JSON with whitespace",
            b"  {\n  \"traceEvents\": [\n  ]\n}\n",
        ),
        ("text", b"hello world\n"),
        ("CSV", b"name,duration\nfoo,1\n"),
        ("a newline", b"\n"),
        ("gzip", &gz),
    ];
    for (what, input) in inputs {
        let e = decode(input).expect_err(what);
        check_error(&e, input.len()).unwrap_or_else(|m| panic!("{what}: {m}"));
        assert!(e.offset < 16, "{what}: {e}");
    }
    // Protobuf that is well-formed but holds no plane is not an XSpace either.
    let e = decode(&Pb::new().str(4, "host").str(3, "warning").0).unwrap_err();
    assert!(e.message.contains("no XPlane"), "{e}");
}

#[test]
fn nested_error_offsets_are_absolute() {
    // Wrong wire types and bad tags deep inside: the offset is where the bad field is in the file.
    let prefix = Pb::new().str(4, "host"); // some bytes before the plane
    let cases: [(&str, Pb, &str); 4] = [
        ("event field 1 as bytes", Pb::new().str(1, "x"), "wire type"),
        ("wire type 7", Pb::new().tag(1, 7), "wire type 7"),
        ("field number 0", Pb::new().tag(0, 0), "field number 0"),
        ("varint of 11 bytes", Pb::new().tag(2, 0), "longer than 10"),
    ];
    for (what, mut bad, msg) in cases {
        if what.starts_with("varint") {
            bad.0.extend_from_slice(&[0xff; 10]);
            bad.0.push(0x01);
        }
        let ev = event(1, 0, 5).msg(4, stat_i64(1, 1));
        let bad_len = bad.len();
        let mut ev_bytes = ev.0.clone();
        ev_bytes.extend_from_slice(&bad.0);
        let line = Pb::new().str(2, "l").bytes(4, &ev_bytes);
        let plane = Pb::new().str(2, "p").msg(4, event_md(1, "op")).msg(3, line);
        let mut bytes = prefix.0.clone();
        bytes.extend_from_slice(&Pb::new().msg(1, plane).0);
        // The bad field is the last thing in the event, which is the last thing in the file.
        let bad_at = bytes.len() - bad_len;
        let e = decode(&bytes).expect_err(what);
        check_error(&e, bytes.len()).unwrap();
        assert!(e.message.contains(msg), "{what}: {e}");
        assert_eq!(e.context, "XEvent", "{what}: {e}");
        // A wrong wire type is reported just past the tag, a long varint where it starts (after
        // its tag), a bad tag at the tag.
        let want = if what.starts_with("event field") || what.starts_with("varint") {
            bad_at + 1
        } else {
            bad_at
        };
        assert_eq!(e.offset as usize, want, "{what}: {e}");
    }
}

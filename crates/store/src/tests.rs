use super::*;

#[test]
fn a_gzip_files_inflated_size_from_its_trailer() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pytorch/two_ranks");
    let host = |name: &str, bytes: u64| HostFile {
        host: "h".into(),
        path: dir.join(name),
        bytes,
        format: Format::ChromeTrace,
        rank: None,
    };
    // `gunzip -c FILE | wc -c`: 1,759,570 bytes from 124,247.
    let gz = host("hta-trace_filter-sampled_rank-0.json.gz", 124_247);
    assert_eq!(inflated_size_hint(&gz), 1_759_570);
    // Not gzip, or not there: the size as listed.
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/README.md");
    let plain = HostFile {
        path: readme,
        ..host("x", 77)
    };
    assert_eq!(inflated_size_hint(&plain), 77);
    assert_eq!(inflated_size_hint(&host("missing.json.gz", 5)), 5);
    let bucket = HostFile {
        path: PathBuf::from("gs://b/p/h.pt.trace.json.gz"),
        ..host("x", 9)
    };
    assert_eq!(inflated_size_hint(&bucket), 9);
}

#[test]
fn classifies_profile_names() {
    assert_eq!(
        classify("127.0.0.1_9998.xplane.pb"),
        Some(("127.0.0.1_9998".into(), Format::XSpace))
    );
    assert_eq!(
        classify("vm.xplane.pb.gz"),
        Some(("vm".into(), Format::XSpace))
    );
    assert_eq!(
        classify("h.xplane.riegeli"),
        Some(("h".into(), Format::XSpaceRiegeli))
    );
    // Chrome traces: the PyTorch profiler's names keep everything before the suffix.
    assert_eq!(
        classify("worker0.1700000000.pt.trace.json.gz"),
        Some(("worker0.1700000000".into(), Format::ChromeTrace))
    );
    assert_eq!(
        classify("vm.trace.json.gz"),
        Some(("vm".into(), Format::ChromeTrace))
    );
    assert_eq!(
        classify("rank_3.json"),
        Some(("rank_3".into(), Format::ChromeTrace))
    );
    assert_eq!(classify(".xplane.pb"), None);
    assert_eq!(classify("notes.txt"), None);
}

#[test]
fn a_gzip_file_opens_to_inflate_and_others_do_not() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let gz = root.join("pytorch/hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
    let mut g = open_gzip(&gz).expect("opens").expect("is gzip");
    let mut text = Vec::new();
    g.reader.read_to_end(&mut text).expect("inflates");
    // The size it states is the inflated size; the bytes are read_path's.
    assert_eq!(g.size, text.len());
    assert_eq!(g.stored_bytes, fs::metadata(&gz).expect("stat").len());
    assert_eq!(
        text,
        read_path(&gz, Format::ChromeTrace).expect("reads").bytes()
    );
    let plain = root.join("logdir/plugins/profile/jax_mlp_small/vm.xplane.pb");
    assert!(open_gzip(&plain).expect("opens").is_none());
    let missing = root.join("pytorch/no-such.json.gz");
    match open_gzip(&missing) {
        Err(e @ StoreError::NotFound { .. }) => {
            assert!(e.to_string().contains("no-such.json.gz"), "{e}")
        }
        other => panic!("{:?}", other.map(|o| o.is_some())),
    }
}

/// A gzip head inflated a piece at a time answers as inflating the whole 256 KiB would: the
/// rank found wherever its object falls (in the first piece, across the first piece's end,
/// later), none past 256 KiB, and an object still open at the end of a piece read on.
#[test]
fn a_gzip_head_read_in_pieces_finds_what_a_whole_head_finds() {
    use flate2::write::GzEncoder;
    use std::io::Write;
    let gz = |text: &str| {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).expect("gzip");
        e.finish().expect("gzip")
    };
    let key = "\"distributedInfo\"";
    let step = SNIFF_FIRST_STEP as usize;
    for (pad, want) in [
        (0, (true, Some(7))),
        (step - 40, (true, Some(7))),
        // The key across the first piece's end, then its `}` in the next piece.
        (step - 8, (true, Some(7))),
        (step - 24, (true, Some(7))),
        (3 * step, (true, Some(7))),
        // Past 256 KiB: not looked at (nor is `traceEvents`, after it).
        (300 << 10, (false, None)),
    ] {
        // Padding as a member before the events (no `}` in it).
        let text = format!(
                "{{\"schemaVersion\": 1, \"pad\": \"{}\", {key}: {{\"backend\": \"nccl\", \"rank\": 7, \"world_size\": 8}}, \"traceEvents\": [{{\"ph\": \"X\"}}]}}",
                "x".repeat(pad)
            );
        assert_eq!(sniff_head(&gz(&text)), want, "pad {pad}");
        assert_eq!(sniff_head(text.as_bytes()), want, "pad {pad}, plain");
    }
    // The object's `}` far after the key (a long member in it): found, in a later piece.
    let text = format!(
        "{{{key}: {{\"backend\": \"nccl\", \"pad\": \"{}\", \"rank\": 3}}, \"traceEvents\": []}}",
        "y".repeat(2 * step)
    );
    assert_eq!(sniff_head(&gz(&text)), (true, Some(3)));
    // `traceEvents` after the settled rank, in a later piece: still a trace.
    let text = format!(
        "{{{key}: {{\"rank\": 5}}, \"pad\": \"{}\", \"traceEvents\": []}}",
        "z".repeat(2 * step)
    );
    assert_eq!(sniff_head(&gz(&text)), (true, Some(5)));
    // Not a trace: read to the end of what it holds.
    let text = format!("{{{key}: {{\"rank\": 5}}, \"runs\": [1, 2]}}");
    assert_eq!(sniff_head(&gz(&text)), (false, Some(5)));
}

#[test]
fn json_that_is_not_a_trace_is_not_a_profile() {
    assert!(sniff_head(br#"[{"ph": "X", "ts": 1}]"#).0);
    assert!(sniff_head(b" [ ]").0);
    assert!(sniff_head(br#"{"traceEvents": []}"#).0);
    assert!(!sniff_head(br#"["tpu-training", "tpu-inference"]"#).0);
    assert!(!sniff_head(br#"{"runs": [1, 2]}"#).0);
    // Records that are not events (what examples/many_hosts.rs writes beside a session).
    assert!(!sniff_head(br#"[{"host": "host000", "offset_ns": 2662463}]"#).0);
}

#[test]
fn ranks_in_file_names() {
    assert_eq!(
        rank_in_name("hta-cpu_only-rank-34.Jul_15.pt.trace.json"),
        Some(34)
    );
    assert_eq!(rank_in_name("trace_rank_3.json"), Some(3));
    assert_eq!(rank_in_name("RANK7.json"), Some(7));
    assert_eq!(rank_in_name("ranking.json"), None);
    assert_eq!(rank_in_name("worker0.json"), None);
}

#[test]
fn follows_symbolic_links_once() {
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir");
        let root = fs::canonicalize(root).expect("fixtures");
        let tmp = std::env::temp_dir().join(format!("xlens-links-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        let profile = tmp.join("logs/plugins/profile");
        fs::create_dir_all(profile.join("by_file")).expect("mkdir");
        // A session folder reached through a link, a host file through a link, a loop, and
        // a dangling link.
        symlink(
            root.join("plugins/profile/jax_mlp_small"),
            profile.join("linked_session"),
        )
        .expect("link");
        symlink(
            root.join("plugins/profile/jax_tfm_small/vm.xplane.pb.gz"),
            profile.join("by_file/worker.xplane.pb.gz"),
        )
        .expect("link");
        symlink(&tmp, profile.join("loop")).expect("link");
        symlink(tmp.join("missing"), profile.join("dangling")).expect("link");
        let sessions = discover(&tmp.join("logs")).expect("discover");
        let mut names: Vec<(String, Vec<String>)> = sessions
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    s.hosts.iter().map(|h| h.host.clone()).collect(),
                )
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                ("by_file".to_string(), vec!["worker".to_string()]),
                ("linked_session".to_string(), vec!["vm".to_string()]),
            ]
        );
        let _ = fs::remove_dir_all(&tmp);
    }
}

#[test]
fn session_names() {
    let root = Path::new("/logs");
    assert_eq!(
        session_name(root, Path::new("/logs/plugins/profile/2024_01_01")),
        "2024_01_01"
    );
    assert_eq!(
        session_name(root, Path::new("/logs/train/plugins/profile/run1")),
        "train/run1"
    );
    assert_eq!(session_name(root, Path::new("/logs/a/b")), "a/b");
    assert_eq!(session_name(root, Path::new("/logs")), "logs");
}

//! Every real sample decodes, with counts equal to those of an independent decoder
//! (`shared/tools/xplane_dump.py`, Python protobuf; its output is kept in `fixtures/expected/`).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use xlens_loader::load_host;
use xlens_model::Profile;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures_logdir() -> PathBuf {
    root().join("fixtures/logdir")
}

fn shared_samples() -> Option<PathBuf> {
    let p = root().join("../shared/samples");
    p.is_dir().then_some(p)
}

/// Compares a decoded profile with the independent decoder's description of the same file.
fn check_against_expected(p: &Profile, exp: &Value, label: &str) {
    assert_eq!(
        p.event_count() as u64,
        exp["total_events"].as_u64().unwrap(),
        "{label}: total events"
    );
    let planes = exp["planes"].as_array().unwrap();
    assert_eq!(p.planes.len(), planes.len(), "{label}: plane count");
    for (pl, ep) in p.planes.iter().zip(planes) {
        let name = p.str(pl.name);
        assert_eq!(name, ep["name"].as_str().unwrap(), "{label}: plane name");
        assert_eq!(
            pl.event_count() as u64,
            ep["n_events"].as_u64().unwrap(),
            "{label} {name}: events"
        );
        assert_eq!(
            pl.lines.len() as u64,
            ep["n_lines"].as_u64().unwrap(),
            "{label} {name}: lines"
        );
        assert_eq!(
            pl.event_metadata.len() as u64,
            ep["n_event_metadata"].as_u64().unwrap(),
            "{label} {name}: event metadata"
        );
        for (l, el) in pl.lines.iter().zip(ep["lines"].as_array().unwrap()) {
            assert_eq!(
                p.str(l.name),
                el["name"].as_str().unwrap(),
                "{label} {name}: line name"
            );
            assert_eq!(
                l.events.len() as u64,
                el["events"].as_u64().unwrap(),
                "{label} {name}: line events"
            );
        }
        // Stats: how often each stat name occurs on this plane's events.
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for l in &pl.lines {
            for i in 0..l.events.len() {
                for s in l.events.stats(i) {
                    *counts.entry(p.str(s.key).to_string()).or_default() += 1;
                }
            }
        }
        let want: BTreeMap<String, u64> = ep["event_stat_counts"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        assert_eq!(counts, want, "{label} {name}: event stat counts");
        // The most frequent event names and their counts.
        let mut names: BTreeMap<&str, u64> = BTreeMap::new();
        for l in &pl.lines {
            for i in 0..l.events.len() {
                let md = pl.metadata_of(l, i).unwrap();
                *names.entry(p.str(md.name)).or_default() += 1;
            }
        }
        for pair in ep["top_event_names"].as_array().unwrap() {
            let (n, c) = (pair[0].as_str().unwrap(), pair[1].as_u64().unwrap());
            assert_eq!(
                names.get(n).copied(),
                Some(c),
                "{label} {name}: count of `{n}`"
            );
        }
    }
    let strs = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(p.hostnames, strs(&exp["hostnames"]), "{label}: hostnames");
    assert_eq!(p.errors, strs(&exp["errors"]), "{label}: errors");
    assert_eq!(p.warnings, strs(&exp["warnings"]), "{label}: warnings");
    assert!(
        p.import_warnings.is_empty(),
        "{label}: {:?}",
        p.import_warnings
    );
}

fn check_invariants(p: &Profile, label: &str) {
    for pl in &p.planes {
        for l in &pl.lines {
            let ev = &l.events;
            for i in 1..ev.len() {
                assert!(ev.start(i - 1) <= ev.start(i), "{label}: line not sorted");
            }
            for i in 0..ev.len() {
                assert!(ev.start(i) >= 0, "{label}: event before origin");
                assert!((ev.meta(i) as usize) < pl.event_metadata.len());
            }
        }
    }
}

#[test]
fn committed_fixtures_match_the_independent_decoder() {
    let sessions = xlens_store::discover(&fixtures_logdir()).unwrap();
    assert_eq!(sessions.len(), 6, "{sessions:?}");
    for s in &sessions {
        assert_eq!(s.hosts.len(), 1);
        let h = &s.hosts[0];
        let p = load_host(h).unwrap_or_else(|e| panic!("{e}"));
        let exp: Value = serde_json::from_str(
            &std::fs::read_to_string(root().join(format!("fixtures/expected/{}.json", s.name)))
                .unwrap(),
        )
        .unwrap();
        check_against_expected(&p, &exp, &s.name);
        check_invariants(&p, &s.name);
    }
}

#[test]
fn times_are_absolute_picoseconds() {
    let f = fixtures_logdir().join("plugins/profile/jax_mlp_small/vm.xplane.pb");
    let p = xlens_loader::load_path(&f, xlens_store::Format::XSpace).unwrap();
    // The file's Task Environment says the profile ran from 1795960640061363343 ns to
    // 1795960640239793733 ns; every event lies inside that window.
    let (s, e) = p.span().unwrap();
    let start_ns = (p.origin_ps + s as i128) / 1000;
    let end_ns = (p.origin_ps + e as i128) / 1000;
    assert!(start_ns >= 1795960640061363343, "{start_ns}");
    assert!(end_ns <= 1795960640239793733, "{end_ns}");
    assert!(
        end_ns - start_ns > 100_000_000,
        "span is {} ns",
        end_ns - start_ns
    );
}

#[test]
fn shared_samples_decode() {
    let Some(samples) = shared_samples() else {
        // CI has the shared samples beside the checkout: there this must run.
        assert!(
            std::env::var_os("CI").is_none(),
            "../shared/samples not present"
        );
        eprintln!("../shared/samples not present; skipping");
        return;
    };
    // Event totals from the samples' READMEs and SOURCES.md (counted by other tools).
    let readme_totals: &[(&str, usize)] = &[
        ("capture_1s", 36_719),
        ("mlp_small", 3_842),
        ("tfm_small", 8_897),
        ("keras_cnn_small", 40_355),
        ("keras_mlp_xla_small", 22_103),
    ];
    let mut seen = 0;
    for dir in ["jax", "tf", "xprof-testdata/logdir"] {
        for s in xlens_store::discover(&samples.join(dir)).unwrap() {
            for h in &s.hosts {
                let p = load_host(h).unwrap_or_else(|e| panic!("{e}"));
                check_invariants(&p, &s.name);
                if let Some((_, n)) = readme_totals.iter().find(|(r, _)| *r == s.name) {
                    assert_eq!(p.event_count(), *n, "{}", s.name);
                }
                seen += 1;
            }
        }
    }
    assert!(seen >= 8, "only {seen} sample files found");
}

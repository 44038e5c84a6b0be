//! Every crash the fuzzer found, as a regression test: the minimized input that made xlens
//! panic, committed under `regressions/<target>/`, replayed through every path of its target
//! (the XSpace importer serially and with lines on two threads, then every tool and the trace
//! index over what it decoded; the Chrome importer and the tools; a request through the
//! server's router and the command-line parser). Each must come back with an answer or an
//! error, never a panic. Files are named after the panic site in the code before the fix
//! (`regressions/README.md` lists them).

use std::path::{Path, PathBuf};

fn dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("regressions")
        .join(target)
}

fn replay_xspace(name: &str) {
    let input = std::fs::read(dir("xspace").join(name)).expect("regression input");
    let panics = xlens_fuzz::targets::xspace::replay(&input);
    assert!(panics.is_empty(), "xspace/{name} panics: {panics:#?}");
}

macro_rules! xspace_regressions {
    ($($test:ident => $file:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                replay_xspace($file);
            }
        )*

        /// Every file in `regressions/xspace/` has its test above.
        #[test]
        fn every_xspace_regression_has_a_test() {
            let named = [$($file),*];
            for e in std::fs::read_dir(dir("xspace")).expect("regressions/xspace") {
                let name = e.expect("entry").file_name().to_string_lossy().into_owned();
                assert!(named.contains(&name.as_str()), "no test for regressions/xspace/{name}");
            }
        }
    };
}

xspace_regressions! {
    advice_device_busy_sum => "advice-device-busy-sum.pb",
    allocators_504 => "allocators-504.pb",
    allocators_574 => "allocators-574.pb",
    framework_op_stats_69_and_hlo_ops_330 => "framework_op_stats-69+hlo_ops-330.pb",
    hlo_ops_391 => "hlo_ops-391.pb",
    op_metrics_422 => "op_metrics-422.pb",
    op_metrics_539 => "op_metrics-539.pb",
    op_metrics_710 => "op_metrics-710.pb",
    op_metrics_851 => "op_metrics-851.pb",
    op_profile_198_and_roofline_348 => "op_profile-198+roofline-348.pb",
    op_profile_201 => "op_profile-201.pb",
    ops_171_and_op_metrics_412 => "ops-171+op_metrics-412.pb",
    ops_181_and_op_metrics_577 => "ops-181+op_metrics-577.pb",
    overview_186 => "overview-186.pb",
    overview_357_and_op_metrics_556 => "overview-357+op_metrics-556.pb",
    step_db_951 => "step_db-951.pb",
    step_ops_177 => "step_ops-177.pb",
    step_ops_79 => "step_ops-79.pb",
    trace_577_and_fmt_15 => "trace-577+fmt-15.pb",
    trace_1002 => "trace-1002.pb",
    trace_791 => "trace-791.pb",
    trace_845 => "trace-845.pb",
    trace_942 => "trace-942.pb",
}

/// Chrome-trace and query inputs: each replayed, without a panic and within a time limit.
#[test]
fn chrome_and_query_regressions_replay_without_panic() {
    for target in ["chrome", "query"] {
        let Ok(entries) = std::fs::read_dir(dir(target)) else {
            continue;
        };
        let files: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        if files.is_empty() {
            continue;
        }
        let mut query = (target == "query").then(|| {
            xlens_fuzz::targets::query::QueryTarget::new(&xlens_fuzz::seeds::fixtures_dir(), 1)
                .expect("server over the fixtures")
        });
        for f in files {
            let input = std::fs::read(&f).expect("regression input");
            // Some findings were hangs, not panics: each must answer within the limit.
            let (tx, rx) = std::sync::mpsc::channel();
            let mut q = query.take();
            std::thread::spawn(move || {
                let panics = match q.as_mut() {
                    Some(q) => xlens_fuzz::engine::replay(q, &input),
                    None => xlens_fuzz::targets::chrome::replay(&input),
                };
                let _ = tx.send((panics, q));
            });
            let (panics, q) = rx
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("{} did not answer within 60 s", f.display()));
            query = q;
            assert!(panics.is_empty(), "{} panics: {panics:#?}", f.display());
        }
    }
}

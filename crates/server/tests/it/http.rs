//! The server over real fixtures plus a corrupt run: the corrupt run shows its error, the others
//! keep working, and every route answers.

use std::path::{Path, PathBuf};

use crate::common;
use common::{get, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir/plugins/profile")
}

/// A log dir with two real runs and one whose file is garbage.
fn make_logdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xlens-http-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let prof = dir.join("plugins/profile");
    for run in ["jax_mlp_small", "tpu_inference", "tf_keras_cnn_small"] {
        std::fs::create_dir_all(prof.join(run)).unwrap();
        for f in std::fs::read_dir(fixtures().join(run)).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), prof.join(run).join(f.file_name())).unwrap();
        }
    }
    std::fs::create_dir_all(prof.join("broken")).unwrap();
    let good = std::fs::read(fixtures().join("jax_mlp_small/vm.xplane.pb")).unwrap();
    // Truncated in the middle of the first plane.
    std::fs::write(prof.join("broken/host1.xplane.pb"), &good[..good.len() / 3]).unwrap();
    dir
}

#[test]
fn serves_runs_tools_and_pages_and_survives_a_corrupt_run() {
    let logdir = make_logdir();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let state = xlens_server::AppState::new(logdir.clone(), "test");
    rt.spawn(xlens_server::serve_on(listener, state));

    let (code, body) = get(&addr, "/api/runs");
    assert_eq!(code, 200, "{body}");
    let runs = json(&body);
    let names: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    for n in [
        "jax_mlp_small",
        "tpu_inference",
        "tf_keras_cnn_small",
        "broken",
    ] {
        assert!(names.contains(&n), "{names:?}");
    }
    assert!(runs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "report"));

    // The corrupt run: a 200 with the error naming the file and the byte offset.
    let (code, body) = get(&addr, "/api/tool/report?run=broken");
    assert_eq!(code, 200, "{body}");
    let r = json(&body);
    let err = r["sessions"][0]["hosts"][0]["error"].as_str().unwrap();
    assert!(
        err.contains("host1.xplane.pb") && err.contains("at byte"),
        "{err}"
    );

    // Other runs still work, and again after the failure.
    for _ in 0..2 {
        let (code, body) = get(&addr, "/api/tool/report?run=tpu_inference");
        assert_eq!(code, 200);
        let r = json(&body);
        let h = &r["sessions"][0]["hosts"][0];
        assert!(h["error"].is_null(), "{h}");
        assert_eq!(h["device"]["kind"], "TPU");
        assert_eq!(h["total_events"], 26723);
    }
    let (code, body) = get(&addr, "/api/tool/report?run=jax_mlp_small&host=vm");
    assert_eq!(code, 200);
    // XProf's step table: 10 annotated steps less the first and the last.
    assert_eq!(json(&body)["sessions"][0]["hosts"][0]["steps"]["count"], 8);

    // CSV and errors for unknown things.
    let (code, body) = get(&addr, "/api/tool/report?run=jax_mlp_small&format=csv");
    assert_eq!(code, 200);
    assert!(body.contains("op_name") && body.contains("dot.2"), "{body}");
    assert_eq!(get(&addr, "/api/tool/nope?run=jax_mlp_small").0, 404);
    assert_eq!(get(&addr, "/api/tool/report?run=nope").0, 404);
    assert_eq!(
        get(&addr, "/api/tool/report?run=jax_mlp_small&host=nope").0,
        404
    );

    // HTML pages: the shell with selectors, the report, and the error box for the broken run.
    let (code, html) = get(&addr, "/?run=jax_mlp_small&tool=report");
    assert_eq!(code, 200);
    assert!(
        html.contains("<select name=\"run\">") && html.contains("dot.2"),
        "{html}"
    );
    // The input pipeline page: verdict, host input by category, every input op row (XProf's 11
    // tf.data rows and the IteratorGetNext waits it leaves out), then the steps.
    let (code, html) = get(
        &addr,
        "/?run=tf_keras_cnn_small&tool=input_pipeline_analyzer",
    );
    assert_eq!(code, 200);
    assert!(
        html.contains("Not input-bound")
            && html.contains("Input ops (12 rows, all listed)")
            && html.contains("preprocessing 120.722 ms")
            && html.contains("IteratorGetNext (waits for input)")
            && html.contains("<h3>Steps</h3>"),
        "{html}"
    );
    // The roofline page offers its steps; choosing one plots that step's ops (and says so).
    let (code, html) = get(&addr, "/?run=jax_mlp_small&tool=roofline_model");
    assert_eq!(code, 200);
    assert!(
        html.contains("<select name=\"step\"")
            && html.contains("<option value=\"3\">step 3</option>"),
        "{html}"
    );
    let (_, html) = get(&addr, "/?run=jax_mlp_small&tool=roofline_model&step=3");
    assert!(html.contains("<option value=\"3\" selected>") && html.contains("Op points of step 3"));
    let (code, body) = get(&addr, "/api/tool/roofline_model?run=jax_mlp_small&step=3");
    assert_eq!(code, 200);
    assert_eq!(json(&body)["hosts"][0]["selected_step"], "3");
    let (_, html) = get(&addr, "/?run=broken");
    assert!(html.contains("class=\"error\"") && html.contains("at byte"));
    assert_eq!(get(&addr, "/static/app.js").0, 200);
    assert_eq!(get(&addr, "/static/app.css").0, 200);
    let _ = std::fs::remove_dir_all(&logdir);
}

/// A request over the time limit is answered 503, saying which limit; one within it is not.
#[test]
fn slow_requests_are_cut_at_the_time_limit() {
    // 1 µs: anything that waits on the blocking pool (loading a profile) is over it; a static
    // file, ready at once, is not.
    let (_rt, addr) = common::serve_fixtures_with(xlens_server::Limits {
        request: std::time::Duration::from_micros(1),
        header_read: std::time::Duration::from_millis(300),
        memory_budget: 0,
    });
    let (code, body) = get(&addr, "/api/tool/overview_page?run=tpu_inference");
    assert_eq!(code, 503, "{body}");
    assert!(
        json(&body)["error"]
            .as_str()
            .is_some_and(|e| e.contains("XLENS_REQUEST_TIMEOUT_S")),
        "{body}"
    );
    assert_eq!(get(&addr, "/static/app.css").0, 200);
    // A client that sends half a request and then nothing is disconnected after the header
    // timeout (300 ms here).
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(b"GET /static/app.css HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let t0 = std::time::Instant::now();
    let mut buf = Vec::new();
    let n = s.read_to_end(&mut buf).unwrap_or(0);
    let waited = t0.elapsed();
    assert!(
        waited < std::time::Duration::from_secs(5),
        "closed after {waited:?}"
    );
    assert!(
        !String::from_utf8_lossy(&buf[..n]).contains("200 OK"),
        "no answer to half a request"
    );
}

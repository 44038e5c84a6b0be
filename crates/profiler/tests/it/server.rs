//! `start_server`: captured by `xlens capture` (emit_xspace), and writing to the repository
//! like the frameworks when the XSpace is not asked for.

use crate::common;

use std::time::Duration;
use xlens_capture::{capture_blocking, CaptureError, CaptureOptions, Source};
use xlens_proto::grpc::profiler_service_client::ProfilerServiceClient;
use xlens_proto::tensorflow::ProfileRequest;

#[test]
fn captured_on_demand() {
    let _tracer = common::one_trace_at_a_time();
    let server = xlens_profiler::start_server_on("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = server.addr.to_string();
    let dir = std::env::temp_dir().join(format!("xlens-profiler-server-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // A job that keeps training while it is captured.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let job = std::thread::spawn(move || {
        while !s2.load(std::sync::atomic::Ordering::Relaxed) {
            common::workload();
            std::thread::sleep(Duration::from_millis(1));
        }
    });

    let opts = CaptureOptions {
        logdir: dir.clone(),
        duration: Duration::from_millis(400),
        session: Some("rust".into()),
        connect_timeout: Duration::from_secs(2),
        margin: Duration::from_secs(20),
        ..Default::default()
    };
    let rep = capture_blocking(std::slice::from_ref(&addr), &opts, None).unwrap();
    let h = rep.hosts[0].as_ref().unwrap();
    assert_eq!(h.source, Source::Returned);
    let (counts, lines) = common::xlens_counts(&h.file);
    assert!(counts["train"] >= 2, "{counts:?}");
    assert!(counts["forward"] >= counts["train"]);
    assert!(lines.contains(&"loader".to_string()), "{lines:?}");
    let (name, n) = common::xlens_steps(&h.file);
    assert_eq!(name, "train");
    assert!(n >= 2);

    // A trace of the program's own blocks a capture, with the frameworks' message.
    xlens_profiler::start_trace(&dir).unwrap();
    let err = capture_blocking(std::slice::from_ref(&addr), &opts, None).unwrap_err();
    assert!(matches!(err, CaptureError::Rpc { .. }), "{err}");
    assert!(
        err.to_string().contains("Another profiling session active"),
        "{err}"
    );
    xlens_profiler::stop_trace().unwrap();

    // Without emit_xspace it writes <repository_root>/<session_id>/<host>.xplane.pb.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let root = dir.join("plugins/profile");
    let resp = rt.block_on(async {
        let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut c = ProfilerServiceClient::new(ch);
        c.profile(ProfileRequest {
            duration_ms: 200,
            repository_root: root.display().to_string(),
            session_id: "disk".into(),
            host_name: addr.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
    });
    assert!(resp.xspace.is_none());
    assert!(!resp.empty_trace);
    let file = root
        .join("disk")
        .join(format!("{}.xplane.pb", addr.replace(':', "_")));
    assert!(file.is_file(), "{}", file.display());
    assert!(common::xlens_counts(&file).0["train"] >= 1);
    // Closes that client's connection (the server's graceful stop waits for it).
    drop(rt);

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    job.join().unwrap();
    // An idle job: an empty trace.
    let err = capture_blocking(std::slice::from_ref(&addr), &opts, None).unwrap_err();
    assert!(matches!(err, CaptureError::EmptyTrace { .. }), "{err}");
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

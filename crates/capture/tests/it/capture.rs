//! Captures from an in-process fake `tensorflow.ProfilerService` (tonic) that answers like
//! `jax.profiler.start_server` does, and the capture doctor on refused and non-gRPC ports.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prost::Message;
use tonic::{Request, Response, Status};
use xlens_capture::grpc::profiler_service_server::{ProfilerService, ProfilerServiceServer};
use xlens_capture::{capture, CaptureError, CaptureOptions, Source, XPROF_MAX_EVENTS, XPROF_TOOLS};
use xlens_proto::tensorflow::profiler::XSpace;
use xlens_proto::tensorflow::{ProfileRequest, ProfileResponse};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb"
);

#[derive(Clone, Copy)]
enum Mode {
    /// Returns the XSpace when asked (current JAX/TSL).
    Emit,
    /// Ignores emit_xspace and writes `<repository_root>/<session_id>/<host>.xplane.pb` itself.
    WriteLocal,
    /// Ignores emit_xspace and says nothing (its disk is elsewhere).
    WriteElsewhere,
    /// Recorded nothing.
    Empty,
}

struct Fake {
    mode: Mode,
    seen: Arc<Mutex<Vec<ProfileRequest>>>,
}

#[tonic::async_trait]
impl ProfilerService for Fake {
    async fn profile(
        &self,
        req: Request<ProfileRequest>,
    ) -> Result<Response<ProfileResponse>, Status> {
        let req = req.into_inner();
        self.seen.lock().unwrap().push(req.clone());
        tokio::time::sleep(Duration::from_millis(req.duration_ms)).await;
        let bytes = std::fs::read(FIXTURE).unwrap();
        let mut resp = ProfileResponse::default();
        match self.mode {
            Mode::Emit => resp.xspace = Some(XSpace::decode(bytes.as_slice()).unwrap()),
            Mode::WriteLocal => {
                let dir = PathBuf::from(&req.repository_root).join(&req.session_id);
                std::fs::create_dir_all(&dir).unwrap();
                let name = req.host_name.replace(':', "_");
                std::fs::write(dir.join(format!("{name}.xplane.pb")), &bytes).unwrap();
            }
            Mode::WriteElsewhere => {}
            Mode::Empty => resp.empty_trace = true,
        }
        Ok(Response::new(resp))
    }
}

async fn start_fake(mode: Mode) -> (String, Arc<Mutex<Vec<ProfileRequest>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let svc = ProfilerServiceServer::new(Fake {
        mode,
        seen: seen.clone(),
    })
    .max_encoding_message_size(usize::MAX);
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(svc)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
            .unwrap();
    });
    (addr, seen)
}

fn opts(dir: &std::path::Path) -> CaptureOptions {
    CaptureOptions {
        logdir: dir.to_path_buf(),
        duration: Duration::from_millis(200),
        connect_timeout: Duration::from_secs(1),
        margin: Duration::from_secs(10),
        ..Default::default()
    }
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xlens-capture-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[tokio::test]
async fn writes_the_returned_xspace_and_asks_like_xprof() {
    let (addr, seen) = start_fake(Mode::Emit).await;
    let dir = tempdir("emit");
    let mut o = opts(&dir);
    o.session = Some("s1".into());
    o.python_tracer_level = 1;
    let rep = capture(std::slice::from_ref(&addr), &o, None)
        .await
        .unwrap();
    let host = rep.hosts[0].as_ref().unwrap();
    assert_eq!(host.source, Source::Returned);
    let want = dir
        .canonicalize()
        .unwrap()
        .join("plugins/profile/s1")
        .join(format!("{}.xplane.pb", addr.replace(':', "_")));
    assert_eq!(host.file, want);
    let written = XSpace::decode(std::fs::read(&want).unwrap().as_slice()).unwrap();
    let fixture = XSpace::decode(std::fs::read(FIXTURE).unwrap().as_slice()).unwrap();
    assert_eq!(written, fixture);
    assert!(host.events > 1000, "{}", host.events);

    let reqs = seen.lock().unwrap();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.duration_ms, 200);
    assert_eq!(r.max_events, XPROF_MAX_EVENTS);
    assert_eq!(r.tools, XPROF_TOOLS);
    assert!(r.emit_xspace);
    assert_eq!(r.session_id, "s1");
    assert_eq!(r.host_name, addr);
    let abs = dir.canonicalize().unwrap();
    assert_eq!(
        r.repository_root,
        abs.join("plugins/profile").display().to_string()
    );
    let po = r.opts.as_ref().unwrap();
    assert_eq!(po.version, 1);
    assert_eq!(po.host_tracer_level, 2);
    assert_eq!(po.device_tracer_level, 1);
    assert_eq!(po.python_tracer_level, 1);
    assert!(po.include_dataset_ops && po.enable_hlo_proto);
    assert_eq!(po.duration_ms, 200);
    assert_eq!(po.repository_path, abs.display().to_string());
    assert_eq!(po.start_timestamp_ns, rep.start_timestamp_ns);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn several_hosts_share_one_start_time_and_session() {
    let (a, seen_a) = start_fake(Mode::Emit).await;
    let (b, seen_b) = start_fake(Mode::Emit).await;
    let dir = tempdir("multi");
    let mut o = opts(&dir);
    o.duration = Duration::from_millis(500);
    let t0 = std::time::Instant::now();
    let rep = capture(&[a.clone(), b.clone()], &o, None).await.unwrap();
    // In parallel: well under two windows.
    assert!(
        t0.elapsed() < Duration::from_millis(950),
        "{:?}",
        t0.elapsed()
    );
    assert!(rep.hosts.iter().all(|h| h.is_ok()));
    let files: Vec<_> = std::fs::read_dir(&rep.session_dir).unwrap().collect();
    assert_eq!(files.len(), 2);
    let ra = seen_a.lock().unwrap()[0].clone();
    let rb = seen_b.lock().unwrap()[0].clone();
    assert_eq!(ra.session_id, rb.session_id);
    assert_eq!(
        ra.opts.unwrap().start_timestamp_ns,
        rb.opts.unwrap().start_timestamp_ns
    );
    assert!(rep.session_id.len() == "2026_11_29_13_59_12".len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_server_that_writes_itself() {
    let (addr, _) = start_fake(Mode::WriteLocal).await;
    let dir = tempdir("local");
    let rep = capture(std::slice::from_ref(&addr), &opts(&dir), None)
        .await
        .unwrap();
    let h = rep.hosts[0].as_ref().unwrap();
    assert_eq!(h.source, Source::WrittenByServer);
    assert!(h.file.is_file());

    let (addr, _) = start_fake(Mode::WriteElsewhere).await;
    let err = capture(std::slice::from_ref(&addr), &opts(&dir), None)
        .await
        .unwrap_err();
    assert!(matches!(err, CaptureError::ServerDisk { .. }), "{err}");
    assert_eq!(err.exit_code(), 15);
    let msg = err.to_string();
    assert!(msg.contains("wrote it to its own disk"), "{msg}");
    assert!(msg.contains("plugins/profile/"), "{msg}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn empty_trace() {
    let (addr, _) = start_fake(Mode::Empty).await;
    let dir = tempdir("empty");
    let err = capture(std::slice::from_ref(&addr), &opts(&dir), None)
        .await
        .unwrap_err();
    assert!(matches!(err, CaptureError::EmptyTrace { .. }), "{err}");
    assert_eq!(err.exit_code(), 14);
    assert!(err.to_string().contains("recorded nothing"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn doctor_refused_port() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempdir("refused");
    let addr = format!("127.0.0.1:{port}");
    let err = capture(&[addr], &opts(&dir), None).await.unwrap_err();
    assert!(matches!(err, CaptureError::Refused { .. }), "{err}");
    assert_eq!(err.exit_code(), 10);
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("nothing listens on 127.0.0.1:{port}"))
            && msg.contains(&format!("jax.profiler.start_server({port})")),
        "{msg}"
    );
    // No empty session directory is left behind.
    let sessions = dir.join("plugins/profile");
    assert_eq!(
        std::fs::read_dir(&sessions).map(|d| d.count()).unwrap_or(0),
        0
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TCP server that is not gRPC: answers like an HTTP/1 server, or accepts and says nothing.
fn non_grpc_listener(answer: Option<&'static [u8]>) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 256];
                let _ = s.read(&mut buf);
                if let Some(a) = answer {
                    let _ = s.write_all(a);
                    return;
                }
                std::thread::sleep(Duration::from_secs(5));
            });
        }
    });
    addr
}

#[tokio::test]
async fn doctor_wrong_port_http() {
    let addr = non_grpc_listener(Some(
        b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    ));
    let dir = tempdir("http");
    let err = capture(&[addr], &opts(&dir), None).await.unwrap_err();
    assert!(matches!(err, CaptureError::NotGrpc { .. }), "{err}");
    assert_eq!(err.exit_code(), 12);
    let msg = err.to_string();
    assert!(
        msg.contains("HTTP/1.1 400") && msg.contains("wrong port"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn doctor_wrong_port_silent() {
    let addr = non_grpc_listener(None);
    let dir = tempdir("silent");
    let err = capture(&[addr], &opts(&dir), None).await.unwrap_err();
    assert!(matches!(err, CaptureError::NotGrpc { .. }), "{err}");
    assert!(err.to_string().contains("sent nothing back"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn bad_address() {
    let err = capture(&["localhost".to_string()], &opts(&tempdir("bad")), None)
        .await
        .unwrap_err();
    assert_eq!(err.exit_code(), 2);
}

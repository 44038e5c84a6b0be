//! `tensorflow.ProfilerService` for Rust programs: what `jax.profiler.start_server` offers, so
//! `xlens capture` and XProf's "Capture profile" button work on them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tonic::{Request, Response, Status};
use xlens_proto::grpc::profiler_service_server::{ProfilerService, ProfilerServiceServer};
use xlens_proto::tensorflow::{ProfileRequest, ProfileResponse};

use crate::{event_count, hostname, record_for, write_xspace, ProfilerError};

/// A running profiler server. It runs until [`ServerHandle::stop`] or the end of the process
/// (dropping the handle leaves it running, as `jax.profiler.start_server` does).
pub struct ServerHandle {
    /// The bound address (the real port when 0 was asked for).
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// Stops serving and waits for the server thread to end.
    pub fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        // Keep serving: detach the thread, forget the stop channel without firing it.
        if let Some(s) = self.stop.take() {
            std::mem::forget(s);
        }
    }
}

/// Serves the profiler on every interface at `port` (like `jax.profiler.start_server(port)`).
pub fn start_server(port: u16) -> Result<ServerHandle, ProfilerError> {
    start_server_on(SocketAddr::from(([0, 0, 0, 0], port)))
}

/// Serves the profiler on `addr` (e.g. `127.0.0.1:0` for a free loopback port).
pub fn start_server_on(addr: SocketAddr) -> Result<ServerHandle, ProfilerError> {
    let io = |source| ProfilerError::Io {
        path: PathBuf::from(addr.to_string()),
        source,
    };
    let listener = std::net::TcpListener::bind(addr).map_err(io)?;
    listener.set_nonblocking(true).map_err(io)?;
    let bound = listener.local_addr().map_err(io)?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io)?;
    let thread = std::thread::Builder::new()
        .name("xlens-profiler-server".into())
        .spawn(move || {
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let svc = ProfilerServiceServer::new(Service)
                    .max_encoding_message_size(usize::MAX)
                    .max_decoding_message_size(64 << 20);
                let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
                let _ = tonic::transport::Server::builder()
                    .add_service(svc)
                    .serve_with_incoming_shutdown(incoming, async {
                        let _ = rx.await;
                    })
                    .await;
            })
        })
        .map_err(io)?;
    Ok(ServerHandle {
        addr: bound,
        stop: Some(tx),
        thread: Some(thread),
    })
}

struct Service;

#[tonic::async_trait]
impl ProfilerService for Service {
    async fn profile(
        &self,
        req: Request<ProfileRequest>,
    ) -> Result<Response<ProfileResponse>, Status> {
        let r = req.into_inner();
        let opts = r.opts.clone().unwrap_or_default();
        // A shared start time (multi-host captures): wait for it.
        if opts.start_timestamp_ns > 0 {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            if opts.start_timestamp_ns > now {
                let wait = Duration::from_nanos(opts.start_timestamp_ns - now);
                tokio::time::sleep(wait.min(Duration::from_secs(3600))).await;
            }
        }
        let ms = if r.duration_ms > 0 {
            r.duration_ms
        } else {
            opts.duration_ms
        };
        let xs = record_for(Duration::from_millis(ms))
            .await
            .map_err(|e| match e {
                ProfilerError::AlreadyTracing => {
                    Status::internal("Another profiling session active.")
                }
                e => Status::internal(e.to_string()),
            })?;
        let mut resp = ProfileResponse {
            empty_trace: event_count(&xs) == 0,
            ..Default::default()
        };
        if r.emit_xspace {
            resp.xspace = Some(xs);
        } else if !r.repository_root.is_empty() {
            // What the frameworks do: write <repository_root>/<session_id>/<host>.xplane.pb.
            let host = if r.host_name.is_empty() {
                hostname()
            } else {
                r.host_name.replace([':', '/', '\\'], "_")
            };
            let path = PathBuf::from(&r.repository_root)
                .join(&r.session_id)
                .join(format!("{host}.xplane.pb"));
            tokio::task::spawn_blocking(move || write_xspace(&path, &xs))
                .await
                .map_err(|e| Status::internal(e.to_string()))?
                .map_err(|e| Status::internal(e.to_string()))?;
        }
        Ok(Response::new(resp))
    }
}

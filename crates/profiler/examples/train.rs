//! A small Rust "training" program instrumented with xlens-profiler.
//!
//! ```sh
//! # programmatic: writes LOGDIR/plugins/profile/<session>/<host>.xplane.pb
//! cargo run --release -p xlens-profiler --example train -- --logdir /tmp/rust-logdir --steps 50
//! xlens report /tmp/rust-logdir
//!
//! # on demand: serve the profiler, then capture from another shell
//! cargo run --release -p xlens-profiler --example train -- --serve 9012 --seconds 60
//! xlens capture 127.0.0.1:9012 --logdir /tmp/rust-logdir --duration 2s
//! ```

use std::sync::mpsc;
use xlens_profiler::{step, trace};

/// A tiny two-layer perceptron trained by plain gradient descent on random data.
struct Mlp {
    w1: Vec<f32>,
    w2: Vec<f32>,
    n: usize,
}

fn matvec(w: &[f32], x: &[f32], n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (0..n).map(|j| w[i * n + j] * x[j]).sum())
        .collect()
}

impl Mlp {
    fn new(n: usize) -> Mlp {
        let mut seed = 1u32;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        Mlp {
            w1: (0..n * n).map(|_| rnd() * 0.1).collect(),
            w2: (0..n * n).map(|_| rnd() * 0.1).collect(),
            n,
        }
    }

    fn step(&mut self, x: &[f32], y: &[f32]) -> f32 {
        let n = self.n;
        let (h, out) = {
            let _f = trace("forward");
            let h: Vec<f32> = matvec(&self.w1, x, n).iter().map(|v| v.max(0.0)).collect();
            let out = matvec(&self.w2, &h, n);
            (h, out)
        };
        let err: Vec<f32> = out.iter().zip(y).map(|(o, t)| o - t).collect();
        let loss = err.iter().map(|e| e * e).sum::<f32>() / n as f32;
        let (g1, g2) = {
            let _b = trace("backward");
            let mut g2 = vec![0.0; n * n];
            let mut dh = vec![0.0; n];
            for i in 0..n {
                for j in 0..n {
                    g2[i * n + j] = err[i] * h[j];
                    dh[j] += err[i] * self.w2[i * n + j];
                }
            }
            let mut g1 = vec![0.0; n * n];
            for i in 0..n {
                if h[i] > 0.0 {
                    for j in 0..n {
                        g1[i * n + j] = dh[i] * x[j];
                    }
                }
            }
            (g1, g2)
        };
        let _o = trace("optimizer");
        for (w, g) in self.w1.iter_mut().zip(&g1) {
            *w -= 1e-3 * g;
        }
        for (w, g) in self.w2.iter_mut().zip(&g2) {
            *w -= 1e-3 * g;
        }
        loss
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let steps: i64 = arg("--steps").and_then(|s| s.parse().ok()).unwrap_or(50);
    let width: usize = arg("--width").and_then(|s| s.parse().ok()).unwrap_or(256);
    let logdir = arg("--logdir");
    let serve: Option<u16> = arg("--serve").and_then(|s| s.parse().ok());
    let seconds: f64 = arg("--seconds")
        .and_then(|s| s.parse().ok())
        .unwrap_or(30.0);

    let _server = serve.map(|port| {
        let s = xlens_profiler::start_server_on(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            .expect("starting the profiler server");
        println!("profiler server on {}", s.addr);
        s
    });
    if let Some(dir) = &logdir {
        xlens_profiler::start_trace(dir).expect("start_trace");
    }

    // A data-loader thread, on its own line in the trace.
    let (tx, rx) = mpsc::sync_channel::<(Vec<f32>, Vec<f32>)>(4);
    std::thread::Builder::new()
        .name("data_loader".into())
        .spawn(move || {
            let mut k = 0u32;
            loop {
                let batch = {
                    let _d = trace("load_batch");
                    k = k.wrapping_add(1);
                    let x: Vec<f32> = (0..width)
                        .map(|i| ((i as u32 ^ k) % 7) as f32 / 7.0)
                        .collect();
                    let y: Vec<f32> = (0..width)
                        .map(|i| ((i as u32 + k) % 3) as f32 / 3.0)
                        .collect();
                    (x, y)
                };
                if tx.send(batch).is_err() {
                    return;
                }
            }
        })
        .expect("spawning the data loader");

    let mut mlp = Mlp::new(width);
    let t_end = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds);
    let mut i = 0;
    let mut loss = 0.0;
    while if serve.is_some() {
        std::time::Instant::now() < t_end
    } else {
        i < steps
    } {
        let _s = step("train", i);
        let (x, y) = {
            let _w = trace("wait_for_data");
            rx.recv().expect("data loader stopped")
        };
        loss = mlp.step(&x, &y);
        i += 1;
    }
    println!("ran {i} steps, loss {loss:.4}");
    if logdir.is_some() {
        let file = xlens_profiler::stop_trace().expect("stop_trace");
        println!("wrote {}", file.display());
    }
}

//! Makes a many-host session out of real profiles, with known answers, for the multi-host tools
//! and their benchmarks (never committed: generated where needed).
//!
//! ```sh
//! cargo run --release -p xlens --example many_hosts -- --hosts 64 --out DIR [--offset-ms 20] \
//!     [--jitter-pct 3] [--slow 5:1.3,17:1.2] [--seed 1] [--link] [--strip-steps] FILE...
//! ```
//!
//! Host `i` (named `hostNNN`) is a copy of `FILE[i % n]` whose clock is shifted by a
//! pseudo-random offset in ±`--offset-ms` (every line's `timestamp_ns`), and whose events are
//! stretched by a factor in [1, 1 + `--jitter-pct`%], or by the factor `--slow` gives it (a
//! straggler): every event's start within its line and its duration are multiplied. What was
//! done to each host is written to `DIR.truth.json` (beside the folder) (`host`, `source`, `offset_ns`, `stretch`).
//! `--link` hard-links the files instead (no offsets, no stretch): many hosts for the cost of
//! one file on disk. `--strip-steps` removes the step annotations (every event with a `step_num` stat), as
//! in a profile of a program that marks no steps. A `FILE` may be gzipped (`.xplane.pb.gz`).

use std::collections::HashMap;
use std::path::PathBuf;

use xlens_proto::prost::Message;
use xlens_proto::tensorflow::profiler::{x_event::Data, XSpace};

struct Args {
    hosts: usize,
    out: PathBuf,
    offset_ms: f64,
    jitter_pct: f64,
    slow: HashMap<usize, f64>,
    seed: u64,
    link: bool,
    strip_steps: bool,
    files: Vec<PathBuf>,
}

fn usage() -> ! {
    eprintln!("usage: many_hosts --hosts N --out DIR [--offset-ms 20] [--jitter-pct 3] [--slow I:F,...] [--seed 1] [--link] [--strip-steps] FILE...");
    std::process::exit(2)
}

fn parse() -> Args {
    let mut a = Args {
        hosts: 0,
        out: PathBuf::new(),
        offset_ms: 20.0,
        jitter_pct: 3.0,
        slow: HashMap::new(),
        seed: 1,
        link: false,
        strip_steps: false,
        files: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage());
        match x.as_str() {
            "--hosts" => a.hosts = val().parse().unwrap_or_else(|_| usage()),
            "--out" => a.out = PathBuf::from(val()),
            "--offset-ms" => a.offset_ms = val().parse().unwrap_or_else(|_| usage()),
            "--jitter-pct" => a.jitter_pct = val().parse().unwrap_or_else(|_| usage()),
            "--seed" => a.seed = val().parse().unwrap_or_else(|_| usage()),
            "--slow" => {
                for part in val().split(',') {
                    let (i, f) = part.split_once(':').unwrap_or_else(|| usage());
                    a.slow.insert(
                        i.parse().unwrap_or_else(|_| usage()),
                        f.parse().unwrap_or_else(|_| usage()),
                    );
                }
            }
            "--link" => a.link = true,
            "--strip-steps" => a.strip_steps = true,
            f if !f.starts_with("--") => a.files.push(PathBuf::from(f)),
            _ => usage(),
        }
    }
    if a.hosts == 0 || a.files.is_empty() || a.out.as_os_str().is_empty() {
        usage();
    }
    a
}

/// A small deterministic generator (SplitMix64): the same seed gives the same session.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn main() {
    let a = parse();
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        eprintln!("cannot create {}: {e}", a.out.display());
        std::process::exit(1);
    }
    let mut rng = Rng(a.seed);
    let mut truth = Vec::new();
    let mut decoded: HashMap<usize, XSpace> = HashMap::new();
    for i in 0..a.hosts {
        let k = i % a.files.len();
        let src = &a.files[k];
        let host = format!("host{i:03}");
        let dst = a.out.join(format!("{host}.xplane.pb"));
        let _ = std::fs::remove_file(&dst);
        if a.link {
            if let Err(e) = std::fs::hard_link(src, &dst) {
                eprintln!("cannot link {} to {}: {e}", src.display(), dst.display());
                std::process::exit(1);
            }
            truth.push(
                serde_json::json!({"host": host, "source": src, "offset_ns": 0, "stretch": 1.0}),
            );
            continue;
        }
        let offset_ns = ((rng.unit() * 2.0 - 1.0) * a.offset_ms * 1e6).round() as i64;
        let stretch = match a.slow.get(&i) {
            Some(f) => *f,
            None => 1.0 + rng.unit() * a.jitter_pct / 100.0,
        };
        let space = decoded.entry(k).or_insert_with(|| {
            let bytes =
                xlens_store::read_path(src, xlens_store::Format::XSpace).unwrap_or_else(|e| {
                    eprintln!("cannot read {}: {e}", src.display());
                    std::process::exit(1)
                });
            XSpace::decode(bytes.bytes()).unwrap_or_else(|e| {
                eprintln!("{} is not an XSpace: {e}", src.display());
                std::process::exit(1)
            })
        });
        let mut s = space.clone();
        if a.strip_steps {
            for plane in &mut s.planes {
                let step: Vec<i64> = plane
                    .stat_metadata
                    .iter()
                    .filter(|(_, m)| m.name == "step_num")
                    .map(|(id, _)| *id)
                    .collect();
                for line in &mut plane.lines {
                    line.events
                        .retain(|ev| !ev.stats.iter().any(|st| step.contains(&st.metadata_id)));
                }
            }
        }
        for plane in &mut s.planes {
            for line in &mut plane.lines {
                line.timestamp_ns = line.timestamp_ns.saturating_add(offset_ns);
                line.duration_ps = (line.duration_ps as f64 * stretch) as i64;
                for ev in &mut line.events {
                    if let Some(Data::OffsetPs(o)) = &mut ev.data {
                        *o = (*o as f64 * stretch) as i64;
                    }
                    ev.duration_ps = (ev.duration_ps as f64 * stretch) as i64;
                }
            }
        }
        if let Err(e) = std::fs::write(&dst, s.encode_to_vec()) {
            eprintln!("cannot write {}: {e}", dst.display());
            std::process::exit(1);
        }
        truth.push(serde_json::json!({"host": host, "source": src, "offset_ns": offset_ns, "stretch": stretch}));
    }
    // Beside the session folder, not in it (a JSON file there would be read as a trace).
    let t = PathBuf::from(format!("{}.truth.json", a.out.display()));
    let text = serde_json::to_string_pretty(&truth).unwrap_or_default();
    if let Err(e) = std::fs::write(&t, text) {
        eprintln!("cannot write {}: {e}", t.display());
        std::process::exit(1);
    }
    eprintln!("{} hosts in {}", a.hosts, a.out.display());
}

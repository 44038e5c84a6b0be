//! Reads each trace (gzip inflated beforehand, not timed) and times, in this process, taking
//! turns: xlens's import (its JSON reader and the model built from it, on every core) against
//! parsing alone with serde_json and sonic-rs into borrowed event structs holding what the
//! importer reads (ph, name, cat, pid, tid, ts, dur, id, args kept raw), and with simd-json into
//! its borrowed tree of the whole file. A crate that
//! only parses in more time than xlens takes to parse and build its model would not pay.

use serde::Deserialize;
use std::borrow::Cow;
use std::io::Read;
use std::time::Instant;

macro_rules! trace_types {
    ($m:ident, $raw:ty) => {
        mod $m {
            use super::*;
            #[derive(Deserialize)]
            pub struct Trace<'a> {
                #[serde(borrow, rename = "traceEvents")]
                pub events: Vec<Event<'a>>,
            }
            #[derive(Deserialize)]
            #[allow(dead_code)]
            pub struct Event<'a> {
                #[serde(borrow)]
                pub ph: Option<Cow<'a, str>>,
                #[serde(borrow)]
                pub name: Option<Cow<'a, str>>,
                #[serde(borrow)]
                pub cat: Option<Cow<'a, str>>,
                #[serde(borrow)]
                pub pid: Option<$raw>,
                #[serde(borrow)]
                pub tid: Option<$raw>,
                #[serde(borrow)]
                pub ts: Option<$raw>,
                #[serde(borrow)]
                pub dur: Option<$raw>,
                #[serde(borrow)]
                pub id: Option<$raw>,
                #[serde(borrow)]
                pub args: Option<$raw>,
            }
        }
    };
}
trace_types!(sj, &'a serde_json::value::RawValue);
trace_types!(sonic, sonic_rs::LazyValue<'a>);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(7);
    println!(
        "{:<58} {:>8} {:>9} {:>11} {:>10} {:>10}",
        "trace", "MB", "xlens", "serde_json", "sonic-rs", "simd-json"
    );
    for path in std::env::args().skip(1) {
        let raw = std::fs::read(&path).expect("read");
        let mut text = Vec::new();
        if raw.starts_with(&[0x1f, 0x8b]) {
            flate2::read::MultiGzDecoder::new(&raw[..])
                .read_to_end(&mut text)
                .expect("gunzip");
        } else {
            text = raw;
        }
        let mut t = [vec![], vec![], vec![], vec![]];
        let mut counts = [0usize; 4];
        for _ in 0..reps {
            let s = Instant::now();
            let p = xlens_chrome::decode(&text).expect("xlens");
            counts[0] = p.event_count();
            drop(p);
            t[0].push(s.elapsed().as_secs_f64());

            let s = Instant::now();
            let tr: sj::Trace = serde_json::from_slice(&text).expect("serde_json");
            counts[1] = tr.events.len();
            drop(tr);
            t[1].push(s.elapsed().as_secs_f64());

            let s = Instant::now();
            let tr: sonic::Trace = sonic_rs::from_slice(&text).expect("sonic-rs");
            counts[2] = tr.events.len();
            drop(tr);
            t[2].push(s.elapsed().as_secs_f64());

            // simd-json parses in place (a copy per run, counted) into its borrowed tree.
            let s = Instant::now();
            let mut copy = text.clone();
            let v = simd_json::to_borrowed_value(&mut copy).expect("simd-json");
            counts[3] = simd_json::prelude::ValueObjectAccess::get(&v, "traceEvents")
                .and_then(simd_json::prelude::ValueAsArray::as_array)
                .map_or(0, |a| a.len());
            drop(v);
            t[3].push(s.elapsed().as_secs_f64());
        }
        let name = std::path::Path::new(&path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let m: Vec<f64> = t.iter().map(|v| median(v.clone()) * 1e3).collect();
        println!(
            "{:<58} {:>8.1} {:>7.1}ms {:>9.1}ms {:>8.1}ms {:>8.1}ms   events: model {}, parsed {}",
            name,
            text.len() as f64 / 1e6,
            m[0],
            m[1],
            m[2],
            m[3],
            counts[0],
            counts[1]
        );
    }
}

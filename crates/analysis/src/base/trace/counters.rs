//! Counter tracks: instant events carrying numeric stats, and each allocator's memory in use,
//! as series drawn at the viewport's resolution.

use super::*;

/// Counter series of one host: (1) lines whose events are all instants (zero duration) carrying
/// numeric stats — one series per stat; (2) each allocator's memory in use
/// (`bytes_allocated` + `bytes_reserved`) from host `MemoryAllocation` / `MemoryDeallocation`
/// events.
pub(super) fn counter_tracks(p: &Profile, offset: i64, host_label: &str, out: &mut Vec<Counter>) {
    let group = |plane: &Plane| {
        if host_label.is_empty() {
            p.str(plane.name).to_string()
        } else {
            format!("{host_label} {}", p.str(plane.name))
        }
    };
    for plane in &p.planes {
        for line in &plane.lines {
            let ev = &line.events;
            if ev.is_empty() || ev.durations().iter().any(|&d| d != 0) {
                continue;
            }
            let mut series: Vec<(xlens_model::StrId, Vec<i64>, Vec<f64>)> = Vec::new();
            for i in 0..ev.len() {
                for st in ev.stats(i) {
                    let Some(v) = st.value.as_f64() else { continue };
                    let k = match series.iter().position(|x| x.0 == st.key) {
                        Some(k) => k,
                        None => {
                            series.push((st.key, Vec::new(), Vec::new()));
                            series.len() - 1
                        }
                    };
                    series[k].1.push(ev.start(i) + offset);
                    series[k].2.push(v);
                }
            }
            for (key, times, values) in series {
                out.push(Counter {
                    id: 0,
                    group: group(plane),
                    name: format!("{} · {}", p.str(line.name), p.str(key)),
                    times,
                    values,
                });
            }
        }
    }
    let (Some(alloc), Some(dealloc), Some(bytes)) = (
        p.key("MemoryAllocation"),
        p.key("MemoryDeallocation"),
        p.key("bytes_allocated"),
    ) else {
        return;
    };
    let reserved = p.key("bytes_reserved");
    // Which allocator: the last of these stats on the event (as the memory profile does).
    let ids = [
        p.key("index_on_host"),
        p.key("device_ordinal"),
        p.key("allocator_name"),
    ];
    for plane in &p.planes {
        if !p.str(plane.name).starts_with("/host:") {
            continue;
        }
        let mut per: Vec<(String, Vec<(i64, f64)>)> = Vec::new();
        for line in &plane.lines {
            let ev = &line.events;
            for i in 0..ev.len() {
                let Some(md) = plane.metadata_of(line, i) else {
                    continue;
                };
                if md.name != alloc && md.name != dealloc {
                    continue;
                }
                let stats = ev.stats(i);
                let Some(b) = stats.get(bytes).and_then(|v| v.as_f64()) else {
                    continue;
                };
                let r = reserved
                    .and_then(|k| stats.get(k))
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0);
                let name = stats
                    .iter()
                    .filter(|st| ids.contains(&Some(st.key)))
                    .last()
                    .map(|st| st.value.display(&p.strings))
                    .unwrap_or_else(|| "allocator".to_string());
                let k = match per.iter().position(|x| x.0 == name) {
                    Some(k) => k,
                    None => {
                        per.push((name, Vec::new()));
                        per.len() - 1
                    }
                };
                per[k].1.push((ev.start(i) + offset, b + r));
            }
        }
        for (name, mut pts) in per {
            pts.sort_by_key(|x| x.0);
            out.push(Counter {
                id: 0,
                group: group(plane),
                name: format!("memory in use · {name}"),
                times: pts.iter().map(|x| x.0).collect(),
                values: pts.iter().map(|x| x.1).collect(),
            });
        }
    }
}

/// The points of a counter to draw in a window: per pixel the first, minimum, maximum and last
/// value (so spikes survive), plus the value in force at the window's start. Bounded by 4 × width.
pub(super) fn counter_points(
    c: &Counter,
    start: i64,
    end: i64,
    ps_per_px: f64,
) -> (Vec<i64>, Vec<f64>) {
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let lo = c.times.partition_point(|&t| t < start);
    if lo > 0 {
        ts.push(c.times[lo - 1]);
        vs.push(c.values[lo - 1]);
    }
    let hi = c.times.partition_point(|&t| t <= end);
    let mut k = lo;
    while k < hi {
        let px = ((c.times[k] - start) as f64 / ps_per_px).floor();
        let mut e = k + 1;
        while e < hi && ((c.times[e] - start) as f64 / ps_per_px).floor() == px {
            e += 1;
        }
        if e - k <= 4 {
            ts.extend_from_slice(&c.times[k..e]);
            vs.extend_from_slice(&c.values[k..e]);
        } else {
            let seg = &c.values[k..e];
            let (mut imin, mut imax) = (0, 0);
            for (j, v) in seg.iter().enumerate() {
                if *v < seg[imin] {
                    imin = j;
                }
                if *v > seg[imax] {
                    imax = j;
                }
            }
            let mut pick = [0, imin.min(imax), imin.max(imax), e - k - 1];
            pick.sort_unstable();
            let mut last = usize::MAX;
            for j in pick {
                if j != last {
                    ts.push(c.times[k + j]);
                    vs.push(c.values[k + j]);
                    last = j;
                }
            }
        }
        k = e;
    }
    (ts, vs)
}

//! Framework ops (TensorFlow ops and the like): on the host, XProf's framework-op self times;
//! on a device, the op metrics grouped by the framework op that provenance names.

use super::*;

/// Device-side framework ops: device ops aggregated by framework op (XProf: TF op, or the HLO op
/// itself with type `Unknown`). On CPU-only profiles whose ops are XLA ops on host threads these
/// are `Host` rows marked `via_xla`; when the op source is host TF ops there are none (they are
/// the host framework ops already).
pub fn device_framework_ops(db: &OpMetricsDb) -> Vec<FrameworkOp> {
    let (side, via_xla) = match db.source {
        Some(OpSource::DeviceXlaOps) | Some(OpSource::GpuStreams) => ("Device", false),
        Some(OpSource::HostXlaOps) => ("Host", true),
        _ => return Vec::new(),
    };
    let mut agg: HashMap<(String, String), FrameworkOp> = HashMap::new();
    for o in &db.ops {
        let name = o.framework_op.clone().unwrap_or_else(|| o.name.clone());
        let e = agg
            .entry((o.framework_type.clone(), name.clone()))
            .or_insert_with(|| FrameworkOp {
                via_xla,
                ..FrameworkOp::empty(side, &o.framework_type, &name)
            });
        e.occurrences += o.occurrences;
        e.total_time_ps = e.total_time_ps.saturating_add(o.total_time_ps);
        e.self_time_ps = e.self_time_ps.saturating_add(o.self_time_ps);
        e.flops += o.flops;
        e.bytes_accessed += o.bytes_accessed;
    }
    agg.into_values().collect()
}

/// Host-side framework ops on `/host:CPU` threads, and the host IDLE time (per thread: first op
/// start to last op end minus op self time, summed).
/// The host's TensorFlow ops (not the XLA ops listed under them, nor IDLE) as op times, named
/// `name:Type` as their events are.
pub fn framework_op_times(ops: &[FrameworkOp]) -> crate::base::ops::events::OpTimes {
    let v: Vec<crate::base::ops::events::OpTime> = ops
        .iter()
        .filter(|o| o.host_or_device == "Host" && !o.via_xla && o.op_type != "IDLE")
        .map(|o| crate::base::ops::events::OpTime {
            name: if o.op_type.is_empty() || o.op_type == "Dataset" {
                o.name.clone()
            } else {
                format!("{}:{}", o.name, o.op_type)
            },
            long_name: None,
            module: None,
            occurrences: o.occurrences,
            total_time_ps: o.total_time_ps,
            self_time_ps: o.self_time_ps,
        })
        .collect();
    crate::base::ops::events::OpTimes::of(Some(OpSource::HostFrameworkOps), v)
}

pub fn host_framework_ops(p: &Profile) -> (Vec<FrameworkOp>, i64) {
    if let Some(torch) = crate::base::pytorch::torch_ops::torch_host_ops(p) {
        return torch;
    }
    // Ops by (type, name) as interned-or-not strings: metadata-named ops borrow the metadata
    // name, `tf_op`-stat ops the stat value.
    let mut agg: HashMap<(&str, &str), FrameworkOp> = HashMap::new();
    let mut idle = 0i64;
    let tf_op_key = p.key("tf_op");
    for plane in p.planes.iter().filter(|pl| p.str(pl.name) == "/host:CPU") {
        let is_op: Vec<Option<(&str, &str)>> = plane
            .event_metadata
            .iter()
            .map(|m| parse_tf_op(p.str(m.name)))
            .collect();
        let any_op = is_op.iter().any(|x| x.is_some());
        for line in &plane.lines {
            let ev = &line.events;
            // Neither op names nor `tf_op` stats here (JAX and PyTorch host threads).
            if !any_op && !tf_op_key.is_some_and(|k| ev.may_have_stat(k)) {
                continue;
            }
            // XProf's TF activities: a begin and an end for every event whose name is a TF op
            // and for every event with a non-empty `tf_op` stat (often instant events such as
            // memory allocations: zero-length, they only bound the line's span).
            // (time, activity id, is_end, type, name, from a `tf_op` stat)
            let mut acts: Vec<(i64, u32, bool, &str, &str, bool)> = Vec::new();
            for i in 0..ev.len() {
                let (s, e) = (ev.start(i), ev.end(i));
                if let Some((ty, name)) = is_op.get(ev.meta(i) as usize).copied().flatten() {
                    let id = acts.len() as u32;
                    acts.push((s, id, false, ty, name, false));
                    acts.push((e, id, true, ty, name, false));
                }
                let stat = tf_op_key
                    .and_then(|k| ev.stats(i).get(k))
                    .and_then(|v| v.as_str_id())
                    .map(|id| p.str(id))
                    .filter(|v| !v.is_empty());
                if let Some(full) = stat {
                    let (ty, name) = parse_tf_op(full).unwrap_or(("Unknown", full));
                    let id = acts.len() as u32;
                    acts.push((s, id, false, ty, name, true));
                    acts.push((e, id, true, ty, name, true));
                }
            }
            if acts.is_empty() {
                continue;
            }
            acts.sort_by_key(|a| a.0);
            // Stack of (activity id, start, children time); an end pops down to its begin (ops
            // left open above it are dropped, as XProf does with overlapping annotations).
            let mut stack: Vec<(u32, i64, i64)> = Vec::new();
            let mut line_self = 0i64;
            for &(t, id, is_end, ty, name, from_stat) in &acts {
                if !is_end {
                    stack.push((id, t, 0));
                    continue;
                }
                let mut found = None;
                while let Some(top) = stack.pop() {
                    if top.0 == id {
                        found = Some(top);
                        break;
                    }
                }
                let Some((_, start, children)) = found else {
                    continue;
                };
                let dur = t.saturating_sub(start);
                let self_ps = dur.saturating_sub(children).max(0);
                if let Some(parent) = stack.last_mut() {
                    parent.2 = parent.2.saturating_add(dur);
                }
                line_self = line_self.saturating_add(self_ps);
                if from_stat && dur == 0 {
                    // An instant event tagged with its op (a memory allocation, say): it bounds
                    // the line's span, as in XProf, but is not listed as an op.
                    continue;
                }
                let e = agg
                    .entry((ty, name))
                    .or_insert_with(|| FrameworkOp::empty("Host", ty, name));
                e.occurrences += 1;
                e.total_time_ps = e.total_time_ps.saturating_add(dur);
                e.self_time_ps = e.self_time_ps.saturating_add(self_ps);
            }
            // IDLE: the line's first to last activity not covered by op self time.
            let span = acts
                .last()
                .map_or(0, |a| a.0)
                .saturating_sub(acts.first().map_or(0, |a| a.0));
            idle = idle.saturating_add(span.saturating_sub(line_self).max(0));
        }
    }
    // Metadata of the same name in different planes: merge by (type, name).
    let mut merged: HashMap<(String, String), FrameworkOp> = HashMap::new();
    for o in agg.into_values() {
        match merged.get_mut(&(o.op_type.clone(), o.name.clone())) {
            Some(m) => {
                m.occurrences += o.occurrences;
                m.total_time_ps += o.total_time_ps;
                m.self_time_ps += o.self_time_ps;
            }
            None => {
                merged.insert((o.op_type.clone(), o.name.clone()), o);
            }
        }
    }
    let mut ops: Vec<FrameworkOp> = merged.into_values().collect();
    ops.sort_by(|a, b| {
        b.self_time_ps
            .cmp(&a.self_time_ps)
            .then_with(|| a.op_type.cmp(&b.op_type))
            .then_with(|| a.name.cmp(&b.name))
    });
    (ops, idle)
}

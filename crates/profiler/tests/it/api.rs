//! start_trace / trace / step / stop_trace, read back by xlens.

use crate::common;

use prost::Message;
use xlens_proto::tensorflow::profiler::{x_stat, XSpace};

#[test]
fn a_trace_reads_back_with_its_spans_threads_and_steps() {
    let _tracer = common::one_trace_at_a_time();
    let dir = std::env::temp_dir().join(format!("xlens-profiler-api-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // Nothing is recorded outside a trace, and stop without start is an error.
    drop(xlens_profiler::trace("before"));
    assert!(matches!(
        xlens_profiler::stop_trace(),
        Err(xlens_profiler::ProfilerError::NotTracing)
    ));

    xlens_profiler::start_trace(&dir).unwrap();
    assert!(xlens_profiler::is_tracing());
    assert!(matches!(
        xlens_profiler::start_trace(&dir),
        Err(xlens_profiler::ProfilerError::AlreadyTracing)
    ));
    let loads = common::workload();
    let file = xlens_profiler::stop_trace().unwrap();
    assert!(!xlens_profiler::is_tracing());
    drop(xlens_profiler::trace("after"));

    // <logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb
    let rel = file.strip_prefix(&dir).unwrap();
    let parts: Vec<_> = rel
        .iter()
        .map(|s| s.to_string_lossy().to_string())
        .collect();
    assert_eq!(parts[0], "plugins");
    assert_eq!(parts[1], "profile");
    assert_eq!(parts[2].len(), "2026_11_29_13_59_12".len());
    assert!(parts[3].ends_with(".xplane.pb"));

    let (counts, lines) = common::xlens_counts(&file);
    let n = common::STEPS as usize;
    assert_eq!(counts.get("train"), Some(&n));
    assert_eq!(counts.get("forward"), Some(&n));
    assert_eq!(counts.get("backward"), Some(&n));
    assert_eq!(counts.get("load"), Some(&(loads as usize)));
    assert_eq!(counts.len(), 4, "{counts:?}");
    assert!(lines.contains(&"loader".to_string()), "{lines:?}");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(common::xlens_steps(&file), ("train".to_string(), n));

    // The raw XSpace: metadata interned once per name, step stats like StepTraceAnnotation,
    // a Task Environment plane with the start and stop times.
    let xs = XSpace::decode(std::fs::read(&file).unwrap().as_slice()).unwrap();
    let host = xs.planes.iter().find(|p| p.name == "/host:CPU").unwrap();
    assert_eq!(host.event_metadata.len(), 4);
    let stat_name = |id: i64| host.stat_metadata[&id].name.clone();
    let train_id = host
        .event_metadata
        .values()
        .find(|m| m.name == "train")
        .unwrap()
        .id;
    let mut step_nums = Vec::new();
    for line in &host.lines {
        for e in line.events.iter().filter(|e| e.metadata_id == train_id) {
            let mut names: Vec<String> = e.stats.iter().map(|s| stat_name(s.metadata_id)).collect();
            names.sort();
            assert_eq!(names, ["_r", "step_num"]);
            for s in &e.stats {
                if stat_name(s.metadata_id) == "step_num" {
                    if let Some(x_stat::Value::Int64Value(v)) = s.value {
                        step_nums.push(v);
                    }
                }
            }
        }
    }
    assert_eq!(step_nums, (0..common::STEPS).collect::<Vec<_>>());
    let env = xs
        .planes
        .iter()
        .find(|p| p.name == "Task Environment")
        .unwrap();
    let times: Vec<u64> = env
        .stats
        .iter()
        .filter_map(|s| match s.value {
            Some(x_stat::Value::Uint64Value(v)) => Some(v),
            _ => None,
        })
        .collect();
    assert_eq!(times.len(), 2);
    assert!(times[0] < times[1] && times[0] > 1_600_000_000_000_000_000);

    // Spans nest: forward and backward inside their step, on the same line.
    let p = xlens_loader::load_path(&file, xlens_store::Format::XSpace).unwrap();
    let plane = p.plane("/host:CPU").unwrap();
    let main = plane
        .lines
        .iter()
        .find(|l| p.str(l.name) != "loader")
        .unwrap();
    let depth_of = |name: &str| {
        (0..main.events.len())
            .find(|&i| p.str(plane.metadata_of(main, i).unwrap().name) == name)
            .map(|i| main.events.depths()[i])
    };
    assert_eq!(depth_of("train"), Some(0));
    assert_eq!(depth_of("forward"), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

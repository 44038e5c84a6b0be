use super::*;

#[test]
fn tf_op_names() {
    assert_eq!(
        parse_tf_op("a/b/MatMul:MatMul"),
        Some(("MatMul", "a/b/MatMul"))
    );
    assert_eq!(parse_tf_op("n/_1:_HostRecv"), Some(("_HostRecv", "n/_1")));
    assert_eq!(
        parse_tf_op("Iterator::Root::Prefetch"),
        Some(("Dataset", "Iterator::Root::Prefetch"))
    );
    assert_eq!(
        parse_tf_op("MemcpyHToD"),
        Some(("MemcpyHToD", "MemcpyHToD"))
    );
    assert_eq!(parse_tf_op("MemcpyH2D"), None);
    assert_eq!(parse_tf_op("train"), None);
    assert_eq!(parse_tf_op("jit_f:lowercase"), None);
    assert_eq!(parse_tf_op("ThreadpoolListener::Record"), None);
    assert_eq!(
        framework_of("jit(f)/jit(main)/add"),
        ("add".to_string(), "jit(f)/jit(main)/add".to_string())
    );
}

#[test]
fn the_result_does_not_depend_on_who_takes_which_line() {
    let p = crate::jax_fixture();
    let json = |db: &OpMetricsDb| serde_json::to_string(db).expect("json");
    // Everything on one thread, in line order of work.
    let alone = OpMetricsJob::new(&p).finish();
    assert!(alone.ops.len() > 10, "{} ops", alone.ops.len());
    // Two threads taking lines from the queue.
    let job = OpMetricsJob::new(&p);
    assert!(job.lines.len() > 1);
    crate::base::par::join(|| job.help(), || job.help());
    assert_eq!(json(&job.finish()), json(&alone));
    // The lines taken in the opposite order.
    let mut job = OpMetricsJob::new(&p);
    job.order.reverse();
    assert_eq!(json(&job.finish()), json(&alone));
}

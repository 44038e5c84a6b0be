//! A summary written as Parquet and read back is the same summary, field for field, on real
//! profiles of each kind (JAX CPU, TF with XLA, TPU, GPU); a file of the wrong shape is refused
//! with the table and what is wrong.

use std::sync::Arc;
use xlens_analysis::base::context::Analysis;
use xlens_analysis::base::hosts::summary::HostSummary;

#[test]
fn summaries_survive_parquet() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir");
    let sessions = xlens_store::discover(&root).unwrap();
    let mut checked = 0;
    for s in &sessions {
        for h in &s.hosts {
            let p = xlens_loader::load_host(h).unwrap();
            let a = Analysis::new(Arc::new(p));
            let summary = HostSummary::of(&s.name, h, &a);
            let files = xlens_tables::to_parquet(&summary).unwrap();
            let back = xlens_tables::from_parquet(|t| {
                Ok(files.iter().find(|f| f.0 == t).unwrap().1.clone())
            })
            .unwrap();
            // Field by field, so that a failure shows the part that differs.
            let what = h.path.display();
            assert_eq!(back.steps, summary.steps, "{what}");
            assert_eq!(back.ops, summary.ops, "{what}");
            assert_eq!(back.modules, summary.modules, "{what}");
            assert_eq!(back, summary, "{what}");
            checked += 1;
        }
    }
    assert!(checked >= 6, "{checked} fixtures");
}

#[test]
fn a_table_of_the_wrong_shape_is_named() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/logdir/plugins/profile/jax_mlp_small");
    let s = &xlens_store::discover(&root).unwrap()[0];
    let a = Analysis::new(Arc::new(xlens_loader::load_host(&s.hosts[0]).unwrap()));
    let files = xlens_tables::to_parquet(&HostSummary::of(&s.name, &s.hosts[0], &a)).unwrap();
    // The steps table where the ops table should be.
    let err = xlens_tables::from_parquet(|t| {
        let want = if t == "ops" { "steps" } else { t };
        Ok(files.iter().find(|f| f.0 == want).unwrap().1.clone())
    })
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("table `ops`: columns"), "{err}");
    let err = xlens_tables::from_parquet(|_| Ok(b"PAR1 not parquet".to_vec()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("Parquet"), "{err}");
}

//! The memory budget: with a budget smaller than what all the fixture runs need together, every
//! run opened in turn (twice) answers the same both times, files are evicted and loaded again,
//! and resident memory stays within the budget plus a stated slack.

use crate::common;
use common::{get, json};

#[test]
fn runs_are_evicted_and_reloaded_within_the_budget() {
    if !common::alone("memory_budget::runs_are_evicted_and_reloaded_within_the_budget") {
        return;
    }
    let baseline = xlens_server::cache::resident_bytes();
    assert!(baseline > 0, "resident memory is readable here");
    // Room for a few fixture runs (all six take about 60 MB resident with their trace indexes)
    // above what the process holds now, not for all of them; the slack is one large run over.
    let budget = baseline + (40 << 20);
    let slack = 40 << 20;
    let (_rt, addr) = common::serve_fixtures_with(xlens_server::Limits {
        memory_budget: budget,
        ..Default::default()
    });

    let (_, runs) = get(&addr, "/api/runs");
    let names: Vec<String> = json(&runs)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.len() >= 6, "{names:?}");
    let mut first = Vec::new();
    let mut peak = 0;
    for pass in 0..2 {
        for (i, run) in names.iter().enumerate() {
            let (code, body) = get(&addr, &format!("/api/tool/overview_page?run={run}"));
            assert_eq!(code, 200, "{run}: {body}");
            let (_, trace) = get(&addr, &format!("/api/trace/viewport?run={run}&width=500"));
            let answer = (body, trace);
            if pass == 0 {
                first.push(answer);
            } else {
                assert!(
                    answer == first[i],
                    "{run} answers the same after being reloaded"
                );
            }
            let (_, status) = get(&addr, "/api/status");
            let st = json(&status);
            peak = peak.max(st["resident_bytes"].as_u64().unwrap());
        }
    }
    let (_, status) = get(&addr, "/api/status");
    let st = json(&status);
    eprintln!("baseline {baseline}, budget {budget}, peak {peak}: {st}");
    assert_eq!(st["budget_bytes"].as_u64(), Some(budget));
    assert!(st["evictions"].as_u64().unwrap() > 0, "{st}");
    assert!(
        st["loads"].as_u64().unwrap() > names.len() as u64,
        "evicted files were loaded again: {st}"
    );
    assert!(
        st["loaded_files"].as_u64().unwrap() < names.len() as u64,
        "not everything stays loaded: {st}"
    );
    assert!(
        peak <= budget + slack,
        "resident {peak} > budget {budget} + slack {slack}"
    );
}

//! Tools that read the HLO modules alone (`READS` = `Reads::Metadata`: the planes without their
//! lines) or the device planes alone (`Reads::DevicePlanes`) answer as from a whole read, on
//! every fixture and sample session.

use crate::common::{open_run, open_run_for, root, run_tool};
use xlens_analysis::tools::{find, TOOLS};
use xlens_loader::Reads;

#[test]
fn a_read_without_lines_answers_as_a_whole_read() {
    let readers: Vec<&str> = TOOLS
        .iter()
        .map(|t| t.info())
        .filter(|i| i.reads == Reads::Metadata)
        .map(|i| i.name)
        .collect();
    assert_eq!(readers, ["peak_allocations", "hlo_modules"]);
    let device_readers: Vec<&str> = TOOLS
        .iter()
        .map(|t| t.info())
        .filter(|i| i.reads == Reads::DevicePlanes)
        .map(|i| i.name)
        .collect();
    assert_eq!(device_readers, ["async_overlap"]);
    let mut dirs = vec![root().join("fixtures/logdir")];
    for d in ["xprof-testdata/logdir", "jax", "tf"] {
        let d = root().join("../shared/samples").join(d);
        if d.is_dir() {
            dirs.push(d);
        } else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{}",
                d.display()
            );
        }
    }
    let mut compared = 0;
    let mut with_modules = 0;
    for dir in dirs {
        for s in xlens_store::discover(&dir).expect("discover") {
            let whole = open_run(vec![s.clone()]);
            let part = open_run_for(vec![s.clone()], Reads::Metadata);
            for name in &readers {
                assert!(find(name).is_ok());
                let a = run_tool(name, &whole, &[]).json().unwrap();
                let b = run_tool(name, &part, &[]).json().unwrap();
                assert_eq!(a, b, "{name} on {}", s.name);
                compared += 1;
            }
            // The device planes alone: the same answer, times on the same axis.
            let device = open_run_for(vec![s.clone()], Reads::DevicePlanes);
            for name in &device_readers {
                let a = run_tool(name, &whole, &[]).json().unwrap();
                let b = run_tool(name, &device, &[]).json().unwrap();
                assert_eq!(a, b, "{name} on {}", s.name);
                compared += 1;
            }
            let (w, d) = (
                whole.hosts[0].analysis.as_ref().unwrap().profile(),
                device.hosts[0].analysis.as_ref().unwrap().profile(),
            );
            assert_eq!(w.origin_ps, d.origin_ps, "{}", s.name);
            let lines = part.hosts[0]
                .analysis
                .as_ref()
                .unwrap()
                .profile()
                .lines_left_out;
            let idx = whole.hosts[0].analysis.as_ref().unwrap().hlo();
            let modules = idx.modules.len();
            // The sizes hlo_modules reads without decoding are the decoded modules' sizes.
            let listed = run_tool("hlo_modules", &part, &[]).json().unwrap();
            let rows = listed["hosts"][0]["modules"].as_array().unwrap().clone();
            assert_eq!(rows.len(), modules, "{}", s.name);
            for m in &idx.modules {
                let row = rows.iter().find(|r| r["name"] == m.name.as_str()).unwrap();
                let h = m.proto.hlo_module.as_ref().unwrap();
                assert_eq!(row["module_name"], h.name.as_str());
                assert_eq!(row["computations"], h.computations.len());
                let n: usize = h.computations.iter().map(|c| c.instructions.len()).sum();
                assert_eq!(row["instructions"], n, "{}", m.name);
            }
            with_modules += usize::from(modules > 0);
            assert!(lines > 0, "{}: no line was passed over", s.name);
        }
    }
    assert!(compared >= 12, "{compared}");
    assert!(with_modules >= 4, "{with_modules}");
}

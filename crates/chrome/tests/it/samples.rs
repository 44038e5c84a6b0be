//! The importer on real PyTorch profiler traces (`../shared/samples/pytorch`, HTA's test data).

use std::io::Read;
use std::path::PathBuf;

fn samples() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/samples/pytorch");
    if d.is_dir() {
        Some(d)
    } else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{} is missing (CI needs ../shared beside the checkout)",
            d.display()
        );
        None
    }
}

fn gunzip(path: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn every_sample_imports() {
    let Some(dir) = samples() else { return };
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    names.sort();
    for path in names {
        let bytes = gunzip(&path);
        let p = xlens_chrome::decode(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let planes: Vec<String> = p
            .planes
            .iter()
            .map(|pl| {
                format!(
                    "{}({} lines, {} events)",
                    p.str(pl.name),
                    pl.lines.len(),
                    pl.event_count()
                )
            })
            .collect();
        eprintln!(
            "{}: {} events; {:?}; {:?}",
            path.file_name().unwrap().to_string_lossy(),
            p.event_count(),
            planes,
            p.import_warnings
        );
        assert!(p.event_count() > 0, "{}", path.display());
    }
    // Counted with Python's json module: cpu_op 40506 + cuda_runtime 24692 + user_annotation 288
    // on the host; kernel 8568 + gpu_memset 654 + gpu_memcpy 228 on device 3.
    let p = xlens_chrome::decode(&gunzip(&dir.join("hta-trace_diff-control.json.gz"))).unwrap();
    let count = |name: &str| p.plane(name).map_or(0, |pl| pl.event_count());
    assert_eq!(count("/host:CPU"), 65486);
    assert_eq!(count("/device:GPU:3"), 9450);
}

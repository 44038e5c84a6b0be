//! The `xlens` binary on real fixtures and on bad input.

use std::path::{Path, PathBuf};
use std::process::Command;

fn xlens(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xlens-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn report_json_has_the_documented_fields() {
    let (code, out, err) = xlens(&["report", fixtures().to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 6);
    let host = |run: &str| sessions.iter().find(|s| s["name"] == run).unwrap()["hosts"][0].clone();
    // The steps of XProf's step table, as the overview shows them: of the programs' own
    // annotations (10 in the JAX MLP run, 8 in the transformer run, 20 in each Keras run; see
    // shared/samples READMEs) less the first and the last; one device step on the GPU run.
    for (run, n) in [
        ("jax_mlp_small", 8),
        ("jax_tfm_small", 6),
        ("tf_keras_cnn_small", 18),
        ("tf_keras_mlp_xla_small", 18),
        ("gpu_multi_worker", 1),
    ] {
        let h = host(run);
        assert_eq!(h["steps"]["count"], n, "{run}");
        assert_eq!(h["steps"]["source"], "xprof_steps", "{run}");
        let mean = h["steps"]["mean_ps"].as_i64().unwrap();
        assert!(
            mean >= h["steps"]["min_ps"].as_i64().unwrap() && mean > 0,
            "{run}"
        );
    }
    // Top ops: XLA ops on host threads for JAX CPU, device XLA ops for TPU, kernels for GPU.
    let h = host("jax_mlp_small");
    assert_eq!(h["top_ops_source"], "host_xla_ops");
    let ops = h["top_ops"].as_array().unwrap();
    assert_eq!(ops.len(), 20);
    assert!(ops
        .iter()
        .any(|o| o["name"].as_str().unwrap().starts_with("dot")));
    for w in ops.windows(2) {
        assert!(w[0]["self_time_ps"].as_i64() >= w[1]["self_time_ps"].as_i64());
    }
    assert!(ops.iter().all(|o| o["occurrences"].as_u64().unwrap() > 0));
    let h = host("tpu_inference");
    assert_eq!(h["device"]["kind"], "TPU");
    assert_eq!(h["device"]["model"], "TPU v6 Lite");
    assert_eq!(h["device"]["count"], 4);
    assert_eq!(h["top_ops_source"], "device_xla_ops");
    assert!(h["top_ops"][0]["name"]
        .as_str()
        .unwrap()
        .starts_with("copy-done"));
    let h = host("gpu_multi_worker");
    assert_eq!(h["device"]["kind"], "GPU");
    assert_eq!(h["top_ops_source"], "gpu_streams");
    assert_eq!(h["hostnames"][0], "34.83.195.179:6003");
}

#[test]
fn tool_command_filters_hosts_and_prints_csv() {
    let dir = fixtures().join("plugins/profile/jax_mlp_small");
    let (code, out, _) = xlens(&[
        "tool",
        "report",
        dir.to_str().unwrap(),
        "--host",
        "vm",
        "--format",
        "csv",
    ]);
    assert_eq!(code, 0);
    let mut lines = out.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("session,host,rank,op_name"));
    assert_eq!(lines.count(), 20);
    let (code, _, err) = xlens(&["tool", "report", dir.to_str().unwrap(), "--host", "nope"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("no host `nope`") && err.contains("vm"),
        "{err}"
    );
    let (code, _, err) = xlens(&["tool", "nope", dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown tool"), "{err}");
}

#[test]
fn bad_paths_and_files_get_clear_errors() {
    let (code, _, err) = xlens(&["report", "/nonexistent/xlens"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("/nonexistent/xlens") && err.contains("does not exist"),
        "{err}"
    );

    let empty = tmp("empty");
    std::fs::write(empty.join("notes.txt"), "hello").unwrap();
    let (code, _, err) = xlens(&["report", empty.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("no profiles found")
            && err.contains("plugins/profile")
            && err.contains("notes.txt"),
        "{err}"
    );

    // A riegeli file is recognised and rejected plainly; a corrupt file names itself and the offset.
    let d = tmp("bad");
    std::fs::write(d.join("h.xplane.riegeli"), b"riegeli").unwrap();
    // The answer is printed; exit code 2 says an input was not read, and stderr names it.
    let (code, out, err) = xlens(&["report", d.to_str().unwrap(), "--json"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("1 of 1 host files could not be read") && err.contains("h.xplane.riegeli"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let e = v["sessions"][0]["hosts"][0]["error"].as_str().unwrap();
    assert!(
        e.contains("not supported yet") && e.contains("h.xplane.riegeli"),
        "{e}"
    );

    std::fs::write(d.join("h.xplane.riegeli"), b"").unwrap();
    std::fs::remove_file(d.join("h.xplane.riegeli")).unwrap();
    std::fs::write(d.join("g.xplane.pb"), br#"{"traceEvents": []}"#).unwrap();
    let (code, out, _) = xlens(&["report", d.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        out.contains("ERROR") && out.contains("g.xplane.pb") && out.contains("at byte"),
        "{out}"
    );
    // A readable file beside it: still 2 (not every input was read), both in the answer.
    std::fs::copy(
        fixtures().join("plugins/profile/jax_mlp_small/vm.xplane.pb"),
        d.join("vm.xplane.pb"),
    )
    .unwrap();
    let (code, out, err) = xlens(&["report", d.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("1 of 2 host files"), "{err}");
    assert!(
        out.contains("g.xplane.pb") && out.contains("steps:"),
        "{out}"
    );
    // Only the readable host asked for: every requested input read, 0.
    let (code, _, err) = xlens(&["tool", "report", d.to_str().unwrap(), "--host", "vm"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_truncated_file_is_an_error_naming_it() {
    // A file cut short (a copy interrupted, a writer not finished) is a decode error naming it,
    // in the host's entry of the answer. A file truncated while it is mapped is the SIGBUS
    // handler's case, tested in `xlens_loader`'s `sigbus::tests`.
    let d = tmp("truncated").join("plugins/profile/run");
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("vm.xplane.pb");
    std::fs::copy(
        fixtures().join("plugins/profile/jax_mlp_small/vm.xplane.pb"),
        &f,
    )
    .unwrap();
    let len = std::fs::metadata(&f).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(len / 4)
        .unwrap();
    let (code, out, err) = xlens(&["tool", "overview_page", f.to_str().unwrap(), "--json"]);
    assert_eq!(code, 2, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let msg = v["hosts"][0]["error"].as_str().unwrap_or_default();
    assert!(msg.contains(f.to_str().unwrap()), "{out}");
    assert!(!msg.contains("changed while xlens read it"), "{msg}");
}

#[test]
fn a_reader_that_stops_early_ends_the_command_quietly() {
    // `xlens tool trace_viewer … --json | head -c 100`: 2 MB of output, the pipe closed after
    // 100 bytes.
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args([
            "tool",
            "trace_viewer",
            fixtures().to_str().unwrap(),
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
    assert!(head.starts_with(b"{"));
}

#[test]
fn diff_exit_codes_gate_a_build() {
    let dir = fixtures().join("plugins/profile");
    let (a, b) = (dir.join("jax_mlp_small"), dir.join("jax_tfm_small"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    // A run against itself: nothing changed, no condition holds.
    let (code, out, _) = xlens(&["diff", a, a, "--fail-if", "step_time.mean > +3%"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok   step_time.mean > +3%"), "{out}");
    // Two different models: every op of NEW is added; a condition on that holds.
    let (code, out, err) = xlens(&["diff", a, b, "--fail-if", "ops.added > 0"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("FAIL ops.added > 0"), "{out}");
    assert!(err.contains("--fail-if ops.added > 0 holds"), "{err}");
    // JSON carries the conditions with their evidence.
    let (code, out, _) = xlens(&["diff", a, b, "--json", "--fail-if", "ops.added > 0"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["conditions"][0]["holds"], true);
    assert!(v["step_time"]["base"]["count"].as_u64().unwrap() > 0);
    // No comparison: a condition that cannot be read, a path that is not there.
    let (code, _, err) = xlens(&["diff", a, b, "--fail-if", "step_time.mean >> 3"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("--fail-if"), "{err}");
    // A corrupt NEW: compared as far as it goes, the file named with where it broke, exit 2.
    let bad = fixtures().join("../invalid/corrupted_utf8_head.xplane.pb");
    let (code, out, err) = xlens(&["diff", a, bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("corrupted_utf8_head.xplane.pb") && err.contains("at byte"),
        "{err}"
    );
    let (code, _, err) = xlens(&["diff", a, "/nonexistent/run"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("NEW /nonexistent/run"), "{err}");
}

#[test]
fn stated_peaks_reach_every_command() {
    // The TPU profile states its own peaks; --peak-flops overrides them for the op tools and
    // for the advice of `report` and the overview alike, before or after the subcommand.
    let p = fixtures().join("plugins/profile/tpu_inference");
    let p = p.to_str().unwrap();
    let advice = |args: &[&str]| {
        let (code, out, err) = xlens(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["sessions"][0]["hosts"][0]["advice"]["summary"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let low = advice(&["report", p, "--json", "--peak-flops", "1e9"]);
    let high = advice(&["report", p, "--json", "--peak-flops", "1e15"]);
    assert_ne!(low, high, "the advice reads the stated peak");
    assert_eq!(low, advice(&["--peak-flops", "1e9", "report", p, "--json"]));
    let hlo = |args: &[&str]| {
        let (code, out, err) = xlens(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["hosts"][0]["peaks"].clone()
    };
    let peaks = hlo(&["tool", "hlo_stats", p, "--json", "--peak-flops", "2e12"]);
    assert_eq!(peaks["flops_per_second"], 2e12);
    assert_eq!(peaks["flops_source"], "user_given");
    assert_eq!(
        peaks,
        hlo(&["--peak-flops", "2e12", "tool", "hlo_stats", p, "--json"])
    );
    // Not a number a roof can be: a clear error, no answer.
    let (code, out, err) = xlens(&["report", p, "--peak-bw", "inf"]);
    assert_ne!(code, 0);
    assert!(out.is_empty() && err.contains("peak_bw"), "{err}");
}

#[test]
fn max_rows_and_max_bytes_bound_an_answer_and_say_what_they_left_out() {
    // A real profile's HLO op table and a PyTorch trace's kernels, bounded for an agent.
    let tpu = fixtures().join("plugins/profile/tpu_inference");
    let torch =
        fixtures().join("../pytorch/memory/kineto-resnet50_num_workers_0-step10.pt.trace.json.gz");
    let json = |args: &[&str]| -> (serde_json::Value, usize) {
        let (code, out, err) = xlens(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        (serde_json::from_str(&out).unwrap(), out.len())
    };
    for (tool, path, rows) in [
        ("hlo_stats", &tpu, "/hosts/*/rows"),
        ("pytorch_kernels", &torch, "/hosts/*/by_name"),
    ] {
        let p = path.to_str().unwrap();
        let (whole, whole_len) = json(&["tool", tool, p, "--json"]);
        assert!(whole.get("bounded").is_none(), "{tool}: no bounds, no note");
        let (three, _) = json(&["tool", tool, p, "--json", "--max-rows", "3"]);
        let cut = three["bounded"]["cut"].as_array().unwrap();
        let table = cut
            .iter()
            .find(|c| c["path"] == rows)
            .unwrap_or_else(|| panic!("{tool}: {cut:?}"));
        assert_eq!(table["kept"], 3);
        // The first rows are the whole answer's first rows, and the note counts the rest.
        let pointer = rows.replace('*', "0");
        let all = whole.pointer(&pointer).unwrap().as_array().unwrap();
        assert_eq!(table["total"].as_u64().unwrap() as usize, all.len());
        assert_eq!(
            three.pointer(&pointer).unwrap().as_array().unwrap()[..],
            all[..3]
        );
        // Bytes: the text fits and says so, with fewer rows than the whole.
        let limit = whole_len / 4;
        let (small, len) = json(&["tool", tool, p, "--json", "--max-bytes", &limit.to_string()]);
        assert!(len <= limit + 1, "{tool}: {len} > {limit}");
        assert_eq!(small["bounded"]["fits"], true, "{tool}");
        assert!(small.pointer(&pointer).unwrap().as_array().unwrap().len() < all.len());
    }
    // `report` takes the same bounds.
    let (report, _) = json(&["report", tpu.to_str().unwrap(), "--json", "--max-rows", "2"]);
    let top = report["sessions"][0]["hosts"][0]["top_ops"]
        .as_array()
        .unwrap();
    assert_eq!(top.len(), 2);
    assert!(report["bounded"]["cut"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["path"] == "/sessions/*/hosts/*/top_ops"));
    // CSV keeps its header and the first rows; the rest is counted on stderr.
    let p = tpu.to_str().unwrap();
    let (code, whole, _) = xlens(&["tool", "hlo_stats", p, "--format", "csv"]);
    assert_eq!(code, 0);
    let (code, out, err) = xlens(&["tool", "hlo_stats", p, "--format", "csv", "--max-rows", "2"]);
    assert_eq!(code, 0);
    let want: Vec<&str> = whole.lines().take(3).collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
    assert!(err.contains("left out by --max-rows"), "{err}");
}

#[test]
fn errors_are_json_when_the_answer_asked_for_is() {
    let p = fixtures().join("plugins/profile/tpu_inference");
    let p = p.to_str().unwrap();
    let error = |args: &[&str], code: i32| -> serde_json::Value {
        let (c, out, err) = xlens(args);
        assert_eq!(c, code, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        let v: serde_json::Value = serde_json::from_str(&err).unwrap();
        assert_eq!(v["error"]["exit_code"], code, "{err}");
        assert!(!v["error"]["message"].as_str().unwrap().is_empty());
        v["error"].clone()
    };
    // An unknown tool names the valid ones.
    let e = error(&["tool", "no_such_tool", p, "--json"], 1);
    assert_eq!(e["kind"], "unknown_tool");
    let valid: Vec<&str> = e["valid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        valid.contains(&"hlo_stats") && valid.contains(&"overview_page"),
        "{e}"
    );
    // An unknown parameter of a tool, with clap's suggestion.
    let e = error(&["tool", "hlo_stats", p, "--json", "--max-rowz", "3"], 2);
    assert_eq!(e["kind"], "bad_arguments");
    assert_eq!(e["argument"], "--max-rowz");
    assert_eq!(e["suggested"], json_str("--max-rows"), "{e}");
    // A bad value names the valid values.
    let e = error(&["tool", "hlo_stats", p, "--json", "--format", "xml"], 2);
    assert_eq!(e["kind"], "bad_arguments");
    assert!(
        e["valid"].as_array().unwrap().iter().any(|v| v == "csv"),
        "{e}"
    );
    // A missing file.
    let e = error(
        &["tool", "hlo_stats", "/no/such/profile.xplane.pb", "--json"],
        1,
    );
    assert_eq!(e["kind"], "error");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("/no/such/profile.xplane.pb"),
        "{e}"
    );
    // Without JSON asked for, errors stay text.
    let (c, _, err) = xlens(&["tool", "no_such_tool", p]);
    assert_eq!(c, 1);
    assert!(err.starts_with("xlens: unknown tool"), "{err}");
}

fn json_str(s: &str) -> serde_json::Value {
    serde_json::Value::String(s.to_string())
}

#[test]
fn tools_json_describes_each_tools_parameters() {
    let (code, out, err) = xlens(&["tools", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let tools = v.as_array().unwrap();
    assert!(tools.len() >= 20);
    for t in tools {
        let name = t["name"].as_str().unwrap();
        // Every flag listed is one `xlens tool NAME` takes.
        let (code, help, _) = xlens(&["tool", name, "--help"]);
        assert_eq!(code, 0);
        for p in t["parameters"].as_array().unwrap() {
            let flag = p["flag"].as_str().unwrap();
            assert!(help.contains(flag), "{name}: {flag} not in its help");
            assert_eq!(p["key"], flag.trim_start_matches("--").replace('-', "_"));
        }
    }
    let ops = tools
        .iter()
        .find(|t| t["name"] == "pytorch_operators")
        .unwrap();
    assert_eq!(
        ops["parameters"][0],
        serde_json::json!({"flag": "--group-by", "key": "group_by",
            "help": ops["parameters"][0]["help"], "takes_value": true,
            "values": ["name", "name-and-shape"], "default": "name"})
    );
    // Each answer's JSON Schema, its fields described (crates/analysis/tests/it/output_schemas.rs
    // checks every answer against it).
    for t in tools {
        let out = &t["output"];
        assert_eq!(
            out["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{}",
            t["name"]
        );
        assert!(out["description"].is_string(), "{}", t["name"]);
    }
    let kpi = tools.iter().find(|t| t["name"] == "kpi").unwrap();
    let props = kpi["output"]["properties"].as_object().unwrap();
    assert!(
        props["step_time_ms"]["description"].is_string(),
        "{props:?}"
    );
    // One tool by name; an unknown name is a JSON error that lists the tools.
    let (code, out, _) = xlens(&["tools", "kpi", "--json"]);
    assert_eq!(code, 0);
    let one: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(one.as_array().map(Vec::len), Some(1));
    assert_eq!(one[0]["output"], kpi["output"]);
    let (code, _, err) = xlens(&["tools", "nope", "--json"]);
    assert_eq!(code, 1);
    let e: serde_json::Value = serde_json::from_str(err.trim()).unwrap();
    assert_eq!(e["error"]["kind"], "unknown_tool");
    assert!(e["error"]["valid"]
        .as_array()
        .unwrap()
        .contains(&json_str("kpi")));
}

#[test]
fn an_answer_is_kept_for_unchanged_files_only() {
    let dir = tmp("answers");
    let cache = dir.join("cache");
    let file = dir.join("trace.pt.trace.json.gz");
    let src = fixtures().join("../pytorch/tb_plugin/resnet50_num_workers_4.pt.trace.json.gz");
    std::fs::copy(&src, &file).unwrap();
    let run = |extra: &[(&str, &str)], args: &[&str]| -> (i32, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_xlens"))
            .args(["tool", "kpi", file.to_str().unwrap(), "--json"])
            .args(args)
            .env("XLENS_CACHE_DIR", &cache)
            .env_remove("XLENS_NO_ANSWER_CACHE")
            .envs(extra.iter().copied())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let kept = |n: usize| {
        let d = cache.join("answers/v1");
        let files: Vec<_> = std::fs::read_dir(&d)
            .map(|r| r.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        assert_eq!(files.len(), n, "{files:?}");
        files
    };
    let (code, first) = run(&[], &[]);
    assert_eq!(code, 0);
    let files = kept(1);
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), first);
    // Asked again, the kept bytes are the answer (marked here to tell them apart).
    let marked = first.replace("\"run\"", "\"run_kept\"");
    std::fs::write(&files[0], &marked).unwrap();
    assert_eq!(run(&[], &[]).1, marked);
    // --fresh, or the cache turned off: computed again.
    assert_eq!(run(&[], &["--fresh"]).1, first);
    assert_eq!(run(&[("XLENS_NO_ANSWER_CACHE", "1")], &[]).1, first);
    // Another question is another answer.
    assert_ne!(run(&[], &["--max-rows", "1"]).1, marked);
    kept(2);
    // The file rewritten (the same bytes, a new modification time): never the kept answer.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::copy(&src, &file).unwrap();
    assert_eq!(run(&[], &[]).1, first);
    kept(3);
    // A file that cannot be read is not answered from, nor kept.
    std::fs::write(&file, b"\x1f\x8b not gzip").unwrap();
    let (code, _) = run(&[], &[]);
    assert_ne!(code, 0);
    kept(3);
    let _ = std::fs::remove_dir_all(&dir);
}

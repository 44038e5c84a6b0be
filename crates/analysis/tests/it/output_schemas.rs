//! Every tool's `--json` answer against the JSON Schema `xlens tools --json` publishes for it,
//! on a CPU JAX profile, a TPU profile, two GPU hosts and a PyTorch trace: each value has the
//! type the schema says, each required field is there, and no answer carries a field the schema
//! does not describe (stricter than JSON Schema, which allows unknown fields by default).

use crate::common::{open_run, root, run_tool};
use serde_json::Value;
use xlens_analysis::tools::TOOLS;

/// Follows `$ref` (`#/$defs/Name`) in `root`.
fn resolve<'a>(root: &'a Value, s: &'a Value) -> &'a Value {
    match s.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.strip_prefix("#/$defs/").expect("a local $ref");
            resolve(root, &root["$defs"][name])
        }
        None => s,
    }
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "string" => v.is_string(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        other => panic!("type {other}"),
    }
}

/// Why `v` does not fit schema `s`, or `None` when it does.
fn check(root: &Value, s: &Value, v: &Value, at: &str) -> Option<String> {
    let s = resolve(root, s);
    if s.as_bool() == Some(true) || s.as_object().is_some_and(|o| o.is_empty()) {
        return None;
    }
    if let Some(any) = s
        .get("anyOf")
        .or_else(|| s.get("oneOf"))
        .and_then(Value::as_array)
    {
        let errs: Vec<String> = any.iter().filter_map(|x| check(root, x, v, at)).collect();
        if errs.len() == any.len() {
            return Some(format!("{at}: fits no alternative: {}", errs.join(" | ")));
        }
    }
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        // The parts describe one object together: check each value against the union of the
        // parts' properties.
        let mut merged = serde_json::Map::new();
        let mut props = serde_json::Map::new();
        let mut required = Vec::new();
        for part in all {
            let part = resolve(root, part);
            if let Some(p) = part.get("properties").and_then(Value::as_object) {
                props.extend(p.clone());
            }
            if let Some(r) = part.get("required").and_then(Value::as_array) {
                required.extend(r.clone());
            }
        }
        merged.insert("type".into(), "object".into());
        merged.insert("properties".into(), Value::Object(props));
        merged.insert("required".into(), Value::Array(required));
        return check(root, &Value::Object(merged), v, at);
    }
    match s.get("type") {
        Some(Value::String(t)) if !type_ok(t, v) => {
            return Some(format!("{at}: {v} is not {t}"));
        }
        Some(Value::Array(ts)) if !ts.iter().any(|t| type_ok(t.as_str().unwrap_or(""), v)) => {
            return Some(format!("{at}: {v} is none of {ts:?}"));
        }
        _ => {}
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            return Some(format!("{at}: {v} is not one of {e:?}"));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            return Some(format!("{at}: {v} is not {c}"));
        }
    }
    if let Some(o) = v.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        for r in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let r = r.as_str().unwrap_or("");
            if !o.contains_key(r) {
                return Some(format!("{at}: `{r}` is required"));
            }
        }
        for (k, x) in o {
            let sub = props
                .and_then(|p| p.get(k))
                .or_else(|| s.get("additionalProperties"));
            match sub {
                Some(sub) => {
                    if let Some(e) = check(root, sub, x, &format!("{at}/{k}")) {
                        return Some(e);
                    }
                }
                None if props.is_some() => {
                    return Some(format!("{at}: `{k}` is not in the schema"));
                }
                None => {}
            }
        }
    }
    if let Some(a) = v.as_array() {
        if let Some(pre) = s.get("prefixItems").and_then(Value::as_array) {
            for (i, (x, sub)) in a.iter().zip(pre).enumerate() {
                if let Some(e) = check(root, sub, x, &format!("{at}/{i}")) {
                    return Some(e);
                }
            }
        } else if let Some(items) = s.get("items") {
            for (i, x) in a.iter().enumerate() {
                if let Some(e) = check(root, items, x, &format!("{at}/{i}")) {
                    return Some(e);
                }
            }
        }
    }
    None
}

#[test]
fn every_answer_fits_its_published_schema() {
    let inputs = [
        root().join("fixtures/logdir/plugins/profile/jax_mlp_small"),
        root().join("fixtures/logdir/plugins/profile/tpu_inference"),
        root().join("fixtures/logdir/plugins/profile/gpu_multi_worker"),
        root().join(
            "fixtures/pytorch/tb_plugin/hta-negative_queue_length_values_check-rank0.json.gz",
        ),
    ];
    let mut checked = 0;
    let mut wrong = Vec::new();
    for input in &inputs {
        let run = open_run(xlens_store::discover(input).expect("discover"));
        for t in TOOLS {
            let name = t.info().name;
            let schema = t.output_schema();
            assert!(
                schema["description"].is_string()
                    || schema["$ref"].is_string()
                    || schema["properties"].is_object(),
                "{name}: {schema}"
            );
            let out = run_tool(name, &run, &[]).json().unwrap();
            if let Some(e) = check(&schema, &schema, &out, "") {
                let f = input.file_name().unwrap_or_default().to_string_lossy();
                wrong.push(format!("{name} on {f}: {e}"));
            }
            checked += 1;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(checked, inputs.len() * TOOLS.len());
}

#[test]
fn the_validator_refuses_what_does_not_fit() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": ["string", "null"]}},
        "required": ["a"]
    });
    assert!(check(
        &schema,
        &schema,
        &serde_json::json!({"a": 1, "b": null}),
        ""
    )
    .is_none());
    assert!(check(&schema, &schema, &serde_json::json!({"b": "x"}), "").is_some());
    assert!(check(&schema, &schema, &serde_json::json!({"a": 1.5}), "").is_some());
    assert!(check(&schema, &schema, &serde_json::json!({"a": 1, "c": 2}), "").is_some());
}

//! `granary export-mtl4` end to end: the bundled example, as a script and as an archive
//! harvested from it with MSL, comes out as a Metal 4 pipelines script that satisfies
//! docs/mtl4-pipelines-script.schema.json (checked here by a small validator for the schema
//! keywords that file uses), whose libraries exist and are MSL text, whose function
//! references resolve, whose unspecialized attachments stay unspecialized, and whose
//! pipelines and labels are the script's.

use serde_json::Value;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn example() -> String {
    format!("{ROOT}/examples/renderer/pipelines.json")
}

fn granary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_granary")).args(args).output().expect("run granary")
}

fn schema() -> Value {
    let text = std::fs::read_to_string(format!("{ROOT}/docs/mtl4-pipelines-script.schema.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Checks `v` against `s` for the keywords the schema uses: `$ref` (to `#/$defs/…`), `type`
/// (one or a list), `required`, `properties`, `additionalProperties: false`, `items`, `enum`,
/// `minimum`; and granary's `x-granary-prefix`. Every other keyword must be an annotation
/// (`$schema`, `$id`, `$defs`, `title`, `description`), so a schema edit that relies on
/// something unchecked fails here instead of being ignored.
fn validate(root: &Value, s: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let obj = s.as_object().expect("schema is an object");
    for k in obj.keys() {
        let known = [
            "$ref",
            "type",
            "required",
            "properties",
            "additionalProperties",
            "items",
            "enum",
            "minimum",
            "x-granary-prefix",
            "$schema",
            "$id",
            "$defs",
            "title",
            "description",
        ];
        assert!(known.contains(&k.as_str()), "schema keyword {k} at {at} is not checked by this test");
    }
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("local $ref");
        validate(root, &root["$defs"][name], v, at, errors);
    }
    if let Some(t) = obj.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().map(|x| x.as_str().unwrap()).collect(),
            _ => panic!("bad type"),
        };
        let ok = types.iter().any(|t| match *t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            other => panic!("type {other}"),
        });
        if !ok {
            errors.push(format!("{at}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(e) = obj.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errors.push(format!("{at}: {v} is not one of {}", Value::Array(e.clone())));
        }
    }
    if let (Some(min), Some(n)) = (obj.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if n < min {
            errors.push(format!("{at}: {n} < {min}"));
        }
    }
    if let (Some(p), Some(s)) = (obj.get("x-granary-prefix").and_then(Value::as_str), v.as_str()) {
        if !s.starts_with(p) {
            errors.push(format!("{at}: {s} does not start with {p}"));
        }
    }
    if let Some(m) = v.as_object() {
        for r in obj.get("required").and_then(Value::as_array).into_iter().flatten() {
            if !m.contains_key(r.as_str().unwrap()) {
                errors.push(format!("{at}: required key {r} missing"));
            }
        }
        let props = obj.get("properties").and_then(Value::as_object);
        for (k, x) in m {
            match props.and_then(|p| p.get(k)) {
                Some(ps) => validate(root, ps, x, &format!("{at}.{k}"), errors),
                None if obj.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errors.push(format!("{at}: key {k} is not in the schema"))
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(a)) = (obj.get("items"), v.as_array()) {
        for (i, x) in a.iter().enumerate() {
            validate(root, items, x, &format!("{at}[{i}]"), errors);
        }
    }
}

/// Everything the test checks of one export; returns the document.
fn check_export(out: &Path) -> Value {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    let s = schema();
    let mut errors = Vec::new();
    validate(&s, &s, &doc, "$", &mut errors);
    assert!(errors.is_empty(), "schema violations:\n{}", errors[..errors.len().min(20)].join("\n"));

    // Libraries exist, are MSL text, and define the functions that name them.
    let base = out.parent().unwrap();
    let mut libraries = HashMap::new();
    for l in doc["libraries"].as_array().unwrap() {
        let path = base.join(l["path"].as_str().unwrap());
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(text.contains("#include <metal_stdlib>"), "{} is not MSL", path.display());
        assert!(libraries.insert(l["label"].as_str().unwrap().to_string(), text).is_none(), "duplicate library label");
    }
    let mut functions = HashSet::new();
    let fds = &doc["function_descriptors"];
    for f in fds["library_function_descriptors"].as_array().unwrap() {
        let text = libraries.get(f["library"].as_str().unwrap()).expect("function names a known library");
        let name = f["name"].as_str().unwrap();
        assert!(text.contains(&format!(" {name}(")), "library has no function {name}");
        assert!(functions.insert(f["label"].as_str().unwrap().to_string()), "duplicate function label");
    }
    for f in fds["specialized_function_descriptors"].as_array().into_iter().flatten() {
        let base = f["function_descriptor"].as_str().unwrap().strip_prefix("fnd:").unwrap();
        assert!(functions.contains(base), "specialized function of unknown {base}");
        assert!(functions.insert(f["label"].as_str().unwrap().to_string()), "duplicate function label");
    }
    let pds = &doc["pipeline_descriptors"];
    let fields = ["vertex_function_descriptor", "fragment_function_descriptor", "compute_function_descriptor"];
    for p in pds["render_pipeline_descriptors"]
        .as_array()
        .unwrap()
        .iter()
        .chain(pds["compute_pipeline_descriptors"].as_array().unwrap())
    {
        for k in fields {
            if let Some(r) = p.get(k) {
                let label = r.as_str().unwrap().strip_prefix("fnd:").unwrap();
                assert!(functions.contains(label), "pipeline refers to missing function {label}");
            }
        }
    }
    doc
}

/// The script's pipelines: label → (is compute, colour attachments unspecialized in format).
fn script_facts() -> HashMap<String, (bool, Vec<bool>)> {
    let s: Value = serde_json::from_str(&std::fs::read_to_string(example()).unwrap()).unwrap();
    let mut out = HashMap::new();
    for p in s["pipelines"].as_array().unwrap() {
        let label = p["label"].as_str().unwrap().to_string();
        let attachments = p["render"]["color_attachments"]
            .as_array()
            .map(|a| a.iter().map(|c| c.get("format").is_none_or(|f| f == "unspecialized")).collect())
            .unwrap_or_default();
        out.insert(label, (p.get("compute").is_some(), attachments));
    }
    out
}

fn check_round_trip(doc: &Value) {
    let facts = script_facts();
    let pds = &doc["pipeline_descriptors"];
    let render = pds["render_pipeline_descriptors"].as_array().unwrap();
    let compute = pds["compute_pipeline_descriptors"].as_array().unwrap();
    assert_eq!(render.len() + compute.len(), facts.len(), "one descriptor per pipeline");
    assert_eq!(compute.len(), facts.values().filter(|f| f.0).count());
    let labels: BTreeSet<&str> = render.iter().chain(compute).map(|p| p["label"].as_str().unwrap()).collect();
    assert_eq!(labels, facts.keys().map(String::as_str).collect::<BTreeSet<_>>());
    let mut unspecialized = 0;
    for p in render {
        let (is_compute, attachments) = &facts[p["label"].as_str().unwrap()];
        assert!(!is_compute);
        let got = p["color_attachments"].as_array().cloned().unwrap_or_default();
        assert_eq!(got.len(), attachments.len(), "{}", p["label"]);
        for (c, unspec) in got.iter().zip(attachments) {
            assert_eq!(c["pixel_format"] == "Unspecialized", *unspec, "{}", p["label"]);
            unspecialized += usize::from(*unspec);
        }
    }
    assert!(unspecialized > 0, "the example has unspecialized attachments");
}

#[test]
fn export_mtl4_of_the_example_script_matches_the_schema_and_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("renderer.mtl4-json");
    let o = granary(&["export-mtl4", &example(), "-o", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["input_kind"], "script");
    assert_eq!(summary["skipped"].as_array().unwrap().len(), 0);
    let doc = check_export(&out);
    check_round_trip(&doc);
    // Depth state is not a Metal 4 pipeline's: it is reported per pipeline, never dropped silently.
    let reported = summary["exported"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["not_carried"].as_array().is_some_and(|d| d.iter().any(|x| x["field"] == "depth_stencil")));
    assert!(reported, "depth/stencil state is listed as not carried");
}

/// Harvests the example into `dir/name` for `targets` on two threads, expecting success;
/// returns the archive's path.
fn harvest_example(dir: &std::path::Path, name: &str, targets: &str) -> std::path::PathBuf {
    let archive = dir.join(name);
    let o = granary(&["harvest", &example(), "-o", archive.to_str().unwrap(), "--targets", targets, "-j", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    archive
}

#[test]
fn export_mtl4_of_a_harvested_archive_matches_the_schema_and_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let archive = harvest_example(dir.path(), "renderer.granary", "spirv,msl");
    let out = dir.path().join("a.mtl4-json");
    let o = granary(&["export-mtl4", archive.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("MSL libraries"));
    let doc = check_export(&out);
    check_round_trip(&doc);
}

#[test]
fn export_mtl4_refuses_an_archive_without_msl_and_a_missing_input() {
    let dir = tempfile::tempdir().unwrap();
    let archive = harvest_example(dir.path(), "spirv.granary", "spirv");
    let out = dir.path().join("x.mtl4-json");
    let o = granary(&["export-mtl4", archive.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no MSL outputs"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = granary(&["export-mtl4", dir.path().join("nope").to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read"));
}

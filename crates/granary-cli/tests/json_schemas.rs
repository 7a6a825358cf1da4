//! Every `--json` output against its JSON Schema in `docs/schemas/` (issue 23 item 8): one
//! document per command with `schema_version` and `command`, every field declared (no field
//! the schema does not name, none it requires missing, each of the declared type), and an
//! `error` object on stdout when a command cannot run. The schemas are the documentation a
//! script author reads; this test keeps them true.
//!
//! The validator below implements the part of JSON Schema (2020-12) the schemas use: `type`
//! (one or a list), `properties`, `required`, `additionalProperties` (`false` or a schema),
//! `items`, `enum`, `const`, `minimum`, `oneOf` and `$ref` to `#/$defs/NAME`.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn schemas_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas")
}

fn schema(name: &str) -> Value {
    let path = schemas_dir().join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every way `value` breaks `schema` (whose `$defs` are in `root`), each as `path: what`.
fn check(root: &Value, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").unwrap_or_else(|| panic!("unsupported $ref {r}"));
        let def = &root["$defs"][name];
        assert!(!def.is_null(), "$ref to a missing definition {r}");
        return check(root, def, value, at, errors);
    }
    if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
        let results: Vec<Vec<String>> = branches
            .iter()
            .map(|b| {
                let mut e = Vec::new();
                check(root, b, value, at, &mut e);
                e
            })
            .collect();
        let passing = results.iter().filter(|e| e.is_empty()).count();
        if passing != 1 {
            let closest = results.iter().min_by_key(|e| e.len()).map(|e| e.join("; ")).unwrap_or_default();
            errors.push(format!("{at}: matches {passing} of {} oneOf branches (nearest: {closest})", branches.len()));
        }
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            other => panic!("bad type {other}"),
        };
        let is = |t: &str| match t {
            "null" => value.is_null(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_u64() || value.is_i64(),
            "number" => value.is_number(),
            "string" => value.is_string(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            other => panic!("unknown type {other}"),
        };
        if !types.iter().any(|t| is(t)) {
            errors.push(format!("{at}: {value} is not {}", types.join(" or ")));
            return;
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(value) {
            errors.push(format!("{at}: {value} is not one of {}", Value::Array(e.clone())));
        }
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            errors.push(format!("{at}: {value} is not {c}"));
        }
    }
    if let (Some(min), Some(n)) = (schema.get("minimum").and_then(Value::as_f64), value.as_f64()) {
        if n < min {
            errors.push(format!("{at}: {n} is under {min}"));
        }
    }
    if let Value::Object(fields) = value {
        let properties = schema.get("properties").and_then(Value::as_object);
        for name in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            if !fields.contains_key(name) {
                errors.push(format!("{at}: missing required field '{name}'"));
            }
        }
        for (name, v) in fields {
            let here = format!("{at}.{name}");
            match properties.and_then(|p| p.get(name)) {
                Some(s) => check(root, s, v, &here, errors),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => errors.push(format!("{here}: a field the schema does not declare")),
                    Some(s @ Value::Object(_)) => check(root, s, v, &here, errors),
                    _ => {}
                },
            }
        }
    }
    if let (Value::Array(items), Some(s)) = (value, schema.get("items")) {
        for (i, v) in items.iter().enumerate() {
            check(root, s, v, &format!("{at}[{i}]"), errors);
        }
    }
}

/// Asserts `doc` (the stdout of `granary ARGS`) satisfies `docs/schemas/NAME.schema.json`.
fn assert_valid(name: &str, doc: &Value, args: &[&str]) {
    let root = schema(name);
    let mut errors = Vec::new();
    check(&root, &root, doc, "$", &mut errors);
    assert!(
        errors.is_empty(),
        "granary {}: output breaks docs/schemas/{name}.schema.json:\n  {}",
        args.join(" "),
        errors.join("\n  ")
    );
}

/// Runs `granary ARGS` and returns its exit status and stdout's JSON document.
fn run(args: &[&str]) -> (Option<i32>, Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_granary")).args(args).output().unwrap();
    let doc = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "granary {}: stdout is not JSON ({e}):\n{}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code(), doc)
}

/// Runs `granary ARGS`, checks the exit status, the envelope and the command's schema.
fn valid(name: &str, args: &[&str], status: i32) -> Value {
    let (code, doc) = run(args);
    assert_eq!(code, Some(status), "granary {}: {doc}", args.join(" "));
    assert_eq!(doc["schema_version"], 1, "{doc}");
    assert_eq!(doc["command"], args[0], "{doc}");
    assert_valid(name, &doc, args);
    doc
}

#[test]
fn every_json_output_matches_its_schema() {
    let dir = common::tempdir();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (archive, copy) = (p("a.granary"), p("copy.granary"));

    // harvest: a clean run, a resume, and one with failures (a missing library file).
    valid("harvest", &["harvest", EXAMPLE, "-o", &archive, "--json", "-q"], 0);
    let resumed = valid("harvest", &["harvest", EXAMPLE, "-o", &archive, "--json", "-q", "--resume"], 0);
    assert!(resumed["resumed"].as_u64().unwrap() > 0 && resumed["device"].is_null(), "{resumed}");
    let broken = common::copy_example(dir.path());
    std::fs::remove_file(broken.parent().unwrap().join("shaders/unlit.wgsl")).unwrap();
    let failed = valid("harvest", &["harvest", broken.to_str().unwrap(), "-o", &p("b.granary"), "--json", "-q"], 1);
    assert!(failed["failures"][0]["cause"].as_str().is_some_and(|c| c.contains("unlit")), "{failed}");
    // --add-recorded: its `recorded` object (a use and a miss from a game's record).
    let with_record = common::copy_example_as(dir.path(), "recorded", None);
    let record = p("game.record");
    {
        let r = granary_archive::record::Recorder::open(Path::new(&record), Default::default()).unwrap();
        let a = granary_archive::Archive::open(Path::new(&archive)).unwrap();
        r.used(a.pipeline(0).unwrap().key(), None);
        r.missed(Some(granary_archive::PipelineKey(1)), None);
    }
    let args = ["harvest", with_record.to_str().unwrap(), "-o", &p("r.granary"), "--json", "-q", "--add-recorded"];
    let recorded = valid("harvest", &[&args[..], &[record.as_str()]].concat(), 0);
    assert_eq!(recorded["recorded"]["labelled"], 1, "{recorded}");
    assert_eq!(recorded["recorded"]["not_added"][0]["key"], format!("{:032x}", 1), "{recorded}");

    // The archive tools.
    let listed = valid("ls", &["ls", &archive, "--json"], 0);
    // A pipeline record damaged half-way through: one document, the error object, not the
    // rows before it followed by an error.
    let entries = listed["entries"].as_array().unwrap();
    let middle = u128::from_str_radix(entries[entries.len() / 2]["key"].as_str().unwrap(), 16).unwrap();
    let mut damaged = std::fs::read(&archive).unwrap();
    let at = damaged.windows(16).position(|w| w == middle.to_le_bytes()).unwrap();
    damaged[at + 1] ^= 0xff;
    std::fs::write(p("damaged.granary"), &damaged).unwrap();
    let e = valid("error", &["ls", &p("damaged.granary"), "--json"], 2);
    assert!(e["error"]["message"].as_str().unwrap().contains("pipeline record"), "{e}");
    valid("verify", &["verify", &archive, "--json"], 0);
    valid("plan", &["plan", EXAMPLE, "--shards", "3", "--json"], 0);
    std::fs::copy(&archive, &copy).unwrap();
    valid("prune", &["prune", &copy, "--script", EXAMPLE, "-o", &copy, "--json"], 0);
    let bytes = std::fs::read(&archive).unwrap();
    std::fs::write(&copy, &bytes[..bytes.len() * 9 / 10]).unwrap();
    let (code, doc) = run(&["salvage", &copy, "-o", &p("s.granary"), "--json"]);
    assert_eq!(doc["command"], "salvage", "{doc}");
    assert_valid(if doc.get("error").is_some() { "error" } else { "salvage" }, &doc, &["salvage"]);
    assert!(code.is_some_and(|c| c <= 2));
    valid("export-mtl4", &["export-mtl4", EXAMPLE, "-o", &p("e.mtl4-json"), "--json"], 0);
    valid(
        "gen",
        &[
            "gen",
            "seed-scale",
            "-o",
            &p("gen"),
            "--pipelines",
            "40",
            "--vertex-functions",
            "10",
            "--max-run",
            "8",
            "--json",
        ],
        0,
    );
    valid("stress", &["stress", "--mode", "rotate", "-j", "2", "--pipelines", "60", "--json"], 0);
    let small = ["--pipelines", "100", "--vertex-functions", "20", "--max-run", "10"];
    let b = valid(
        "bench",
        &[&["bench", "seed-scale"][..], &small, &["--threads", "1,2", "--lookups", "100", "--json"]].concat(),
        0,
    );
    assert_eq!(b["report"], "seed-scale", "{b}");
    let foz = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/foz");
    if let Some(db) = std::fs::read_dir(&foz)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|f| f.extension().is_some_and(|x| x == "foz"))
    {
        let (code, doc) = run(&["import-foz", db.to_str().unwrap(), "-o", &p("foz"), "--json"]);
        assert!(code.is_some_and(|c| c <= 1), "{doc}");
        assert_valid("import-foz", &doc, &["import-foz"]);
    }

    // A command that cannot run still answers in JSON: bad arguments, an unwritable output.
    let e = valid("error", &["harvest", EXAMPLE, "-o", &p("no/such/folder/o.granary"), "--json"], 2);
    assert!(e["error"]["message"].as_str().unwrap().contains("no/such/folder"), "{e}");
    assert_eq!(e["error"]["exit_status"], 2);
    let e = valid("error", &["harvest", EXAMPLE, "--json", "--no-such-flag"], 2);
    assert!(e["error"]["message"].as_str().unwrap().contains("--no-such-flag"), "{e}");
    let v = valid("verify", &["verify", &p("missing.granary"), "--json"], 1);
    assert_eq!(v["archives"][0]["ok"], false, "{v}");
}

/// With a Vulkan device: `devices`, a harvest on the device (its `device` object), `warm`.
#[test]
fn device_outputs_match_their_schemas() {
    let bin = Path::new(env!("CARGO_BIN_EXE_granary"));
    if common::vulkan_device(bin).is_none() {
        return;
    }
    let dir = common::tempdir();
    let archive = dir.path().join("v.granary");
    let archive = archive.to_str().unwrap();
    valid("devices", &["devices", "--json"], 0);
    let script = common::copy_example(dir.path());
    let h = valid(
        "harvest",
        &["harvest", script.to_str().unwrap(), "-o", archive, "--backend", "vulkan", "--json", "-q", "-j", "2"],
        0,
    );
    assert!(h["device"].is_object(), "{h}");
    valid("warm", &["warm", archive, "--json", "-j", "2"], 0);
    let small = ["--pipelines", "30", "--vertex-functions", "10", "--max-run", "5", "-j", "2"];
    let b = valid("bench", &[&["bench", "--backend", "vulkan", "--json"][..], &small].concat(), 0);
    assert_eq!(b["report"], "vulkan", "{b}");
}

/// Every schema in docs/schemas is a JSON document naming its command and the version.
#[test]
fn every_schema_names_its_command_and_version() {
    let mut names = Vec::new();
    for e in std::fs::read_dir(schemas_dir()).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().strip_suffix(".schema.json").unwrap().to_string();
        let root = schema(&name);
        // A command with several documents (bench) lists them under oneOf.
        let documents: Vec<&Value> = match root.get("oneOf").and_then(Value::as_array) {
            Some(branches) => branches
                .iter()
                .map(|b| &root["$defs"][b["$ref"].as_str().unwrap().strip_prefix("#/$defs/").unwrap()])
                .collect(),
            None => vec![&root],
        };
        for s in documents {
            assert_eq!(s["properties"]["schema_version"]["const"], 1, "{name}");
            assert_eq!(s["additionalProperties"], false, "{name}: every field is declared");
            if name != "error" {
                assert_eq!(s["properties"]["command"]["const"], name, "{name}");
            }
        }
        names.push(name);
    }
    names.sort();
    for needed in [
        "bench",
        "devices",
        "error",
        "export-mtl4",
        "gen",
        "harvest",
        "import-foz",
        "plan",
        "prune",
        "salvage",
        "stress",
        "verify",
        "warm",
    ] {
        assert!(names.iter().any(|n| n == needed), "docs/schemas/{needed}.schema.json is missing");
    }
}

/// The validator refuses what the schemas forbid: an undeclared field, a missing one, a
/// wrong type, a wrong constant (so a passing check above means something).
#[test]
fn the_validator_refuses_what_the_schemas_forbid() {
    let root = schema("error");
    let good =
        serde_json::json!({"schema_version": 1, "command": "harvest", "error": {"message": "m", "exit_status": 2}});
    let errors = |doc: &Value| {
        let mut e = Vec::new();
        check(&root, &root, doc, "$", &mut e);
        e
    };
    assert!(errors(&good).is_empty(), "{:?}", errors(&good));
    let mut extra = good.clone();
    extra["surprise"] = 1.into();
    assert!(errors(&extra).iter().any(|e| e.contains("surprise")));
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("error");
    assert!(errors(&missing).iter().any(|e| e.contains("missing required field 'error'")));
    let mut typed = good.clone();
    typed["error"]["exit_status"] = "2".into();
    assert!(errors(&typed).iter().any(|e| e.contains("exit_status")));
    let mut version = good;
    version["schema_version"] = 2.into();
    assert!(errors(&version).iter().any(|e| e.contains("schema_version")));
    // oneOf: a bench document that is neither report.
    let bench = schema("bench");
    let mut e = Vec::new();
    check(&bench, &bench, &serde_json::json!({"schema_version": 1, "command": "bench", "report": "nope"}), "$", &mut e);
    assert!(e.iter().any(|e| e.contains("matches 0 of 2 oneOf branches")), "{e:?}");
}

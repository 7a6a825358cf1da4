//! Output validation (issue 22): every SPIR-V and GLSL output is checked by its target's own
//! validator before it is archived. The three WGSL shapes naga writes invalid code for land
//! without the bad target, with a `target` failure carrying the validator's message; `--isolate`
//! archives the same bytes; `off` archives what the writers produced; `require` refuses to start
//! without `spirv-val`, before anything compiles.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use granary::archive::Archive;
use granary::descriptor::Target;
use std::path::{Path, PathBuf};

/// `textureNumLayers` of a storage texture array: naga's SPIR-V uses `OpImageQuerySizeLod` on a
/// storage image (VUID-StandaloneSpirv-OpImageQuerySizeLod-04659) and its GLSL an `imageSize`
/// overload glslang does not have.
const LAYERS: &str = "@group(0) @binding(0) var img: texture_storage_2d_array<rgba8unorm, write>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1) fn main() { out[0] = textureNumLayers(img); }";
/// A `bgra8unorm` storage read: naga's SPIR-V reads an image of unknown format without the
/// `StorageImageReadWithoutFormat` capability.
const BGRA: &str = "@group(0) @binding(0) var img: texture_storage_2d<bgra8unorm, read>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
@compute @workgroup_size(1) fn main() { out[0] = textureLoad(img, vec2<i32>(0, 0)); }";
/// A fragment stage SPIR-V and MSL refuse (`primitive_index` is outside the default profile)
/// whose vertex stage every target writes: the pipeline lands with GLSL only.
const PRIM: &str = "enable primitive_index;
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> { return vec4<f32>(f32(i), 0.0, 0.0, 1.0); }
@fragment fn fs(@builtin(primitive_index) p: u32) -> @location(0) vec4<f32> { return vec4<f32>(f32(p), 0.0, 0.0, 1.0); }";
const GOOD: &str = "@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1) fn main() { out[0] = 1u; }";

const TARGETS: &str = "spirv,glsl,msl";

fn script(dir: &Path) -> PathBuf {
    let compute = |label: &str| serde_json::json!({"label": label, "compute": {"function": {"library": label, "function": "main"}}});
    let s = serde_json::json!({
        "granary_script": 1,
        "libraries": [
            {"name": "layers", "kind": "wgsl", "source": LAYERS},
            {"name": "bgra", "kind": "wgsl", "source": BGRA},
            {"name": "prim", "kind": "wgsl", "source": PRIM},
            {"name": "good", "kind": "wgsl", "source": GOOD}
        ],
        "pipelines": [
            compute("layers"),
            compute("bgra"),
            {"label": "prim", "render": {
                "vertex": {"library": "prim", "function": "vs"},
                "fragment": {"library": "prim", "function": "fs"},
                "primitive": {"topology": "triangle-list"},
                "color_attachments": [{"format": "rgba8unorm"}]
            }},
            compute("good")
        ]
    });
    let path = dir.join("s.json");
    std::fs::write(&path, serde_json::to_string_pretty(&s).unwrap()).unwrap();
    path
}

fn granary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_granary"))
}

fn harvest(dir: &Path, out: &str, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut all = vec!["--targets", TARGETS];
    all.extend(args);
    common::harvest_with_fault(granary(), &script(dir), &dir.join(out), &all, "")
}

/// Which of `targets` pipeline `label` of `archive` has for every stage.
fn archived(archive: &Path, label: &str) -> Vec<Target> {
    let a = Archive::open(archive).unwrap();
    let p = a.lookup_label(label).unwrap().unwrap_or_else(|| panic!("{label} is not archived"));
    let stages = p.stages().unwrap();
    [Target::Spirv, Target::Glsl, Target::Msl]
        .into_iter()
        .filter(|t| stages.iter().all(|s| s.output(*t).unwrap().is_some()))
        .collect()
}

/// The lost-target records as (pipeline, target, kind, message).
fn lost(s: &serde_json::Value) -> Vec<(String, String, String, String)> {
    let mut v: Vec<_> = s["lost_targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            assert_eq!(l["phase"], "target", "{l}");
            let text = |k: &str| l[k].as_str().unwrap_or_default().to_string();
            (text("pipeline"), text("target"), text("kind"), text("message"))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn outputs_a_validator_rejects_are_lost_targets_never_archived() {
    if !common::tool_available("spirv-val", "spirv-tools") {
        return;
    }
    let dir = common::tempdir();
    let (code, s) = harvest(dir.path(), "checked.granary", &[]);
    // Every pipeline lands; lost targets make the harvest exit 1.
    assert_eq!((code, &s["succeeded"], &s["failed"]), (Some(1), &4.into(), &0.into()), "{s}");
    let records = lost(&s);
    let find = |p: &str, t: &str| {
        records.iter().find(|l| l.0 == p && l.1 == t).unwrap_or_else(|| panic!("no lost {t} for {p}: {records:?}"))
    };
    let (_, _, kind, m) = find("layers", "spirv");
    assert_eq!(kind, "invalid");
    assert!(
        m.starts_with("spirv-val --target-env vulkan1.1 rejects") && m.contains("OpImageQuerySizeLod-04659"),
        "{m}"
    );
    let (_, _, kind, m) = find("layers", "glsl");
    assert_eq!(kind, "invalid");
    assert!(m.starts_with("glslang rejects") && m.contains("imageSize"), "{m}");
    let (_, _, kind, m) = find("bgra", "spirv");
    assert_eq!(kind, "invalid");
    assert!(m.contains("StorageImageReadWithoutFormat"), "{m}");
    // The fragment stage SPIR-V refuses costs the pipeline SPIR-V, reported once.
    assert_eq!(records.iter().filter(|l| l.0 == "prim" && l.1 == "spirv").count(), 1, "{records:?}");
    assert!(!records.iter().any(|l| l.0 == "good"), "{records:?}");

    let out = dir.path().join("checked.granary");
    assert_eq!(archived(&out, "layers"), [Target::Msl]);
    assert_eq!(archived(&out, "bgra"), [Target::Msl]);
    assert_eq!(archived(&out, "prim"), [Target::Glsl]);
    assert_eq!(archived(&out, "good"), [Target::Spirv, Target::Glsl, Target::Msl]);

    // The summary names the validators and counts the checks: every distinct SPIR-V and GLSL
    // output checked once, three rejected.
    let checks = &s["output_checks"];
    assert_eq!(checks["mode"], "auto", "{checks}");
    let stats = &checks["stats"];
    assert_eq!(stats["rejected"], 3, "{checks}");
    assert!(stats["checked"].as_u64().unwrap() >= 6 && stats["wall_ns"].as_u64().unwrap() > 0, "{checks}");
    let coverage = |t: &str| checks["targets"].as_array().unwrap().iter().find(|c| c["target"] == t).cloned().unwrap();
    // SPIRV-Tools linked into the build when it found the library, else the program.
    let spirv_by = coverage("spirv")["validator"].as_str().unwrap().to_string();
    assert!(
        spirv_by.contains("SPIRV-Tools") && spirv_by.ends_with("(linked in)") || spirv_by.contains("spirv-val"),
        "{checks}"
    );
    assert!(coverage("glsl")["validator"].as_str().unwrap().contains("glslang"), "{checks}");
    assert!(coverage("msl")["unchecked_because"].as_str().unwrap().contains("Metal"), "{checks}");

    // --isolate: the workers check, and the archive is the same bytes.
    let (code, i) = harvest(dir.path(), "isolated.granary", &["--isolate"]);
    assert_eq!((code, &i["succeeded"]), (Some(1), &4.into()), "{i}");
    assert_eq!(lost(&i), lost(&s));
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(dir.path().join("isolated.granary")).unwrap());

    // off: what the writers produced is archived, unchecked.
    let (_, o) = harvest(dir.path(), "unchecked.granary", &["--check-outputs", "off"]);
    assert_eq!(o["output_checks"]["stats"]["checked"], 0, "{o}");
    let unchecked = dir.path().join("unchecked.granary");
    assert_eq!(archived(&unchecked, "layers"), [Target::Spirv, Target::Glsl, Target::Msl]);
    assert_eq!(archived(&unchecked, "bgra"), [Target::Spirv, Target::Msl]);
}

/// SPIRV-Tools linked in and its `spirv-val` program give the same verdicts: the archive is
/// the same bytes whichever checks, and the summary names which did.
#[test]
fn the_linked_validator_and_the_program_give_the_same_archive() {
    if !common::tool_available("spirv-val", "spirv-tools") {
        return;
    }
    // A bare name in GRANARY_SPIRV_VAL is the program, looked up on PATH.
    let program = Path::new("spirv-val");
    let dir = common::tempdir();
    let run = |out: &str, program: Option<&Path>| {
        let mut c = std::process::Command::new(granary());
        c.args(["harvest", script(dir.path()).to_str().unwrap(), "-o"]).arg(dir.path().join(out)).args([
            "--json",
            "--targets",
            TARGETS,
        ]);
        match program {
            Some(p) => c.env("GRANARY_SPIRV_VAL", p),
            None => c.env_remove("GRANARY_SPIRV_VAL"),
        };
        let o = c.output().unwrap();
        let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let by = s["output_checks"]["targets"].as_array().unwrap().iter().find(|c| c["target"] == "spirv").cloned();
        (lost(&s), by.unwrap()["validator"].as_str().unwrap().to_string())
    };
    let (linked, linked_by) = run("default.granary", None);
    let (by_program, program_by) = run("program.granary", Some(program));
    assert!(program_by.starts_with("spirv-val"), "{program_by}");
    assert_eq!(linked.iter().filter(|l| l.2 == "invalid").count(), 3, "{linked:?}");
    assert_eq!(linked, by_program, "{linked_by} and {program_by} disagree");
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    assert_eq!(read("default.granary"), read("program.granary"));
}

#[test]
fn require_refuses_to_start_without_spirv_val_and_auto_says_what_went_unchecked() {
    let dir = common::tempdir();
    let run = |out: &str, mode: &str| {
        std::process::Command::new(granary())
            .args(["harvest", script(dir.path()).to_str().unwrap(), "-o"])
            .arg(dir.path().join(out))
            .args(["--json", "--targets", TARGETS, "--check-outputs", mode])
            .env("GRANARY_SPIRV_VAL", "/nonexistent/spirv-val")
            .output()
            .unwrap()
    };
    let o = run("required.granary", "require");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--check-outputs require")
            && err.contains("spirv: the SPIR-V validator GRANARY_SPIRV_VAL names /nonexistent/spirv-val"),
        "{err}"
    );
    assert!(!dir.path().join("required.granary").exists(), "nothing is written");
    // auto: the harvest runs, SPIR-V is archived unchecked and the summary says why.
    let o = run("auto.granary", "auto");
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let spirv =
        s["output_checks"]["targets"].as_array().unwrap().iter().find(|c| c["target"] == "spirv").cloned().unwrap();
    assert!(spirv["validator"].is_null(), "{spirv}");
    assert!(spirv["unchecked_because"].as_str().unwrap().contains("/nonexistent/spirv-val"), "{spirv}");
    assert_eq!(archived(&dir.path().join("auto.granary"), "layers"), [Target::Spirv, Target::Msl]);
}

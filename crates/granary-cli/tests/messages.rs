//! What the binary says when things go wrong (issue 23 item 5) and the numbers it reports
//! (item 6): failures grouped by cause, long lists capped, each OS error once, refusals that
//! name what differs, and counts that say what they count.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::{copy_example, EXAMPLE};
use std::process::Command;

fn granary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_granary")).args(args).output().expect("run granary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One missing shader file is one cause: the text summary says it once with the pipelines it
/// cost counted (not a line per pipeline), names the first pipeline's place in the script, and
/// the OS error appears once; `--json` still has every failure, each with that cause.
#[test]
fn a_missing_library_is_one_cause_with_its_pipelines_counted() {
    let dir = common::tempdir();
    let script = copy_example(dir.path());
    std::fs::remove_file(script.parent().unwrap().join("shaders/mesh_static.wgsl")).unwrap();
    let out = dir.path().join("o.granary");
    let args = ["harvest", script.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "--check-outputs", "off"];
    let o = granary(&args);
    assert_eq!(o.status.code(), Some(1));
    let stderr = text(&o.stderr);
    let j = granary(&[&args[..], &["--json"]].concat());
    let s: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    let failures = s["failures"].as_array().unwrap();
    let failed = s["failed"].as_u64().unwrap() as usize;
    assert!(failed > 100 && failures.len() == failed, "{s}");
    let cause = failures[0]["cause"].as_str().unwrap();
    assert!(cause.starts_with("library 'mesh_static' is unavailable: cannot read library file"), "{cause}");
    assert!(failures.iter().all(|f| f["cause"] == cause), "one cause for all");
    assert!(stderr.contains(&format!("failed:                {failed}, all for one cause")), "{stderr}");
    assert!(stderr.contains(&format!("{failed} pipelines: {cause}")), "{stderr}");
    assert!(stderr.contains(&format!("and {} more", failed - 3)), "{stderr}");
    assert_eq!(stderr.matches("os error 2").count(), 1, "{stderr}");
    assert!(stderr.lines().count() < 20, "{} lines:\n{stderr}", stderr.lines().count());
    // The first failure's place: the `library` value of pipelines[0]'s vertex function.
    let first = &failures[0];
    assert_eq!(first["json_path"], "pipelines[0].render.vertex.library");
    let (line, column) = (first["line"].as_u64().unwrap(), first["column"].as_u64().unwrap());
    let script_text = std::fs::read_to_string(&script).unwrap();
    let at = script_text.lines().nth(line as usize - 1).unwrap();
    assert!(at[column as usize - 1..].starts_with("\"mesh_static\""), "{line}:{column} is {at:?}");
}

/// Many different causes: at most ten are listed, the rest counted.
#[test]
fn more_than_ten_causes_are_counted_not_listed() {
    let dir = common::tempdir();
    let pipelines: Vec<_> = (0..14)
        .map(|k| serde_json::json!({"label": format!("p{k}"), "compute": {"function": {"library": format!("missing{k}"), "function": "main"}}}))
        .collect();
    let libraries: Vec<_> =
        (0..14).map(|k| serde_json::json!({"name": format!("missing{k}"), "path": format!("gone{k}.wgsl")})).collect();
    let script = dir.path().join("s.json");
    std::fs::write(
        &script,
        serde_json::json!({"granary_script": 1, "libraries": libraries, "pipelines": pipelines}).to_string(),
    )
    .unwrap();
    let out = dir.path().join("o.granary");
    let o = granary(&["harvest", script.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    let stderr = text(&o.stderr);
    assert!(stderr.contains("failed:                14\n"), "{stderr}");
    assert!(stderr.contains("… and 4 more causes (4 pipelines)"), "{stderr}");
    assert_eq!(stderr.matches("cannot read library file").count(), 10, "{stderr}");
}

/// An unknown library says where it is named (line and column of the value) and which
/// libraries the script has, with the likely one first.
#[test]
fn an_unknown_library_names_its_place_and_the_known_ones() {
    let dir = common::tempdir();
    let script = dir.path().join("s.json");
    let body = r#"{"granary_script": 1,
  "libraries": [{"name": "mesh_static", "source": "@compute @workgroup_size(1) fn main() {}", "kind": "wgsl"},
                {"name": "post", "source": "@compute @workgroup_size(1) fn main() {}", "kind": "wgsl"}],
  "pipelines": [
    {"label": "a", "compute": {"function": {"library": "mesh_statc", "function": "main"}}}
  ]}"#;
    std::fs::write(&script, body).unwrap();
    let out = dir.path().join("o.granary");
    let o = granary(&["harvest", script.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    let stderr = text(&o.stderr);
    let line = body.lines().position(|l| l.contains("mesh_statc")).unwrap() + 1;
    let column = body.lines().nth(line - 1).unwrap().find("\"mesh_statc\"").unwrap() + 1;
    let expect = format!(
        "s.json:{line}:{column}: pipelines[0].compute.function.library: unknown library 'mesh_statc' (did you mean \
         'mesh_static'?); the script's libraries are 'mesh_static', 'post'"
    );
    assert!(stderr.contains(&expect), "expected {expect}\n{stderr}");
}

/// `prune` against a script that produces almost none of the archive is refused and writes
/// nothing (it is most likely the wrong script); `--force` prunes anyway. A long list of
/// missing pipelines is capped.
#[test]
fn prune_against_another_script_is_refused_unless_forced() {
    let dir = common::tempdir();
    let archive = dir.path().join("a.granary");
    assert!(granary(&["harvest", EXAMPLE, "-o", archive.to_str().unwrap(), "-q", "--check-outputs", "off"])
        .status
        .success());
    let other = dir.path().join("other.json");
    let pipelines: Vec<_> = (0..30)
        .map(|k| serde_json::json!({"label": format!("c{k}"), "compute": {"function": {"library": "l", "function": "main"}}}))
        .collect();
    let lib = serde_json::json!({"name": "l", "kind": "wgsl", "source": "@compute @workgroup_size(1) fn main() {}"});
    std::fs::write(
        &other,
        serde_json::json!({"granary_script": 1, "libraries": [lib], "pipelines": pipelines}).to_string(),
    )
    .unwrap();
    let out = dir.path().join("pruned.granary");
    let prune = |extra: &[&str]| {
        granary(
            &[
                &["prune", archive.to_str().unwrap(), "--script", other.to_str().unwrap(), "-o"][..],
                &[out.to_str().unwrap()],
                extra,
            ]
            .concat(),
        )
    };
    let o = prune(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    let stderr = text(&o.stderr);
    assert!(stderr.contains("it would drop 335 of its 335 pipelines (keeping 0)"), "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    assert!(!out.exists(), "a refused prune writes nothing");
    let o = prune(&["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(out.exists());
    let stdout = text(&o.stdout);
    assert_eq!(stdout.matches("  missing: ").count(), 10, "{stdout}");
    assert!(stdout.contains("… and 20 more missing"), "{stdout}");
}

/// A resume with other `--targets` names the option that differs and the value to resume
/// with, in a line that reads (not two writer-option strings).
#[test]
fn a_resume_with_other_targets_names_the_option() {
    let dir = common::tempdir();
    let out = dir.path().join("a.granary");
    let run = |extra: &[&str]| {
        granary(
            &[&["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "-q", "--check-outputs", "off"][..], extra].concat(),
        )
    };
    assert!(run(&[]).status.success());
    let o = run(&["--resume", "--targets", "spirv,msl"]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = text(&o.stderr);
    assert!(stderr.contains("requested targets spirv vs spirv,msl"), "{stderr}");
    assert!(stderr.contains("resume with --targets spirv --profile default"), "{stderr}");
    assert!(stderr.len() < 500, "{} characters: {stderr}", stderr.len());
    let o = run(&["--resume", "--profile", "vulkan1.3"]);
    let stderr = text(&o.stderr);
    assert!(stderr.contains("profile default vs vulkan1.3") && stderr.contains("--profile default"), "{stderr}");
}

/// An OS error in a refusal before compiling is printed once.
#[test]
fn an_os_error_is_printed_once() {
    let dir = common::tempdir();
    let out = dir.path().join("no/such/folder/o.granary");
    let o = granary(&["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = text(&o.stderr);
    assert!(stderr.matches("(os error").count() <= 1, "{stderr}");
    let damaged = dir.path().join("missing.granary");
    let o = granary(&["ls", damaged.to_str().unwrap()]);
    let stderr = text(&o.stderr);
    assert_eq!(stderr.matches("os error 2").count(), 1, "{stderr}");
}

/// `verify` of a damaged archive names the file once per line.
#[test]
fn verify_names_the_file_once() {
    let dir = common::tempdir();
    let archive = dir.path().join("a.granary");
    assert!(granary(&["harvest", EXAMPLE, "-o", archive.to_str().unwrap(), "-q", "--check-outputs", "off"])
        .status
        .success());
    let mut bytes = std::fs::read(&archive).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&archive, bytes).unwrap();
    let o = granary(&["verify", archive.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let stdout = text(&o.stdout);
    let shown = archive.display().to_string();
    for line in stdout.lines() {
        assert!(line.matches(&shown).count() <= 1, "{line}");
    }
    assert!(stdout.contains("FAILED"), "{stdout}");
}

/// Labels of identical pipelines share one archive entry: the summary says so instead of
/// reporting "4 of 4 pipelines … 3 pipelines"; the CPU figure is against the cores used.
#[test]
fn shared_keys_and_cores_are_said() {
    let dir = common::tempdir();
    let script = dir.path().join("s.json");
    let lib = serde_json::json!({"name": "l", "kind": "wgsl", "source": "@compute @workgroup_size(1) fn main() {}\n@compute @workgroup_size(1) fn other() {}"});
    let p = |label: &str, f: &str| serde_json::json!({"label": label, "compute": {"function": {"library": "l", "function": f}}});
    std::fs::write(
        &script,
        serde_json::json!({"granary_script": 1, "libraries": [lib], "pipelines": [p("a", "main"), p("b", "main"), p("c", "other")]})
            .to_string(),
    )
    .unwrap();
    let out = dir.path().join("o.granary");
    let o = granary(&["harvest", script.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "-j", "64"]);
    assert!(o.status.success());
    let stderr = text(&o.stderr);
    assert!(stderr.contains("harvested 3 of 3 pipelines"), "{stderr}");
    assert!(
        stderr.contains("2 pipelines distinct (labels of identical pipelines share one entry: 3 labels, 2 entries)"),
        "{stderr}"
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(stderr.contains(&format!("64 threads on {cores} cores")), "{stderr}");
}

/// `export-mtl4` prints one line per kind of field Metal keeps elsewhere, with the pipelines
/// counted, not one per pipeline and field.
#[test]
fn export_mtl4_groups_what_it_does_not_carry() {
    let dir = common::tempdir();
    let out = dir.path().join("p.mtl4-json");
    let o = granary(&["export-mtl4", EXAMPLE, "-o", out.to_str().unwrap()]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(stdout.lines().count() <= 13, "{stdout}");
    let j = granary(&["export-mtl4", EXAMPLE, "-o", out.to_str().unwrap(), "--json"]);
    let s: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    let dropped: usize =
        s["exported"].as_array().unwrap().iter().map(|p| p["not_carried"].as_array().unwrap().len()).sum();
    assert!(dropped > 100, "the example has fields Metal keeps elsewhere: {dropped}");
    assert!(stdout.contains("not carried: "), "{stdout}");
}

/// The pipelines script README.md shows inline harvests as printed (issue 23 item 10).
#[test]
fn the_readme_script_harvests_as_printed() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let after = readme.split("<!-- readme-script:").nth(1).expect("README marks its inline script");
    let body = after.split("```json\n").nth(1).and_then(|b| b.split("\n```").next()).expect("a json block");
    let dir = common::tempdir();
    let script = dir.path().join("s.json");
    std::fs::write(&script, body).unwrap();
    let out = dir.path().join("game.granary");
    let o = granary(&["harvest", script.to_str().unwrap(), "-o", out.to_str().unwrap(), "--json", "-q"]);
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((o.status.code(), &s["succeeded"], &s["failed"]), (Some(0), &2.into(), &0.into()), "{s}");
    let ar = granary::archive::Archive::read(&out).unwrap();
    assert!(ar.lookup_label("triangle").unwrap().is_some() && ar.lookup_label("clear").unwrap().is_some());
}

//! `granary stress --backend vulkan`: every race mode against a real Vulkan driver (lavapipe on
//! a machine without a GPU). Skipped, saying so on stderr, where no Vulkan device exists;
//! failing instead when `GRANARY_REQUIRE_VULKAN=1`.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use std::process::Command;

fn granary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_granary"))
}

/// Whether a Vulkan device exists (else one `SKIPPED` line, or a failure under
/// `GRANARY_REQUIRE_VULKAN=1`): the suite's shared check.
fn vulkan_device_available() -> bool {
    common::vulkan_device(std::path::Path::new(env!("CARGO_BIN_EXE_granary"))).is_some()
}

/// All five modes on the driver, two threads, a small workload: no violation, exit 0, and the
/// JSON report names the backend and device, lists the device checks and shows each pipeline
/// created on the driver once per mode.
#[test]
fn stress_all_modes_on_vulkan_holds_every_invariant() {
    if !vulkan_device_available() {
        return;
    }
    let t = std::time::Instant::now();
    let o = granary()
        .args(["stress", "--mode", "all", "--backend", "vulkan", "-j", "2", "--pipelines", "120", "--json"])
        .output()
        .unwrap();
    eprintln!("granary stress --mode all --backend vulkan -j 2 --pipelines 120: {:.1} s", t.elapsed().as_secs_f64());
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let reports = v["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 5);
    for r in reports {
        let mode = r["mode"].as_str().unwrap();
        assert!(r["violations"].as_array().unwrap().is_empty(), "{mode}: {:?}", r["violations"]);
        assert_eq!(r["backend"], "vulkan", "{mode}");
        assert!(r["device"].as_str().is_some_and(|d| !d.is_empty()), "{mode}: {}", r["device"]);
        let pipelines = r["pipelines"].as_u64().unwrap();
        let rejected = r["device_rejected"]["count"].as_u64().unwrap();
        assert_eq!(pipelines + rejected, 120, "{mode}");
        assert!(pipelines >= 60, "{mode}: the device rejected {rejected} of 120 pipelines");
        assert_eq!(r["compiles"].as_u64(), Some(pipelines), "{mode}");
        assert_eq!(r["driver_creates"].as_u64(), Some(pipelines), "{mode}");
        let checks: Vec<&str> = r["checks"].as_array().unwrap().iter().filter_map(|c| c.as_str()).collect();
        assert!(checks.iter().any(|c| c.contains("one binary set per pipeline")), "{mode}: {checks:?}");
        assert!(checks.iter().any(|c| c.contains("LIBRARY flag")), "{mode}: {checks:?}");
        // Cache-data devices (lavapipe) must still give a byte-identical archive.
        let whole = checks.iter().any(|c| c.contains("device section and cache data included"));
        assert_eq!(whole, r["captures"] == "cache-data", "{mode}: {checks:?}");
    }
}

/// `--device` and the other device options need `--backend vulkan`.
#[test]
fn stress_device_options_need_the_vulkan_backend() {
    let o = granary().args(["stress", "--mode", "rotate", "--pipelines", "10", "--device", "0"]).output().unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("need --backend vulkan"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A workload of whole pipelines and graphics pipeline libraries (every other pipeline's
/// colour attachments specialized) through `--script`: the driver's LIBRARY flags are checked
/// on both sides and every invariant holds.
#[test]
fn stress_vulkan_mixed_libraries_and_whole_pipelines() {
    if !vulkan_device_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w");
    let o = granary().args(["gen", "seed-scale", "--pipelines", "60", "--seed", "4", "-o"]).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let script = out.join("pipelines.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&script).unwrap()).unwrap();
    let mut specialized = 0;
    for (i, p) in v["pipelines"].as_array_mut().unwrap().iter_mut().enumerate() {
        if i % 2 == 0 {
            for c in p["render"]["color_attachments"].as_array_mut().unwrap() {
                *c = serde_json::json!({"format": "rgba16float", "blend": "off", "write_mask": "rgba"});
            }
            specialized += 1;
        }
    }
    assert!(specialized > 0);
    std::fs::write(&script, serde_json::to_vec(&v).unwrap()).unwrap();
    let o = granary()
        .args(["stress", "--mode", "rotate", "--mode", "seed-mix", "--backend", "vulkan", "-j", "2", "--json"])
        .arg("--script")
        .arg(&script)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for r in v["reports"].as_array().unwrap() {
        assert!(r["violations"].as_array().unwrap().is_empty(), "{}: {:?}", r["mode"], r["violations"]);
        let pipelines = r["pipelines"].as_u64().unwrap();
        assert!(pipelines >= 40, "{}: only {pipelines} of 60 pipelines kept", r["mode"]);
        assert_eq!(r["driver_creates"].as_u64(), Some(pipelines));
    }
}

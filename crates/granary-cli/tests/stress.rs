//! Every race mode at a small size: all invariants hold.

use granary_lab::stress::{run, Mode, StressOptions};

#[test]
fn every_race_mode_holds_its_invariants() {
    for mode in Mode::ALL {
        let r = run(&StressOptions {
            mode,
            threads: 4,
            script: None,
            pipelines: 300,
            seconds: None,
            seed: 7,
            rotate_every: Some(40),
            work_dir: None,
            backend: None,
        })
        .expect("stress run");
        assert!(r.violations.is_empty(), "{}: {:?}", mode.name(), r.violations);
        assert_eq!(r.compiles, 300);
        match mode {
            Mode::FlushDuringCompile | Mode::Rotate | Mode::PerThread | Mode::SeedMix => {
                assert!(
                    r.writes >= 2 && r.writes_checked == r.writes,
                    "{}: {} writes, {} checked",
                    mode.name(),
                    r.writes,
                    r.writes_checked
                )
            }
            Mode::SharedVertex => {}
        }
    }
}

#[test]
fn stress_cli_reports_and_exits_zero() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["stress", "--mode", "rotate", "--mode", "per-thread", "-j", "3", "--pipelines", "120", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = &doc["reports"];
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert!(v[0]["violations"].as_array().unwrap().is_empty());
    assert_eq!(v[0]["backend"], "none");
    assert!(v[0]["device"].is_null());
}

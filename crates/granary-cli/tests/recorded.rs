//! `granary harvest --add-recorded` (issue 25 item 4) through the binary, on the bundled
//! example with the `none` backend: a game's use record (written by
//! `granary_archive::record::Recorder`, torn at the end as a kill leaves it) is merged into
//! the script in first-use order — the script's own text kept, each pipeline once, what cannot
//! be added listed — and the archive then carries the `recorded/` labels; merging it again
//! changes nothing. The create-info half (a miss described in full, harvested and found on a
//! driver) is `granary-vulkan/tests/native.rs`.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use granary_archive::record::{Recorder, RecorderOptions};
use granary_archive::Archive;
use std::path::Path;
use std::process::Command;

fn harvest(script: &Path, out: &Path, record: &Path) -> (serde_json::Value, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["harvest", script.to_str().unwrap(), "-o", out.to_str().unwrap(), "--json", "-q", "--add-recorded"])
        .arg(record)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "harvest failed: {stderr}");
    (serde_json::from_slice(&o.stdout).unwrap(), stderr)
}

#[test]
fn recorded_uses_join_the_script_in_first_use_order_once() {
    let dir = common::tempdir();
    let script = common::copy_example(dir.path());
    let original = std::fs::read_to_string(&script).unwrap();
    let first = dir.path().join("first.granary");
    let st = Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["harvest", script.to_str().unwrap(), "-q", "-o", first.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(st.success());
    let archive = Archive::open(&first).unwrap();
    let labels = archive.labels().unwrap();
    let (a, b) = (labels[0].0.to_string(), labels[labels.len() - 1].0.to_string());
    let key = |l: &str| archive.lookup_label(l).unwrap().unwrap().key();
    assert_ne!(key(&a), key(&b));

    // The game: `b` used first (by key), then `a` (by label), a label nobody harvested.
    let record = dir.path().join("game.record");
    {
        let r = Recorder::open(&record, RecorderOptions::default()).unwrap();
        r.used(key(&b), None);
        r.used(key(&a), Some(&a));
        r.used(key(&b), None);
        r.missed(None, Some("ui/not-harvested"));
    }
    let mut torn = std::fs::read(&record).unwrap();
    torn.extend_from_slice(&[9, 0, 0, 0, 1, 0]);
    std::fs::write(&record, &torn).unwrap();

    let out = dir.path().join("game.granary");
    let (summary, _) = harvest(&script, &out, &record);
    let r = &summary["recorded"];
    assert_eq!((r["labelled"].as_u64(), r["described"].as_u64(), r["already"].as_u64()), (Some(2), Some(0), Some(0)));
    assert_eq!(r["not_added"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["not_added"][0]["label"], "ui/not-harvested");
    assert_eq!(r["damaged"].as_array().unwrap().len(), 1, "the torn tail is reported: {r}");
    let merged = std::fs::read_to_string(&script).unwrap();
    assert!(merged.len() > original.len());
    let cut = original.trim_end().trim_end_matches('}').trim_end().trim_end_matches(']').trim_end().len();
    assert!(merged.starts_with(&original[..cut]) && merged.ends_with(&original[cut..]), "the script's text is kept");
    let archive2 = Archive::open(&out).unwrap();
    assert_eq!(archive2.len(), archive.len(), "a recorded label shares its pipeline's entry");
    assert_eq!(archive2.lookup_label("recorded/000001").unwrap().unwrap().key(), key(&b));
    assert_eq!(archive2.lookup_label("recorded/000002").unwrap().unwrap().key(), key(&a));
    assert!(archive2.lookup_label("recorded/000003").unwrap().is_none());

    // Again: nothing added, the script untouched.
    let (summary, stderr) = harvest(&script, &out, &record);
    assert_eq!(summary["recorded"]["already"], 2, "{stderr}");
    assert_eq!(summary["recorded"]["labelled"], 0);
    assert_eq!(std::fs::read_to_string(&script).unwrap(), merged);

    // A file that is not a record: refused before anything is written, named.
    let o = Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["harvest", script.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "--add-recorded"])
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("not a granary use record") && stderr.contains("pipelines.json"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&script).unwrap(), merged);
}

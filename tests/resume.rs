//! Durability: resume, kill at random moments, salvage.

mod common;

use granary::archive::{self, Archive};
use granary::script::Script;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/renderer/pipelines.json");

fn granary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_granary"))
}

fn reference(dir: &Path) -> Vec<u8> {
    reference_timed(dir).0
}

/// The uninterrupted harvest's bytes, and how long a harvest with slowed writes takes.
fn reference_timed(dir: &Path) -> (Vec<u8>, Duration) {
    let out = dir.join("reference.granary");
    let st = granary().args(["harvest", EXAMPLE, "-q", "-o", out.to_str().unwrap()]).stderr(Stdio::null()).status().unwrap();
    assert!(st.success());
    let timed = dir.join("timed.granary");
    let t0 = Instant::now();
    let st = granary()
        .args(["harvest", EXAMPLE, "-q", "-o", timed.to_str().unwrap(), "--flush-every", "15", "-j", "2"])
        .env("GRANARY_FAULT", "slow-write:10")
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let took = t0.elapsed();
    std::fs::remove_file(timed).unwrap();
    (std::fs::read(out).unwrap(), took)
}

#[test]
fn resume_from_a_partial_archive_gives_the_uninterrupted_bytes() {
    let dir = common::tempdir();
    let full = reference(dir.path());
    // A partial archive: the first 100 pipelines of the reference.
    let ar = Archive::from_bytes(full.clone()).unwrap();
    let entries = ar.entries().unwrap();
    let out = dir.path().join("partial.granary");
    archive::write_entries(&out, &entries[..100], &archive::ArchiveMeta::portable()).unwrap();
    let o = granary().args(["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--resume", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["resumed"], 100);
    assert_eq!(std::fs::read(&out).unwrap(), full);

    // A damaged archive is not resumed from: the user is told, nothing is overwritten.
    let mut bad = full.clone();
    bad[full.len() / 3] ^= 1;
    std::fs::write(&out, &bad).unwrap();
    let o = granary().args(["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--resume"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot resume"));
    assert_eq!(std::fs::read(&out).unwrap(), bad);
}

/// Kills the harvester with SIGKILL at random moments (archive writes are slowed so some
/// kills land mid-write), resumes, and repeats until the harvest completes. Every archive
/// seen on disk verifies and the final one equals the uninterrupted reference.
/// `GRANARY_KILL_TRIALS` sets the number of kills (default 6 for CI; the long mode runs
/// hundreds).
#[test]
fn sigkill_at_random_moments_then_resume() {
    let trials: usize = std::env::var("GRANARY_KILL_TRIALS").ok().and_then(|v| v.parse().ok()).unwrap_or(6);
    let dir = common::tempdir();
    let (full, took) = reference_timed(dir.path());
    let n = Script::load(Path::new(EXAMPLE)).unwrap().pipelines.len();
    // Kill anywhere in the first 90% of a whole run's duration.
    let window = (took.as_millis() as u64 * 9 / 10).max(5);
    let out = dir.path().join("killed.granary");
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut kills = 0;
    let mut seen_partial = 0;
    let mut runs = 0;
    loop {
        runs += 1;
        assert!(runs < trials * 4 + 50, "harvest never completed");
        let mut child = granary()
            .args(["harvest", EXAMPLE, "-q", "-o", out.to_str().unwrap(), "--resume", "--flush-every", "15", "-j", "2"])
            .env("GRANARY_FAULT", "slow-write:10")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let finished = if kills < trials {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let delay = Duration::from_millis(1 + rng % window);
            let t0 = Instant::now();
            loop {
                if let Some(st) = child.try_wait().unwrap() {
                    break Some(st);
                }
                if t0.elapsed() >= delay {
                    child.kill().unwrap(); // SIGKILL
                    child.wait().unwrap();
                    kills += 1;
                    break None;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        } else {
            Some(child.wait().unwrap())
        };
        if out.exists() {
            let ar = Archive::read(&out).expect("the archive on disk is always complete");
            ar.verify().expect("the archive on disk always verifies");
            if ar.len() < n {
                seen_partial += 1;
            }
        }
        if let Some(st) = finished {
            assert!(st.success(), "harvest failed: {st}");
            if kills >= trials {
                break;
            }
            // Finished before we killed it: start over to keep killing.
            std::fs::remove_file(&out).unwrap();
        }
    }
    assert_eq!(std::fs::read(&out).unwrap(), full, "final archive equals the uninterrupted run");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "the last --resume removed the temporary files of killed writes: {leftovers:?}");
    eprintln!("kill test: {kills} kills over {runs} runs, {seen_partial} partial archives verified");
}

#[test]
fn salvage_keeps_what_verifies_and_reports_the_rest() {
    let dir = common::tempdir();
    let full = reference(dir.path());
    let ar = Archive::from_bytes(full.clone()).unwrap();
    // Damage one pipeline record in the middle of the table.
    let victim = ar.pipeline(ar.len() / 2).unwrap().key();
    let pos = full.windows(16).position(|w| w == victim.0.to_le_bytes()).unwrap();
    let mut bad = full.clone();
    bad[pos + 1] ^= 0xff;
    let damaged = dir.path().join("damaged.granary");
    std::fs::write(&damaged, &bad).unwrap();
    assert!(Archive::read(&damaged).and_then(|a| a.verify()).is_err());
    let out = dir.path().join("salvaged.granary");
    let o = granary().args(["salvage", damaged.to_str().unwrap(), "-o", out.to_str().unwrap(), "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["recovered"].as_u64().unwrap() as usize, ar.len() - 1);
    assert_eq!(r["lost"].as_array().unwrap().len(), 1);
    let s = Archive::read(&out).unwrap();
    s.verify().unwrap();
    assert!(s.get(victim).unwrap().is_none());

    // Truncation: the pipelines whose stages and blobs survive are recovered.
    let cut = dir.path().join("cut.granary");
    std::fs::write(&cut, &full[..full.len() - 100]).unwrap();
    let (entries, _, report) = archive::salvage(&std::fs::read(&cut).unwrap()).unwrap();
    assert_eq!(entries.len(), report.recovered);
    assert!(report.recovered + report.lost.len() == report.pipeline_records);

    // Garbage is refused with a reason.
    assert!(archive::salvage(b"not an archive at all, not at all, definitely not").is_err());
}

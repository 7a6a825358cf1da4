//! Durability through the binary: resume and prune reports, journal replay and refusal, kill
//! at random moments and during writes, salvage. Resume's and prune's exactness against the
//! script as it is now are tested on the library (granary/tests/harvest.rs).

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::{assert_labels_unique, copy_example, edit_shader, EXAMPLE};
use granary::archive::journal::{journal_path, replay_journal, Journal};
use granary::archive::{self, Archive, ArchiveMeta};
use granary::script::Script;
use std::path::Path;
use std::process::{Command, Stdio};

fn granary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_granary"))
}

/// Runs `granary harvest SCRIPT -o OUT --json EXTRA...`, expecting success; returns the summary.
fn harvest_json(script: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let o = granary()
        .args(["harvest", script.to_str().unwrap(), "-o", out.to_str().unwrap(), "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "harvest failed: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The uninterrupted harvest's bytes.
fn reference(dir: &Path) -> Vec<u8> {
    let out = dir.join("reference.granary");
    let st =
        granary().args(["harvest", EXAMPLE, "-q", "-o", out.to_str().unwrap()]).stderr(Stdio::null()).status().unwrap();
    assert!(st.success());
    std::fs::read(out).unwrap()
}

#[test]
fn resume_from_a_partial_archive_gives_the_uninterrupted_bytes() {
    let dir = common::tempdir();
    let full = reference(dir.path());
    // A partial archive: the first 100 pipelines of the reference.
    let ar = Archive::from_bytes(full.clone()).unwrap();
    let entries = ar.entries().unwrap();
    let out = dir.path().join("partial.granary");
    archive::write_entries(&out, &entries[..100], &archive::portable_meta()).unwrap();
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

/// `--resume --json` after a shader edit counts what it kept and dropped, and the human
/// summary names the dropped entries. (That the resumed archive equals a fresh harvest of the
/// edited script, and that labels come from the current script, is the library's:
/// granary/tests/harvest.rs.)
#[test]
fn resume_reports_the_entries_it_kept_and_dropped() {
    let dir = common::tempdir();
    let script = copy_example(dir.path());
    let out = dir.path().join("out.granary");
    let first = harvest_json(&script, &out, &[]);
    let n = first["pipelines"].as_u64().unwrap();
    assert_eq!(first["archive_pipelines"], n);
    edit_shader(&script, "postprocess.wgsl");
    let s = harvest_json(&script, &out, &["--resume"]);
    let dropped = s["dropped"].as_u64().unwrap();
    assert!(dropped > 0 && dropped < n, "some but not all pipelines use the edited shader: {dropped}");
    assert_eq!(s["resumed"].as_u64().unwrap() + dropped, n, "every pipeline not using the shader was kept");
    assert_eq!(s["archive_pipelines"], n, "{s}");
    assert_eq!(s["succeeded"], n);
    assert_labels_unique(&out);

    // The human summary names the dropped entries too.
    edit_shader(&script, "postprocess.wgsl");
    let o = granary()
        .args(["harvest", script.to_str().unwrap(), "-q", "-o", out.to_str().unwrap(), "--resume"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(text.contains(&format!("{dropped} stale entries dropped")), "{text}");
}

/// Meta of an archive or journal built with writer options this granary does not use.
fn foreign_meta() -> ArchiveMeta {
    let text = "some other granary's writer options";
    ArchiveMeta {
        target_options: granary::descriptor::key::content_hash(text.as_bytes()).0,
        target_options_text: text.into(),
        device_caches: Vec::new(),
    }
}

/// `granary prune --json` reports what it kept, dropped and found missing, and its output
/// verifies; an archive built with other writer options is refused (exit 2), and nothing is
/// written. (That prune keeps exactly what a script produces, relabelled from it, is the
/// library's: granary/tests/harvest.rs.)
#[test]
fn prune_reports_in_json_and_refuses_other_writer_options() {
    let dir = common::tempdir();
    let (original, edited) = common::original_and_edited(dir.path(), "postprocess.wgsl");
    let a = dir.path().join("a.granary");
    let n = harvest_json(&original, &a, &[])["pipelines"].as_u64().unwrap();

    // The original archive against the edited script: the edited pipelines are missing.
    let p = dir.path().join("p.granary");
    let o = granary()
        .args(["prune", a.to_str().unwrap(), "--script", edited.to_str().unwrap(), "-o", p.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "prune failed: {}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let (kept, dropped) = (r["kept"].as_u64().unwrap(), r["dropped"].as_u64().unwrap());
    assert!(dropped > 0 && kept + dropped == n, "{r}");
    assert_eq!(r["missing"].as_array().unwrap().len() as u64, dropped, "{r}");
    assert!(r["missing"].as_array().unwrap().iter().all(|l| l.is_string()), "{r}");
    let v = granary().args(["verify", p.to_str().unwrap()]).output().unwrap();
    assert!(v.status.success(), "prune output verifies: {}", String::from_utf8_lossy(&v.stdout));
    assert_eq!(Archive::read(&p).unwrap().len() as u64, kept);

    // An archive built with other writer options is refused, and nothing is written.
    let foreign = dir.path().join("foreign.granary");
    archive::write_entries(&foreign, &Archive::read(&a).unwrap().entries().unwrap(), &foreign_meta()).unwrap();
    let q = dir.path().join("q.granary");
    let o = granary()
        .args(["prune", foreign.to_str().unwrap(), "--script", original.to_str().unwrap(), "-o", q.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("different writer options"), "{err}");
    assert!(!q.exists());
}

/// A journal written with other writer options is refused on resume, with a clear message,
/// and left alone.
#[test]
fn resume_refuses_a_journal_with_other_writer_options() {
    let dir = common::tempdir();
    let out = dir.path().join("out.granary");
    let full = Archive::from_bytes(reference(dir.path())).unwrap();
    let mut j = Journal::create(&out, &foreign_meta()).unwrap();
    j.append(&full.entries().unwrap()[..3]).unwrap();
    let before = std::fs::read(journal_path(&out)).unwrap();
    let o = granary().args(["harvest", EXAMPLE, "-q", "-o", out.to_str().unwrap(), "--resume"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("journal") && err.contains("different writer options"), "{err}");
    assert_eq!(std::fs::read(journal_path(&out)).unwrap(), before);
    assert!(!out.exists());
}

/// Flushes append to the journal instead of rewriting the archive: the bytes a flushing
/// harvest writes stay within a small multiple of the archive (rewriting it at each of the
/// ~22 flushes would write about 11 archives), the archive equals the unflushed one, and the
/// journal is gone afterwards.
#[test]
fn flushes_append_to_the_journal_and_the_final_archive_is_unchanged() {
    let dir = common::tempdir();
    let full = reference(dir.path());
    let out = dir.path().join("flushed.granary");
    let s = harvest_json(Path::new(EXAMPLE), &out, &["--flush-every", "15", "-j", "2"]);
    let flushes = s["flushes"].as_u64().unwrap();
    assert!(flushes >= 1, "{s}");
    let (written, size) = (s["bytes_written"].as_u64().unwrap(), s["archive_bytes"].as_u64().unwrap());
    assert!(
        written > size && written < 3 * size,
        "bytes written {written} for a {size}-byte archive after {flushes} flushes"
    );
    assert_eq!(std::fs::read(&out).unwrap(), full);
    assert!(!journal_path(&out).exists(), "the final write folded the journal into the archive and deleted it");
    let s = harvest_json(Path::new(EXAMPLE), &out, &[]);
    assert_eq!(s["bytes_written"].as_u64(), Some(size), "without flushes only the archive is written");
}

/// The journal at `path` as its frames show it right now (an append may be in progress):
/// how many records are complete, and where the record that is cut short at its end starts
/// (`None` if it ends on a record boundary, or does not exist).
fn journal_frames(path: &Path) -> (usize, Option<usize>) {
    let Ok(b) = std::fs::read(path) else { return (0, None) };
    let mut pos = granary::archive::journal::JOURNAL_HEADER_LEN;
    if b.len() < pos {
        return (0, None);
    }
    let mut complete = 0;
    while pos < b.len() {
        let Some(frame) = b.get(pos..pos + 16) else { return (complete, Some(pos)) };
        let len = u64::from_le_bytes(frame[..8].try_into().unwrap()) as usize;
        if pos + 16 + len > b.len() {
            return (complete, Some(pos));
        }
        pos += 16 + len;
        complete += 1;
    }
    (complete, None)
}

/// A kill in the middle of a journal append: resume replays every record before the torn
/// tail (reporting the tail) and the final archive equals the uninterrupted reference.
///
/// Every step waits for an event, never for time: a first harvest (one thread) hangs at the
/// middle pipeline (`hang:`) after its flushes wrote intact journal records, and is killed
/// once the journal holds one; a second one resumes from it with every write paused halfway
/// for ten minutes (`slow-write:600000`), so its first append stays half written until it is
/// killed, the moment the journal shows it.
#[test]
fn kill_during_a_journal_append_then_resume() {
    let dir = common::tempdir();
    let full = reference(dir.path());
    let labels: Vec<String> =
        Script::load(Path::new(EXAMPLE)).unwrap().pipelines.iter().map(|p| p.label.clone().unwrap()).collect();
    let out = dir.path().join("killed.granary");
    let journal = journal_path(&out);
    let run = |resume: bool, fault: String| {
        let mut cmd = granary();
        cmd.args(["harvest", EXAMPLE, "-q", "-o", out.to_str().unwrap(), "--flush-every", "15"]);
        if resume {
            cmd.args(["--resume", "-j", "2"]);
        } else {
            cmd.args(["-j", "1"]);
        }
        cmd.env("GRANARY_FAULT", fault).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
    };
    // 1. Intact records, written by a real harvest's flushes.
    let mut first = run(false, format!("hang:{}", labels[labels.len() / 2]));
    common::wait_for("a journal record", || journal_frames(&journal).0 >= 1);
    first.kill().unwrap();
    first.wait().unwrap();
    // The kill may have landed in a flush of its own: keep only the intact records (what the
    // resume does before its first append), so that the torn tail seen next is the second
    // harvest's.
    if let (_, Some(at)) = journal_frames(&journal) {
        std::fs::OpenOptions::new().write(true).open(&journal).unwrap().set_len(at as u64).unwrap();
    }
    // 2. A half-written record after them.
    let mut second = run(true, "slow-write:600000".into());
    common::wait_for(
        "an append after the intact records",
        || matches!(journal_frames(&journal), (n, Some(_)) if n >= 1),
    );
    second.kill().unwrap();
    second.wait().unwrap();
    let r = replay_journal(&out).unwrap().expect("the journal exists");
    assert!(r.records > 0 && r.damaged_tail.is_some(), "{} records, tail {:?}", r.records, r.damaged_tail);
    assert!(!out.exists(), "no final write happened before the kill");
    let replayed: std::collections::HashSet<u128> = r.entries.iter().map(|w| w.entry.key.0).collect();
    // 3. Resumed to the end.
    let s = harvest_json(Path::new(EXAMPLE), &out, &["--resume", "--flush-every", "15", "-j", "2"]);
    assert_eq!(s["journal_records"].as_u64(), Some(r.records as u64), "every intact record was replayed");
    assert_eq!(s["resumed"].as_u64(), Some(replayed.len() as u64), "every pipeline in them was kept");
    let damage = s["journal_damage"].as_str().unwrap_or_default();
    assert!(damage.contains("cut short"), "the torn tail is reported: {s}");
    assert_eq!(std::fs::read(&out).unwrap(), full, "final archive equals the uninterrupted run");
    assert!(!journal.exists());
}

/// The names of the temporary files of writes to `out` that exist right now.
fn temporaries(out: &Path) -> std::collections::BTreeSet<String> {
    let prefix = format!(".{}.granary-", out.file_name().unwrap().to_string_lossy());
    std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix) && n.ends_with(".tmp"))
        .collect()
}

/// Kills the harvester with SIGKILL, resumes, and repeats until the harvest completes. Writes
/// are slowed (`slow-write`: each archive write and journal append pauses halfway). Kill
/// instants are drawn from events, never from time: every other kill waits for the final
/// archive write's temporary file to appear, so kills land mid-write for certain (the test
/// counts the kills after which a temporary file was left behind and requires at least one);
/// the others wait for the run's Nth journal append (N random, below the number of appends the
/// run can make) and kill right after it or in the middle of the next one (a torn journal
/// tail, counted). Every archive
/// seen on disk verifies, every journal replays, and the final archive equals the
/// uninterrupted reference. `GRANARY_KILL_TRIALS` sets the number of kills (default 6 for CI;
/// the long mode runs hundreds). Should none of the kills at a write land before the write
/// ends (the signal can lose the race on a loaded machine), up to 20 more are made at writes.
#[test]
fn sigkill_at_random_moments_then_resume() {
    let trials: usize = std::env::var("GRANARY_KILL_TRIALS").ok().and_then(|v| v.parse().ok()).unwrap_or(6);
    let dir = common::tempdir();
    let full = reference(dir.path());
    let n = Script::load(Path::new(EXAMPLE)).unwrap().pipelines.len();
    let out = dir.path().join("killed.granary");
    let journal = journal_path(&out);
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut kills = 0;
    let mut kills_mid_write = 0;
    let mut kills_mid_append = 0;
    let mut journal_records_kept = 0;
    let mut runs = 0;
    loop {
        runs += 1;
        assert!(runs < trials * 4 + 50, "harvest never completed");
        // Left by earlier killed runs (this run's --resume removes them): not this run's.
        let stale = temporaries(&out);
        // What this run starts from: its appends come after these records, one per 15 of the
        // pipelines still missing at most.
        let (base, _) = journal_frames(&journal);
        let journaled = replay_journal(&out)
            .expect("the journal always replays")
            .map_or(0, |r| r.entries.iter().map(|w| w.entry.key.0).collect::<std::collections::HashSet<_>>().len());
        let appends = (n - journaled.min(n)) / 15;
        let mut child = granary()
            .args(["harvest", EXAMPLE, "-q", "-o", out.to_str().unwrap(), "--resume", "--flush-every", "15", "-j", "2"])
            .env("GRANARY_FAULT", "slow-write:10")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Past the trials, kill at archive writes until one lands mid-write: on a loaded
        // machine the kill can miss the write it saw start (the write ends before the signal),
        // and the test must have exercised a kill mid-write at least once.
        let more_at_writes = |kills: usize, mid_write: usize| trials >= 2 && mid_write == 0 && kills < trials + 20;
        let extra = kills >= trials && more_at_writes(kills, kills_mid_write);
        let finished = if kills < trials || extra {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let at_write = kills % 2 == 1 || extra;
            // The Nth append of this run (within the first half of those it can make, so that
            // most runs get there), and whether to kill right after it or in the middle of the
            // next one.
            let nth = 1 + (rng % (appends / 2).max(1) as u64) as usize;
            let mid_append = (rng >> 32) & 1 == 1;
            loop {
                if let Some(st) = child.try_wait().unwrap() {
                    break Some(st);
                }
                let writing = || temporaries(&out).difference(&stale).count() > 0;
                let event = if at_write {
                    writing()
                } else {
                    // Mid-append: the append after this run's Nth is half written (a torn tail
                    // seen before this run's first append may be an earlier run's).
                    let (done, torn) = journal_frames(&journal);
                    done >= base + nth && (torn.is_some() || !mid_append)
                };
                if event {
                    child.kill().unwrap(); // SIGKILL
                    child.wait().unwrap();
                    kills += 1;
                    // What the kill left: a temporary file of this run means it landed during
                    // an archive write, a torn journal tail during an append.
                    if writing() {
                        kills_mid_write += 1;
                    }
                    if let Some(r) = replay_journal(&out).expect("the journal always replays") {
                        kills_mid_append += usize::from(r.damaged_tail.is_some());
                        journal_records_kept += r.records;
                    }
                    break None;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        } else {
            Some(child.wait().unwrap())
        };
        if out.exists() {
            let ar = Archive::read(&out).expect("the archive on disk is always complete");
            ar.verify().expect("the archive on disk always verifies");
            assert_eq!(ar.len(), n, "only the final write replaces the archive, with every pipeline");
        }
        if let Some(st) = finished {
            assert!(st.success(), "harvest failed: {st}");
            if kills >= trials && !more_at_writes(kills, kills_mid_write) {
                break;
            }
            // Finished before we killed it: start over to keep killing.
            std::fs::remove_file(&out).unwrap();
        }
    }
    assert_eq!(std::fs::read(&out).unwrap(), full, "final archive equals the uninterrupted run");
    assert!(temporaries(&out).is_empty(), "the last --resume removed the temporary files of killed writes");
    assert!(!journal_path(&out).exists(), "the final write deleted the journal");
    eprintln!(
        "kill test: {kills} kills over {runs} runs; {kills_mid_write} left a temporary file (mid-write), \
         {kills_mid_append} a torn journal tail; {journal_records_kept} intact journal records found after kills"
    );
    if trials >= 2 {
        assert!(kills_mid_write > 0, "no kill landed while a temporary file existed");
    }
}

/// Issue 23: a `SIGKILL` at a random point of a harvest's progress loses at most `2N` landed
/// pipelines (`--flush-every N`) plus one per thread (in flight between landing and being
/// counted), however far the journal falls behind. The journal here is slow on purpose
/// (every append pauses, `slow-write`), so compiling outruns it and only the journal's
/// back-pressure keeps the bound. Each trial harvests from nothing, kills once the
/// `landed-log` fault's count reaches a random number of pipelines, reads how many had
/// landed when the process died (the log's final length), and resumes: what `--resume`
/// keeps is at least that many less the bound. `GRANARY_KILL_TRIALS` sets the number of
/// trials (default 6), `GRANARY_KILL_SEED` the draws.
#[test]
fn sigkill_at_random_points_of_progress_loses_at_most_two_flushes_plus_one_per_thread() {
    const FLUSH: usize = 15;
    const THREADS: usize = 2;
    let trials: usize = std::env::var("GRANARY_KILL_TRIALS").ok().and_then(|v| v.parse().ok()).unwrap_or(6);
    let mut rng: u64 =
        std::env::var("GRANARY_KILL_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x9e37_79b9_7f4a_7c15);
    let dir = common::tempdir();
    let n = Script::load(Path::new(EXAMPLE)).unwrap().pipelines.len();
    let out = dir.path().join("k.granary");
    let log = dir.path().join("landed");
    let mut worst = 0;
    for trial in 0..trials {
        let _ = std::fs::remove_file(&out);
        let _ = std::fs::remove_file(journal_path(&out));
        std::fs::write(&log, b"").unwrap();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let at = 1 + (rng % (n as u64 - 1)) as usize;
        let mut child = granary()
            .args(["harvest", EXAMPLE, "-q", "-o", out.to_str().unwrap(), "--check-outputs", "off"])
            .args(["--flush-every", &FLUSH.to_string(), "-j", &THREADS.to_string()])
            .env("GRANARY_FAULT", format!("slow-write:40,landed-log:{}", log.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let killed = loop {
            if child.try_wait().unwrap().is_some() {
                break false;
            }
            if std::fs::metadata(&log).unwrap().len() as usize >= at {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                break true;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        assert!(killed, "trial {trial}: the harvest finished before {at} pipelines had landed");
        let landed = std::fs::metadata(&log).unwrap().len() as usize;
        assert!(!out.exists(), "a killed harvest writes no archive");
        let s = harvest_json(Path::new(EXAMPLE), &out, &["--resume", "--check-outputs", "off", "-q"]);
        let kept = s["resumed"].as_u64().unwrap() as usize;
        let lost = landed.saturating_sub(kept);
        eprintln!("trial {trial}: killed after {at} (had landed {landed}), --resume kept {kept}, lost {lost}");
        assert!(
            lost <= 2 * FLUSH + THREADS,
            "trial {trial}: {landed} pipelines had landed, the journal kept {kept}: lost {lost} > 2×{FLUSH} + {THREADS}"
        );
        assert_eq!(s["succeeded"].as_u64().unwrap() as usize, n, "{s}");
        worst = worst.max(lost);
    }
    eprintln!("random-point kill test: {trials} trials, worst loss {worst} pipelines (bound {})", 2 * FLUSH + THREADS);
}

/// `granary salvage` of a harvest with one damaged pipeline record: exit 1, the JSON report
/// counts every other pipeline recovered and the one lost, and the output verifies without it.
/// (Salvage of cut files is tested on the library: `granary-archive/tests/reader.rs`.)
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
    let o =
        granary().args(["salvage", damaged.to_str().unwrap(), "-o", out.to_str().unwrap(), "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["recovered"].as_u64().unwrap() as usize, ar.len() - 1);
    assert_eq!(r["lost"].as_array().unwrap().len(), 1);
    let s = Archive::read(&out).unwrap();
    s.verify().unwrap();
    assert!(s.get(victim).unwrap().is_none());
}

const PIPELINES: usize = 900;

/// A harvest on the first device capturing its own kind (binaries where it has them), which
/// the journal's whole entries are checked against.
const ON_THE_DEVICE: &[&str] = &["--backend", "vulkan", "--capture", "device"];
const HUNG: usize = 800;

/// Writes `dir/s.json`: [`PIPELINES`] compute pipelines, each with a library of its own; the
/// entry point of the pipeline compiled [`HUNG`]th (the harvest takes pipelines in
/// `granary::harvest::spread` order) is `late` (the others `mainK`).
fn one_library_per_pipeline(dir: &Path) -> std::path::PathBuf {
    let hung = granary::harvest::spread(PIPELINES).nth(HUNG).unwrap();
    let entry = |k: usize| if k == hung { "late".to_string() } else { format!("main{k}") };
    let libraries: Vec<_> = (0..PIPELINES)
        .map(|k| {
            let source = format!(
                "@group(0) @binding(0) var<storage, read_write> out: array<u32>;\n@compute @workgroup_size(1) fn {}() {{ out[0] = {k}u; }}",
                entry(k)
            );
            serde_json::json!({"name": format!("l{k}"), "kind": "wgsl", "source": source})
        })
        .collect();
    let pipelines: Vec<_> = (0..PIPELINES)
        .map(|k| serde_json::json!({"label": format!("c{k}"), "compute": {"function": {"library": format!("l{k}"), "function": entry(k)}}}))
        .collect();
    let script = dir.join("s.json");
    let text = serde_json::json!({"granary_script": 1, "libraries": libraries, "pipelines": pipelines});
    std::fs::write(&script, text.to_string()).unwrap();
    script
}

/// Starts `granary harvest SCRIPT -o OUT -q --check-outputs off EXTRA…` with the stage
/// function `late` hanging, and returns once it hangs (an event: the fault's marker).
fn harvest_until_late_hangs(script: &Path, out: &Path, reached: &Path, extra: &[&str]) -> std::process::Child {
    std::fs::create_dir_all(reached).unwrap();
    let mut child = granary()
        .args(["harvest", script.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"])
        .args(["--check-outputs", "off"])
        .args(extra)
        .env("GRANARY_FAULT", format!("hang-stage:late,reached:{}", reached.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while std::fs::read_dir(reached).unwrap().next().is_none() {
        assert!(child.try_wait().unwrap().is_none(), "the harvest ended before reaching the hung stage function");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

/// Issue 23: a kill while stage functions still compile keeps what landed. Pipelines land wave
/// by wave (`harvest::plan::WAVE`, 256), not after every stage function of the script: here 900
/// compute pipelines, each with a library of its own, and the stage function of pipeline 800
/// (in wave 3) never returns. At one thread, waves 0 and 1 (512 pipelines) have landed when
/// it hangs; with `--flush-every 50` the journal then holds all but at most two flushes' worth
/// (the one not yet due and the one being written), which `--resume` keeps.
#[test]
fn a_kill_while_stage_functions_compile_loses_at_most_two_flushes_of_landed_pipelines() {
    const FLUSH: usize = 50;
    let dir = common::tempdir();
    let script = one_library_per_pipeline(dir.path());
    let out = dir.path().join("o.granary");
    let mut child =
        harvest_until_late_hangs(&script, &out, &dir.path().join("reached"), &["-j1", "--flush-every", "50"]);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(!out.exists(), "a killed harvest writes no archive");

    let s = harvest_json(&script, &out, &["--resume", "-j1", "--check-outputs", "off"]);
    let kept = s["resumed"].as_u64().unwrap() as usize;
    let landed = 2 * granary::harvest::WAVE;
    assert!(kept >= landed - 2 * FLUSH, "kept {kept} of the {landed} pipelines that had landed: {s}");
    assert!(kept < HUNG, "{s}");
    assert_eq!(s["succeeded"], PIPELINES, "{s}");
}

/// Issue 23: Ctrl-C (SIGINT) or SIGTERM while stage functions compile journals every pipeline
/// that landed (here exactly waves 0 and 1, with no `--flush-every` at all), leaves an
/// existing archive untouched, says how to continue, and exits 130 or 143; `--resume` keeps
/// all of them. The signal is sent with kill(1), as a terminal's Ctrl-C sends it to the
/// foreground process.
#[cfg(unix)]
#[test]
fn sigint_and_sigterm_journal_what_landed_and_exit_130_and_143() {
    let dir = common::tempdir();
    let script = one_library_per_pipeline(dir.path());
    // An archive from an earlier, complete run of another script: an interrupt never
    // replaces it.
    let out = dir.path().join("o.granary");
    harvest_json(Path::new(EXAMPLE), &out, &["--check-outputs", "off"]);
    let before = std::fs::read(&out).unwrap();
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let _ = std::fs::remove_file(journal_path(&out));
        let reached = dir.path().join(format!("reached-{signal}"));
        let child = harvest_until_late_hangs(&script, &out, &reached, &["-j1"]);
        let st = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
        assert!(st.success());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{err}");
        let landed = 2 * granary::harvest::WAVE;
        assert!(err.contains(&format!("{landed} pipelines are kept")) && err.contains("--resume"), "{err}");
        assert_eq!(std::fs::read(&out).unwrap(), before, "the archive was replaced");
        let replay = replay_journal(&out).unwrap().expect("a journal");
        assert_eq!(replay.entries.len(), landed, "{err}");
    }
    // --resume keeps the journaled pipelines (the archive's are another script's: dropped).
    let s = harvest_json(&script, &out, &["--resume", "-j1", "--check-outputs", "off"]);
    assert_eq!(s["resumed"], 2 * granary::harvest::WAVE, "{s}");
    assert_eq!(s["succeeded"], PIPELINES, "{s}");
    // Exactness: interrupted and resumed, the archive is the uninterrupted harvest's bytes.
    let fresh = dir.path().join("fresh.granary");
    harvest_json(&script, &fresh, &["-j2", "--check-outputs", "off"]);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&fresh).unwrap());
}

/// The same on the Vulkan backend, at two threads: one thread hangs in `late`'s stage
/// function while the other goes on creating pipelines on the driver, so the interrupt's
/// snapshot is taken with driver compiles in flight. Every journaled entry is whole (the
/// journal replays), at least waves 0 and 1 are in it, and `--resume` on the same device
/// finishes the harvest (under the validation layer when the suite sets GRANARY_VALIDATE=1).
#[cfg(unix)]
#[test]
fn sigint_on_the_vulkan_backend_journals_whole_entries_while_the_driver_compiles() {
    if common::vulkan_device(Path::new(env!("CARGO_BIN_EXE_granary"))).is_none() {
        return;
    }
    let dir = common::tempdir();
    let script = one_library_per_pipeline(dir.path());
    let out = dir.path().join("o.granary");
    let child =
        harvest_until_late_hangs(&script, &out, &dir.path().join("reached"), &[ON_THE_DEVICE, &["-j2"]].concat());
    let st = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(!out.exists(), "an interrupted harvest writes no archive");
    let replay = replay_journal(&out).unwrap().expect("a journal");
    assert!(replay.damaged_tail.is_none(), "{err}");
    let journaled = replay.entries.len();
    assert!((2 * granary::harvest::WAVE..PIPELINES).contains(&journaled), "{journaled}: {err}");
    assert!(err.contains(&format!("{journaled} pipelines are kept")), "{err}");

    let s = harvest_json(&script, &out, &[&["--resume", "--check-outputs", "off"], ON_THE_DEVICE].concat());
    assert_eq!(s["resumed"], journaled, "{s}");
    assert_eq!(s["succeeded"], PIPELINES, "{s}");
    assert_eq!(s["failed"], 0, "{s}");
}

/// Issue 23 items 2 and 6 as a person at a terminal sees them, through a pseudo-terminal
/// (util-linux `script`): the progress line counts pipelines (not tasks) and names the phase,
/// and Ctrl-C typed at the terminal (the byte 0x03, which the terminal turns into SIGINT for
/// its foreground process) journals the 512 pipelines that landed and exits 130.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_typed_at_a_terminal_journals_what_landed_and_the_progress_line_counts_pipelines() {
    use std::io::Write as _;
    let dir = common::tempdir();
    let script = one_library_per_pipeline(dir.path());
    let out = dir.path().join("o.granary");
    let reached = dir.path().join("reached");
    std::fs::create_dir_all(&reached).unwrap();
    let command = format!(
        "{} harvest {} -o {} -j1 --check-outputs off",
        env!("CARGO_BIN_EXE_granary"),
        script.display(),
        out.display()
    );
    let mut child = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("GRANARY_FAULT", format!("hang-stage:late,reached:{}", reached.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux script (Debian's bsdutils, an essential package)");
    common::wait_for("the hung stage function", || std::fs::read_dir(&reached).unwrap().next().is_some());
    // The progress line is redrawn every 200 ms: let it show the hung state once.
    std::thread::sleep(std::time::Duration::from_millis(600));
    child.stdin.as_mut().unwrap().write_all(b"\x03").unwrap();
    let o = child.wait_with_output().unwrap();
    let screen = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(130), "{screen}");
    assert!(screen.contains(&format!("512/{PIPELINES} pipelines")), "{screen}");
    assert!(screen.contains("compiling (stage functions "), "{screen}");
    assert!(!screen.contains("tasks"), "{screen}");
    assert!(screen.contains("granary: SIGINT: journaling what has compiled"), "{screen}");
    assert!(screen.contains("interrupted; 512 pipelines are kept in"), "{screen}");
    let s = harvest_json(&script, &out, &["--resume", "-j1", "--check-outputs", "off"]);
    assert_eq!((s["resumed"].as_u64(), s["resumed_from_journal"].as_u64()), (Some(512), Some(512)), "{s}");
}

/// Issue 23: `--resume --backend vulkan` of an archive harvested without a device compiles
/// every pipeline on the device (none has binaries for it), and what it journals before an
/// interrupt carries the device's binary sets: the next `--resume` keeps exactly those, says
/// how many it compiled again for the device, and ends with every pipeline in the device's
/// section. (Before the fix the first resume kept all 900 by key and never reached the hung
/// stage function.)
#[cfg(unix)]
#[test]
fn an_interrupted_resume_onto_a_device_keeps_what_it_compiled_there() {
    if common::vulkan_device(Path::new(env!("CARGO_BIN_EXE_granary"))).is_none() {
        return;
    }
    let dir = common::tempdir();
    let script = one_library_per_pipeline(dir.path());
    let out = dir.path().join("o.granary");
    harvest_json(&script, &out, &["-j2", "--check-outputs", "off"]);
    let reached = dir.path().join("reached");
    let child = harvest_until_late_hangs(&script, &out, &reached, &[&["--resume", "-j2"], ON_THE_DEVICE].concat());
    let st = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    let replay = replay_journal(&out).unwrap().expect("a journal");
    let journaled = replay.entries.len();
    assert!((2 * granary::harvest::WAVE..PIPELINES).contains(&journaled), "{journaled}: {err}");
    assert!(replay.entries.iter().all(|w| w.binaries.len() == 1), "each journaled entry has the device's set");

    let o = granary()
        .args(["harvest", script.to_str().unwrap(), "-o", out.to_str().unwrap(), "--resume"])
        .args(ON_THE_DEVICE)
        .args(["--check-outputs", "off", "-j2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("resumed:               {journaled} pipelines kept")), "{err}");
    let again = PIPELINES - journaled;
    assert!(err.contains(&format!("recompiled on device:  {again} pipelines the existing archive holds")), "{err}");
    let a = Archive::read(&out).unwrap();
    let devices = a.devices().unwrap();
    assert_eq!((a.len(), devices.len(), devices[0].pipeline_count()), (PIPELINES, 1, PIPELINES));
}

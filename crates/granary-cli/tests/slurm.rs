//! A real Slurm run of the shipped `examples/slurm/*.sbatch` scripts: a single-node cluster
//! (munged, slurmctld and slurmd from Debian's `slurm-wlm` and `munge`, started by hand as
//! child processes, no systemd) harvests the bundled example with `harvest.sbatch` as a job
//! array of 4 shards and merges with `merge.sbatch` submitted with `--dependency=afterok`,
//! as examples/slurm/README.md tells users to; the merged archive must be byte-identical to a
//! local harvest. Then README's "A failed or killed index": one array task is cancelled in the
//! middle of a (slowed) write, the merge stays pending (`DependencyNeverSatisfied`), is
//! cancelled, only that index is submitted again and a new merge waits for it; the result must
//! again be the same bytes.
//!
//! Needs root and the Debian packages. Where Slurm cannot start, the test prints one line
//! `SKIPPED: …` and passes, unless `GRANARY_REQUIRE_SLURM=1` (set by `.ci/run`), where it fails.

mod slurm_cluster;

use slurm_cluster::{Cluster, Start};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/renderer/pipelines.json");
const GRANARY: &str = env!("CARGO_BIN_EXE_granary");

fn required() -> bool {
    std::env::var("GRANARY_REQUIRE_SLURM").is_ok_and(|v| v == "1")
}

/// The cluster, or `None` after the one-line skip notice.
fn cluster() -> Option<Cluster> {
    match Cluster::start() {
        Start::Up(c) => Some(c),
        Start::Unavailable(why) => {
            assert!(!required(), "GRANARY_REQUIRE_SLURM=1 but Slurm cannot start: {why}");
            println!("SKIPPED: Slurm cannot start here: {why}");
            None
        }
    }
}

fn local_harvest(out: &Path) {
    let o = Command::new(GRANARY)
        .args(["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "-q", "-j", "2"])
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .unwrap();
    assert!(o.status.success(), "local harvest: {}", String::from_utf8_lossy(&o.stderr));
}

const HARVEST_SBATCH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/slurm/harvest.sbatch");
const MERGE_SBATCH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/slurm/merge.sbatch");

/// `sbatch --parsable --array=... examples/slurm/harvest.sbatch EXAMPLE shards 4 EXTRA...`,
/// run in `dir`, with `GRANARY=granary`. `--cpus-per-task=1` overrides the script's 8, as
/// README says to where nodes are smaller (this one has a core or two).
fn submit_harvest(c: &Cluster, dir: &Path, array: &str, granary: &Path, extra: &[&str]) -> String {
    let mut args = vec![EXAMPLE, "shards", "4"];
    args.extend_from_slice(extra);
    let array = format!("--array={array}");
    c.sbatch(dir, &[&array, "--cpus-per-task=1"], Path::new(HARVEST_SBATCH), &args, &[("GRANARY", granary)])
}

/// `sbatch --parsable --dependency=afterok:AFTER examples/slurm/merge.sbatch shards 4 game.granary`.
fn submit_merge(c: &Cluster, dir: &Path, after: &str) -> String {
    c.sbatch(
        dir,
        &[&format!("--dependency=afterok:{after}")],
        Path::new(MERGE_SBATCH),
        &["shards", "4", "game.granary"],
        &[("GRANARY", Path::new(GRANARY))],
    )
}

/// A job's output file (`#SBATCH --output=` of the example scripts, in the submit folder).
fn job_output(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn slurm_runs_the_example_sbatch_scripts_and_a_killed_index_resubmitted_merges_the_same() {
    let Some(c) = cluster() else { return };
    let t0 = Instant::now();
    let reference = c.dir().join("local.granary");
    local_harvest(&reference);
    let expected = std::fs::read(&reference).unwrap();
    let granary = Path::new(GRANARY);

    // 1. README "Submit": the array of 4 shards (with `-j 2` after N, which replaces the
    //    script's -j), and the merge depending on it.
    let run1 = c.dir().join("run1");
    std::fs::create_dir(&run1).unwrap();
    let array = submit_harvest(&c, &run1, "0-3", granary, &["-j", "2"]);
    let merge = submit_merge(&c, &run1, &array);
    assert_eq!(c.wait_done(&merge), "COMPLETED", "merge job\n{}", c.logs());
    for i in 0..4 {
        assert_eq!(c.state(&format!("{array}_{i}")).as_deref(), Some("COMPLETED"));
        let out = job_output(&run1, &format!("granary-harvest-{array}_{i}.out"));
        assert!(out.contains(&format!("shard:                 {i}/4 of script")), "task {i}:\n{out}");
        assert!(out.contains(", 2 threads"), "task {i} ran with the -j given after N:\n{out}");
    }
    let out = job_output(&run1, &format!("granary-merge-{merge}.out"));
    assert!(out.contains("merged 4 archives into game.granary"), "{out}");
    assert!(
        std::fs::read(run1.join("game.granary")).unwrap() == expected,
        "merged archive differs from a local harvest"
    );

    // 2. README "A failed or killed index": index 2 is slowed (every write pauses halfway;
    //    GRANARY points at a wrapper that sets the fault for that index only) and cancelled in
    //    the middle of a write. The merge then never starts; it is cancelled, only index 2 is
    //    submitted again (the script passes --resume), and a new merge waits for that.
    let run2 = c.dir().join("run2");
    std::fs::create_dir(&run2).unwrap();
    let slowed = c.dir().join("granary-slow-index-2");
    std::fs::write(
        &slowed,
        format!(
            "#!/bin/sh\nif [ \"$SLURM_ARRAY_TASK_ID\" = 2 ]; then export GRANARY_FAULT=slow-write:600000; fi\nexec {GRANARY} \"$@\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&slowed, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let array = submit_harvest(&c, &run2, "0-3", &slowed, &[]);
    let merge = submit_merge(&c, &run2, &array);
    for i in [0, 1, 3] {
        assert_eq!(c.wait_done(&format!("{array}_{i}")), "COMPLETED", "task {i}\n{}", c.logs());
    }
    // Task 2 is running once it has started a write (a journal append, `shard-2.granary.journal`,
    // or the archive's temporary file, `.shard-2.granary.granary-*.tmp`): with the fault, that
    // write cannot finish within the test.
    let task = format!("{array}_2");
    let shards = run2.join("shards");
    let deadline = Instant::now() + slurm_cluster::SAFETY;
    loop {
        let writing = std::fs::read_dir(&shards)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().trim_start_matches('.').starts_with("shard-2."));
        if writing && c.state(&task).as_deref() == Some("RUNNING") {
            break;
        }
        assert!(Instant::now() < deadline, "task 2 never started writing\n{}", c.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    c.scancel(&task);
    assert_eq!(c.wait_done(&task), "CANCELLED", "{}", c.logs());
    assert!(!shards.join("shard-2.granary").exists(), "the killed shard never finished its archive");
    assert_eq!(c.wait_done(&merge), "PENDING (DependencyNeverSatisfied)", "{}", c.logs());
    c.scancel(&merge);
    assert_eq!(c.wait_done(&merge), "CANCELLED", "{}", c.logs());

    let again = submit_harvest(&c, &run2, "2", granary, &[]);
    let merge = submit_merge(&c, &run2, &again);
    assert_eq!(c.wait_done(&merge), "COMPLETED", "merge after the resubmission\n{}", c.logs());
    assert_eq!(c.state(&format!("{again}_2")).as_deref(), Some("COMPLETED"));
    assert!(
        std::fs::read(run2.join("game.granary")).unwrap() == expected,
        "merge after the resubmission differs from a local harvest"
    );
    eprintln!("slurm test: {:.1} s with the cluster up", t0.elapsed().as_secs_f64());
}

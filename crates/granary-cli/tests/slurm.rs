//! A real Slurm run: a single-node cluster (munged, slurmctld and slurmd from Debian's
//! `slurm-wlm` and `munge`, started by hand as child processes, no systemd) harvests the bundled
//! example as a job array of 4 shards plus a merge job submitted with `--dependency=afterok`;
//! the merged archive must be byte-identical to a local harvest. Then one array task is
//! cancelled in the middle of a (slowed) write, only that index is requeued with `--resume`,
//! and the merge must again give the same bytes.
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

/// The shell command of one array task: shard `$SLURM_ARRAY_TASK_ID` of 4 into `dir`.
fn shard_command(dir: &Path, extra: &str) -> String {
    format!(
        "exec {GRANARY} harvest {EXAMPLE} -o {}/shard-$SLURM_ARRAY_TASK_ID.granary --shard /4 -q -j 1 {extra}",
        dir.display()
    )
}

fn merge_command(dir: &Path, out: &Path) -> String {
    let shards: Vec<String> = (0..4).map(|i| format!("{}/shard-{i}.granary", dir.display())).collect();
    format!("exec {GRANARY} merge {} -o {}", shards.join(" "), out.display())
}

#[test]
fn slurm_job_array_harvest_merge_and_requeue_of_a_killed_index() {
    let Some(c) = cluster() else { return };
    let t0 = Instant::now();
    let timeout = Duration::from_secs(180);
    let reference = c.dir().join("local.granary");
    local_harvest(&reference);
    let expected = std::fs::read(&reference).unwrap();

    // 1. The array of 4 shards and a merge that waits for all of them.
    let run1 = c.dir().join("run1");
    std::fs::create_dir(&run1).unwrap();
    let array = c.sbatch(&["--array=0-3", "--job-name=harvest"], &shard_command(&run1, ""));
    let merged1 = run1.join("game.granary");
    let merge =
        c.sbatch(&[&format!("--dependency=afterok:{array}"), "--job-name=merge"], &merge_command(&run1, &merged1));
    assert_eq!(c.wait_done(&merge, timeout), "COMPLETED", "merge job\n{}", c.logs());
    for i in 0..4 {
        assert_eq!(c.state(&format!("{array}_{i}")).as_deref(), Some("COMPLETED"));
    }
    assert!(std::fs::read(&merged1).unwrap() == expected, "merged archive differs from a local harvest");

    // 2. Index 2 is slowed (every write pauses halfway) and cancelled in the middle of a write;
    //    only that index is requeued, with --resume; the merge then depends on the requeue.
    let run2 = c.dir().join("run2");
    std::fs::create_dir(&run2).unwrap();
    let slowed = format!(
        "if [ \"$SLURM_ARRAY_TASK_ID\" = 2 ]; then export GRANARY_FAULT=slow-write:600000; fi; {}",
        shard_command(&run2, "")
    );
    let array = c.sbatch(&["--array=0-3", "--job-name=harvest"], &slowed);
    for i in [0, 1, 3] {
        assert_eq!(c.wait_done(&format!("{array}_{i}"), timeout), "COMPLETED", "task {i}\n{}", c.logs());
    }
    // Task 2 is running once it has started a write (a journal append, `shard-2.granary.journal`,
    // or the archive's temporary file, `.shard-2.granary.granary-*.tmp`): with the fault, that
    // write cannot finish within the test.
    let task = format!("{array}_2");
    let deadline = Instant::now() + timeout;
    loop {
        let writing = std::fs::read_dir(&run2)
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().trim_start_matches('.').starts_with("shard-2."));
        if writing && c.state(&task).as_deref() == Some("RUNNING") {
            break;
        }
        assert!(Instant::now() < deadline, "task 2 never started writing\n{}", c.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    c.scancel(&task);
    assert_eq!(c.wait_done(&task, timeout), "CANCELLED", "{}", c.logs());
    assert!(!run2.join("shard-2.granary").exists(), "the killed shard never finished its archive");

    let requeue = c.sbatch(&["--array=2", "--job-name=harvest"], &shard_command(&run2, "--resume"));
    let merged2 = run2.join("game.granary");
    let merge =
        c.sbatch(&[&format!("--dependency=afterok:{requeue}"), "--job-name=merge"], &merge_command(&run2, &merged2));
    assert_eq!(c.wait_done(&merge, timeout), "COMPLETED", "merge after requeue\n{}", c.logs());
    assert_eq!(c.state(&format!("{requeue}_2")).as_deref(), Some("COMPLETED"));
    assert!(std::fs::read(&merged2).unwrap() == expected, "merge after the requeue differs from a local harvest");
    eprintln!("slurm test: {:.1} s with the cluster up", t0.elapsed().as_secs_f64());
}

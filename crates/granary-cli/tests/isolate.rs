//! `harvest --isolate`: a worker that crashes, hangs, runs out of memory, panics, prints, lies or
//! refuses to exit costs exactly its pipeline (or nothing), and a killed parent leaves no worker
//! behind; a library too large to compile in process is refused there, and lands isolated.
//!
//! Faults are injected with the documented `GRANARY_FAULT` test facility, set only on the
//! `granary` child process of each test.

#[path = "../../granary/tests/common/mod.rs"]
mod common;

use common::EXAMPLE;
use granary::archive::Archive;
use granary::script::Script;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn labels() -> Vec<String> {
    Script::load(Path::new(EXAMPLE)).unwrap().pipelines.iter().map(|p| p.label.clone().unwrap()).collect()
}

/// `-j 2` unless `args` names a thread count.
fn harvest(out: &Path, args: &[&str], fault: &str) -> (Option<i32>, serde_json::Value) {
    let mut all = args.to_vec();
    if !args.contains(&"-j") {
        all.extend(["-j", "2"]);
    }
    common::harvest_with_fault(Path::new(env!("CARGO_BIN_EXE_granary")), Path::new(EXAMPLE), out, &all, fault)
}

fn failures(s: &serde_json::Value) -> Vec<(String, String, String)> {
    s["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["pipeline"].as_str().unwrap().into(),
                f["phase"].as_str().unwrap().into(),
                f["message"].as_str().unwrap().into(),
            )
        })
        .collect()
}

/// The archive verifies and holds exactly the pipelines not in `failed`.
fn assert_holds_all_but(out: &Path, failed: &[&str]) {
    let labels = labels();
    let ar = Archive::open(out).unwrap();
    ar.verify().unwrap();
    assert_eq!(ar.len(), labels.len() - failed.len());
    for l in &labels {
        let found = ar.lookup_label(l).unwrap().is_some();
        assert_eq!(found, !failed.contains(&l.as_str()), "{l}");
    }
}

#[test]
fn crash_and_hang_fail_exactly_their_pipelines() {
    let labels = labels();
    let (abort, segv, overflow, hang) = (&labels[3], &labels[57], &labels[150], &labels[290]);
    let dir = common::tempdir();
    let out = dir.path().join("iso.granary");
    let fault = format!("abort:{abort},segv:{segv},stack-overflow:{overflow},hang:{hang}");
    // The timeout is what ends the hang; it is generous, so that no other pipeline (a worker's
    // start included) can reach it on a loaded machine.
    let (code, s) = harvest(&out, &["--isolate", "--timeout", "20"], &fault);
    assert_eq!(code, Some(1), "{s}");
    let failures = s["failures"].as_array().unwrap();
    let failed: Vec<&str> = failures.iter().map(|f| f["pipeline"].as_str().unwrap()).collect();
    assert_eq!(failed, vec![abort.as_str(), segv.as_str(), overflow.as_str(), hang.as_str()]);
    let msg = |i: usize| failures[i]["message"].as_str().unwrap().to_string();
    assert!(msg(0).contains("SIGABRT"), "{}", msg(0));
    assert!(msg(1).contains("SIGSEGV"), "{}", msg(1));
    assert!(msg(2).contains("stack overflow"), "{}", msg(2));
    assert_eq!(failures[3]["phase"], "timeout");
    assert!(msg(3).contains("within 20 s"), "{}", msg(3));
    assert_holds_all_but(&out, &failed);
}

/// The memory watchdog (issue 22): a worker whose resident memory grows past
/// `--worker-memory-limit` while it compiles is killed mid-compile, not after it answers; that
/// pipeline alone fails with phase `memory`, a replacement worker carries on and the archive
/// holds every other pipeline. The `grow` fault allocates and touches 4 MiB steps without end
/// (up to 2 GiB, then sleeps): only the watchdog can stop it before `--timeout`, and a broken
/// watchdog shows as phase `timeout` here, never as a hang or an exhausted machine.
#[cfg(target_os = "linux")]
#[test]
fn a_worker_over_its_memory_limit_mid_compile_is_stopped_and_its_pipeline_counted() {
    let labels = labels();
    let grower = &labels[42];
    let dir = common::tempdir();
    let out = dir.path().join("iso.granary");
    let marks = dir.path().join("reached");
    std::fs::create_dir(&marks).unwrap();
    let fault = format!("grow:{grower},reached:{}", marks.display());
    let args = ["--isolate", "--worker-memory-limit", "256", "--timeout", "300"];
    let (code, s) = harvest(&out, &args, &fault);
    assert_eq!(code, Some(1), "{s}");
    let f = failures(&s);
    assert_eq!(f.len(), 1, "{s}");
    let (pipeline, phase, message) = &f[0];
    assert_eq!((pipeline, phase.as_str()), (grower, "memory"), "{message}");
    assert!(message.contains("memory limit of 256 MiB") && message.contains("killed and replaced"), "{message}");
    // The resident memory it was killed at, as the parent measured it: over the limit.
    let resident: f64 = message
        .split("(resident ")
        .nth(1)
        .and_then(|r| r.split(" MiB").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no resident size: {message}"));
    assert!(resident > 256.0, "{message}");
    // Exactly one worker reached the fault, and it was replaced: the slot went on with a new one.
    assert_eq!(common::fault_markers(&marks, "grow").len(), 1);
    assert!(s["workers_started"].as_u64().unwrap() >= 3, "{s}");
    assert_eq!(s["succeeded"].as_u64().unwrap() as usize, labels.len() - 1, "{s}");
    assert_holds_all_but(&out, &[grower]);
}

/// The in-process library size limit (issue 22): a library over `--max-library-bytes` is
/// refused before naga sees it, naming the file, its size and the limit and suggesting
/// `--isolate`; exactly the pipelines that use it fail, the others land. Under `--isolate`
/// there is no limit unless one is given, so the same harvest lands every pipeline.
#[test]
fn a_library_over_the_in_process_limit_is_refused_and_the_others_land() {
    let script = Script::load(Path::new(EXAMPLE)).unwrap();
    // 8 KiB: of the example's libraries only pbr.wgsl (12,091 bytes) is larger.
    let limit = 8 << 10;
    let uses_large = |p: &granary::script::ScriptPipeline| {
        p.descriptor.as_ref().unwrap().stages().iter().any(|(_, f)| f.base().0.source().len() > limit)
    };
    let expected: Vec<&str> =
        script.pipelines.iter().filter(|p| uses_large(p)).map(|p| p.label.as_deref().unwrap()).collect();
    assert!(!expected.is_empty() && expected.len() < script.pipelines.len(), "{}", expected.len());
    let dir = common::tempdir();
    let out = dir.path().join("limited.granary");
    let (code, s) = harvest(&out, &["--max-library-bytes", "8KiB"], "");
    assert_eq!(code, Some(1), "{s}");
    let failed = s["failures"].as_array().unwrap();
    let mut names: Vec<&str> = failed.iter().map(|f| f["pipeline"].as_str().unwrap()).collect();
    names.sort_by_key(|l| expected.iter().position(|x| x == l));
    assert_eq!(names, expected);
    for f in failed {
        assert_eq!((&f["phase"], &f["kind"]), (&"shader".into(), &"too-large".into()), "{f}");
        let message = f["message"].as_str().unwrap();
        assert!(f["file"].as_str().unwrap().ends_with("pbr.wgsl"), "{f}");
        for part in ["pbr.wgsl", "12091 bytes", "limit of 8192 bytes", "--isolate", "--max-library-bytes"] {
            assert!(message.contains(part), "no '{part}' in: {message}");
        }
    }
    assert_holds_all_but(&out, &expected);

    // --isolate: no limit unless given; every pipeline lands.
    let isolated = dir.path().join("isolated.granary");
    let (code, s) = harvest(&isolated, &["--isolate"], "");
    assert_eq!((code, &s["failed"]), (Some(0), &0.into()), "{s}");
    assert_holds_all_but(&isolated, &[]);
    // Given with --isolate, the limit holds in the workers too: the same pipelines fail.
    let (code, s) = harvest(&dir.path().join("both.granary"), &["--isolate", "--max-library-bytes", "8192"], "");
    assert_eq!(code, Some(1), "{s}");
    assert_eq!(s["failed"].as_u64().unwrap() as usize, expected.len(), "{s}");
}

/// The default limit, [`granary::frontend::MAX_LIBRARY_BYTES`]: a library one byte over it (a
/// small shader padded with a comment, which naga would parse quickly) is refused in process
/// by default, lands with `--max-library-bytes 0` (no limit) and under `--isolate`.
#[test]
fn the_default_library_limit_refuses_in_process_and_isolate_lands_it() {
    let dir = common::tempdir();
    let mut wgsl = String::from("@compute @workgroup_size(1) fn main() {}\n//");
    let size = granary::frontend::MAX_LIBRARY_BYTES as usize + 1;
    wgsl.extend(std::iter::repeat_n('x', size - wgsl.len() - 1));
    wgsl.push('\n');
    assert_eq!(wgsl.len(), size);
    std::fs::write(dir.path().join("padded.wgsl"), &wgsl).unwrap();
    std::fs::write(dir.path().join("small.wgsl"), "@compute @workgroup_size(1) fn main() {}\n").unwrap();
    let script = dir.path().join("s.json");
    std::fs::write(
        &script,
        r#"{"granary_script": 1,
            "libraries": [{"name": "padded", "path": "padded.wgsl"}, {"name": "small", "path": "small.wgsl"}],
            "pipelines": [{"label": "padded", "compute": {"function": {"library": "padded", "function": "main"}}},
                          {"label": "small", "compute": {"function": {"library": "small", "function": "main"}}}]}"#,
    )
    .unwrap();
    let granary = Path::new(env!("CARGO_BIN_EXE_granary"));
    let run = |out: &str, args: &[&str]| {
        let mut all = vec!["-j", "1"];
        all.extend(args);
        common::harvest_with_fault(granary, &script, &dir.path().join(out), &all, "")
    };
    let (code, s) = run("default.granary", &[]);
    assert_eq!((code, &s["succeeded"], &s["failed"]), (Some(1), &1.into(), &1.into()), "{s}");
    let f = &s["failures"][0];
    assert_eq!((&f["pipeline"], &f["kind"]), (&"padded".into(), &"too-large".into()), "{f}");
    let message = f["message"].as_str().unwrap();
    let limit = format!("limit of {} bytes", granary::frontend::MAX_LIBRARY_BYTES);
    for part in ["padded.wgsl", &format!("{size} bytes"), &limit, "--isolate"] {
        assert!(message.contains(part), "no '{part}' in: {message}");
    }
    let ar = Archive::open(&dir.path().join("default.granary")).unwrap();
    assert_eq!(ar.len(), 1);
    assert!(ar.lookup_label("small").unwrap().is_some());
    for (out, args) in [("unlimited.granary", &["--max-library-bytes", "0"][..]), ("isolated.granary", &["--isolate"])]
    {
        let (code, s) = run(out, args);
        assert_eq!((code, &s["succeeded"], &s["failed"]), (Some(0), &2.into(), &0.into()), "{args:?}: {s}");
    }
}

#[test]
fn recycled_workers_write_the_same_bytes_as_threads() {
    let dir = common::tempdir();
    let a = dir.path().join("threads.granary");
    let b = dir.path().join("by-count.granary");
    let c = dir.path().join("by-memory.granary");
    let (code, s) = harvest(&a, &[], "");
    assert_eq!(code, Some(0), "{s}");
    assert_eq!(s["workers_started"], 0);
    let n = s["pipelines"].as_u64().unwrap();

    let (code, s) = harvest(&b, &["--isolate", "--recycle-after", "7"], "");
    assert_eq!(code, Some(0), "{s}");
    assert!(s["workers_started"].as_u64().unwrap() >= n.div_ceil(7), "{s}");
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());

    // 1 MiB is below any worker's footprint: the watchdog stops every worker while it compiles
    // (before issue 22 it was checked only after an answer, and this recycled every worker), so
    // every pipeline fails with phase `memory`, none is archived, and nothing hangs.
    let (code, s) = harvest(&c, &["--isolate", "--worker-memory-limit", "1"], "");
    assert_eq!((code, s["failed"].as_u64()), (Some(1), Some(n)), "{s}");
    for f in s["failures"].as_array().unwrap() {
        assert_eq!(f["phase"], "memory", "{f}");
    }
    assert_eq!(Archive::open(&c).unwrap().len(), 0);
}

#[test]
fn output_printed_by_the_worker_cannot_corrupt_answers() {
    // Every target, so the answer cap is checked against the largest answers too.
    let labels = labels();
    let dir = common::tempdir();
    let a = dir.path().join("threads.granary");
    let b = dir.path().join("isolated.granary");
    let targets = ["--targets", "spirv,msl,hlsl,glsl"];
    let (code, s) = harvest(&a, &targets, "");
    assert_eq!(code, Some(0), "{s}");
    let fault = format!("print-stdout:{},print-stdout:{},print-stdout:{}", labels[0], labels[120], labels[334]);
    let mut args = targets.to_vec();
    args.push("--isolate");
    let (code, s) = harvest(&b, &args, &fault);
    assert_eq!(code, Some(0), "{s}");
    assert_eq!(s["failed"], 0);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

/// Harvests the example `--isolate` with the worker fault `kind` on pipeline `index`: exactly
/// that pipeline fails, in the protocol phase, and the archive holds every other one. Returns
/// the failure's message and the summary.
fn lone_protocol_failure(kind: &str, index: usize) -> (String, serde_json::Value) {
    let labels = labels();
    let liar = &labels[index];
    let dir = common::tempdir();
    let out = dir.path().join("iso.granary");
    let (code, s) = harvest(&out, &["--isolate"], &format!("{kind}:{liar}"));
    assert_eq!(code, Some(1), "{s}");
    let f = failures(&s);
    assert_eq!(f.len(), 1, "{s}");
    assert_eq!(&f[0].0, liar);
    assert_eq!(f[0].1, "protocol");
    assert_holds_all_but(&out, &[liar]);
    (f[0].2.clone(), s)
}

#[test]
fn an_answer_for_another_pipeline_fails_exactly_that_pipeline() {
    let (msg, _) = lone_protocol_failure("wrong-answer", 100);
    assert!(msg.contains("another pipeline's entry") && msg.contains(&labels()[101]), "{msg}");
}

#[test]
fn a_huge_announced_answer_fails_its_pipeline_without_allocating() {
    let (msg, s) = lone_protocol_failure("huge-frame", 200);
    assert!(msg.contains("announced a 1099511627776-byte answer") && msg.contains("at most"), "{msg}");
    // The parent never allocated anything near the announced size.
    assert!(s["peak_rss_bytes"].as_u64().unwrap() < 1 << 30, "{s}");
}

/// Runs `cmd` (its standard output captured) to its end; a run still going after
/// [`common::SAFETY`] is killed and fails the test: it hung.
fn run_or_call_it_a_hang(cmd: &mut Command) -> std::process::Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (mut stdout, mut stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut b).map(|_| b)
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut b).map(|_| b)
    });
    let mut status = None;
    common::wait_for("the harvest ending", || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    std::process::Output {
        status: status.unwrap(),
        stdout: out.join().unwrap().unwrap(),
        stderr: err.join().unwrap().unwrap(),
    }
}

#[test]
fn a_worker_that_hangs_on_exit_cannot_hang_the_harvest() {
    let dir = common::tempdir();
    let out = dir.path().join("iso.granary");
    let marks = dir.path().join("reached");
    std::fs::create_dir(&marks).unwrap();
    // Recycling makes workers retire mid-harvest too, not only at the end. Every retiring
    // worker marks that it is about to hang (`reached:`) and then never exits by itself.
    let o = run_or_call_it_a_hang(
        Command::new(env!("CARGO_BIN_EXE_granary"))
            .args(["harvest", EXAMPLE, "-o", out.to_str().unwrap(), "--json", "-j", "2"])
            .args(["--isolate", "--recycle-after", "150"])
            .env("GRANARY_FAULT", format!("hang-on-exit:1,reached:{}", marks.display())),
    );
    let s: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("no summary: {}", String::from_utf8_lossy(&o.stderr)));
    assert_eq!(o.status.code(), Some(0), "{s}");
    assert_eq!(s["failed"], 0);
    let started = s["workers_started"].as_u64().unwrap();
    assert!(started >= 3, "{s}");
    // The fault took effect: workers did hang on exit (each is killed after the grace period,
    // so one slowed past it by the machine may be killed before it marks; none more than
    // once).
    let hung = common::fault_markers(&marks, "hang-on-exit");
    assert!(!hung.is_empty() && hung.len() as u64 <= started, "{hung:?} of {started} workers");
    assert_holds_all_but(&out, &[]);
}

#[test]
fn a_panic_in_a_worker_fails_exactly_the_affected_pipelines_with_its_message_and_location() {
    let script = Script::load(Path::new(EXAMPLE)).unwrap();
    let labels = labels();
    let panicking = &labels[10];
    let entry = "vs_depth";
    let mut expected: Vec<&str> = script
        .pipelines
        .iter()
        .filter(|p| {
            let d = p.descriptor.as_ref().unwrap();
            p.label.as_deref() == Some(panicking.as_str()) || d.stages().iter().any(|(_, f)| f.base().1 == entry)
        })
        .map(|p| p.label.as_deref().unwrap())
        .collect();
    expected.sort_by_key(|l| labels.iter().position(|x| x == l));
    assert!(expected.len() > 10, "the entry point is shared by a run of pipelines");
    let dir = common::tempdir();
    let out = dir.path().join("iso.granary");
    let (code, s) = harvest(&out, &["--isolate"], &format!("panic:{panicking},panic-stage:{entry}"));
    assert_eq!(code, Some(1), "{s}");
    let f = failures(&s);
    let failed: Vec<&str> = f.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(failed, expected);
    for (label, phase, message) in &f {
        assert_eq!(phase, "panic", "{label}: {message}");
        let what = if label == panicking {
            "injected panic fault".to_string()
        } else {
            format!("injected panic-stage fault in stage function '{entry}'")
        };
        assert!(message.contains(&what), "{message}");
        assert!(message.contains("fault.rs:"), "no location: {message}");
    }
    assert_holds_all_but(&out, &failed);
}

#[test]
fn isolated_and_in_process_harvests_count_stage_functions_alike() {
    let dir = common::tempdir();
    let (code, threads) = harvest(&dir.path().join("a.granary"), &[], "");
    assert_eq!(code, Some(0));
    let (code, iso1) = harvest(&dir.path().join("b.granary"), &["--isolate", "-j", "1"], "");
    assert_eq!(code, Some(0));
    let (code, iso2) = harvest(&dir.path().join("c.granary"), &["--isolate", "-j", "2", "--recycle-after", "20"], "");
    assert_eq!(code, Some(0));
    for field in ["unique_stage_functions", "libraries_parsed", "stage_references", "reuse_ratio"] {
        assert_eq!(threads[field], iso1[field], "{field}");
        assert_eq!(threads[field], iso2[field], "{field}");
    }
    assert!(threads["unique_stage_functions"].as_u64().unwrap() > 0);
}

/// Processes whose command line is `granary worker` on `script`, not zombies.
#[cfg(target_os = "linux")]
fn workers_of(script: &Path) -> Vec<u32> {
    let script = script.to_str().unwrap();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else { continue };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_worker = args.get(1) == Some(&&b"worker"[..]) && args.contains(&script.as_bytes());
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'));
        if is_worker && !zombie {
            found.push(pid);
        }
    }
    found
}

/// Whether process `pid` still exists and is not a zombie.
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
}

#[cfg(target_os = "linux")]
#[test]
fn killing_the_parent_leaves_no_worker_running() {
    // A private copy of the example, so that this test's workers are told apart by path.
    let dir = common::tempdir();
    let script: PathBuf = common::copy_example(dir.path());
    let marks = dir.path().join("reached");
    std::fs::create_dir(&marks).unwrap();
    let labels = labels();
    // Two hangs, in the first and the last chunk: the slot that takes the first chunk hangs
    // in it, the other one works through every other chunk and hangs in the last. Each worker
    // marks the hang it reached (`reached:`), so the test waits for both workers to hang.
    let fault = format!("hang:{},hang:{},reached:{}", labels[1], labels[labels.len() - 1], marks.display());
    let mut parent = Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["harvest", script.to_str().unwrap(), "-o", dir.path().join("o.granary").to_str().unwrap()])
        .args(["-q", "-j", "2", "--isolate", "--timeout", "600"])
        .env("GRANARY_FAULT", fault)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::wait_for("both workers hanging", || common::fault_markers(&marks, "hang").len() == 2);
    let hung: Vec<u32> = common::fault_markers(&marks, "hang").into_iter().map(|(pid, _)| pid).collect();
    assert_ne!(hung[0], hung[1], "two workers, one hang each");
    let mut running = workers_of(&script);
    running.sort();
    assert_eq!(running, hung, "exactly the two hanging workers run");
    // Both workers hang for 600 s: the harvest cannot finish by itself.
    assert!(parent.try_wait().unwrap().is_none(), "the harvest ended by itself");
    parent.kill().unwrap();
    parent.wait().unwrap();
    // The kernel kills the workers when their parent's slot threads die (PR_SET_PDEATHSIG):
    // wait for that event (a worker that outlived its parent would hang this wait).
    common::wait_for("the workers dying with their parent", || !hung.iter().any(|&pid| alive(pid)));
    assert_eq!(workers_of(&script), Vec::<u32>::new(), "workers outlived their parent");
}

/// A parent → worker message (the layout documented in `harvest/worker.rs`).
fn message(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut m = b"GP".to_vec();
    m.extend_from_slice(&[tag, 0, 0, 0, 0, 0]);
    m.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    m.extend_from_slice(payload);
    m
}

#[test]
fn a_worker_compiles_the_bytes_it_is_sent_and_reads_no_file() {
    use std::io::{Read, Write};
    // The script names a library file that does not exist, in a folder that does not exist:
    // the worker must use the bytes it is sent and never look for the file.
    let text = r#"{"granary_script": 1,
        "libraries": [{"name": "l", "path": "missing.wgsl"}],
        "pipelines": [{"label": "p", "compute": {"function": {"library": "l", "function": "main"}}}]}"#;
    let source = b"@compute @workgroup_size(1) fn main() {}";
    let mut library = vec![0u8, 255];
    library.extend_from_slice(&1u32.to_le_bytes());
    library.extend_from_slice(b"l");
    library.extend_from_slice(&0u32.to_le_bytes());
    library.extend_from_slice(source);
    let mut input = message(0, text.as_bytes());
    input.extend(message(1, &library));
    input.extend(message(2, &0u64.to_le_bytes()));
    let mut worker = Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["worker", "/does/not/exist/s.json", "--targets", "spirv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = worker.stdin.take().unwrap();
    stdin.write_all(&input).unwrap();
    drop(stdin);
    let mut out = Vec::new();
    worker.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    assert!(worker.wait().unwrap().success());
    assert!(out.len() > 32, "no answer");
    assert_eq!(&out[..3], b"GW\0", "a compiled answer");
    let word = |i: usize| u64::from_le_bytes(out[8 + 8 * i..16 + 8 * i].try_into().unwrap());
    assert_eq!(word(0), 0, "the index answered");
    assert_eq!(word(2) as usize, out.len() - 32, "exactly one frame");
    let ar = Archive::from_bytes(out[32..].to_vec()).unwrap();
    ar.verify().unwrap();
    assert_eq!(ar.len(), 1);
    assert!(ar.lookup_label("p").unwrap().is_some());
}

/// A legitimately large answer (issue 22): a 220-byte compute shader copying a million-element
/// array whole makes naga write about 105 MB of HLSL. The answer bound is derived from the
/// per-output limit the in-process harvest applies too (`granary::frontend::MAX_OUTPUT_BYTES`),
/// so `--isolate` lands it exactly as in process: the same archive, byte for byte.
#[test]
fn a_legitimately_large_answer_lands_as_in_process() {
    let dir = common::tempdir();
    let wgsl = "@group(0) @binding(0) var<storage, read_write> buf: array<i32, 1000000>;\n\
        @group(0) @binding(1) var<storage, read_write> out: array<i32, 1000000>;\n\
        @compute @workgroup_size(1) fn main() { let a = buf; out = a; }\n";
    std::fs::write(dir.path().join("big.wgsl"), wgsl).unwrap();
    let script = dir.path().join("big.json");
    std::fs::write(
        &script,
        r#"{"granary_script": 1, "libraries": [{"name": "big", "path": "big.wgsl"}],
            "pipelines": [{"label": "big", "compute": {"function": {"library": "big", "function": "main"}}}]}"#,
    )
    .unwrap();
    let run = |out: &str, extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_granary"))
            .args(["harvest", script.to_str().unwrap(), "-o", dir.path().join(out).to_str().unwrap()])
            .args(["--targets", "spirv,hlsl", "--json", "-q", "-j", "1"])
            .args(extra)
            .output()
            .unwrap();
        let s: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&o.stderr)));
        assert_eq!((o.status.code(), &s["succeeded"], &s["failed"]), (Some(0), &1.into(), &0.into()), "{s}");
        std::fs::read(dir.path().join(out)).unwrap()
    };
    let in_process = run("a.granary", &[]);
    assert!(in_process.len() > 100_000_000, "{} bytes: the HLSL is the large output", in_process.len());
    // One 105 MB archive on disk at a time: CI's disk is shared with the whole debug build.
    std::fs::remove_file(dir.path().join("a.granary")).unwrap();
    let isolated = run("b.granary", &["--isolate"]);
    std::fs::remove_file(dir.path().join("b.granary")).unwrap();
    assert!(isolated == in_process, "--isolate wrote another archive");
}

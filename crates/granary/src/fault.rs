//! Fault injection for tests: a documented test facility, compiled in only with the `fault`
//! cargo feature (the test suite enables it; a build a game ships never reads
//! `GRANARY_FAULT`). Without the feature every query here answers "no fault" and the
//! environment is never read.
//!
//! `GRANARY_FAULT` is a comma-separated list of `ACTION:ARG`:
//! - `abort:LABEL`, `segv:LABEL`, `stack-overflow:LABEL`, `hang:LABEL` — when a harvest worker
//!   is about to compile the pipeline labelled `LABEL`, it aborts, raises SIGSEGV, overflows its
//!   stack, or sleeps forever. Used to prove that `harvest --isolate` survives a compiler that
//!   crashes or never returns.
//! - `grow:LABEL` — when a harvest worker is about to compile the pipeline labelled `LABEL`, it
//!   allocates memory and touches every page, [`GROW_STEP`] at a time with a millisecond's pause
//!   between steps, up to [`GROW_CAP`], then sleeps forever holding it: a compile whose
//!   resident memory grows without end, as naga's on a huge library does. Used to prove that
//!   `harvest --isolate --worker-memory-limit` stops a worker while it grows (the cap keeps a
//!   broken watchdog from exhausting the machine; the `--timeout` then ends the worker).
//! - `panic:LABEL` — panic while compiling the pipeline labelled `LABEL`; `panic-stage:NAME`
//!   panics inside the front end while compiling any stage function whose entry point is
//!   `NAME` (as a panic inside naga would), so every pipeline sharing it is affected;
//!   `hang-stage:NAME` never returns from that compile (a `hang` marker first), so a test
//!   can kill a harvest while its stage functions compile;
//!   `panic-write:TARGET/NAME` panics inside the `TARGET` writer (`spirv`, `msl`, `hlsl`,
//!   `glsl`) for that entry point only, as naga's GLSL writer does on some inputs (for a
//!   SPIR-V library, in both translators, SPIRV-Cross and naga); `panic-cross:TARGET/NAME`
//!   panics inside SPIRV-Cross's translation only, so naga's fallback runs.
//! - `print-stdout:LABEL` — an isolated worker prints junk on its standard output (as a
//!   chatty driver or library would) before compiling `LABEL`.
//! - `wrong-answer:LABEL` — an isolated worker answers the request for `LABEL` with another
//!   pipeline's entry.
//! - `huge-frame:LABEL` — an isolated worker answers the request for `LABEL` with a frame that
//!   announces an absurd payload length.
//! - `hang-on-exit:ANY` — an isolated worker never exits after its input closes.
//! - `device-crash:LABEL`, `device-fail:LABEL` — with a device backend (`--backend vulkan`),
//!   at the device compile step of the pipeline labelled `LABEL` (with the device open and
//!   its shader modules shared with other pipelines): raise SIGSEGV, as a crashing driver
//!   would, or fail the way a driver call returning an error code does.
//! - `slow-write:MS` — every atomic file write sleeps `MS` milliseconds after writing half of
//!   the temporary file (and every journal append pauses likewise), so that kill tests can land
//!   in the middle of an archive write or a journal append.
//! - `landed-log:PATH` — every pipeline that lands in a harvest's capture appends one byte
//!   to `PATH` (the file's length counts them, written before the landing thread can be
//!   held back by the journal), so a kill test can stop a harvest at a random point of its
//!   progress and compare what it kept with what had landed.
//! - `reached:DIR` — every fault above that a process carries out itself (abort, segv,
//!   stack-overflow, hang, grow, panic, and hang-on-exit) first creates the empty file
//!   `DIR/ACTION.PID.N` (`hang.1234.0`: the first fault process 1234 reached was a hang), so a
//!   test waits for that file, the event, instead of for time. A marker that cannot be created
//!   is reported on standard error and the fault is carried out anyway.
//!
//! The variable is read once per process.

// Without the feature nothing constructs the actions; the queries answer "no fault".
#![cfg_attr(not(feature = "fault"), allow(dead_code))]

use std::time::Duration;

/// How much memory the `grow` fault allocates and touches per step (4 MiB).
pub const GROW_STEP: usize = 4 << 20;

/// The most memory the `grow` fault holds before it stops growing and sleeps (2 GiB).
pub const GROW_CAP: usize = 2 << 30;

/// What to do at a pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `std::process::abort()`.
    Abort,
    /// Raise SIGSEGV, as a crashing driver would.
    Segv,
    /// Recurse until the stack overflows.
    StackOverflow,
    /// Never return.
    Hang,
    /// Allocate and touch memory in steps up to [`GROW_CAP`], then never return.
    Grow,
    /// Panic (an unwind, as naga does on some inputs).
    Panic,
    /// Print junk on standard output (isolated workers).
    PrintStdout,
    /// Answer with another pipeline's entry (isolated workers).
    WrongAnswer,
    /// Send a frame announcing an absurd length (isolated workers).
    HugeFrame,
}

impl Action {
    /// The action's spelling in `GRANARY_FAULT` (also the name of its `reached:` marker).
    pub fn name(self) -> &'static str {
        match self {
            Action::Abort => "abort",
            Action::Segv => "segv",
            Action::StackOverflow => "stack-overflow",
            Action::Hang => "hang",
            Action::Grow => "grow",
            Action::Panic => "panic",
            Action::PrintStdout => "print-stdout",
            Action::WrongAnswer => "wrong-answer",
            Action::HugeFrame => "huge-frame",
        }
    }
}

#[cfg(feature = "fault")]
mod imp {
    use super::Action;
    use std::sync::OnceLock;

    #[derive(Default)]
    pub(super) struct Faults {
        pub at: Vec<(Action, String)>,
        pub panic_stage: Vec<String>,
        pub hang_stage: Vec<String>,
        pub panic_write: Vec<String>,
        pub panic_cross: Vec<String>,
        pub hang_on_exit: bool,
        pub device_crash: Vec<String>,
        pub device_fail: Vec<String>,
        /// `reached:DIR`: where markers of reached faults are created.
        pub reached: Option<std::path::PathBuf>,
        /// `landed-log:PATH`: one byte appended per landed pipeline.
        pub landed_log: Option<std::sync::Mutex<std::fs::File>>,
    }

    pub(super) fn faults() -> &'static Faults {
        static F: OnceLock<Faults> = OnceLock::new();
        F.get_or_init(|| parse(&std::env::var("GRANARY_FAULT").unwrap_or_default()))
    }

    pub(super) fn parse(spec: &str) -> Faults {
        let mut f = Faults::default();
        for item in spec.split(',').filter(|s| !s.is_empty()) {
            let Some((action, arg)) = item.split_once(':') else { continue };
            let a = match action {
                "abort" => Action::Abort,
                "segv" => Action::Segv,
                "stack-overflow" => Action::StackOverflow,
                "hang" => Action::Hang,
                "grow" => Action::Grow,
                "panic" => Action::Panic,
                "print-stdout" => Action::PrintStdout,
                "wrong-answer" => Action::WrongAnswer,
                "huge-frame" => Action::HugeFrame,
                "panic-stage" => {
                    f.panic_stage.push(arg.to_string());
                    continue;
                }
                "hang-stage" => {
                    f.hang_stage.push(arg.to_string());
                    continue;
                }
                "panic-write" => {
                    f.panic_write.push(arg.to_string());
                    continue;
                }
                "panic-cross" => {
                    f.panic_cross.push(arg.to_string());
                    continue;
                }
                "device-crash" => {
                    f.device_crash.push(arg.to_string());
                    continue;
                }
                "device-fail" => {
                    f.device_fail.push(arg.to_string());
                    continue;
                }
                "hang-on-exit" => {
                    f.hang_on_exit = true;
                    continue;
                }
                "reached" => {
                    f.reached = Some(arg.into());
                    continue;
                }
                "landed-log" => {
                    match std::fs::OpenOptions::new().create(true).append(true).open(arg) {
                        Ok(file) => f.landed_log = Some(std::sync::Mutex::new(file)),
                        Err(e) => eprintln!("granary fault: cannot open the landed log {arg}: {e}"),
                    }
                    continue;
                }
                // Read by granary-archive's durable writer and journal.
                "slow-write" => continue,
                _ => continue,
            };
            f.at.push((a, arg.to_string()));
        }
        f
    }

    /// Creates `DIR/NAME.PID.N` for a `reached:DIR` fault (N counts this process's markers).
    pub(super) fn mark(name: &str) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let Some(dir) = &faults().reached else { return };
        let path = dir.join(format!("{name}.{}.{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        if let Err(e) = std::fs::write(&path, b"") {
            eprintln!("granary fault: cannot create the marker {}: {e}", path.display());
        }
    }
}

/// The injected fault for the pipeline labelled `label`, if any.
#[cfg(feature = "fault")]
pub fn action_for(label: Option<&str>) -> Option<Action> {
    let label = label?;
    imp::faults().at.iter().find(|(_, l)| l == label).map(|(a, _)| *a)
}

/// The injected fault for the pipeline labelled `label`: never, without the `fault` feature.
#[cfg(not(feature = "fault"))]
#[inline(always)]
pub fn action_for(_label: Option<&str>) -> Option<Action> {
    None
}

/// Panics if a `panic-stage` fault names `entry_point`, never returns if a `hang-stage`
/// fault does (called inside the front end's stage-function compile, where a naga panic
/// would happen).
#[inline(always)]
pub fn at_stage_function(entry_point: &str) {
    #[cfg(feature = "fault")]
    if imp::faults().panic_stage.iter().any(|n| n == entry_point) {
        panic!("injected panic-stage fault in stage function '{entry_point}'");
    }
    #[cfg(feature = "fault")]
    if imp::faults().hang_stage.iter().any(|n| n == entry_point) {
        trigger(Action::Hang);
    }
    #[cfg(not(feature = "fault"))]
    let _ = entry_point;
}

/// Appends a byte to the `landed-log` file, if there is one (called once per landed
/// pipeline).
#[inline(always)]
pub fn at_landed() {
    #[cfg(feature = "fault")]
    if let Some(log) = &imp::faults().landed_log {
        use std::io::Write;
        if let Err(e) = log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).write_all(b".") {
            eprintln!("granary fault: cannot append to the landed log: {e}");
        }
    }
}

/// Panics if a `panic-write` fault names `target`/`entry_point` (called inside that target's
/// writer).
#[inline(always)]
pub fn at_target_write(target: &str, entry_point: &str) {
    #[cfg(feature = "fault")]
    if imp::faults().panic_write.iter().any(|n| n.split_once('/') == Some((target, entry_point))) {
        panic!("injected panic-write fault in the {target} writer for '{entry_point}'");
    }
    #[cfg(not(feature = "fault"))]
    let _ = (target, entry_point);
}

/// Panics if a `panic-cross` fault names `target`/`entry_point` (called inside SPIRV-Cross's
/// translation of a SPIR-V stage function to that target).
#[inline(always)]
pub fn at_cross_write(target: &str, entry_point: &str) {
    #[cfg(feature = "fault")]
    if imp::faults().panic_cross.iter().any(|n| n.split_once('/') == Some((target, entry_point))) {
        panic!("injected panic-cross fault in SPIRV-Cross's {target} translation of '{entry_point}'");
    }
    #[cfg(not(feature = "fault"))]
    let _ = (target, entry_point);
}

/// At a device backend's compile step for the pipeline labelled `label`: raises SIGSEGV for
/// a `device-crash` fault, returns the injected driver error for a `device-fail` fault.
#[inline(always)]
pub fn at_device_compile(label: Option<&str>) -> Result<(), String> {
    #[cfg(feature = "fault")]
    if let Some(label) = label {
        let f = imp::faults();
        if f.device_crash.iter().any(|l| l == label) {
            trigger(Action::Segv);
        }
        if f.device_fail.iter().any(|l| l == label) {
            return Err(format!(
                "vkCreateGraphicsPipelines failed: ERROR_UNKNOWN (injected device-fail fault at '{label}')"
            ));
        }
    }
    #[cfg(not(feature = "fault"))]
    let _ = label;
    Ok(())
}

/// Whether an isolated worker should hang instead of exiting when its input closes (called
/// once, right before the hang: it creates the `reached:` marker `hang-on-exit`).
#[inline(always)]
pub fn hang_on_exit() -> bool {
    #[cfg(feature = "fault")]
    let hang = imp::faults().hang_on_exit;
    #[cfg(feature = "fault")]
    if hang {
        imp::mark("hang-on-exit");
    }
    #[cfg(not(feature = "fault"))]
    let hang = false;
    hang
}

/// Carries out the process-level `action`s (abort, segv, stack overflow, hang, grow, panic). The
/// protocol-level ones (print-stdout, wrong-answer, huge-frame) are carried out by the
/// isolated worker itself and are no-ops here. A process-level action first creates its
/// `reached:` marker, if one is asked for.
pub fn trigger(action: Action) {
    #[cfg(feature = "fault")]
    if !matches!(action, Action::PrintStdout | Action::WrongAnswer | Action::HugeFrame) {
        imp::mark(action.name());
    }
    match action {
        Action::Abort => std::process::abort(),
        Action::Segv => {
            // SAFETY: `signal` and `raise` take no pointers. Restoring the default disposition
            // first (the Rust runtime installs a SIGSEGV handler for stack-overflow reports)
            // makes the raised SIGSEGV terminate the process, exactly like a crashing driver.
            // Exercised by tests/isolate.rs.
            #[cfg(unix)]
            unsafe {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                libc::raise(libc::SIGSEGV);
            }
            std::process::abort();
        }
        Action::StackOverflow => {
            #[allow(unconditional_recursion)]
            fn recurse(n: u64) -> u64 {
                let buf = std::hint::black_box([n; 512]);
                recurse(buf[7].wrapping_add(1)).wrapping_add(buf[0])
            }
            std::hint::black_box(recurse(0));
        }
        Action::Hang => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        Action::Grow => {
            let mut held: Vec<Vec<u8>> = Vec::new();
            while held.len() * GROW_STEP < GROW_CAP {
                // Zeroed pages are not resident until written: write one byte per page.
                let mut step = vec![0u8; GROW_STEP];
                for page in step.iter_mut().step_by(4096) {
                    *page = 1;
                }
                held.push(std::hint::black_box(step));
                std::thread::sleep(Duration::from_millis(1));
            }
            loop {
                std::hint::black_box(&held);
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        Action::Panic => panic!("injected panic fault"),
        Action::PrintStdout | Action::WrongAnswer | Action::HugeFrame => {}
    }
}

#[cfg(all(test, feature = "fault"))]
mod tests {
    #[test]
    fn parses_the_documented_spellings() {
        let f = super::imp::parse(
            "abort:a/b,hang:x,slow-write:15,bogus,nope:1,panic-stage:vs,hang-on-exit:1,panic:p,reached:/tmp/m",
        );
        assert_eq!(f.at.len(), 3);
        assert_eq!(f.at[0], (super::Action::Abort, "a/b".to_string()));
        assert_eq!(f.at[2], (super::Action::Panic, "p".to_string()));
        assert_eq!(f.panic_stage, vec!["vs".to_string()]);
        assert!(f.hang_on_exit);
        assert_eq!(f.reached.as_deref(), Some(std::path::Path::new("/tmp/m")));
        for a in [super::Action::Abort, super::Action::StackOverflow, super::Action::Grow, super::Action::HugeFrame] {
            assert_eq!(super::imp::parse(&format!("{}:l", a.name())).at, vec![(a, "l".to_string())]);
        }
    }
}

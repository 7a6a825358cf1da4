//! External checking programs (SPIRV-Tools' `spirv-val`, glslang's `glslangValidator`): where
//! one is and how it is run; and [`SpirvVal`], SPIR-V validation by SPIRV-Tools linked in
//! ([`spirv_tools`]) or by the program.
//!
//! A program is found once: the path an environment variable names, else the name on `PATH`.
//! It is run with its input on its standard input, written from a thread of its own while the
//! output is read (neither side can block the other on a full pipe); the answer is accepted,
//! rejected with the program's message (capped at [`MESSAGE_CAP`] bytes), or "could not run".

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[allow(unsafe_code)]
mod spirv_tools;

/// What validates SPIR-V: SPIRV-Tools linked into this build, or a `spirv-val` program run
/// once per module. Both run the same library code with the same options; linked in, a check
/// costs the validation alone instead of a process start (docs/BENCHMARKS.md, "Output
/// validation").
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SpirvVal {
    /// SPIRV-Tools in process ([`spirv_tools`]).
    Linked,
    /// The `spirv-val` program at this path.
    Program(PathBuf),
}

impl SpirvVal {
    /// The program `env` names when it is set (an explicit choice wins), else SPIRV-Tools
    /// linked in, else `spirv-val` on `PATH`; `Err` says what is missing and how to get it.
    pub(crate) fn find(env: &str, install: &str) -> Result<SpirvVal, String> {
        if std::env::var_os(env).is_some_and(|p| !p.is_empty()) || !spirv_tools::LINKED {
            return find_program(env, "spirv-val", install).map(SpirvVal::Program);
        }
        Ok(SpirvVal::Linked)
    }

    /// Validates `module` for `target_env` (`vulkan1.1`, as `spirv-val --target-env` names
    /// it): `Ok(None)` accepted, `Ok(Some(message))` rejected with the validator's message,
    /// `Err` when it cannot be run (`install` says how to get one).
    pub(crate) fn validate(&self, target_env: &str, module: &[u8], install: &str) -> Result<Option<String>, String> {
        match self {
            SpirvVal::Linked => spirv_tools::validate(target_env, module),
            SpirvVal::Program(p) => run(p, &["--target-env", target_env, "-"], module, "SPIR-V validator", install),
        }
    }

    /// What it is, for reports: the library's version and "linked in", or the program's path
    /// and its `--version` line (runs the program once).
    pub(crate) fn describe(&self) -> String {
        match self {
            SpirvVal::Linked => {
                format!("{} (linked in)", spirv_tools::version().unwrap_or_else(|| "SPIRV-Tools".to_string()))
            }
            SpirvVal::Program(p) => match version(p) {
                Some(v) => format!("{} ({v})", p.display()),
                None => p.display().to_string(),
            },
        }
    }
}

/// The longest message of a program kept (a validator can print a disassembly).
pub(crate) const MESSAGE_CAP: usize = 4096;

/// The program `env` names (when set and not empty; a path must be a file), else `name` found
/// on `PATH`; `Err` says it is missing and how to get it (`install`).
pub(crate) fn find_program(env: &str, name: &str, install: &str) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        // A bare name is looked up on PATH when it runs; a path must name a file now.
        if p.components().count() > 1 && !p.is_file() {
            return Err(format!("{env} names {}, which is not a file: {install}", p.display()));
        }
        return Ok(p);
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| p.is_file()))
        .ok_or_else(|| format!("{name} is not on PATH: {install}"))
}

/// Runs `program args…` on `input`: `Ok(None)` when it exits 0, `Ok(Some(message))` when it
/// exits otherwise (its standard output then standard error, trimmed and capped), `Err` when
/// it cannot be run (`what` names it in the message, `install` says how to get it).
pub(crate) fn run(
    program: &Path,
    args: &[&str],
    input: &[u8],
    what: &str,
    install: &str,
) -> Result<Option<String>, String> {
    let shown = program.display();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("the {what} {shown} cannot be run ({e}): {install}"))?;
    let mut stdin = child.stdin.take().ok_or_else(|| format!("no standard input for {shown}"))?;
    let output = std::thread::scope(|s| {
        // A program that exits without reading all of its input closes the pipe; the write's
        // error is then of no interest (the exit status says what happened).
        let writer = s.spawn(move || stdin.write_all(input));
        let output = child.wait_with_output();
        let _ = writer.join();
        output
    })
    .map_err(|e| format!("the {what} {shown} failed to run: {e}"))?;
    if output.status.success() {
        return Ok(None);
    }
    let mut text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let err = String::from_utf8_lossy(&output.stderr);
    if !err.trim().is_empty() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(err.trim());
    }
    if text.is_empty() {
        text = format!("it exited with {} and said nothing", output.status);
    }
    if text.len() > MESSAGE_CAP {
        let mut end = MESSAGE_CAP;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(" …");
    }
    Ok(Some(text))
}

/// The first line `program --version` prints (`None` when it cannot be run).
pub(crate) fn version(program: &Path) -> Option<String> {
    let o = Command::new(program).arg("--version").stdin(Stdio::null()).output().ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    text.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
}

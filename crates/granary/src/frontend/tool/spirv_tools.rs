//! SPIRV-Tools' validator in process, when the build linked the library (`build.rs`:
//! Debian's `spirv-tools` package ships it as `libSPIRV-Tools.a`); otherwise
//! [`validate`] says it is not linked and the caller runs the `spirv-val` program.
//!
//! Why: a `spirv-val` process costs about 7 ms whatever the module (start-up and the
//! grammar tables), against a fraction of a millisecond for validating a typical module in
//! process; a harvest checks every distinct module and output once (docs/BENCHMARKS.md,
//! "Output validation"). The verdicts are the library's, the same code `spirv-val` runs:
//! [`validate`] makes the calls `spirv-val --target-env ENV` makes with default options.
//!
//! The C interface used: `spvParseTargetEnv`, `spvContextCreate`/`Destroy`,
//! `spvValidatorOptionsCreate`/`Destroy`, `spvValidateWithOptions`, `spvDiagnosticDestroy`,
//! `spvSoftwareVersionDetailsString` (stable since SPIRV-Tools 2016) and
//! `spvValidatorOptionsSetFriendlyNames` (in the 2023.1 that Debian 12 ships).
//!
//! A module is validated without friendly names first (the verdict; on naga's modules the
//! name mapper, which reads every `OpName` and formats every constant for messages, is about a
//! third of the validator's time: 980 → 625 µs for an 8 KB vertex module of the seed-scale
//! workload on this project's 2-core machine), and only a rejected one again with them, so
//! its message is the one `spirv-val` prints.
//!
//! Object lifetimes: every call creates its own context and options and destroys them, and
//! the diagnostic, before it returns; nothing SPIRV-Tools allocates outlives the call, and the
//! module's words are borrowed only for the duration of `spvValidateWithOptions`.
//!
//! Thread safety: any number of threads may call [`validate`] at once (nothing is shared
//! between calls; SPIRV-Tools' grammar tables are immutable statics). A fault inside the
//! library (a C++ exception or a crash) ends the process, as any native code's would; under
//! `--isolate` that is one worker, contained and counted like a translator's crash.

/// Whether this build linked SPIRV-Tools.
pub(crate) const LINKED: bool = cfg!(granary_spirv_tools);

/// The linked library's name and version (`SPIRV-Tools v2023.1 …`), `None` when not linked.
pub(crate) fn version() -> Option<String> {
    imp::version()
}

/// Validates `module` for the target environment `env` (`vulkan1.1`, as `spirv-val
/// --target-env` names it): `Ok(None)` when the validator accepts it, `Ok(Some(message))`
/// with its message (as `spirv-val` prints it: `error: line N: …`) when it rejects it, `Err`
/// when it cannot validate here (not linked, or an environment it does not know).
pub(crate) fn validate(env: &str, module: &[u8]) -> Result<Option<String>, String> {
    if !module.len().is_multiple_of(4) {
        return Ok(Some(format!("error: the module is {} bytes, not a whole number of 32-bit words", module.len())));
    }
    let words: Vec<u32> = module.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
    imp::validate(env, &words)
}

#[cfg(not(granary_spirv_tools))]
mod imp {
    pub(super) fn version() -> Option<String> {
        None
    }

    pub(super) fn validate(_env: &str, _words: &[u32]) -> Result<Option<String>, String> {
        Err("SPIRV-Tools is not linked into this build".to_string())
    }
}

#[cfg(granary_spirv_tools)]
mod imp {
    use std::ffi::{c_char, c_int, c_void, CStr, CString};

    /// `spv_position_t`.
    #[repr(C)]
    struct Position {
        line: usize,
        column: usize,
        index: usize,
    }

    /// `spv_diagnostic_t`.
    #[repr(C)]
    struct Diagnostic {
        position: Position,
        error: *mut c_char,
        is_text_source: bool,
    }

    /// `spv_binary_t` (read only here: `spv_const_binary`).
    #[repr(C)]
    struct Binary {
        code: *const u32,
        word_count: usize,
    }

    /// `spv_target_env` and `spv_result_t`: C enums, `int`-sized on every ABI granary builds for.
    type Env = c_int;
    const SUCCESS: c_int = 0;

    extern "C" {
        fn spvParseTargetEnv(s: *const c_char, env: *mut Env) -> bool;
        fn spvContextCreate(env: Env) -> *mut c_void;
        fn spvContextDestroy(context: *mut c_void);
        fn spvValidatorOptionsCreate() -> *mut c_void;
        fn spvValidatorOptionsDestroy(options: *mut c_void);
        fn spvValidatorOptionsSetFriendlyNames(options: *mut c_void, value: bool);
        fn spvValidateWithOptions(
            context: *const c_void,
            options: *const c_void,
            binary: *const Binary,
            diagnostic: *mut *mut Diagnostic,
        ) -> c_int;
        fn spvDiagnosticDestroy(diagnostic: *mut Diagnostic);
        fn spvSoftwareVersionDetailsString() -> *const c_char;
    }

    pub(super) fn version() -> Option<String> {
        // SAFETY: the function takes nothing and returns a NUL-terminated string with static
        // storage ("valid for the remainder of the process", libspirv.h); it is only read.
        let text = unsafe { spvSoftwareVersionDetailsString() };
        if text.is_null() {
            return Some("SPIRV-Tools".to_string());
        }
        // SAFETY: non-null, NUL-terminated, static (above).
        Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
    }

    pub(super) fn validate(env: &str, words: &[u32]) -> Result<Option<String>, String> {
        let name = CString::new(env).map_err(|_| format!("target environment {env:?} contains a NUL byte"))?;
        let mut target: Env = 0;
        // SAFETY: `name` is a NUL-terminated string alive for the call; `target` is a valid
        // place for the one `int` the function writes.
        if !unsafe { spvParseTargetEnv(name.as_ptr(), &mut target) } {
            return Err(format!("SPIRV-Tools does not know the target environment {env}"));
        }
        // The verdict first, without friendly names: the validator's name mapper (which reads
        // every OpName and formats every constant for messages) is a third of the work on
        // naga's modules and never changes the verdict. A rejected module is validated again
        // with them, for the message `spirv-val` would print.
        match once(env, target, words, false)? {
            None => Ok(None),
            Some(_) => once(env, target, words, true),
        }
    }

    /// One validation of `words` for `target` (the environment `env` names), with or without
    /// friendly names in the message.
    fn once(env: &str, target: Env, words: &[u32], friendly: bool) -> Result<Option<String>, String> {
        // SAFETY: `target` is an environment the library itself just parsed. The context is
        // destroyed below, after its one use, on every path.
        let context = unsafe { spvContextCreate(target) };
        if context.is_null() {
            return Err(format!("SPIRV-Tools could not create a context for {env}"));
        }
        // SAFETY: no arguments; destroyed below, after its one use, on every path.
        let options = unsafe { spvValidatorOptionsCreate() };
        if !options.is_null() {
            // SAFETY: `options` is the live object just created (not null: the setter
            // dereferences it); the setter stores one flag in it.
            unsafe { spvValidatorOptionsSetFriendlyNames(options, friendly) };
        }
        let binary = Binary { code: words.as_ptr(), word_count: words.len() };
        let mut diagnostic: *mut Diagnostic = std::ptr::null_mut();
        // SAFETY: `context` and `options` are live objects of this library (null options is
        // also accepted: defaults); `binary` points at `words`, borrowed and unchanged for the
        // whole call, with its exact length; `diagnostic` is a valid place for the pointer the
        // library may write. The library keeps no pointer into `words` after it returns.
        let result = unsafe { spvValidateWithOptions(context, options, &binary, &mut diagnostic) };
        let message = if diagnostic.is_null() {
            None
        } else {
            // SAFETY: a non-null diagnostic is a live `spv_diagnostic_t` the call allocated,
            // its `error` null or a NUL-terminated string it owns; both are read before the
            // diagnostic is destroyed, once, here.
            unsafe {
                let d = &*diagnostic;
                let text = if d.error.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(d.error).to_string_lossy().into_owned()
                };
                let at = d.position.index;
                spvDiagnosticDestroy(diagnostic);
                Some((at, text))
            }
        };
        // SAFETY: both were created above, are destroyed once, and nothing refers to them now.
        unsafe {
            spvValidatorOptionsDestroy(options);
            spvContextDestroy(context);
        }
        if result == SUCCESS {
            return Ok(None);
        }
        Ok(Some(match message {
            Some((at, text)) if !text.trim().is_empty() => format!("error: line {at}: {}", text.trim_end()),
            _ => format!("error: SPIRV-Tools rejected the module (result {result}) and said nothing"),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compute entry point with an empty body, as naga writes it: valid in every Vulkan
    /// environment.
    fn valid_module() -> Vec<u8> {
        let module = naga::front::wgsl::parse_str("@compute @workgroup_size(1) fn main() {}").unwrap();
        let info = naga::valid::Validator::new(Default::default(), naga::valid::Capabilities::empty())
            .validate(&module)
            .unwrap();
        let words = naga::back::spv::write_vec(&module, &info, &Default::default(), None).unwrap();
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn validates_in_process_when_linked_from_many_threads() {
        let linked = version().is_some();
        assert_eq!(linked, LINKED);
        if std::env::var_os("GRANARY_REQUIRE_SPIRV_TOOLS").is_some() {
            assert!(linked, "GRANARY_REQUIRE_SPIRV_TOOLS is set, but the build did not link SPIRV-Tools");
        }
        if !linked {
            assert!(validate("vulkan1.1", &valid_module()).is_err());
            eprintln!("skipped: SPIRV-Tools is not linked into this build");
            return;
        }
        assert!(version().is_some_and(|v| v.contains("SPIRV-Tools")), "{:?}", version());
        let good = valid_module();
        // The same module with an id bound of 1 (its header's fourth word): every id is out
        // of bounds, invalid everywhere.
        let mut bad = good.clone();
        bad[12..16].copy_from_slice(&1u32.to_le_bytes());
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..16 {
                        assert_eq!(validate("vulkan1.1", &good), Ok(None));
                        let m = validate("vulkan1.1", &bad).ok().flatten().unwrap_or_default();
                        assert!(m.starts_with("error: line ") && m.contains("bound"), "{m}");
                    }
                });
            }
        });
        assert!(validate("vulkan9.9", &good).is_err_and(|m| m.contains("vulkan9.9")));
        assert!(validate("vulkan1.1", &good[..10]).is_ok_and(|m| m.is_some_and(|m| m.contains("10 bytes"))));
    }

    /// `spirv-as --target-env vulkan1.1` of a compute shader that stores through a constant
    /// named `answer`: `%x = OpConstant %int 1` (`OpName %x "answer"`), then `OpStore %x %x`.
    const NAMED_BAD: [u32; 53] = [
        0x07230203, 0x00010300, 0x00070000, 0x00000008, 0x00000000, 0x00020011, 0x00000001, 0x0003000e, 0x00000000,
        0x00000001, 0x0005000f, 0x00000005, 0x00000001, 0x6e69616d, 0x00000000, 0x00060010, 0x00000001, 0x00000011,
        0x00000001, 0x00000001, 0x00000001, 0x00040005, 0x00000002, 0x77736e61, 0x00007265, 0x00020013, 0x00000003,
        0x00030021, 0x00000004, 0x00000003, 0x00040015, 0x00000005, 0x00000020, 0x00000001, 0x00030016, 0x00000006,
        0x00000020, 0x0004002b, 0x00000005, 0x00000002, 0x00000001, 0x00050036, 0x00000003, 0x00000001, 0x00000000,
        0x00000004, 0x000200f8, 0x00000007, 0x0003003e, 0x00000002, 0x00000002, 0x000100fd, 0x00010038,
    ];

    #[test]
    fn a_rejected_module_is_described_with_its_names_as_spirv_val_does() {
        if !LINKED {
            eprintln!("skipped: SPIRV-Tools is not linked into this build");
            return;
        }
        let bytes: Vec<u8> = NAMED_BAD.iter().flat_map(|w| w.to_le_bytes()).collect();
        let m = validate("vulkan1.1", &bytes).ok().flatten().unwrap_or_default();
        // The verdict came from the pass without names; the message from the one with them.
        assert!(m.contains("OpStore Pointer <id> '2[%answer]' is not a logical pointer"), "{m}");
    }
}

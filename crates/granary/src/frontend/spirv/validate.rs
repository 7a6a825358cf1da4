//! The SPIRV-Tools validator (`spirv-val`), run on every SPIR-V library before anything else
//! reads it.
//!
//! The validator is SPIRV-Tools: linked into the build when the build found Debian's
//! `spirv-tools` package (`crates/granary/build.rs`), else its `spirv-val` program, found
//! through [`VALIDATOR_ENV`] (which wins over the linked library when set) or `PATH`. It runs
//! once per library (the front end caches the library's result), for the target environment
//! [`TARGET_ENV`]. Vulkan 1.3 is what granary's Vulkan backend requires of a device, and a
//! Vulkan 1.3 device takes SPIR-V 1.0 to 1.6: DXC's modules declare 1.0 to 1.5 and slangc's
//! 1.4 (the willems corpus), all of which `vulkan1.3` accepts.
//!
//! One accommodation, for validators older than the modules: SPIRV-Tools 2023.1 (Debian 12)
//! does not know `OpSource` language 11 (Slang) and refuses to read such a module at all. When
//! the validator says exactly that, the module is validated again with every `OpSource`
//! language operand set to 0 (Unknown) in the copy handed to the validator, and the
//! [`Validator`] remembers the first language it does not know, so later modules with such a
//! language get that copy at once (one run each). The language operand is debug information
//! with no meaning for validity; the module the driver gets is never changed.

use super::super::error::{ShaderError, ShaderErrorKind};
use crate::frontend::tool::SpirvVal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The environment variable naming the validator program (default: `spirv-val` on `PATH`).
pub const VALIDATOR_ENV: &str = "GRANARY_SPIRV_VAL";
/// The target environment modules are validated for (`spirv-val --target-env`).
pub const TARGET_ENV: &str = "vulkan1.3";
/// How to get a validator, for messages.
pub(crate) const INSTALL: &str =
    "install SPIRV-Tools (Debian: apt-get install spirv-tools) or set GRANARY_SPIRV_VAL to spirv-val's path";

/// Where the validator is, resolved once: the program, or why there is none.
///
/// Thread safety: `Send + Sync`; clones share what they learned about the program.
#[derive(Clone, Debug)]
pub struct Validator {
    program: Result<SpirvVal, String>,
    /// The lowest `OpSource` language number the program said it cannot read (`u32::MAX`:
    /// none yet).
    unknown_language: Arc<AtomicU32>,
}

impl Validator {
    /// The validator [`VALIDATOR_ENV`] names, else SPIRV-Tools linked in, else `spirv-val`
    /// found on `PATH`; a validator that cannot be found is reported by
    /// [`Validator::validate`], saying what to install.
    pub fn from_env() -> Self {
        Validator {
            program: SpirvVal::find(VALIDATOR_ENV, INSTALL).map_err(|m| format!("the SPIR-V validator {m}")),
            unknown_language: Arc::new(AtomicU32::new(u32::MAX)),
        }
    }

    /// The validator program at `path`.
    pub fn at(path: PathBuf) -> Self {
        Validator { program: Ok(SpirvVal::Program(path)), unknown_language: Arc::new(AtomicU32::new(u32::MAX)) }
    }

    /// The validator found, or why there is none (shared with the output checks).
    pub(crate) fn found(&self) -> Result<SpirvVal, String> {
        self.program.clone()
    }

    /// What validates (the linked library's version, or the program's path and version), or
    /// why nothing does.
    pub fn describe(&self) -> Result<String, &str> {
        self.program.as_ref().map(SpirvVal::describe).map_err(String::as_str)
    }

    /// Validates `module` (the library `file`) for [`TARGET_ENV`]; the error is the
    /// validator's message (kind `Validation`), or says why the validator could not run.
    pub fn validate(&self, module: &[u8], file: &str) -> Result<(), ShaderError> {
        let fail = |m: String| ShaderError::new(file, ShaderErrorKind::Validation, m);
        let program = self.program.as_ref().map_err(|m| fail(m.clone()))?;
        const NEUTRAL: &str = "(validated with OpSource's language set to Unknown, which this spirv-val cannot read)";
        let known_unreadable = self.unknown_language.load(Ordering::Relaxed);
        if source_languages(module).any(|l| l >= known_unreadable) {
            return match run(program, &neutral_source_language(module)).map_err(fail)? {
                None => Ok(()),
                Some(m) => Err(fail(format!("spirv-val --target-env {TARGET_ENV} rejects the module: {m} {NEUTRAL}"))),
            };
        }
        let message = match run(program, module).map_err(fail)? {
            None => return Ok(()),
            Some(m) if m.contains("Invalid source language operand") => {
                if let Some(l) = m.rsplit("operand: ").next().and_then(|n| n.split_whitespace().next()?.parse().ok()) {
                    self.unknown_language.fetch_min(l, Ordering::Relaxed);
                }
                match run(program, &neutral_source_language(module)).map_err(fail)? {
                    None => return Ok(()),
                    Some(m) => format!("{m} {NEUTRAL}"),
                }
            }
            Some(m) if m.contains("Invalid") && m.contains("operand") => {
                format!("{m} (an operand this spirv-val does not know; a newer SPIRV-Tools may accept the module)")
            }
            Some(m) => m,
        };
        Err(fail(format!("spirv-val --target-env {TARGET_ENV} rejects the module: {message}")))
    }
}

/// Validates `module` with `program` for [`TARGET_ENV`]: `Ok(None)` when it accepts it,
/// `Ok(Some(message))` when it rejects it, `Err` when it cannot be run.
fn run(program: &SpirvVal, module: &[u8]) -> Result<Option<String>, String> {
    program.validate(TARGET_ENV, module, INSTALL)
}

const OP_SOURCE: u32 = 3;

fn word(b: &[u8], i: usize) -> Option<u32> {
    b.get(4 * i..4 * i + 4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
}

/// The word index of each `OpSource`'s language operand, walking the instruction stream as
/// far as it can be walked.
fn source_language_words(module: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut i = 5;
    std::iter::from_fn(move || loop {
        let w = word(module, i)?;
        let (count, op) = ((w >> 16) as usize, w & 0xFFFF);
        if count == 0 {
            return None;
        }
        let at = i;
        i += count;
        if op == OP_SOURCE && word(module, at + 1).is_some() {
            return Some(at + 1);
        }
    })
}

/// The `OpSource` languages `module` declares.
fn source_languages(module: &[u8]) -> impl Iterator<Item = u32> + '_ {
    source_language_words(module).filter_map(|i| word(module, i))
}

/// A copy of `module` with every `OpSource` language operand set to 0 (Unknown); every other
/// word unchanged.
fn neutral_source_language(module: &[u8]) -> Vec<u8> {
    let mut out = module.to_vec();
    for i in source_language_words(module) {
        out[4 * i..4 * i + 4].copy_from_slice(&0u32.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_source_language_word_changes() {
        // Header (5 words), OpSource Slang 1 (3 words), OpCapability Shader (2 words).
        let words = [0x0723_0203u32, 0x0001_0400, 0, 10, 0, (3 << 16) | 3, 11, 1, (2 << 16) | 17, 1];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let out = neutral_source_language(&bytes);
        let back: Vec<u32> = out.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let mut want = words;
        want[6] = 0;
        assert_eq!(back, want);
        assert_eq!(source_languages(&bytes).collect::<Vec<_>>(), [11]);
        // A cut stream is copied as far as it goes, never read past its end.
        assert_eq!(neutral_source_language(&bytes[..26]).len(), 26);
    }

    #[test]
    fn a_missing_validator_says_what_to_install() {
        let v = Validator::at(PathBuf::from("/nonexistent/spirv-val"));
        let e = v.validate(&[0; 20], "m.spv").unwrap_err();
        assert_eq!(e.kind, ShaderErrorKind::Validation);
        assert!(e.message.contains("apt-get install spirv-tools") && e.message.contains(VALIDATOR_ENV), "{e}");
        assert_eq!(e.file, "m.spv");
    }
}

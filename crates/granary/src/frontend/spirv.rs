//! SPIR-V libraries: the application's own module, passed through byte for byte.
//!
//! A SPIR-V library is loaded once (the front end caches it like a parse): its header is
//! checked, the SPIRV-Tools validator checks the module ([`validate`]) and spirq reflects it
//! ([`reflect`]). Its SPIR-V output is the library's bytes, one [`Blob`] shared by every stage
//! function of it; specialization constants become a `VkSpecializationInfo`
//! ([`specialize`]); nothing rewrites the module. MSL, HLSL and GLSL, when requested, are
//! translations: SPIRV-Cross first ([`cross`]), naga as the fallback per target, naga's parse
//! made at most once per library and only when a target falls back to it
//! ([`SpirvLibrary::naga`]). A failed translation costs that target, never the library.
//!
//! A SPIR-V library's own module is its SPIR-V output whatever the profile's SPIR-V version
//! and capabilities say (a Vulkan 1.3 device takes SPIR-V 1.0 to 1.6, and the validator
//! checks it for that environment); the profile's other targets govern the translations. Its
//! keys are those of any stage function (library bytes, entry point, stage, constants, writer
//! options).

pub mod cross;
pub mod reflect;
pub mod specialize;
pub mod validate;

pub use reflect::{EntryReflection, Reflection, SpecConstant, SpecType};
pub use validate::Validator;

use super::error::{ShaderError, ShaderErrorKind};
use super::parse::ParsedLibrary;
use crate::descriptor::{Blob, Library};
use std::sync::{Arc, OnceLock};

/// SPIR-V's magic number.
const MAGIC: u32 = 0x0723_0203;

/// A loaded SPIR-V library.
#[derive(Debug)]
pub struct SpirvLibrary {
    /// The module's bytes: the SPIR-V output of every stage function of this library.
    pub module: Arc<Blob>,
    /// The module's words (for reflections with specialization constants applied).
    pub words: Vec<u32>,
    /// Its entry points as reflected with the module's default constant values.
    pub reflection: Reflection,
    /// naga's parse, the fallback translator of the MSL, HLSL and GLSL targets: `None` when
    /// none of them is requested; otherwise the capabilities to validate with and the parse,
    /// made on first need ([`SpirvLibrary::naga`]).
    naga: Option<(naga::valid::Capabilities, OnceLock<Result<ParsedLibrary, ShaderError>>)>,
    /// The library, for naga's parse.
    lib: Arc<Library>,
}

impl SpirvLibrary {
    /// naga's parse and validation of the module (at most once, however many threads ask;
    /// a panic inside naga is its error): `None` when no translated target is requested,
    /// `Err` when naga cannot parse or validate the module.
    pub fn naga(&self) -> Option<&Result<ParsedLibrary, ShaderError>> {
        let (caps, cell) = self.naga.as_ref()?;
        Some(cell.get_or_init(|| {
            let file = self.lib.display_path();
            crate::contain::catch(|| super::parse::parse_library(&self.lib, *caps))
                .unwrap_or_else(|p| Err(ShaderError::panicked(&file, "parsing and validating", &p)))
        }))
    }
}

/// The module's words, after checking the header: a whole number of words, at least the
/// 5-word header, SPIR-V's magic number in little-endian order.
pub fn words(lib: &Library) -> Result<Vec<u32>, ShaderError> {
    let file = lib.display_path();
    let bytes = lib.source();
    let fail = |m: String| ShaderError::new(&file, ShaderErrorKind::Parse, m);
    if !bytes.len().is_multiple_of(4) || bytes.len() < 20 {
        return Err(fail(format!(
            "not a SPIR-V module: {} bytes (a module is a whole number of 4-byte words, at least the 5-word header)",
            bytes.len()
        )));
    }
    let words: Vec<u32> = bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
    if words[0] != MAGIC {
        let why = if words[0].swap_bytes() == MAGIC {
            " (a big-endian module; granary takes little-endian SPIR-V)"
        } else {
            ""
        };
        return Err(fail(format!("not a SPIR-V module: the first word is {:#010x}, not {MAGIC:#010x}{why}", words[0])));
    }
    Ok(words)
}

/// Loads `lib`: header, validator and reflection; `translation` gives the capabilities naga
/// validates with when it falls back (`None`: no translated target requested).
pub fn load(
    lib: &Arc<Library>,
    validator: &Validator,
    translation: Option<naga::valid::Capabilities>,
) -> Result<SpirvLibrary, ShaderError> {
    let file = lib.display_path();
    let words = words(lib)?;
    validator.validate(lib.source(), &file)?;
    let reflection = crate::contain::catch(|| reflect::reflect(&words, &[]))
        .map_err(|p| ShaderError::panicked_in(&file, "spirq", "reflecting the module", &p))?
        .map_err(|m| {
            ShaderError::new(&file, ShaderErrorKind::Parse, format!("SPIR-V reflection (spirq) failed: {m}"))
        })?;
    Ok(SpirvLibrary {
        module: Blob::new(lib.source().to_vec()),
        words,
        reflection,
        naga: translation.map(|caps| (caps, OnceLock::new())),
        lib: lib.clone(),
    })
}

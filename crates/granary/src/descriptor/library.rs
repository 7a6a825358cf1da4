//! Shader libraries: one source unit, identified by its content.

use super::key::{ContentHash, Encoder};
use super::ShaderStage;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The language a library is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// WGSL text.
    Wgsl,
    /// Vulkan-style GLSL text for one stage.
    Glsl,
    /// A SPIR-V binary module.
    Spirv,
}

impl SourceKind {
    /// Guesses the kind (and, for GLSL, the stage) from a file name's extension:
    /// `.wgsl`; `.vert`/`.frag`/`.comp` (GLSL); `.spv`.
    pub fn from_extension(path: &Path) -> Option<(SourceKind, Option<ShaderStage>)> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "wgsl" => (SourceKind::Wgsl, None),
            "vert" => (SourceKind::Glsl, Some(ShaderStage::Vertex)),
            "frag" => (SourceKind::Glsl, Some(ShaderStage::Fragment)),
            "comp" => (SourceKind::Glsl, Some(ShaderStage::Compute)),
            "glsl" => (SourceKind::Glsl, None),
            "spv" => (SourceKind::Spirv, None),
            _ => return None,
        })
    }
}

/// A shader library: WGSL, one GLSL stage, or SPIR-V, identified by the hash of its content
/// (plus kind and GLSL stage). The name and origin are for messages only and never part of a key.
///
/// Immutable after creation; share it as `Arc<Library>`. Thread safety: `Send + Sync`.
#[derive(Debug)]
pub struct Library {
    name: String,
    kind: SourceKind,
    glsl_stage: Option<ShaderStage>,
    source: Vec<u8>,
    origin: Option<PathBuf>,
    hash: ContentHash,
}

impl Library {
    /// A library from bytes. For [`SourceKind::Glsl`] `glsl_stage` is required by the front end;
    /// for other kinds it is ignored.
    pub fn new(
        name: impl Into<String>,
        kind: SourceKind,
        glsl_stage: Option<ShaderStage>,
        source: Vec<u8>,
        origin: Option<PathBuf>,
    ) -> Arc<Library> {
        let glsl_stage = if kind == SourceKind::Glsl { glsl_stage } else { None };
        let mut e = Encoder::new(b"library");
        e.u8(kind as u8);
        e.option(glsl_stage.as_ref(), |e, s| e.u8(*s as u8));
        e.bytes(&source);
        let hash = ContentHash(e.finish());
        Arc::new(Library { name: name.into(), kind, glsl_stage, source, origin, hash })
    }

    /// A WGSL library from text.
    pub fn wgsl(name: impl Into<String>, source: impl Into<String>) -> Arc<Library> {
        Self::new(name, SourceKind::Wgsl, None, source.into().into_bytes(), None)
    }

    /// A GLSL library for one stage from text.
    pub fn glsl(name: impl Into<String>, stage: ShaderStage, source: impl Into<String>) -> Arc<Library> {
        Self::new(name, SourceKind::Glsl, Some(stage), source.into().into_bytes(), None)
    }

    /// A SPIR-V library from its bytes.
    pub fn spirv(name: impl Into<String>, bytes: Vec<u8>) -> Arc<Library> {
        Self::new(name, SourceKind::Spirv, None, bytes, None)
    }

    /// The name given at creation (for messages).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The source language.
    pub fn kind(&self) -> SourceKind {
        self.kind
    }
    /// The stage of a GLSL library.
    pub fn glsl_stage(&self) -> Option<ShaderStage> {
        self.glsl_stage
    }
    /// The raw source bytes.
    pub fn source(&self) -> &[u8] {
        &self.source
    }
    /// The file it was read from, if any.
    pub fn origin(&self) -> Option<&Path> {
        self.origin.as_deref()
    }
    /// The content identity: hash of kind, GLSL stage and bytes.
    pub fn hash(&self) -> ContentHash {
        self.hash
    }
    /// Where to point a user in messages: the file path if known, else the name.
    pub fn display_path(&self) -> String {
        match &self.origin {
            Some(p) => p.display().to_string(),
            None => self.name.clone(),
        }
    }
}

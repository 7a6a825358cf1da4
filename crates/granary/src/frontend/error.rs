//! Errors from parsing, specializing and writing shaders.

use crate::descriptor::Target;
use serde::Serialize;

/// What went wrong in the front end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShaderErrorKind {
    /// The source did not parse.
    Parse,
    /// The module parsed but failed validation: naga's, or for a SPIR-V library the
    /// SPIRV-Tools validator's (`spirv-val`, whose message this carries).
    Validation,
    /// The entry point does not exist, or exists for another stage.
    EntryPoint,
    /// A specialization constant is unknown, of the wrong type, or out of range.
    Constant,
    /// A target writer failed.
    Write,
    /// The target's own validator (`spirv-val`, `glslangValidator`) rejected the output a
    /// writer produced (a translator bug): that target is lost for the function
    /// ([`super::check`]).
    Invalid,
    /// naga (or spirq, the SPIR-V reflection) panicked on this input (a bug there, contained
    /// at the task boundary); the message carries the panic message and location.
    Panic,
    /// The library is larger than the front end parses in this process
    /// ([`super::MAX_LIBRARY_BYTES`] by default); it was not parsed.
    TooLarge,
}

impl std::fmt::Display for ShaderErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ShaderErrorKind::Parse => "parse",
            ShaderErrorKind::Validation => "validation",
            ShaderErrorKind::EntryPoint => "entry point",
            ShaderErrorKind::Constant => "constant",
            ShaderErrorKind::Write => "write",
            ShaderErrorKind::Invalid => "invalid output",
            ShaderErrorKind::Panic => "internal (a shader library panicked)",
            ShaderErrorKind::TooLarge => "size",
        })
    }
}

/// A shader error with the library file and, where known, its line and column.
#[derive(Debug, Clone, thiserror::Error, Serialize)]
#[error("{file}{}: {kind} error: {message}", crate::position::line_column(line, column))]
pub struct ShaderError {
    /// The library's file path, or its name when it has no file.
    pub file: String,
    /// 1-based line.
    pub line: Option<u32>,
    /// 1-based column.
    pub column: Option<u32>,
    /// Category.
    pub kind: ShaderErrorKind,
    /// naga's message, plus context.
    pub message: String,
    /// The target whose writer failed (`Write` errors), or whose profile lacks a capability
    /// the shader needs (`Validation` errors found per target).
    pub target: Option<Target>,
}

impl ShaderError {
    pub(crate) fn new(file: &str, kind: ShaderErrorKind, message: impl Into<String>) -> Self {
        ShaderError { file: file.to_string(), line: None, column: None, kind, message: message.into(), target: None }
    }

    /// A contained panic of naga while working on `file`.
    pub(crate) fn panicked(file: &str, what: &str, report: &crate::contain::PanicReport) -> Self {
        Self::panicked_in(file, "naga", what, report)
    }

    /// A contained panic of the library `who` (naga, spirq) while working on `file`.
    pub(crate) fn panicked_in(file: &str, who: &str, what: &str, report: &crate::contain::PanicReport) -> Self {
        Self::new(file, ShaderErrorKind::Panic, format!("{who} {report} (while {what}); this is a {who} bug"))
    }

    pub(crate) fn at(mut self, loc: Option<naga::SourceLocation>) -> Self {
        if let Some(l) = loc {
            self.line = Some(l.line_number);
            self.column = Some(l.line_position);
        }
        self
    }
}

//! Errors from reading a pipelines script.

use std::path::PathBuf;

/// Something wrong in a pipelines script, located by file, JSON path and (for syntax errors)
/// line and column.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}{}: {}{}", file.display(), crate::position::line_column(line, column), if json_path.is_empty() { String::new() } else { format!("{json_path}: ") }, message)]
pub struct ScriptError {
    /// The script (or library) file.
    pub file: PathBuf,
    /// JSON path of the offending value, e.g. `pipelines[3].render.vertex.library`.
    pub json_path: String,
    /// 1-based line and column when known.
    pub line: Option<usize>,
    /// 1-based column when known.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl ScriptError {
    /// An error at a JSON path with no line information.
    pub fn at(file: impl Into<PathBuf>, json_path: impl Into<String>, message: impl Into<String>) -> Self {
        ScriptError {
            file: file.into(),
            json_path: json_path.into(),
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// Converts a serde error found while deserializing the value at `prefix`.
    pub(crate) fn from_serde(
        file: &std::path::Path,
        prefix: &str,
        err: serde_path_to_error::Error<serde_json::Error>,
    ) -> Self {
        let inner_path = err.path().to_string();
        let json_path = join_path(prefix, if inner_path == "." { "" } else { &inner_path });
        let inner = err.into_inner();
        let (line, column) = if inner.line() > 0 { (Some(inner.line()), Some(inner.column())) } else { (None, None) };
        // serde_json appends " at line L column C"; we report those separately.
        let mut message = inner.to_string();
        if let Some(i) = message.rfind(" at line ") {
            message.truncate(i);
        }
        ScriptError { file: file.to_path_buf(), json_path, line, column, message }
    }
}

/// Joins JSON path segments (`a` + `b.c` → `a.b.c`, `a` + `[1]` → `a[1]`).
pub(crate) fn join_path(prefix: &str, rest: &str) -> String {
    if prefix.is_empty() {
        rest.to_string()
    } else if rest.is_empty() {
        prefix.to_string()
    } else if rest.starts_with('[') {
        format!("{prefix}{rest}")
    } else {
        format!("{prefix}.{rest}")
    }
}

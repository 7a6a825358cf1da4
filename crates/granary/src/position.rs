//! Where in a source file a message points: the one spelling of a `:line:column` suffix that
//! shader errors ([`crate::frontend::ShaderError`]) and script errors
//! ([`crate::script::ScriptError`]) append to the file name. Plain text, no I/O; used by
//! layers 2 and 3, so it sits below both.

use std::fmt::Display;

/// `:line:column`, `:line` when only the line is known, and nothing without a line (a column
/// alone says nothing).
pub(crate) fn line_column<T: Display>(line: &Option<T>, column: &Option<T>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::line_column;

    #[test]
    fn position_suffix_needs_a_line() {
        assert_eq!(line_column(&Some(3u32), &Some(7)), ":3:7");
        assert_eq!(line_column(&Some(3usize), &None), ":3");
        assert_eq!(line_column::<u32>(&None, &Some(7)), "");
        assert_eq!(line_column::<u32>(&None, &None), "");
    }
}

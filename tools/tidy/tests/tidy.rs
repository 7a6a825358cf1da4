//! The repository's structure, checked on every `cargo test` (docs/ARCHITECTURE.md states
//! the rules; `granary_tidy`'s modules say how each is read).

fn report(what: &str, problems: Result<Vec<String>, String>) {
    match problems {
        Err(e) => panic!("{what}: cannot check: {e}"),
        Ok(p) if p.is_empty() => {}
        Ok(p) => panic!("{what}: {} problem(s):\n  {}", p.len(), p.join("\n  ")),
    }
}

#[test]
fn layering_is_as_documented() {
    report("layers", granary_tidy::layers::check(&granary_tidy::repo_root()));
}

#[test]
fn unsafe_code_only_where_documented() {
    report("unsafe code", granary_tidy::unsafety::check(&granary_tidy::repo_root()));
}

#[test]
fn code_map_names_every_file() {
    report("code map", granary_tidy::codemap::check(&granary_tidy::repo_root()));
}

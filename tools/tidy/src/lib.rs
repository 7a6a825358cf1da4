#![warn(missing_docs)]
#![forbid(unsafe_code)]
//! Structure checks for the granary repository, run by `cargo test` (`tests/tidy.rs`) and,
//! for the public API, by `scripts/public-api.sh` in `.ci/run`.
//!
//! What is checked, and where the rule is written down:
//!
//! - [`layers`]: no module imports from a layer above it. The layers are the `layers` block
//!   of `docs/ARCHITECTURE.md`; every module of a listed crate or module must be in it.
//! - [`unsafety`]: every crate root denies or forbids `unsafe_code`; `#[allow(unsafe_code)]`
//!   appears only on `mod` declarations, and exactly those modules are listed in
//!   ARCHITECTURE's "Unsafe code" table; every `unsafe` block has a `// SAFETY:` argument.
//! - [`codemap`]: every source file of `crates/` is named in ARCHITECTURE.
//! - [`api`]: the public items of a crate, from rustdoc's JSON, one line each, so a checked-in
//!   list (`api/*.txt`) changes only on purpose.
//!
//! The source scanner ([`source`]) reads Rust as text: it removes comments, strings and
//! `#[cfg(test)]` modules, then follows `crate::`, `super::` and `self::` paths. It is not a
//! parser; it is exact for the code this repository writes (rustfmt-formatted `use` lists and
//! paths), and a construct it cannot read is an error, not a pass.

pub mod api;
pub mod codemap;
pub mod layers;
pub mod source;
pub mod unsafety;

use std::path::{Path, PathBuf};

/// The repository root (two folders above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One crate of `crates/`: its package name and source folder.
#[derive(Debug, Clone)]
pub struct Crate {
    /// The package name (`granary-archive`).
    pub name: String,
    /// Its `src` folder.
    pub src: PathBuf,
    /// Its `Cargo.toml`.
    pub manifest: PathBuf,
}

/// Every crate under `crates/`, sorted by name.
pub fn crates(root: &Path) -> std::io::Result<Vec<Crate>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root.join("crates"))? {
        let dir = entry?.path();
        let manifest = dir.join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        out.push(Crate { name, src: dir.join("src"), manifest });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Every `.rs` file under `dir`, sorted.
pub fn rust_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let p = entry?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The module path of a source file relative to its crate's `src` (`harvest/shard.rs` →
/// `["harvest", "shard"]`; `lib.rs`, `main.rs` → `[]`; `a/mod.rs` → `["a"]`). `None` for
/// files that are not modules of the library or binary (`src/bin/*`).
pub fn module_path(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if !(parts.is_empty() && (stem == "lib" || stem == "main")) && stem != "mod" {
        parts.push(stem.to_string());
    }
    Some(parts)
}

/// The section of `docs/ARCHITECTURE.md` text that follows the heading `heading` (any
/// level), up to the next heading of the same or a higher level.
pub fn section<'a>(doc: &'a str, heading: &str) -> Option<&'a str> {
    let mut start = None;
    let mut level = 0;
    let mut offset = 0;
    for line in doc.split_inclusive('\n') {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if hashes > 0 && line[hashes..].starts_with(' ') {
            if let Some(s) = start {
                if hashes <= level {
                    return Some(&doc[s..offset]);
                }
            } else if line[hashes..].trim() == heading {
                start = Some(offset + line.len());
                level = hashes;
            }
        }
        offset += line.len();
    }
    start.map(|s| &doc[s..])
}

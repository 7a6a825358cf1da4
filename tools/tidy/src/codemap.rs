//! `docs/ARCHITECTURE.md` matches the tree: every source file of `crates/` is named in it by
//! its path below the crate's `src/` (`harvest/shard.rs`; a `mod.rs` may be named by its
//! folder, `harvest/`), and every `….rs` path with a folder that the document names exists
//! (below the repository, `crates/`, or a crate's `src/`).

use std::path::Path;

/// Every mismatch between the code map and the tree at `root` (empty: none).
pub fn check(root: &Path) -> Result<Vec<String>, String> {
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).map_err(|e| e.to_string())?;
    let crates = crate::crates(root).map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    let mut all = Vec::new();
    for k in &crates {
        for file in crate::rust_files(&k.src).map_err(|e| e.to_string())? {
            let rel = file.strip_prefix(&k.src).unwrap_or(&file).to_string_lossy().into_owned();
            all.push(rel.clone());
            if rel == "lib.rs" || rel == "main.rs" || rel.ends_with("/tests.rs") {
                continue;
            }
            let named = doc.contains(&format!("`{rel}`"))
                || rel.strip_suffix("mod.rs").is_some_and(|dir| doc.contains(&format!("`{dir}`")));
            if !named {
                problems.push(format!(
                    "crates/{}/src/{rel} is not in docs/ARCHITECTURE.md (name it as `{rel}` in its crate's code map)",
                    k.name
                ));
            }
        }
    }
    // Backticked paths ending in .rs with a folder: they must exist somewhere.
    for token in doc.split('`').skip(1).step_by(2) {
        if token.ends_with(".rs") && token.contains('/') && !token.contains(' ') {
            let exists = root.join(token).is_file()
                || root.join("crates").join(token).is_file()
                || all.iter().any(|f| f == token)
                || crates.iter().any(|k| k.src.parent().is_some_and(|d| d.join(token).is_file()));
            if !exists {
                problems.push(format!("docs/ARCHITECTURE.md names `{token}`, which is no file of the tree"));
            }
        }
    }
    Ok(problems)
}

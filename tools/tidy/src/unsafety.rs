//! `unsafe` where the documentation says, and nowhere else.
//!
//! Every crate root carries `#![deny(unsafe_code)]` or `#![forbid(unsafe_code)]`; an
//! `#[allow(unsafe_code)]` stands only on a `mod` declaration; the modules so allowed are
//! exactly the rows of the "Unsafe code" table in `docs/ARCHITECTURE.md` (first column
//! `` `CRATE::module::path` ``); and every `unsafe` block or `unsafe impl` in them has a
//! `SAFETY:` comment on its line or in the ten lines before it.

use crate::source::{blank_comments_and_strings, line_of};
use std::collections::BTreeSet;
use std::path::Path;

/// Where `code` allows unsafe code: `#[allow(unsafe_code)]` or `#[cfg_attr(…,
/// allow(unsafe_code))]`, as (offset, length of the attribute).
fn allow_attributes(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for start in ["#[allow(unsafe_code)]", "#[cfg_attr("] {
        let mut from = 0;
        while let Some(p) = code[from..].find(start).map(|p| p + from) {
            from = p + 1;
            // The attribute's end: its closing bracket.
            let mut depth = 0usize;
            let end = code[p..].char_indices().find_map(|(i, c)| {
                match c {
                    '[' | '(' => depth += 1,
                    ']' | ')' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 && c == ']' {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                None
            });
            let Some(len) = end else { continue };
            if start == "#[allow(unsafe_code)]" || code[p..p + len].contains("allow(unsafe_code)") {
                out.push((p, len));
            }
        }
    }
    out.sort();
    out
}

/// The modules the "Unsafe code" table of `doc` lists.
pub fn documented(doc: &str) -> Result<BTreeSet<String>, String> {
    let section = crate::section(doc, "Unsafe code").ok_or("docs/ARCHITECTURE.md has no `Unsafe code` section")?;
    let mut out = BTreeSet::new();
    for line in section.lines() {
        let Some(rest) = line.trim().strip_prefix("| `") else { continue };
        if let Some(end) = rest.find('`') {
            out.insert(rest[..end].to_string());
        }
    }
    Ok(out)
}

/// Every break of the rule in the repository at `root` (empty: none).
pub fn check(root: &Path) -> Result<Vec<String>, String> {
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).map_err(|e| e.to_string())?;
    let listed = documented(&doc)?;
    let mut allowed = BTreeSet::new();
    let mut problems = Vec::new();
    for k in crate::crates(root).map_err(|e| e.to_string())? {
        for root_file in ["lib.rs", "main.rs"] {
            let f = k.src.join(root_file);
            let Ok(text) = std::fs::read_to_string(&f) else { continue };
            let code = blank_comments_and_strings(&text);
            if !code.contains("#![deny(unsafe_code)]") && !code.contains("#![forbid(unsafe_code)]") {
                problems.push(format!(
                    "crates/{}/src/{root_file}: no #![deny(unsafe_code)] or #![forbid(unsafe_code)]",
                    k.name
                ));
            }
        }
        for file in crate::rust_files(&k.src).map_err(|e| e.to_string())? {
            let rel = file.strip_prefix(root).unwrap_or(&file).display().to_string();
            let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
            let code = blank_comments_and_strings(&text);
            let module = crate::module_path(&k.src, &file).unwrap_or_default();
            for (p, attr_len) in allow_attributes(&code) {
                let after = code[p + attr_len..].trim_start();
                // Skip further attributes.
                let mut rest = after;
                while rest.starts_with("#[") {
                    rest = rest.find(']').map_or("", |e| rest[e + 1..].trim_start());
                }
                let rest = rest.strip_prefix("pub(crate) ").or_else(|| rest.strip_prefix("pub ")).unwrap_or(rest);
                match rest.strip_prefix("mod ") {
                    Some(m) => {
                        let name: String = m.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        let mut path = vec![k.name.clone()];
                        path.extend(module.iter().cloned());
                        path.push(name);
                        allowed.insert(path.join("::"));
                    }
                    None => problems.push(format!(
                        "{rel}:{}: #[allow(unsafe_code)] on something other than a `mod` declaration",
                        line_of(&code, p)
                    )),
                }
            }
            // SAFETY arguments.
            let lines: Vec<&str> = text.lines().collect();
            let code_lines: Vec<&str> = code.lines().collect();
            for (n, l) in code_lines.iter().enumerate() {
                let mut col = 0;
                while let Some(p) = l[col..].find("unsafe").map(|p| p + col) {
                    col = p + 6;
                    let before_ok =
                        p == 0 || !l.as_bytes()[p - 1].is_ascii_alphanumeric() && l.as_bytes()[p - 1] != b'_';
                    let tail = l[p + 6..].trim_start();
                    let needs = before_ok && (tail.starts_with('{') || tail.starts_with("impl") || tail.is_empty());
                    if !needs {
                        continue;
                    }
                    let from = n.saturating_sub(10);
                    if !lines[from..=n.min(lines.len() - 1)].iter().any(|x| x.contains("SAFETY:")) {
                        problems.push(format!("{rel}:{}: `unsafe` without a `// SAFETY:` argument", n + 1));
                    }
                }
            }
        }
    }
    for m in allowed.difference(&listed) {
        problems.push(format!("`{m}` allows unsafe code but is not in ARCHITECTURE.md's Unsafe code table"));
    }
    for m in listed.difference(&allowed) {
        problems.push(format!("ARCHITECTURE.md's Unsafe code table lists `{m}`, which does not allow unsafe code"));
    }
    Ok(problems)
}

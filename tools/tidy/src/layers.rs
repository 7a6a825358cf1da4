//! The documented layering, checked: no crate depends on a crate above it, and no module
//! imports from a module of a layer above its own.
//!
//! The rule lives in `docs/ARCHITECTURE.md`, in a fenced block whose info string is
//! `layers`. Each line is `SCOPE: GROUP | GROUP | …`, lowest layer first; a group is
//! space-separated names. `crates` as the scope orders the workspace's crates (normal
//! dependencies only); `CRATE` or `CRATE::module::path` orders the child modules of that
//! module. A name may use only names of groups before its own: names in one group are
//! independent of each other. Every child module of a listed scope must be listed (a new
//! module takes its place in the table when it is added), and every listed name must exist.
//!
//! Beyond the order, a module may not import an item through an ancestor's `pub use`
//! re-export (`use crate::Archive` inside `vulkan/loader.rs`): it names the module that
//! defines the item, so the import graph is the dependency graph.

use crate::source::{code, named_paths, reexported_names};
use crate::Crate;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The ordered groups of one scope.
#[derive(Debug, Clone, Default)]
pub struct Order {
    /// Name → its group's index (0 = lowest).
    pub rank: BTreeMap<String, usize>,
    /// The line of the block that gave it (for messages).
    pub line: usize,
}

/// Reads the `layers` block of `doc`. Keys are `crates`, `CRATE`, `CRATE::a::b`.
pub fn parse_table(doc: &str) -> Result<BTreeMap<String, Order>, String> {
    let mut table = BTreeMap::new();
    let mut inside = false;
    let mut found = false;
    for (n, line) in doc.lines().enumerate() {
        let t = line.trim();
        if !inside {
            if t == "```layers" {
                inside = true;
                found = true;
            }
            continue;
        }
        if t.starts_with("```") {
            inside = false;
            continue;
        }
        let t = t.split('#').next().unwrap_or("").trim();
        if t.is_empty() {
            continue;
        }
        let Some((scope, groups)) = split_scope(t).filter(|(s, _)| !s.is_empty() && !s.contains(' ')) else {
            return Err(format!("ARCHITECTURE.md line {}: expected `SCOPE: a b | c`, found `{t}`", n + 1));
        };
        let mut order = Order { line: n + 1, ..Order::default() };
        for (rank, group) in groups.split('|').enumerate() {
            for name in group.split_whitespace() {
                if order.rank.insert(name.to_string(), rank).is_some() {
                    return Err(format!("ARCHITECTURE.md line {}: `{name}` listed twice in `{scope}`", n + 1));
                }
            }
        }
        if table.insert(scope.to_string(), order).is_some() {
            return Err(format!("ARCHITECTURE.md line {}: scope `{scope}` listed twice", n + 1));
        }
    }
    if !found {
        return Err("docs/ARCHITECTURE.md has no ```layers block".into());
    }
    Ok(table)
}

/// Splits `a::b: x | y` at the colon that is not part of `::`.
fn split_scope(t: &str) -> Option<(&str, &str)> {
    let b = t.as_bytes();
    (0..b.len())
        .find(|&i| b[i] == b':' && b.get(i + 1) != Some(&b':') && (i == 0 || b[i - 1] != b':'))
        .map(|i| (t[..i].trim(), &t[i + 1..]))
}

/// A crate's modules: path → file.
pub fn modules(krate: &Crate) -> std::io::Result<BTreeMap<Vec<String>, PathBuf>> {
    let mut out = BTreeMap::new();
    for file in crate::rust_files(&krate.src)? {
        if let Some(m) = crate::module_path(&krate.src, &file) {
            if m.last().is_some_and(|l| l == "tests") {
                continue; // test-only modules (`#[cfg(test)] mod tests;`)
            }
            out.insert(m, file);
        }
    }
    Ok(out)
}

/// The workspace crates a crate's manifest depends on (normal and target dependencies,
/// not dev or build ones).
pub fn crate_dependencies(manifest: &Path) -> std::io::Result<Vec<String>> {
    let text = std::fs::read_to_string(manifest)?;
    let mut deps = Vec::new();
    let mut normal = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            normal = t == "[dependencies]" || (t.starts_with("[target.") && t.ends_with(".dependencies]"));
            continue;
        }
        if normal {
            let name = t.split(['=', '.', ' ']).next().unwrap_or("");
            if name.starts_with("granary") {
                deps.push(name.to_string());
            }
        }
    }
    Ok(deps)
}

fn code_of(file: &Path) -> Result<String, String> {
    std::fs::read_to_string(file).map(|t| code(&t)).map_err(|e| format!("{}: {e}", file.display()))
}

/// Every break of the layering in the repository at `root`, one message each (empty: none).
pub fn check(root: &Path) -> Result<Vec<String>, String> {
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).map_err(|e| e.to_string())?;
    let table = parse_table(&doc)?;
    let crates = crate::crates(root).map_err(|e| e.to_string())?;
    let mut problems = Vec::new();

    // Crates.
    match table.get("crates") {
        None => problems.push("the layers block has no `crates:` line".to_string()),
        Some(order) => {
            for k in &crates {
                let Some(&mine) = order.rank.get(&k.name) else {
                    problems.push(format!("crate `{}` is not in the `crates:` line of the layers block", k.name));
                    continue;
                };
                for dep in crate_dependencies(&k.manifest).map_err(|e| e.to_string())? {
                    match order.rank.get(&dep) {
                        Some(&theirs) if theirs < mine => {}
                        _ => problems.push(format!(
                            "{}: depends on `{dep}`, which is not in a layer below it",
                            k.manifest.strip_prefix(root).unwrap_or(&k.manifest).display()
                        )),
                    }
                }
            }
            for name in order.rank.keys() {
                if !crates.iter().any(|k| &k.name == name) {
                    problems.push(format!("the `crates:` line names `{name}`, which is not a crate of crates/"));
                }
            }
        }
    }

    // Modules.
    for k in &crates {
        let mods = modules(k).map_err(|e| e.to_string())?;
        let known: BTreeSet<&Vec<String>> = mods.keys().collect();
        // Every listed scope of this crate: its children all listed, its names all real.
        for (scope, order) in &table {
            let Some(rest) = scope.strip_prefix(k.name.as_str()) else { continue };
            if !(rest.is_empty() || rest.starts_with("::")) {
                continue;
            }
            let path: Vec<String> = rest.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect();
            let children: BTreeSet<String> = mods
                .keys()
                .filter(|m| m.len() == path.len() + 1 && m.starts_with(&path))
                .map(|m| m[path.len()].clone())
                .collect();
            for c in &children {
                if !order.rank.contains_key(c) {
                    problems.push(format!("module `{scope}::{c}` is not in the layers block (line {})", order.line));
                }
            }
            for name in order.rank.keys() {
                if !children.contains(name) {
                    problems.push(format!("the layers block names `{scope}::{name}`, which is not a module"));
                }
            }
        }
        let rel = |f: &Path| f.strip_prefix(root).unwrap_or(f).display().to_string();
        for (module, file) in &mods {
            let code = code_of(file)?;
            let paths = named_paths(&code, module).map_err(|e| format!("{}: {e}", rel(file)))?;
            for p in paths {
                // The module part of the path: its longest prefix that is a module.
                let m = (0..=p.segments.len()).rev().find(|&n| known.contains(&p.segments[..n].to_vec())).unwrap_or(0);
                let target = &p.segments[..m];
                let item = p.segments.get(m);
                let common = module.iter().zip(target).take_while(|(a, b)| a == b).count();
                if common == target.len() {
                    // An ancestor (or this module): fine, unless the item is the ancestor's
                    // re-export of something defined elsewhere.
                    if target.len() < module.len() {
                        if let (Some(item), Some(afile)) = (item, mods.get(target)) {
                            let acode = code_of(afile)?;
                            // Re-exports of the crate's own items (from `crate`, `self`, `super`
                            // or a child module); one of another crate is the module's own name
                            // for it (e.g. `sync`'s std-or-loom `Mutex`). A glob of an ancestor
                            // (`use super::*` in a file that continues its parent) is allowed.
                            let children: BTreeSet<&String> = mods
                                .keys()
                                .filter(|m| m.len() == target.len() + 1 && m.starts_with(target))
                                .map(|m| &m[target.len()])
                                .collect();
                            let internal = reexported_names(&acode).into_iter().any(|(root, name)| {
                                &name == item
                                    && (matches!(root.as_str(), "crate" | "self" | "super") || children.contains(&root))
                            });
                            if internal {
                                problems.push(format!(
                                    "{}:{}: imports `{}` through the re-export in `{}`; name the module that defines it",
                                    rel(file),
                                    p.line,
                                    p.segments.join("::"),
                                    rel(afile)
                                ));
                            }
                        }
                    }
                    continue;
                }
                if common == module.len() {
                    continue; // a module uses its own descendants
                }
                let scope =
                    if common == 0 { k.name.clone() } else { format!("{}::{}", k.name, module[..common].join("::")) };
                let Some(order) = table.get(&scope) else { continue };
                let (mine, theirs) = (&module[common], &target[common]);
                match (order.rank.get(mine), order.rank.get(theirs)) {
                    (Some(a), Some(b)) if b < a => {}
                    (Some(a), Some(b)) => problems.push(format!(
                        "{}:{}: `{scope}::{mine}` (layer {}) imports `{}` from `{scope}::{theirs}` (layer {}){}",
                        rel(file),
                        p.line,
                        a + 1,
                        p.segments.join("::"),
                        b + 1,
                        if a == b { ", a module of its own layer" } else { ", a layer above" }
                    )),
                    _ => {} // reported above as a module missing from the table
                }
            }
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_block() {
        let doc = "x\n```layers\ncrates: a | b c # comment\na::v: lo | hi\n```\n";
        let t = parse_table(doc).expect("parses");
        assert_eq!(t["crates"].rank["a"], 0);
        assert_eq!(t["crates"].rank["c"], 1);
        assert_eq!(t["a::v"].rank["hi"], 1);
        assert!(parse_table("no block").is_err());
        assert!(parse_table("```layers\na: x | x\n```").is_err());
    }
}

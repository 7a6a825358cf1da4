//! A crate's public API as a sorted list of lines, from rustdoc's JSON output
//! (`cargo rustdoc -- -Zunstable-options --output-format json`, format version 57 or
//! nearby): every public path from the crate root through public modules and `pub use`
//! re-exports, with its kind; the public fields, variants, methods, associated items and
//! trait implementations of each type (of the auto traits, `Send` and `Sync`: they are the
//! thread-safety contract). `scripts/public-api.sh` compares the lists with the
//! checked-in `api/*.txt`.

use serde_json::Value;
use std::collections::{BTreeSet, HashSet};

/// The API lines of the rustdoc JSON document `doc`.
pub fn list(doc: &Value) -> Result<BTreeSet<String>, String> {
    let index = doc.get("index").and_then(Value::as_object).ok_or("no `index` in the rustdoc JSON")?;
    let root = doc.get("root").ok_or("no `root` in the rustdoc JSON")?;
    let root_key = id_key(root).ok_or("bad `root`")?;
    let get = |id: &Value| id_key(id).and_then(|k| index.get(&k));
    let root_item = index.get(&root_key).ok_or("root item missing")?;
    let crate_name = root_item.get("name").and_then(Value::as_str).unwrap_or("crate").to_string();

    let mut out = BTreeSet::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut stack: Vec<(String, Value)> = vec![(crate_name, root.clone())];
    while let Some((path, id)) = stack.pop() {
        let Some(item) = get(&id) else { continue };
        let key = (path.clone(), id_key(&id).unwrap_or_default());
        if !seen.insert(key) {
            continue;
        }
        let Some((kind, inner)) = item.get("inner").and_then(Value::as_object).and_then(|o| o.iter().next()) else {
            continue;
        };
        match kind.as_str() {
            "module" => {
                if path.contains("::") {
                    out.insert(format!("mod {path}"));
                }
                for child in inner.get("items").and_then(Value::as_array).into_iter().flatten() {
                    let Some(c) = get(child) else { continue };
                    if !is_public(c) {
                        continue;
                    }
                    let ckind = c.get("inner").and_then(Value::as_object).and_then(|o| o.keys().next().cloned());
                    if ckind.as_deref() == Some("use") {
                        let u = &c["inner"]["use"];
                        let name = u.get("name").and_then(Value::as_str).unwrap_or("?");
                        let glob = u.get("is_glob").and_then(Value::as_bool).unwrap_or(false);
                        match u.get("id").filter(|i| !i.is_null()).and_then(|i| get(i).map(|_| i.clone())) {
                            Some(target) if glob => {
                                // A glob: the target module's public items appear here.
                                if let Some(t) = get(&target) {
                                    for g in t["inner"]["module"]["items"].as_array().into_iter().flatten() {
                                        if let Some(gi) = get(g).filter(|gi| is_public(gi)) {
                                            if let Some(n) = gi.get("name").and_then(Value::as_str) {
                                                stack.push((format!("{path}::{n}"), g.clone()));
                                            }
                                        }
                                    }
                                }
                            }
                            Some(target) => stack.push((format!("{path}::{name}"), target)),
                            None => {
                                let source = u.get("source").and_then(Value::as_str).unwrap_or("?");
                                out.insert(format!("use {path}::{name} = {source}"));
                            }
                        }
                    } else if let Some(n) = c.get("name").and_then(Value::as_str) {
                        stack.push((format!("{path}::{n}"), child.clone()));
                    }
                }
            }
            "struct" | "enum" | "union" | "trait" => {
                out.insert(format!("{} {path}", kind));
                // Fields and variants.
                let members: Vec<&Value> = match kind.as_str() {
                    "struct" => match inner.get("kind") {
                        Some(Value::Object(k)) => match k.iter().next() {
                            Some((_, Value::Object(p))) => {
                                p.get("fields").and_then(Value::as_array).into_iter().flatten().collect()
                            }
                            Some((_, Value::Array(t))) => t.iter().collect(),
                            _ => Vec::new(),
                        },
                        _ => Vec::new(),
                    },
                    "enum" => inner.get("variants").and_then(Value::as_array).into_iter().flatten().collect(),
                    "union" => inner.get("fields").and_then(Value::as_array).into_iter().flatten().collect(),
                    _ => inner.get("items").and_then(Value::as_array).into_iter().flatten().collect(),
                };
                for (n, m) in members.iter().enumerate() {
                    let Some(mi) = get(m) else { continue };
                    let mkind = mi
                        .get("inner")
                        .and_then(Value::as_object)
                        .and_then(|o| o.keys().next().cloned())
                        .unwrap_or_default();
                    let name = mi.get("name").and_then(Value::as_str).map_or_else(|| n.to_string(), str::to_string);
                    if kind == "enum" || kind == "trait" || is_public(mi) {
                        out.insert(format!("{mkind} {path}::{name}"));
                    }
                }
                // Implementations.
                for imp in inner.get("impls").and_then(Value::as_array).into_iter().flatten() {
                    let Some(ii) = get(imp) else { continue };
                    let i = &ii["inner"]["impl"];
                    if !i["blanket_impl"].is_null() {
                        continue;
                    }
                    match i.get("trait").filter(|t| !t.is_null()) {
                        Some(t) => {
                            let tname = t.get("path").and_then(Value::as_str).unwrap_or("?");
                            // Of the auto traits, the two that make the thread-safety contract.
                            if i["is_synthetic"].as_bool() == Some(true) && !matches!(tname, "Send" | "Sync") {
                                continue;
                            }
                            let neg = if i["is_negative"].as_bool() == Some(true) { "!" } else { "" };
                            out.insert(format!("impl {neg}{tname} for {path}"));
                        }
                        None => {
                            for f in i.get("items").and_then(Value::as_array).into_iter().flatten() {
                                let Some(fi) = get(f).filter(|fi| is_public(fi)) else { continue };
                                let fkind = fi
                                    .get("inner")
                                    .and_then(Value::as_object)
                                    .and_then(|o| o.keys().next().cloned())
                                    .unwrap_or_default();
                                let name = fi.get("name").and_then(Value::as_str).unwrap_or("?");
                                let fkind = if fkind == "function" { "fn".to_string() } else { fkind };
                                out.insert(format!("{fkind} {path}::{name}"));
                            }
                        }
                    }
                }
            }
            "function" => {
                out.insert(format!("fn {path}"));
            }
            "macro" | "proc_macro" => {
                out.insert(format!("macro {path}"));
            }
            other => {
                out.insert(format!("{other} {path}"));
            }
        }
    }
    Ok(out)
}

fn id_key(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn is_public(item: &Value) -> bool {
    item.get("visibility").and_then(Value::as_str) == Some("public")
}

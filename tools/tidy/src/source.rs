//! Rust source read as text: comments, strings and test-only items blanked out, then the
//! module paths a file names (`crate::…`, `super::…`, `self::…`), with their lines.

/// `text` with every comment, string and character literal replaced by spaces (newlines
/// kept, so byte offsets and line numbers still match the file).
pub fn blank_comments_and_strings(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 2;
                    } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' if !ident_before(b, i) && (b.get(i + 1) == Some(&b'#') || b.get(i + 1) == Some(&b'"')) => {
                // A raw string r"…", r#"…"#: find the quote, then the closing quote and hashes.
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let mut j = i + 2 + hashes;
                let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                let end = (j + close.len()).min(b.len());
                blank(&mut out, i + 1, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(b.len());
                blank(&mut out, i, end);
                i = end;
            }
            b'\'' => {
                // A character literal ('x', '\n', '\u{..}') or a lifetime ('a): only the
                // literal is blanked.
                if b.get(i + 1) == Some(&b'\\') {
                    let end = b[i + 2..].iter().position(|&c| c == b'\'').map_or(b.len(), |p| i + 3 + p);
                    blank(&mut out, i, end);
                    i = end;
                } else if let Some(len) = char_len_at(text, i + 1).filter(|&l| b.get(i + 1 + l) == Some(&b'\'')) {
                    blank(&mut out, i, i + 2 + len);
                    i += 2 + len;
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

fn char_len_at(text: &str, at: usize) -> Option<usize> {
    text.get(at..)?.chars().next().map(char::len_utf8)
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'$')
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// `clean` (already blanked) with every test-only item blanked too: an item whose `#[cfg(…)]`
/// names `test` (`#[cfg(test)]`, `#[cfg(all(test, feature = "x"))]`; not `not(test)`), from
/// the attribute through the item's `;` or closing brace.
pub fn blank_test_items(clean: &str) -> String {
    let b = clean.as_bytes();
    let mut out = b.to_vec();
    let mut from = 0;
    while let Some(p) = clean[from..].find("#[cfg(").map(|p| p + from) {
        from = p + 1;
        let Some(attr_len) = clean[p..].find(']') else { break };
        let attr = &clean[p..p + attr_len];
        let names_test = attr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|t| t == "test")
            && !attr.contains("not(test");
        if !names_test {
            continue;
        }
        let mut j = p + attr_len + 1;
        let mut depth = 0usize;
        while j < b.len() {
            match b[j] {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    j += 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        for c in &mut out[p..j.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = j.min(b.len());
    }
    String::from_utf8(out).unwrap_or_default()
}

/// The inline modules of `code` (`mod name { … }`): (start, end, name), outermost first.
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("mod ").map(|p| p + from) {
        from = p + 4;
        if ident_before(b, p) {
            continue;
        }
        let rest = &code[p + 4..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let after = rest[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = p + 4 + name.len() + (rest[name.len()..].len() - after.len());
        let mut depth = 0usize;
        let mut end = b.len();
        for (k, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((open, end, name));
    }
    out
}

/// A file's code as the checks read it: no comments, strings or test-only items.
pub fn code(text: &str) -> String {
    blank_test_items(&blank_comments_and_strings(text))
}

/// One path a file names, resolved to the crate's module tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedPath {
    /// 1-based line of the path's first segment.
    pub line: usize,
    /// The segments from the crate root (`crate::vulkan::raw::Gpu` → `vulkan`, `raw`, `Gpu`;
    /// a glob ends in `*`).
    pub segments: Vec<String>,
}

/// Every `crate::`, `super::` and `self::` path in `code` (a file of module `module`),
/// with `{…}` groups expanded. `Err` names the line of a `super` that climbs above the crate
/// root.
pub fn named_paths(code: &str, module: &[String]) -> Result<Vec<NamedPath>, String> {
    let b = code.as_bytes();
    let inline = inline_modules(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || ident_before(b, i) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let word = &code[start..i];
        if !matches!(word, "crate" | "super" | "self") || !code[i..].starts_with("::") {
            continue;
        }
        let line = code[..start].matches('\n').count() + 1;
        let mut base: Vec<String> = match word {
            "crate" => Vec::new(),
            _ => {
                let mut m = module.to_vec();
                m.extend(inline.iter().filter(|(s, e, _)| *s < start && start < *e).map(|(_, _, n)| n.clone()));
                m
            }
        };
        if word == "super" && base.pop().is_none() {
            return Err(format!("line {line}: `super` above the crate root"));
        }
        let mut j = i + 2;
        // Further `super::` segments.
        while code[j..].trim_start().starts_with("super::") {
            let skip = code[j..].len() - code[j..].trim_start().len();
            j += skip + "super::".len();
            if base.pop().is_none() {
                return Err(format!("line {line}: `super` above the crate root"));
            }
        }
        let (paths, end) = parse_tree(code, j);
        for p in paths {
            let mut segments = base.clone();
            segments.extend(p);
            out.push(NamedPath { line, segments });
        }
        i = end.max(i);
    }
    Ok(out)
}

/// Parses a use-tree starting at `at` (just after a `::`): `a::b::{c, d::e}`, `*`, `A as B`.
/// Returns the leaf paths (segments after `at`) and where the tree ends.
fn parse_tree(code: &str, at: usize) -> (Vec<Vec<String>>, usize) {
    let b = code.as_bytes();
    let skip_ws = |mut k: usize| {
        while k < b.len() && b[k].is_ascii_whitespace() {
            k += 1;
        }
        k
    };
    let mut prefix = Vec::new();
    let mut k = skip_ws(at);
    loop {
        if k < b.len() && b[k] == b'{' {
            let mut leaves = Vec::new();
            k += 1;
            loop {
                k = skip_ws(k);
                if k >= b.len() {
                    return (leaves, k);
                }
                if b[k] == b'}' {
                    k += 1;
                    break;
                }
                if b[k] == b',' {
                    k += 1;
                    continue;
                }
                let (sub, end) = parse_tree(code, k);
                for s in sub {
                    let mut p = prefix.clone();
                    p.extend(s);
                    leaves.push(p);
                }
                if end == k {
                    k += 1; // something this reader does not know: step over it
                } else {
                    k = end;
                }
            }
            return (leaves, k);
        }
        if k < b.len() && b[k] == b'*' {
            prefix.push("*".to_string());
            return (vec![prefix], k + 1);
        }
        let s = k;
        while k < b.len() && is_ident(b[k]) {
            k += 1;
        }
        if s == k {
            return (if prefix.is_empty() { Vec::new() } else { vec![prefix] }, k);
        }
        let seg = &code[s..k];
        if seg != "self" {
            // (`a::{self, b}`: `self` is the module itself.)
            prefix.push(seg.to_string());
        }
        let after = skip_ws(k);
        if code[after..].starts_with("::") {
            k = skip_ws(after + 2);
            continue;
        }
        // `X as Y`: the path is X's.
        if code[after..].starts_with("as ") {
            let mut e = skip_ws(after + 3);
            while e < b.len() && is_ident(b[e]) {
                e += 1;
            }
            return (vec![prefix], e);
        }
        return (vec![prefix], k);
    }
}

/// The names a module makes public with `pub use` (or `pub(crate) use`), each with the
/// first segment of its path (`pub use a::{B, C as D}` → `(a, B)`, `(a, D)`).
pub fn reexported_names(code: &str) -> Vec<(String, String)> {
    let mut names = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("pub").map(|p| p + from) {
        from = p + 3;
        if ident_before(code.as_bytes(), p) || code.as_bytes().get(p + 3).is_some_and(|&c| is_ident(c)) {
            continue;
        }
        let mut rest = code[p + 3..].trim_start();
        if rest.starts_with('(') {
            let Some(close) = rest.find(')') else { continue };
            rest = rest[close + 1..].trim_start();
        }
        let Some(tree) = rest.strip_prefix("use ") else { continue };
        let Some(end) = tree.find(';') else { continue };
        let stmt = tree[..end].trim_start().trim_start_matches("::");
        let root: String = stmt.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let (paths, _) = parse_tree(stmt, 0);
        for path in paths {
            if let Some(last) = path.last() {
                names.push((root.clone(), last.clone()));
            }
        }
        // Aliases: `A as B` exports B.
        let mut tokens = stmt.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|t| !t.is_empty());
        while let Some(t) = tokens.next() {
            if t == "as" {
                if let Some(alias) = tokens.next() {
                    names.push((root.clone(), alias.to_string()));
                }
            }
        }
    }
    names
}

/// 1-based line of byte offset `at`.
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn blanks_comments_strings_and_chars_but_not_lifetimes() {
        let t = "let a = \"crate::x\"; // crate::y\nfn f<'a>(c: char) { '}' } /* crate::z */ r#\"crate::w\"#";
        let c = blank_comments_and_strings(t);
        assert!(!c.contains("crate::"), "{c}");
        assert!(c.contains("<'a>"));
        assert!(!c.contains("'}'"));
        assert_eq!(c.len(), t.len());
    }

    #[test]
    fn expands_groups_and_resolves_super() {
        let code = code("use crate::{a::B, c::{self, D as E}};\nuse super::super::f::*;\nfn g() { self::h::I; }");
        let p = named_paths(&code, &m(&["x", "y", "z"])).expect("resolves");
        let segs: Vec<Vec<String>> = p.iter().map(|p| p.segments.clone()).collect();
        assert_eq!(
            segs,
            vec![m(&["a", "B"]), m(&["c"]), m(&["c", "D"]), m(&["x", "f", "*"]), m(&["x", "y", "z", "h", "I"])]
        );
        assert_eq!(p[3].line, 2);
        assert!(named_paths("use super::super::a;", &m(&["x"])).is_err());
    }

    #[test]
    fn skips_test_items_and_macro_crate_paths() {
        let blanked = code(
            "#[cfg(test)]\nmod tests { use crate::a::B; }\nmacro_rules! m { () => { $crate::q::R } }\n#[cfg(all(test, feature = \"w\"))]\nmod t { use crate::c::D; }",
        );
        assert_eq!(named_paths(&blanked, &[]).expect("resolves"), Vec::new());
        let kept = code("#[cfg(not(test))]\nuse crate::e::F;");
        assert_eq!(named_paths(&kept, &[]).expect("resolves").len(), 1);
    }

    #[test]
    fn resolves_super_inside_inline_modules() {
        let code = code("mod serde_impls {\n    use super::X;\n}\nuse super::Y;");
        let p = named_paths(&code, &m(&["a", "b"])).expect("resolves");
        assert_eq!(p[0].segments, m(&["a", "b", "X"]));
        assert_eq!(p[1].segments, m(&["a", "Y"]));
    }

    #[test]
    fn reads_reexports() {
        let names: Vec<String> = reexported_names("pub use a::{B, C as D};\npub(crate) use e::F;\nuse g::H;")
            .into_iter()
            .map(|(root, name)| format!("{root}::{name}"))
            .collect();
        assert!(names.contains(&"a::B".to_string()) && names.contains(&"a::D".to_string()));
        assert!(names.contains(&"e::F".to_string()) && !names.iter().any(|n| n.ends_with("H")));
    }
}

//! A script read on demand: one pipeline at a time, each library loaded the first time a
//! pipeline needs it. For `granary worker`, which compiles a few pipelines of a large script.
//! A worker gets the script text and the library bytes from its parent
//! ([`LazyScript::from_text`], [`LazyScript::supply_library`]) and reads no file itself.

use super::error::ScriptError;
use super::load::{
    convert_pipeline, from_raw, load_library, locate, offset_in, Ctx, LineIndex, LoadedLibrary as Loaded,
};
use super::raw::{RawLibrary, RawPipeline, RawScriptTop};
use crate::descriptor::{Library, PipelineDescriptor};
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// A pipelines script whose entries are converted only when asked for.
///
/// Loading scans the file once to find each entry; [`LazyScript::pipeline`] converts one
/// pipeline and loads (once) the libraries it uses. Unlike [`super::Script`] it does not
/// check labels for duplicates across the script. Thread safety: `Send + Sync`.
pub struct LazyScript {
    path: PathBuf,
    base_dir: PathBuf,
    text: String,
    pipelines: Vec<Range<usize>>,
    libraries: HashMap<String, (usize, Range<usize>)>,
    ambiguous: HashMap<String, ScriptError>,
    loaded: Mutex<HashMap<String, Arc<OnceLock<Loaded>>>>,
    expansion: Option<super::expand::Expansion>,
    /// `Some` for [`LazyScript::from_text`]: libraries come only from here, never from files.
    supplied: Option<Mutex<HashMap<String, Arc<Library>>>>,
    /// Line starts of `text`, built on the first error that needs a line and column.
    lines: OnceLock<LineIndex>,
}

impl LazyScript {
    /// Reads `path` and finds its entries.
    pub fn load(path: &Path) -> Result<LazyScript, ScriptError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| ScriptError::at(path, "", format!("cannot read script: {e}")))?;
        Self::scan(text, path, None)
    }

    /// Script text someone else read (the harvest parent); `path` names it in messages. No file
    /// is ever read: a pipeline can use only the libraries handed in with
    /// [`LazyScript::supply_library`] (one that was not is an error naming it), so the result
    /// is a function of the bytes given, whatever happens to the files meanwhile.
    pub fn from_text(text: String, path: &Path) -> Result<LazyScript, ScriptError> {
        Self::scan(text, path, Some(Mutex::new(HashMap::new())))
    }

    /// Hands in a library for a script made with [`LazyScript::from_text`], under its name
    /// (it replaces one supplied earlier under that name). Ignored for a script read with
    /// [`LazyScript::load`], which reads its library files itself.
    pub fn supply_library(&self, library: Arc<Library>) {
        if let Some(supplied) = &self.supplied {
            crate::sync::lock_std(supplied).insert(library.name().to_string(), library);
        }
    }

    fn scan(
        text: String,
        path: &Path,
        supplied: Option<Mutex<HashMap<String, Arc<Library>>>>,
    ) -> Result<LazyScript, ScriptError> {
        let (pipelines, libraries, ambiguous, expansion) = {
            let top = RawScriptTop::parse(&text, path)?;
            let range = |raw: &serde_json::value::RawValue| {
                let start = offset_in(&text, raw.get()).unwrap_or(0);
                start..start + raw.get().len()
            };
            let mut libraries = HashMap::new();
            let mut ambiguous = HashMap::new();
            for (i, raw) in top.libraries.iter().enumerate() {
                if let Ok(l) = from_raw::<RawLibrary>(raw, &text, path, &format!("libraries[{i}]")) {
                    match libraries.get(&l.name) {
                        // Defined twice: ambiguous, never "the first one wins".
                        Some((first, _)) => {
                            let e = ScriptError::at(
                                path,
                                format!("libraries[{i}].name"),
                                format!(
                                    "library name '{}' is defined twice (libraries[{first}] and libraries[{i}])",
                                    l.name
                                ),
                            );
                            ambiguous.entry(l.name).or_insert(e);
                        }
                        None => {
                            libraries.insert(l.name, (i, range(raw)));
                        }
                    }
                }
            }
            let pipelines = top.pipelines.iter().map(|r| range(r)).collect::<Vec<_>>();
            (pipelines, libraries, ambiguous, top.expand_unspecialized)
        };
        Ok(LazyScript {
            lines: OnceLock::new(),
            path: path.to_path_buf(),
            base_dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            text,
            pipelines,
            libraries,
            ambiguous,
            loaded: Mutex::new(HashMap::new()),
            expansion,
            supplied,
        })
    }

    /// The script's `expand_unspecialized`, if it has one.
    pub fn expansion(&self) -> Option<&super::expand::Expansion> {
        self.expansion.as_ref()
    }

    /// Number of pipelines.
    pub fn len(&self) -> usize {
        self.pipelines.len()
    }

    /// Whether the script has no pipelines.
    pub fn is_empty(&self) -> bool {
        self.pipelines.is_empty()
    }

    fn library(&self, name: &str) -> Option<Loaded> {
        if let Some(e) = self.ambiguous.get(name) {
            return Some(Err(e.clone()));
        }
        let (i, range) = self.libraries.get(name)?;
        if let Some(supplied) = &self.supplied {
            let found = crate::sync::lock_std(supplied).get(name).cloned();
            return Some(found.ok_or_else(|| {
                ScriptError::at(
                    &self.path,
                    format!("libraries[{i}]"),
                    format!("library '{name}' was not supplied with the script text"),
                )
            }));
        }
        let cell = crate::sync::lock_std(&self.loaded).entry(name.to_string()).or_default().clone();
        let loaded = cell.get_or_init(|| {
            let jp = format!("libraries[{i}]");
            let raw: &serde_json::value::RawValue = serde_json::from_str(&self.text[range.clone()])
                .map_err(|e| ScriptError::at(&self.path, jp.clone(), e.to_string()))?;
            let lib: RawLibrary = from_raw(raw, &self.text, &self.path, &jp)?;
            load_library(&lib, &self.path, &self.base_dir, &jp)
        });
        Some(loaded.clone())
    }

    /// Pipeline `index` (its label and descriptor), converted now.
    pub fn pipeline(&self, index: usize) -> Option<(Option<String>, Result<PipelineDescriptor, ScriptError>)> {
        let range = self.pipelines.get(index)?.clone();
        let jp = format!("pipelines[{index}]");
        let raw: &serde_json::value::RawValue = match serde_json::from_str(&self.text[range]) {
            Ok(r) => r,
            Err(e) => return Some((None, Err(ScriptError::at(&self.path, jp, e.to_string())))),
        };
        let resolve = |name: &str| self.library(name);
        let known = || self.libraries.keys().cloned().collect();
        let cx = Ctx { path: &self.path, library: &resolve, known: &known };
        Some(match from_raw::<RawPipeline>(raw, &self.text, &self.path, &jp) {
            Ok(p) => (
                p.label.clone(),
                convert_pipeline(p, &cx, &jp).map_err(|e| locate(e, &self.text, &self.lines, raw, &jp)),
            ),
            Err(e) => (None, Err(e)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_from_text_reads_no_file_and_uses_only_supplied_libraries() {
        let text = r#"{"granary_script": 1,
            "libraries": [{"name": "l", "path": "does/not/exist.wgsl"}],
            "pipelines": [{"label": "p", "compute": {"function": {"library": "l", "function": "main"}}}]}"#;
        let script = LazyScript::from_text(text.to_string(), Path::new("/nowhere/s.json")).unwrap();
        let (label, missing) = script.pipeline(0).unwrap();
        assert_eq!(label.as_deref(), Some("p"));
        let e = missing.unwrap_err();
        assert!(e.message.contains("library 'l' is unavailable") && e.message.contains("not supplied"), "{e}");
        let lib = Library::wgsl("l", "@compute @workgroup_size(1) fn main() {}");
        script.supply_library(lib.clone());
        let (_, d) = script.pipeline(0).unwrap();
        let d = d.unwrap();
        assert_eq!(d.stages()[0].1.base().0.hash(), lib.hash());
    }
}

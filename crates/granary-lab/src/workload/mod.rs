//! Workload generators, for benchmarks and stress tests.
//!
//! [`seed_scale`] writes a pipelines script shaped like a real harvest from a bug report:
//! ~33,000 render pipelines over ~16,000 vertex functions, in runs of consecutive pipelines
//! sharing one vertex function (heavy-tailed lengths, up to ~1,000), stages given as library
//! functions or specialized descriptors (WGSL overrides), every colour attachment
//! unspecialized.
//!
//! Invariants:
//! - Output is a pure function of the options: the same options write byte-identical files.
//! - Every pipeline links: vertex attributes match the vertex inputs' scalar kinds, vertex
//!   outputs match fragment inputs by location and type, every fragment output has a colour
//!   attachment.
//! - Every pipeline has a distinct key and a unique label.

mod catalog;
mod fragment;
mod render_json;
mod rng;
mod runs;
mod variety;
mod vertex;
mod wgsl;

use catalog::Entry;
use granary::script::write::{Function, LibraryEntry, LineWriter, Pipeline, Render, WriteError};
use render_json::RenderStateJson;
use rng::Rng;
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Options of the seed-scale workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedScaleOptions {
    /// Render pipelines to write (at least 1).
    pub pipelines: usize,
    /// Distinct vertex functions (at least 1). All are used when they fit beside the longest
    /// run, that is when `vertex_functions ≤ pipelines − max_run + 1`; otherwise as many as fit.
    pub vertex_functions: usize,
    /// Longest run of consecutive pipelines sharing a vertex function (at least 1); capped at
    /// `pipelines`. With a single vertex function every pipeline is in one run.
    pub max_run: usize,
    /// Random seed.
    pub seed: u64,
}

impl Default for SeedScaleOptions {
    /// The size of the bug report's harvest.
    fn default() -> Self {
        SeedScaleOptions { pipelines: 33_000, vertex_functions: 16_000, max_run: 1_000, seed: 1 }
    }
}

/// What a generator wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GenSummary {
    /// Pipelines in the script.
    pub pipelines: usize,
    /// Runs of consecutive pipelines sharing a vertex function.
    pub runs: usize,
    /// Distinct vertex stage functions used.
    pub vertex_functions: usize,
    /// Distinct fragment stage functions used.
    pub fragment_functions: usize,
    /// Shader library files written.
    pub libraries: usize,
    /// Longest run.
    pub longest_run: usize,
    /// The pipelines script written.
    pub script: PathBuf,
}

/// A generator could not run.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// The options make no workload.
    #[error("invalid options: {0}")]
    Options(String),
    /// A file or folder could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// JSON could not be written to a file.
    #[error("cannot write {}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
}

/// One library file to write.
struct LibraryFile {
    name: String,
    path: String,
    source: String,
    entries: Vec<&'static Entry>,
    float_id: u16,
}

/// A stage function: library, entry point and variant (0 = unspecialized).
#[derive(Clone, Copy)]
struct StageRef {
    library: usize,
    entry: usize,
    variant: usize,
}

/// Spreads `count` functions over `libraries` as evenly as possible, and within a library
/// round-robin over its entry points; the n-th use of an entry point is its variant n.
fn enumerate(libraries: &[LibraryFile], first: usize, count: usize) -> Vec<StageRef> {
    let n = libraries.len().saturating_sub(first).max(1);
    let mut out = Vec::with_capacity(count);
    for (l, lib) in libraries.iter().enumerate().skip(first) {
        let i = l - first;
        let share = count / n + usize::from(i < count % n);
        let entries = lib.entries.len().max(1);
        for f in 0..share {
            out.push(StageRef { library: l, entry: f % entries, variant: f / entries });
        }
    }
    out
}

/// The script entry of a stage function: plain for variant 0, else specialized and named.
fn function_entry(libraries: &[LibraryFile], s: StageRef) -> Function {
    let lib = &libraries[s.library];
    let entry = lib.entries[s.entry];
    let plain = Function::library(&lib.name, entry.function);
    if s.variant == 0 {
        return plain;
    }
    let constants: Vec<granary::descriptor::Constant> =
        entry.constants(lib.float_id, s.variant).iter().map(Into::into).collect();
    Function::specialized(plain, &constants, Some(format!("{}/{}#{}", lib.name, entry.function, s.variant)))
}

/// Writes the seed-scale workload into `out_dir`: `pipelines.json` and WGSL libraries under
/// `shaders/`. Other files in `out_dir` are left alone.
pub fn seed_scale(opts: &SeedScaleOptions, out_dir: &Path) -> Result<GenSummary, GenError> {
    for (what, v) in
        [("pipelines", opts.pipelines), ("vertex_functions", opts.vertex_functions), ("max_run", opts.max_run)]
    {
        if v == 0 {
            return Err(GenError::Options(format!("{what} must be at least 1")));
        }
    }
    let root = Rng::new(opts.seed);
    // The long run comes first (it is what the workload stresses): it takes `longest`
    // pipelines, and every other vertex function needs at least one of the rest.
    let longest = opts.max_run.min(opts.pipelines);
    let vertex_count = opts.vertex_functions.min(opts.pipelines - longest + 1);
    let fragment_count = (vertex_count / 10).clamp(8, 2_000);

    let mut rng = root.fork(1);
    let mut libraries = Vec::new();
    for i in 0..vertex_count.div_ceil(64).clamp(1, 400) {
        let v = vertex::vertex_library(i, &mut rng);
        libraries.push(LibraryFile {
            name: format!("vs{i:03}"),
            path: format!("shaders/vs{i:03}.wgsl"),
            source: v.source,
            entries: v.entries,
            float_id: v.float_id,
        });
    }
    let first_fragment = libraries.len();
    for i in 0..fragment_count.div_ceil(150).clamp(4, 16) {
        let f = fragment::fragment_library(i, &mut rng);
        libraries.push(LibraryFile {
            name: format!("fs{i:02}_{}", f.kind),
            path: format!("shaders/fs{i:02}_{}.wgsl", f.kind),
            source: f.source,
            entries: f.entries,
            float_id: f.float_id,
        });
    }
    let vertex_fns = enumerate(&libraries[..first_fragment], 0, vertex_count);
    let fragment_fns = enumerate(&libraries, first_fragment, fragment_count);

    let shaders = out_dir.join("shaders");
    std::fs::create_dir_all(&shaders).map_err(|source| GenError::Io { path: shaders.clone(), source })?;
    for lib in &libraries {
        let path = out_dir.join(&lib.path);
        std::fs::write(&path, &lib.source).map_err(|source| GenError::Io { path, source })?;
    }

    let plan = runs::plan_runs(&mut root.fork(2), opts.pipelines, vertex_count, opts.max_run);
    let script = out_dir.join("pipelines.json");
    let file = std::fs::File::create(&script).map_err(|source| GenError::Io { path: script.clone(), source })?;
    let failed = |e| match e {
        WriteError::Io(source) => GenError::Io { path: script.clone(), source },
        WriteError::Json(source) => GenError::Json { path: script.clone(), source },
    };
    let mut w = LineWriter::new(std::io::BufWriter::new(file)).map_err(failed)?;
    for lib in &libraries {
        w.library(&LibraryEntry::at_path(&lib.name, &lib.path)).map_err(failed)?;
    }
    let mut w = w.pipelines().map_err(failed)?;

    // Popular materials first: a skewed pick through a fixed random order of the fragments.
    let mut rng = root.fork(3);
    let mut popular: Vec<usize> = (0..fragment_fns.len()).collect();
    rng.shuffle(&mut popular);
    let mut seen: HashSet<(usize, usize, variety::State)> = HashSet::with_capacity(opts.pipelines);
    let mut bias = vec![0i32; vertex_count];
    let mut fragment_used = vec![false; fragment_fns.len()];
    for (r, (&len, &v)) in plan.lengths.iter().zip(&plan.vertex).enumerate() {
        let vs = vertex_fns[v];
        let buffers = variety::vertex_buffers(libraries[vs.library].entries[vs.entry].inputs, &mut rng);
        for i in 0..len {
            let mut tries = 0;
            let (f, st) = loop {
                let pick = ((popular.len() as f64) * rng.unit().powi(2)) as usize;
                let f = popular[pick.min(popular.len() - 1)];
                let mut st = variety::State::random(&mut rng);
                if tries >= 64 {
                    // This vertex function has used up the common combinations: a depth bias
                    // never used with it before keeps the key distinct.
                    bias[v] = bias[v].saturating_add(1);
                    st.depth_bias = bias[v];
                }
                if seen.insert((v, f, st)) {
                    break (f, st);
                }
                tries += 1;
            };
            fragment_used[f] = true;
            let fs = fragment_fns[f];
            let outputs = libraries[fs.library].entries[fs.entry].outputs;
            let state = RenderStateJson {
                vertex_buffers: &buffers,
                primitive: st.primitive(),
                color_attachments: vec![granary::descriptor::ColorAttachment::unspecialized(); outputs],
                depth_stencil: st.depth(),
                sample_count: st.sample_count(),
                alpha_to_coverage: st.alpha_to_coverage(),
            };
            let body = Render::new(function_entry(&libraries, vs), Some(function_entry(&libraries, fs)), state);
            w.pipeline(&Pipeline::render(Some(format!("run{r}/p{i}")), body)).map_err(failed)?;
        }
    }
    let written = w.written();
    w.finish().map_err(failed)?;

    let mut longest = 0;
    let mut current = 0;
    for (k, (&len, &v)) in plan.lengths.iter().zip(&plan.vertex).enumerate() {
        current = if k > 0 && plan.vertex[k - 1] == v { current + len } else { len };
        longest = longest.max(current);
    }
    Ok(GenSummary {
        pipelines: written,
        runs: plan.lengths.len(),
        vertex_functions: vertex_count,
        fragment_functions: fragment_used.iter().filter(|&&u| u).count(),
        libraries: libraries.len(),
        longest_run: longest,
        script,
    })
}

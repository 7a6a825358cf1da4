//! Shared fixtures: a small renderer-like library pair and pipelines built from it.
#![allow(dead_code)]

use granary::descriptor::*;
use std::sync::Arc;

pub const VS: &str = r#"
override VARIANT: u32 = 0u;
override SCALE: f32 = 1.0;
struct Out { @builtin(position) pos: vec4<f32>, @location(0) uv: vec2<f32>, @location(1) n: vec3<f32> };
@vertex fn vs(@location(0) p: vec3<f32>, @location(1) n: vec3<f32>, @location(2) uv: vec2<f32>) -> Out {
    var o: Out;
    var q = p * SCALE;
    for (var i = 0u; i < VARIANT; i++) { q = q * 0.5 + vec3<f32>(f32(i)); }
    o.pos = vec4<f32>(q, 1.0);
    o.uv = uv;
    o.n = n;
    return o;
}
@vertex fn vs_depth(@location(0) p: vec3<f32>) -> @builtin(position) vec4<f32> { return vec4<f32>(p, 1.0); }
"#;

pub const FS: &str = r#"
override MAT: u32 = 0u;
@id(7) override TINT: f32 = 1.0;
@group(0) @binding(0) var tex: texture_2d<f32>;
@group(0) @binding(1) var samp: sampler;
@fragment fn fs(@location(0) uv: vec2<f32>, @location(1) n: vec3<f32>) -> @location(0) vec4<f32> {
    var c = textureSample(tex, samp, uv);
    for (var i = 0u; i < MAT; i++) { c = c * 0.9 + vec4<f32>(n, 1.0) * 0.1; }
    return c * TINT;
}
@compute @workgroup_size(8, 8, 1) fn cs(@builtin(global_invocation_id) id: vec3<u32>) {}
"#;

pub struct Fixture {
    pub vs: Arc<Library>,
    pub fs: Arc<Library>,
}

pub fn fixture() -> Fixture {
    Fixture { vs: Library::wgsl("vs_lib", VS), fs: Library::wgsl("fs_lib", FS) }
}

/// One unspecialized colour attachment over a `Depth32float` less-than depth test with
/// `depth_bias` (which tests vary to make keys distinct), reading `vertex_buffers`.
pub fn opaque_state(vertex_buffers: Vec<VertexBufferLayout>, depth_bias: i32) -> RenderState {
    RenderState {
        vertex_buffers,
        primitive: PrimitiveState::default(),
        color_attachments: vec![ColorAttachment::unspecialized()],
        depth_stencil: Some(DepthStencilState {
            format: TextureFormat::Depth32float,
            depth_write: true,
            depth_compare: CompareFunction::Less,
            stencil: None,
            depth_bias,
            depth_bias_slope_scale: 0.0,
            depth_bias_clamp: 0.0,
        }),
        sample_count: 1,
        alpha_to_coverage: false,
    }
}

pub fn layout() -> Vec<VertexBufferLayout> {
    vec![VertexBufferLayout {
        stride: 32,
        step: StepMode::Vertex,
        attributes: vec![
            VertexAttribute { location: 0, format: VertexFormat::Float32x3, offset: 0 },
            VertexAttribute { location: 1, format: VertexFormat::Float32x3, offset: 12 },
            VertexAttribute { location: 2, format: VertexFormat::Float32x2, offset: 24 },
        ],
    }]
}

impl Fixture {
    pub fn vertex(&self, variant: u32) -> FunctionDescriptor {
        FunctionDescriptor::library(self.vs.clone(), "vs")
            .specialized(vec![Constant { id: ConstantId::Name("VARIANT".into()), value: ConstantValue::U32(variant) }])
    }
    pub fn fragment(&self, mat: u32) -> FunctionDescriptor {
        FunctionDescriptor::library(self.fs.clone(), "fs")
            .specialized(vec![Constant { id: ConstantId::Name("MAT".into()), value: ConstantValue::U32(mat) }])
    }
    /// Pipeline `i` of a run sharing vertex function `variant`; `i` selects one of
    /// `materials` fragment variants and a depth bias, so every (variant, i) is distinct.
    pub fn pipeline(&self, variant: u32, i: u32, materials: u32) -> PipelineDescriptor {
        PipelineDescriptor::Render(RenderPipelineDescriptor {
            label: Some(format!("v{variant}/p{i}")),
            vertex: self.vertex(variant),
            fragment: Some(self.fragment(i % materials)),
            state: opaque_state(layout(), (i / materials) as i32),
            layout: None,
        })
    }
    /// `runs` runs of `per_run` consecutive pipelines, each run sharing one vertex function.
    pub fn runs(&self, runs: u32, per_run: u32, materials: u32) -> Vec<PipelineDescriptor> {
        (0..runs).flat_map(|v| (0..per_run).map(move |i| (v, i))).map(|(v, i)| self.pipeline(v, i, materials)).collect()
    }
}

/// A temporary directory that lives for the test.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// Whether the external validator `tool` (from the Debian package `package`) can run. In CI
/// (`CI` set, as `.ci/run` is run) or with `GRANARY_REQUIRE_TOOLS=1`, a missing tool fails
/// the test; elsewhere the test says loudly that it skipped and why, so that the README's
/// test command still runs on a machine with only a Rust toolchain, and never passes silently.
pub fn tool_available(tool: &str, package: &str) -> bool {
    let found = std::process::Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    let required = std::env::var_os("CI").is_some() || std::env::var_os("GRANARY_REQUIRE_TOOLS").is_some();
    assert!(
        found || !required,
        "`{tool}` is not installed and CI/GRANARY_REQUIRE_TOOLS requires it (Debian package {package}; .ci/run installs it)"
    );
    if !found {
        eprintln!(
            "SKIPPED: `{tool}` is not installed, so this test validated nothing (install the Debian \
             package {package}, or run .ci/run, which installs it and requires it)"
        );
    }
    found
}

/// Whether `granary devices --json` (run with the binary `granary`) lists a Vulkan device, and
/// the first device's JSON. With `GRANARY_REQUIRE_VULKAN=1` (set by `.ci/run`, which installs
/// lavapipe) a missing driver fails the test; elsewhere the test prints one line saying it
/// skipped and why, so the README's test command still runs on a machine without Vulkan.
pub fn vulkan_device(granary: &std::path::Path) -> Option<serde_json::Value> {
    let out = std::process::Command::new(granary).args(["devices", "--json"]).output().expect("run granary devices");
    let first = if out.status.success() {
        serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .ok()
            .and_then(|v| v["devices"].as_array().and_then(|a| a.first().cloned()))
    } else {
        None
    };
    let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let required = std::env::var("GRANARY_REQUIRE_VULKAN").is_ok_and(|v| v == "1");
    assert!(
        first.is_some() || !required,
        "no Vulkan device and GRANARY_REQUIRE_VULKAN=1 requires one ({why}); Debian: apt-get install libvulkan1 mesa-vulkan-drivers"
    );
    if first.is_none() {
        eprintln!(
            "SKIPPED: no Vulkan driver ({why}); this test checked nothing (GRANARY_REQUIRE_VULKAN=1 makes it fail)"
        );
    }
    first
}

/// A device identity for tests that write device sections by hand (an NVIDIA-like GPU named
/// `name`, with `key` as its pipeline-binary global key; empty: a cache-data device).
pub fn test_device(name: &str, key: Vec<u8>) -> Arc<granary::archive::DeviceIdentity> {
    Arc::new(granary::archive::DeviceIdentity {
        vendor_id: 0x10de,
        device_id: 0x2335,
        driver_id: 4,
        driver_version: 0x9100_4000,
        api_version: 0x0040_3000,
        features: Default::default(),
        pipeline_cache_uuid: [0xab; 16],
        binary_global_key: key,
        device_name: name.into(),
        driver_name: "drv".into(),
        driver_info: "1.0".into(),
    })
}

/// Rewrites the archive at `path` into `out` as if harvested on another driver version of the
/// same GPU: every device identity (binary sets and pipeline caches) with `driver_version + 1`,
/// everything else unchanged (what a driver update makes of an archive shipped before it).
pub fn forge_driver_version(path: &std::path::Path, out: &std::path::Path) {
    use granary::archive::{Archive, ArchiveMeta, DeviceBinaries, DeviceCache, DeviceIdentity, WriteEntry};
    let a = Archive::read(path).expect("archive");
    let forged = |d: &Arc<DeviceIdentity>| {
        Arc::new(DeviceIdentity { driver_version: d.driver_version.wrapping_add(1), ..(**d).clone() })
    };
    let entries: Vec<WriteEntry> = a
        .entries()
        .unwrap()
        .into_iter()
        .map(|w| WriteEntry {
            binaries: w
                .binaries
                .iter()
                .map(|b| DeviceBinaries { device: forged(&b.device), set: b.set.clone() })
                .collect(),
            ..w
        })
        .collect();
    let meta = a.meta().unwrap();
    let device_caches =
        meta.device_caches.iter().map(|c| DeviceCache { device: forged(&c.device), data: c.data.clone() }).collect();
    std::fs::write(out, granary::archive::encode(&entries, &ArchiveMeta { device_caches, ..meta })).unwrap();
}

/// How long a test waits for an event before calling it a hang. Never a speed bound: it only
/// turns a hang into a failure, and is far beyond any run on a loaded machine.
pub const SAFETY: std::time::Duration = std::time::Duration::from_secs(600);

/// Waits until `event()` holds (checked every 5 ms); panics naming `what` if it has not after
/// [`SAFETY`] (a hang).
pub fn wait_for(what: &str, mut event: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !event() {
        assert!(t0.elapsed() < SAFETY, "{what}: not after {SAFETY:?}, a hang");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The names of the markers in `dir` that `GRANARY_FAULT=reached:DIR` created for faults
/// `action` (`hang.PID.N`), as (pid, name), sorted.
pub fn fault_markers(dir: &std::path::Path, action: &str) -> Vec<(u32, String)> {
    let mut found: Vec<(u32, String)> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|name| {
            let rest = name.strip_prefix(action)?.strip_prefix('.')?;
            let pid = rest.split('.').next()?.parse().ok()?;
            Some((pid, name))
        })
        .collect();
    found.sort();
    found
}

/// The bundled example's script (`examples/renderer/pipelines.json`; every crate of the
/// workspace sits two folders below the root, so the path holds for each that includes this).
pub const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/renderer/pipelines.json");

/// Copies the bundled example (script and shaders) into `dir/folder`; with `shader_text`,
/// every shader is replaced by that text instead of copied. Returns the script's path.
pub fn copy_example_as(dir: &std::path::Path, folder: &str, shader_text: Option<&str>) -> std::path::PathBuf {
    let src = std::path::Path::new(EXAMPLE).parent().expect("the example has a folder");
    let dst = dir.join(folder);
    std::fs::create_dir_all(dst.join("shaders")).expect("create the copy's folders");
    std::fs::copy(EXAMPLE, dst.join("pipelines.json")).expect("copy the example's script");
    for e in std::fs::read_dir(src.join("shaders")).expect("read the example's shaders") {
        let e = e.expect("a shader entry");
        let to = dst.join("shaders").join(e.file_name());
        match shader_text {
            Some(text) => std::fs::write(to, text).expect("write a replaced shader"),
            None => {
                std::fs::copy(e.path(), to).expect("copy a shader");
            }
        }
    }
    dst.join("pipelines.json")
}

/// Copies the bundled example (script and shaders) into `dir`; returns the script's path.
pub fn copy_example(dir: &std::path::Path) -> std::path::PathBuf {
    copy_example_as(dir, "renderer", None)
}

/// Appends a comment line to one shader of a copied example: every pipeline using it gets a
/// new key, the others keep theirs.
pub fn edit_shader(script: &std::path::Path, name: &str) {
    let path = script.parent().expect("the script has a folder").join("shaders").join(name);
    let mut text = std::fs::read_to_string(&path).expect("read the shader");
    text.push_str("// edited after the first harvest\n");
    std::fs::write(path, text).expect("write the shader");
}

/// Every label of the archive names exactly one pipeline, and the archive verifies.
pub fn assert_labels_unique(path: &std::path::Path) {
    let ar = granary::archive::Archive::read(path).expect("read the archive");
    ar.verify().expect("the archive verifies");
    let labels = ar.labels().expect("the archive's labels");
    let mut names: Vec<&str> = labels.iter().map(|(l, _)| *l).collect();
    names.dedup();
    assert_eq!(names.len(), labels.len(), "a label names two pipelines in {}", path.display());
}

/// Library harvest options for `script` → `out`: two threads, SPIR-V, the default profile,
/// no flushes, no resume, threads not processes, no device backend, no trace, the default
/// library size limit.
pub fn harvest_options(script: &std::path::Path, out: &std::path::Path) -> granary::harvest::HarvestOptions {
    granary::harvest::HarvestOptions { threads: 2, ..granary::harvest::HarvestOptions::new(script, out) }
}

/// Two copies of the bundled example, in `dir/original` and `dir/edited`, the second with
/// `shader` edited ([`edit_shader`]); returns their scripts' paths.
pub fn original_and_edited(dir: &std::path::Path, shader: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let original = copy_example(&dir.join("original"));
    let edited = copy_example(&dir.join("edited"));
    edit_shader(&edited, shader);
    (original, edited)
}

/// Runs `granary harvest SCRIPT -o OUT --json ARGS...` (with the binary `granary`) under
/// `GRANARY_FAULT=fault`; returns the exit code and the summary, which must parse.
pub fn harvest_with_fault(
    granary: &std::path::Path,
    script: &std::path::Path,
    out: &std::path::Path,
    args: &[&str],
    fault: &str,
) -> (Option<i32>, serde_json::Value) {
    let o = std::process::Command::new(granary)
        .args(["harvest", &script.display().to_string(), "-o", &out.display().to_string(), "--json"])
        .args(args)
        .env("GRANARY_FAULT", fault)
        .output()
        .expect("run granary harvest");
    let summary = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("no summary: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), summary)
}

/// Writes `dir/s.json`, a script of four pipelines in which a stage function one target refuses
/// costs that target: `plain/back` and `compute` use nothing any target refuses, `half/back`
/// and `half/none` share a fragment function using `f16` (outside the default profile's GLSL
/// and SPIR-V capabilities, inside MSL's). Returns its path.
pub fn lost_target_script(dir: &std::path::Path) -> std::path::PathBuf {
    const VS: &str =
        "@vertex fn vs(@location(0) p: vec3<f32>) -> @builtin(position) vec4<f32> { return vec4<f32>(p, 1.0); }";
    const PLAIN: &str = "@fragment fn fs() -> @location(0) vec4<f32> { return vec4<f32>(1.0); }";
    const HALF: &str = "enable f16;\n@fragment fn fs() -> @location(0) vec4<f32> { let h: f16 = 0.5h; return vec4<f32>(f32(h * 2.0h)); }";
    const COMPUTE: &str = "@compute @workgroup_size(1) fn main() {}";
    let render = |label: &str, fragment: &str, cull: &str| {
        serde_json::json!({"label": label, "render": {
            "vertex": {"library": "mesh", "function": "vs"},
            "fragment": {"library": fragment, "function": "fs"},
            "vertex_buffers": [{"stride": 12, "step": "vertex", "attributes": [{"location": 0, "format": "float32x3", "offset": 0}]}],
            "primitive": {"topology": "triangle-list", "cull": cull, "front_face": "ccw"},
            "color_attachments": [{"format": "rgba8unorm"}],
            "sample_count": 1
        }})
    };
    let s = serde_json::json!({
        "granary_script": 1,
        "libraries": [
            {"name": "mesh", "kind": "wgsl", "source": VS},
            {"name": "plain", "kind": "wgsl", "source": PLAIN},
            {"name": "half", "kind": "wgsl", "source": HALF},
            {"name": "c", "kind": "wgsl", "source": COMPUTE}
        ],
        "pipelines": [
            render("plain/back", "plain", "back"),
            render("half/back", "half", "back"),
            render("half/none", "half", "none"),
            {"label": "compute", "compute": {"function": {"library": "c", "function": "main"}}}
        ]
    });
    let path = dir.join("s.json");
    std::fs::write(&path, serde_json::to_string_pretty(&s).expect("the script serialises")).expect("write the script");
    path
}

/// Pipelines per run of [`panic_runs`].
pub const PANIC_RUN: u32 = 1000;

/// The library of [`panic_runs`]: three vertex functions (`vs_bad` is the one tests make panic
/// with `GRANARY_FAULT=panic-stage:vs_bad`) and one fragment function.
pub const PANIC_SHADER: &str = r#"
struct Out { @builtin(position) pos: vec4<f32>, @location(0) c: vec4<f32> };
@vertex fn vs_ok1(@location(0) p: vec3<f32>) -> Out { var o: Out; o.pos = vec4<f32>(p, 1.0); o.c = vec4<f32>(1.0); return o; }
@vertex fn vs_bad(@location(0) p: vec3<f32>) -> Out { var o: Out; o.pos = vec4<f32>(p.yxz, 1.0); o.c = vec4<f32>(0.5); return o; }
@vertex fn vs_ok2(@location(0) p: vec3<f32>) -> Out { var o: Out; o.pos = vec4<f32>(p.zyx, 1.0); o.c = vec4<f32>(0.0); return o; }
@fragment fn fs(@location(0) c: vec4<f32>) -> @location(0) vec4<f32> { return c; }
"#;

/// Pipeline `i` of the run sharing vertex function `vs` (label `vs/i`, depth bias `i`).
fn panic_pipeline(lib: &std::sync::Arc<Library>, vs: &str, i: u32) -> PipelineDescriptor {
    PipelineDescriptor::Render(RenderPipelineDescriptor {
        label: Some(format!("{vs}/{i}")),
        vertex: FunctionDescriptor::library(lib.clone(), vs),
        fragment: Some(FunctionDescriptor::library(lib.clone(), "fs")),
        state: opaque_state(
            vec![VertexBufferLayout {
                stride: 12,
                step: StepMode::Vertex,
                attributes: vec![VertexAttribute { location: 0, format: VertexFormat::Float32x3, offset: 0 }],
            }],
            i as i32,
        ),
        layout: None,
    })
}

/// Three runs of [`PANIC_RUN`] pipelines; the middle run shares the panicking vertex function.
pub fn panic_runs(lib: &std::sync::Arc<Library>) -> Vec<PipelineDescriptor> {
    ["vs_ok1", "vs_bad", "vs_ok2"]
        .iter()
        .flat_map(|vs| (0..PANIC_RUN).map(move |i| panic_pipeline(lib, vs, i)))
        .collect()
}

/// Writes [`panic_runs`] as a script, `dir/pipelines.json` beside `dir/lib.wgsl`; returns its path.
pub fn panic_script(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::write(dir.join("lib.wgsl"), PANIC_SHADER).expect("test fixture");
    let lib = Library::wgsl("lib", PANIC_SHADER);
    let list = panic_runs(&lib);
    let pipelines: Vec<serde_json::Value> = list
        .iter()
        .map(|d| {
            let PipelineDescriptor::Render(r) = d else { unreachable!() };
            let (FunctionDescriptor::Library { name, .. }, i) = (&r.vertex, r.state.depth_stencil.as_ref().expect("test fixture").depth_bias) else {
                unreachable!()
            };
            serde_json::json!({"label": r.label, "render": {
                "vertex": {"library": "lib", "function": name},
                "fragment": {"library": "lib", "function": "fs"},
                "vertex_buffers": [{"stride": 12, "step": "vertex", "attributes": [{"location": 0, "format": "float32x3", "offset": 0}]}],
                "color_attachments": [{}],
                "depth_stencil": {"format": "depth32float", "depth_write": true, "depth_compare": "less", "depth_bias": i}
            }})
        })
        .collect();
    let script = serde_json::json!({"granary_script": 1, "libraries": [{"name": "lib", "path": "lib.wgsl"}], "pipelines": pipelines});
    let path = dir.join("pipelines.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&script).expect("test fixture")).expect("test fixture");
    path
}

/// glslangValidator's SPIR-V (Vulkan 1.1) for the GLSL `source` of `stage` (`comp`, `vert`,
/// `frag`, `tesc`, …), its entry point named `entry` (`main` as written; another name renames
/// it). Panics with glslang's message if it refuses the source.
pub fn glsl_to_spirv(dir: &std::path::Path, stage: &str, entry: &str, source: &str) -> Vec<u8> {
    let src = dir.join(format!("{entry}.{stage}"));
    let out = dir.join(format!("{entry}.{stage}.spv"));
    std::fs::write(&src, source).expect("write the GLSL");
    let mut c = std::process::Command::new("glslangValidator");
    c.args(["-V", "--target-env", "vulkan1.1"]);
    if entry != "main" {
        c.args(["-e", entry, "--source-entrypoint", "main"]);
    }
    let o = c.arg("-o").arg(&out).arg(&src).output().expect("run glslangValidator");
    assert!(o.status.success(), "glslangValidator: {}", String::from_utf8_lossy(&o.stdout));
    std::fs::read(out).expect("read the SPIR-V")
}

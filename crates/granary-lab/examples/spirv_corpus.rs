//! Measures granary's SPIR-V path on folders of real modules (e.g. the willems corpus):
//!
//!     cargo run --release -p granary-lab --example spirv_corpus -- DIR…
//!
//! For each folder (every `*.spv` below it): how many modules there are, how many the
//! SPIRV-Tools validator accepts (`spirv-val --target-env vulkan1.3`, as granary runs it), how
//! many spirq reflects (granary's configuration: resources the entry point uses, combined
//! image samplers joined) and how many rspirv parses and reflects (entry points, execution
//! models, descriptor sets and bindings, spec ids, from its data representation: rspirv
//! itself only parses), panics contained and counted as failures; how many naga parses. Then
//! the mean milliseconds per module of spirv-val (a process per module), spirq, rspirv and
//! naga's parse.
//!
//! A second table compares the translators of the MSL, HLSL and GLSL targets through
//! granary's front end (validator, spirq, binding map), on the first entry point granary
//! harvests of each module: naga alone, SPIRV-Cross alone and granary's configuration
//! (SPIRV-Cross, then naga per target), with how many of SPIRV-Cross's GLSL outputs
//! `glslangValidator` accepts and the mean milliseconds per module each translator spends
//! writing the three targets (naga's time includes its parse). With `SPIRV_CORPUS_REASONS=1`
//! every target SPIRV-Cross fails is printed on stderr with its message.

use granary::descriptor::{FunctionDescriptor, Library, ShaderStage, SourceKind, Target, TargetSet};
use granary::frontend::spirv::Validator;
use granary::frontend::{Frontend, LoadedLibrary, SpirvTranslators, StageFunction};
use granary::sync::TaskLimiter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn spv_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            spv_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "spv") {
            out.push(p);
        }
    }
}

/// A reflection on rspirv's data representation comparable to what granary takes from
/// spirq: entry points with their execution models, each variable's descriptor set and
/// binding, the spec ids. `None` when rspirv cannot parse the module.
fn rspirv_reflect(bytes: &[u8]) -> Option<usize> {
    use rspirv::dr::Operand;
    use rspirv::spirv::{Decoration, Op};
    let module = rspirv::dr::load_bytes(bytes).ok()?;
    let mut found = 0usize;
    for ep in &module.entry_points {
        let _model = match ep.operands.first()? {
            Operand::ExecutionModel(m) => *m,
            _ => return None,
        };
        found += 1;
    }
    let mut sets = std::collections::HashMap::new();
    let mut bindings = std::collections::HashMap::new();
    let mut spec_ids = 0usize;
    for d in &module.annotations {
        if d.class.opcode != Op::Decorate {
            continue;
        }
        let (Some(Operand::IdRef(id)), Some(Operand::Decoration(dec))) = (d.operands.first(), d.operands.get(1)) else {
            continue;
        };
        let value = match d.operands.get(2) {
            Some(Operand::LiteralBit32(v)) => *v,
            _ => 0,
        };
        match dec {
            Decoration::DescriptorSet => {
                sets.insert(*id, value);
            }
            Decoration::Binding => {
                bindings.insert(*id, value);
            }
            Decoration::SpecId => spec_ids += 1,
            _ => {}
        }
    }
    let descriptors = module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Variable)
        .filter_map(|i| i.result_id)
        .filter(|id| sets.contains_key(id) && bindings.contains_key(id))
        .count();
    Some(found + descriptors + spec_ids)
}

#[derive(Default)]
struct Folder {
    modules: usize,
    valid: usize,
    spirq: usize,
    rspirv: usize,
    naga: usize,
    harvestable: usize,
    t_val: Duration,
    t_spirq: Duration,
    t_rspirv: Duration,
    t_naga: Duration,
    /// Per translator configuration (naga, SPIRV-Cross, both): modules with an MSL, HLSL,
    /// GLSL output, and the time spent compiling the stage functions.
    translated: [[usize; 3]; 3],
    t_translate: [Duration; 3],
    /// SPIRV-Cross's GLSL outputs glslangValidator accepts.
    cross_glsl_valid: usize,
}

const TRANSLATORS: [SpirvTranslators; 3] =
    [SpirvTranslators::NagaOnly, SpirvTranslators::CrossOnly, SpirvTranslators::CrossThenNaga];
const TRANSLATED: [Target; 3] = [Target::Msl, Target::Hlsl, Target::Glsl];

/// Whether glslangValidator accepts `glsl`, a `stage` shader (OpenGL semantics).
fn glsl_valid(dir: &Path, stage: ShaderStage, glsl: &[u8]) -> bool {
    let ext = match stage {
        ShaderStage::Vertex => "vert",
        ShaderStage::Fragment => "frag",
        ShaderStage::Compute => "comp",
        ShaderStage::TessellationControl => "tesc",
        ShaderStage::TessellationEvaluation => "tese",
        ShaderStage::Geometry => "geom",
        ShaderStage::Task => "task",
        ShaderStage::Mesh => "mesh",
        ShaderStage::RayGeneration => "rgen",
        ShaderStage::AnyHit => "rahit",
        ShaderStage::ClosestHit => "rchit",
        ShaderStage::Miss => "rmiss",
        ShaderStage::Intersection => "rint",
        ShaderStage::Callable => "rcall",
    };
    let path = dir.join(format!("out.{ext}"));
    std::fs::write(&path, glsl).is_ok()
        && std::process::Command::new("glslangValidator").arg(&path).output().is_ok_and(|o| o.status.success())
}

fn ms(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e3 / n.max(1) as f64
}

fn main() {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        eprintln!("usage: spirv_corpus DIR… (e.g. ../shared/corpora/willems/shaders/hlsl ../shared/corpora/willems/shaders/slang)");
        std::process::exit(2);
    }
    // Panics in spirq, rspirv and naga are counted, not printed.
    std::panic::set_hook(Box::new(|_| {}));
    let validator = Validator::from_env();
    if let Err(why) = validator.describe() {
        eprintln!("{why}");
        std::process::exit(2);
    }
    // SPIRV_CORPUS_REASONS=1: every target SPIRV-Cross fails, with its message, on stderr.
    let reasons = std::env::var_os("SPIRV_CORPUS_REASONS").is_some();
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let mut folders = Vec::new();
    for dir in &dirs {
        let mut files = Vec::new();
        spv_files(dir, &mut files);
        files.sort();
        let mut f = Folder::default();
        let frontends: Vec<Frontend> = TRANSLATORS
            .iter()
            .map(|t| {
                Frontend::new(TargetSet::of(&TRANSLATED), Arc::new(TaskLimiter::new(1)), true)
                    .with_spirv_translators(*t)
                    .with_validator(validator.clone())
            })
            .collect();
        for path in &files {
            let Ok(bytes) = std::fs::read(path) else { continue };
            f.modules += 1;
            let name = path.display().to_string();

            let t = Instant::now();
            let valid = validator.validate(&bytes, &name).is_ok();
            f.t_val += t.elapsed();
            f.valid += usize::from(valid);

            let words: Vec<u32> = bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
            let t = Instant::now();
            let r = std::panic::catch_unwind(|| {
                spirq::ReflectConfig::new().spv(&words[..]).ref_all_rscs(false).combine_img_samplers(true).reflect()
            });
            f.t_spirq += t.elapsed();
            f.spirq += usize::from(matches!(r, Ok(Ok(_))));

            let t = Instant::now();
            let r = std::panic::catch_unwind(|| rspirv_reflect(&bytes));
            f.t_rspirv += t.elapsed();
            f.rspirv += usize::from(matches!(r, Ok(Some(_))));

            let t = Instant::now();
            let r = std::panic::catch_unwind(|| naga::front::spv::parse_u8_slice(&bytes, &Default::default()));
            f.t_naga += t.elapsed();
            f.naga += usize::from(matches!(r, Ok(Ok(_))));

            // Through granary: the first entry point granary harvests, by each translator.
            let lib = Library::new(name.clone(), SourceKind::Spirv, None, bytes.clone(), Some(path.clone()));
            let Ok(loaded) = frontends[0].library(&lib) else { continue };
            let LoadedLibrary::Spirv(s) = &*loaded else { continue };
            let Some(ep) = s.reflection.entry_points.first() else { continue };
            f.harvestable += 1;
            let function = FunctionDescriptor::library(lib.clone(), ep.name.clone());
            for (i, fe) in frontends.iter().enumerate() {
                // Loaded (validated, reflected) first, so the time is the translators'.
                if fe.library(&lib).is_err() {
                    continue;
                }
                let t = Instant::now();
                let func: Option<Arc<StageFunction>> = match fe.function(&function, ep.stage) {
                    Ok(func) => Some(func),
                    Err(e) => {
                        if reasons && TRANSLATORS[i] == SpirvTranslators::CrossOnly {
                            eprintln!("{name}: {}", e.message);
                        }
                        None
                    }
                };
                f.t_translate[i] += t.elapsed();
                let Some(func) = func else { continue };
                if reasons && TRANSLATORS[i] == SpirvTranslators::CrossOnly {
                    for e in &func.target_failures {
                        eprintln!("{name}: {}", e.message);
                    }
                }
                for (j, t) in TRANSLATED.into_iter().enumerate() {
                    f.translated[i][j] += usize::from(func.outputs.get(t).is_some());
                }
                if TRANSLATORS[i] == SpirvTranslators::CrossOnly {
                    if let Some(glsl) = func.outputs.get(Target::Glsl) {
                        f.cross_glsl_valid += usize::from(glsl_valid(scratch.path(), ep.stage, glsl.bytes()));
                    }
                }
            }
        }
        folders.push((dir.display().to_string(), f));
    }
    println!(
        "{:<40} {:>7} {:>9} {:>6} {:>6} {:>5} | ms/module: {:>9} {:>6} {:>6} {:>6}",
        "folder", "modules", "spirv-val", "spirq", "rspirv", "naga", "spirv-val", "spirq", "rspirv", "naga"
    );
    for (name, f) in &folders {
        println!(
            "{:<40} {:>7} {:>9} {:>6} {:>6} {:>5} | ms/module: {:>9.3} {:>6.3} {:>6.3} {:>6.3}",
            name,
            f.modules,
            f.valid,
            f.spirq,
            f.rspirv,
            f.naga,
            ms(f.t_val, f.modules),
            ms(f.t_spirq, f.modules),
            ms(f.t_rspirv, f.modules),
            ms(f.t_naga, f.modules)
        );
    }
    println!();
    println!(
        "{:<40} {:>11} | {:>14} | {:>14} {:>10} | {:>14} | ms/module: {:>5} {:>11}",
        "folder", "harvestable", "naga msl/hlsl/glsl", "SPIRV-Cross", "glsl valid", "granary", "naga", "SPIRV-Cross"
    );
    for (name, f) in &folders {
        let t = |c: &[usize; 3]| format!("{}/{}/{}", c[0], c[1], c[2]);
        println!(
            "{:<40} {:>11} | {:>18} | {:>14} {:>10} | {:>14} | ms/module: {:>5.2} {:>11.2}",
            name,
            f.harvestable,
            t(&f.translated[0]),
            t(&f.translated[1]),
            f.cross_glsl_valid,
            t(&f.translated[2]),
            ms(f.t_translate[0], f.harvestable),
            ms(f.t_translate[1], f.harvestable)
        );
    }
}

//! Compiles every pipeline of the bundled renderer example (`examples/renderer/pipelines.json`)
//! for all four targets (SPIR-V, MSL, HLSL, GLSL) and reports any failure.
//!
//! Run from the repository root:
//!
//! ```text
//! cargo run --example validate_renderer [-- path/to/pipelines.json]
//! ```
//!
//! Exits with status 1 if any library, pipeline entry or compile fails.

use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::{PipelineDescriptor, TargetSet};
use granary::script::Script;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let path = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("examples/renderer/pipelines.json"));
    let script = match Script::load(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };

    let mut failures = 0usize;
    for (_, lib) in &script.libraries {
        if let Err(e) = lib {
            eprintln!("error: {e}");
            failures += 1;
        }
    }

    // SPIR-V, MSL, HLSL and GLSL.
    let compiler = Compiler::new(CompilerOptions { targets: TargetSet(0b1111), ..Default::default() });
    let (mut render, mut compute, mut ok) = (0usize, 0usize, 0usize);
    for p in &script.pipelines {
        match &p.descriptor {
            Err(e) => {
                eprintln!("error: {e}");
                failures += 1;
            }
            Ok(d) => {
                match d {
                    PipelineDescriptor::Render(_) => render += 1,
                    PipelineDescriptor::Compute(_) => compute += 1,
                }
                match compiler.compile(d) {
                    Ok(_) => ok += 1,
                    Err(e) => {
                        eprintln!("error: {e}");
                        failures += 1;
                    }
                }
            }
        }
    }

    let stats = compiler.stats();
    println!(
        "{}: {} libraries, {} pipelines ({render} render, {compute} compute), targets {}",
        path.display(),
        script.libraries.len(),
        script.pipelines.len(),
        TargetSet(0b1111).names()
    );
    println!(
        "front end: {} libraries parsed, {} stage functions compiled for {} requests",
        stats.libraries_parsed, stats.functions_compiled, stats.function_requests
    );
    println!("{ok} of {} pipelines compiled, {failures} failure(s)", script.pipelines.len());
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

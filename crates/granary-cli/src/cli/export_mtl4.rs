//! `granary export-mtl4`.

use anyhow::Context as _;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ExportMtl4Args {
    /// A granary archive harvested with MSL (`--targets ...,msl`), or a pipelines script
    /// (compiled to MSL here).
    input: PathBuf,
    /// The Metal 4 pipelines script to write (e.g. `pipelines.mtl4-json`); the MSL libraries
    /// go to `<OUTPUT>.libraries/` beside it.
    #[arg(short, long)]
    output: PathBuf,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(a: ExportMtl4Args) -> anyhow::Result<i32> {
    let r = granary::export::mtl4::export(&a.input, &a.output)
        .with_context(|| format!("export-mtl4 of {} failed", a.input.display()))?;
    if a.json {
        super::output::print_json(&r)?;
    } else {
        outln!(
            "wrote {} ({} render, {} compute pipelines; {} function descriptors) and {} MSL libraries in {}",
            r.output.display(),
            r.render_pipelines,
            r.compute_pipelines,
            r.function_descriptors,
            r.libraries,
            r.libraries_dir.display()
        );
        for p in &r.pipelines {
            for d in &p.dropped {
                outln!("  {}: not carried: {}: {}", p.label.as_deref().unwrap_or("(unlabelled)"), d.field, d.reason);
            }
        }
        for s in &r.skipped {
            outln!("  skipped {}: {}", s.pipeline, s.reason);
        }
        if !r.skipped.is_empty() {
            outln!("{} pipelines not exported (see above)", r.skipped.len());
        }
    }
    Ok(if r.skipped.is_empty() { 0 } else { 1 })
}

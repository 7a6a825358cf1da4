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
        // One line per (field, reason), with the pipelines it applies to counted.
        let mut dropped: Vec<((&str, &str), Vec<&str>)> = Vec::new();
        for p in &r.exported {
            for d in &p.not_carried {
                let label = p.label.as_deref().unwrap_or("(unlabelled)");
                match dropped.iter_mut().find(|(k, _)| *k == (d.field.as_str(), d.reason.as_str())) {
                    Some((_, labels)) => labels.push(label),
                    None => dropped.push(((d.field.as_str(), d.reason.as_str()), vec![label])),
                }
            }
        }
        for ((field, reason), labels) in dropped.iter().take(super::LISTED) {
            let more = if labels.len() > 1 { format!(" and {} more", labels.len() - 1) } else { String::new() };
            outln!("  not carried: {field}: {reason} ({} pipelines: '{}'{more})", labels.len(), labels[0]);
        }
        if dropped.len() > super::LISTED {
            outln!(
                "  … and {} more kinds of field not carried (every one is in --json)",
                dropped.len() - super::LISTED
            );
        }
        for s in r.skipped.iter().take(super::LISTED) {
            outln!("  skipped {}: {}", s.pipeline, s.reason);
        }
        if r.skipped.len() > super::LISTED {
            outln!("  … and {} more skipped (every one is in --json)", r.skipped.len() - super::LISTED);
        }
        if !r.skipped.is_empty() {
            outln!("{} pipelines not exported (see above)", r.skipped.len());
        }
    }
    Ok(if r.skipped.is_empty() { 0 } else { 1 })
}

//! `granary import-foz`: Fossilize databases to a pipelines script of native Vulkan pipelines
//! (docs/FORMAT.md §2.6, §4).

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ImportFozArgs {
    /// Fossilize databases (`.foz`), read in order; an entry seen twice is taken once.
    #[arg(required = true)]
    databases: Vec<PathBuf>,
    /// Folder to write `pipelines.json` and `modules/<hash>.spv` into.
    #[arg(short, long)]
    output: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// Exit status: 0 when every database and entry was readable (skipped pipelines are listed,
/// not failures), 1 when a database could not be read (bad magic, unknown version; the others
/// still import), an entry was damaged or a tail truncated, 2 when the output could not be
/// written.
pub fn run(a: ImportFozArgs) -> anyhow::Result<i32> {
    let r = granary::import::foz::import(&a.databases, &a.output)?;
    if a.json {
        super::output::print_json(&r)?;
    } else {
        for d in &r.databases_skipped {
            outln!("skipped database: {}", d.reason);
        }
        outln!(
            "imported {} pipelines and {} SPIR-V modules from {} entries into {} ({} pipeline libraries folded in)",
            r.imported,
            r.modules,
            r.entries,
            r.script.display(),
            r.libraries
        );
        if !r.skipped.is_empty() {
            outln!("skipped {} pipelines granary does not harvest:", r.skipped.len());
            for s in &r.skipped {
                outln!("  {} {}: {}", s.kind, s.hash, s.reason);
            }
        }
        for d in &r.damaged {
            outln!("damaged entry {} at {} offset {}: {}", d.name, d.file.display(), d.offset, d.reason);
        }
        for t in &r.truncated {
            outln!("truncated: {} from offset {} (ignored, as Fossilize does)", t.file.display(), t.offset);
        }
    }
    Ok(if r.intact() { 0 } else { 1 })
}

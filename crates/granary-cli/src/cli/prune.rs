//! `granary prune`.

use anyhow::Context as _;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct PruneArgs {
    /// The archive to prune.
    archive: PathBuf,
    /// The pipelines script whose pipelines to keep.
    #[arg(long)]
    script: PathBuf,
    /// Where to write the pruned archive (replaced atomically; may be ARCHIVE itself).
    #[arg(short, long)]
    output: PathBuf,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(a: PruneArgs) -> anyhow::Result<i32> {
    let r = granary::harvest::prune(&a.archive, &a.script, &a.output)
        .with_context(|| format!("prune of {} failed", a.archive.display()))?;
    if a.json {
        super::print_json(&r)?;
    } else {
        println!(
            "kept {} of {} archived pipelines into {} ({} bytes); dropped {} the script does not produce; {} of the script's {} pipelines missing",
            r.kept,
            r.archive_pipelines,
            r.output,
            r.bytes,
            r.dropped,
            r.missing.len(),
            r.script_pipelines
        );
        for m in &r.missing {
            println!("  missing: {m}");
        }
    }
    Ok(0)
}

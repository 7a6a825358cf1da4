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
    /// Write the output even when it drops more than half of the archive's pipelines (without
    /// it such a prune is refused and nothing is written: the script is most likely not the
    /// one the archive was harvested from).
    #[arg(long)]
    force: bool,
}

pub fn run(a: PruneArgs) -> anyhow::Result<i32> {
    let r = granary::harvest::prune(&a.archive, &a.script, &a.output, a.force)
        .with_context(|| format!("prune of {} failed", a.archive.display()))?;
    if a.json {
        super::output::print_json(&r)?;
    } else {
        let of = match &r.shard {
            Some(s) => format!("shard {}/{}'s {}", s.index, s.count, s.pipelines),
            None => format!("the script's {}", r.script_pipelines),
        };
        outln!(
            "kept {} of {} archived pipelines into {} ({} bytes); dropped {} the script{} does not produce; {} of {of} pipelines missing",
            r.kept,
            r.archive_pipelines,
            r.output,
            r.bytes,
            r.dropped,
            if r.shard.is_some() { "'s share" } else { "" },
            r.missing.len(),
        );
        if let Some(s) = &r.shard {
            outln!(
                "{} is still shard {} of {} (0-based) of script {}{}: merge it with the other shards (`granary merge`)",
                r.output,
                s.index,
                s.count,
                s.script,
                if r.expanded { ", harvested with the script's expand_unspecialized" } else { "" }
            );
        }
        if let Some(why) = &r.shard_dropped {
            outln!("shard record dropped: {why}");
        }
        for m in r.missing.iter().take(super::LISTED) {
            outln!("  missing: {m}");
        }
        if r.missing.len() > super::LISTED {
            outln!("  … and {} more missing (every one is in --json)", r.missing.len() - super::LISTED);
        }
    }
    Ok(0)
}

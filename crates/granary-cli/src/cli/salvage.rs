//! `granary salvage`.

use anyhow::Context as _;
use granary::archive::{self, Archive};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct SalvageArgs {
    /// The damaged archive.
    damaged: PathBuf,
    /// Where to write the recovered archive.
    #[arg(short, long)]
    output: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: SalvageArgs) -> anyhow::Result<i32> {
    let bytes = std::fs::read(&a.damaged).with_context(|| format!("cannot read {}", a.damaged.display()))?;
    let (entries, meta, report) = archive::salvage(&bytes).map_err(|e| e.with_path(&a.damaged))?;
    // A shard archive stays that shard (with the pipelines recovered).
    let size = archive::write_shard_entries(&a.output, &entries, &meta, report.shard.as_ref())?;
    Archive::read(&a.output)?.verify()?;
    if a.json {
        super::output::print_json(&report)?;
    } else {
        outln!(
            "recovered {} of {} pipeline records ({} labels) into {} ({size} bytes){}",
            report.recovered,
            report.pipeline_records,
            report.labels,
            a.output.display(),
            if report.header_intact { "" } else { "; the header checksum had failed" }
        );
        for l in &report.lost {
            outln!("  lost: {l}");
        }
        if report.devices > 0 || !report.device_data_lost.is_empty() {
            outln!(
                "recovered {} devices, {} pipeline binary sets, {} pipeline caches",
                report.devices,
                report.binary_sets,
                report.caches
            );
        }
        for l in &report.device_data_lost {
            outln!("  lost device data: {l}");
        }
        if let Some(s) = &report.shard {
            // Salvage cannot tell what the damage took beyond the records it could still see
            // (a cut file loses whole tables): let the harvest compile whatever is missing.
            outln!(
                "{} is still {s}; before merging, compile what it lacks: granary harvest SCRIPT -o {} --shard {}/{} --resume",
                a.output.display(),
                a.output.display(),
                s.index,
                s.count
            );
        }
        if report.missing_bytes > 0 {
            outln!(
                "  the file ends {} bytes short of what its header declares ({} of {} pipeline records present): what those bytes held is lost",
                report.missing_bytes,
                report.pipeline_records,
                report.pipeline_records_declared
            );
        }
        if let Some(why) = &report.shard_lost {
            outln!("  lost shard record: {why}; {} is written without one", a.output.display());
        }
    }
    let intact = report.lost.is_empty()
        && report.device_data_lost.is_empty()
        && report.shard_lost.is_none()
        && report.missing_bytes == 0
        && report.header_intact;
    Ok(if intact { 0 } else { 1 })
}

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
    // Nothing recovered of an archive that held pipelines: an empty archive in OUTPUT would
    // read as a successful salvage, so none is written; the report says what was lost, the
    // error where and why nothing is left.
    if let Some(nothing) = &report.nothing_recovered {
        if a.json {
            // The report is the one document on stdout (its `nothing_recovered` says why);
            // the message goes to stderr and the status is "could not run".
            super::output::print_json(&report)?;
            let e = anyhow::Error::new(nothing.to_error(&a.damaged))
                .context(format!("nothing to salvage, so {} is not written", a.output.display()));
            eprintln!("error: {}", super::error_text(&e));
            return Ok(2);
        } else {
            outln!(
                "recovered none of {} pipeline records ({} present); {} is not written",
                report.pipeline_records_declared,
                report.pipeline_records,
                a.output.display()
            );
            print_losses(&report, &a.output);
        }
        return Err(anyhow::Error::new(nothing.to_error(&a.damaged))
            .context(format!("nothing to salvage, so {} is not written", a.output.display())));
    }
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
        print_losses(&report, &a.output);
    }
    let intact = report.lost.is_empty()
        && report.device_data_lost.is_empty()
        && report.shard_lost.is_none()
        && report.missing_bytes == 0
        && report.header_intact;
    Ok(if intact { 0 } else { 1 })
}

/// The report's text after its first line: what was lost, and what a cut file lacks.
fn print_losses(report: &archive::SalvageReport, output: &std::path::Path) {
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
            output.display(),
            output.display(),
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
    for c in &report.cut {
        let records = c
            .section
            .record_size()
            .map(|size| format!(" ({} of {} records)", c.present / size as u64, c.length / size as u64))
            .unwrap_or_default();
        outln!(
            "  cut: the {} (bytes {}..{}) has {} of its {} bytes{records}",
            c.section,
            c.offset,
            c.offset.saturating_add(c.length),
            c.present,
            c.length
        );
    }
    if let Some(why) = &report.shard_lost {
        outln!("  lost shard record: {why}; {} is written without one", output.display());
    }
}

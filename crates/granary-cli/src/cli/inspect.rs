//! `granary ls`, `verify`, `extract`, `merge`.

use anyhow::Context as _;
use granary::archive::{self, Archive, PipelineRef};
use granary::descriptor::{PipelineKey, Target};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct LsArgs {
    /// The archive.
    archive: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Archives to check.
    #[arg(required = true)]
    archives: Vec<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct ExtractArgs {
    /// The archive.
    archive: PathBuf,
    /// A pipeline key (32 hex digits) or label.
    pipeline: String,
    /// Which target's outputs to write.
    #[arg(long, default_value = "spirv")]
    target: String,
    /// Output folder.
    #[arg(short, long, default_value = ".")]
    output: PathBuf,
}

#[derive(clap::Args)]
pub struct MergeArgs {
    /// Archives to combine.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The merged archive.
    #[arg(short, long)]
    output: PathBuf,
}

#[derive(serde::Serialize)]
struct LsStage<'a> {
    stage: &'a str,
    entry_point: &'a str,
    key: String,
    outputs: Vec<(&'static str, usize)>,
}

#[derive(serde::Serialize)]
struct LsRow<'a> {
    key: String,
    kind: &'static str,
    labels: Vec<&'a str>,
    stages: Vec<LsStage<'a>>,
}

pub fn ls(a: LsArgs) -> anyhow::Result<i32> {
    let ar = Archive::open(&a.archive)?;
    let mut labels: Vec<Vec<&str>> = vec![Vec::new(); ar.len()];
    for (l, p) in ar.labels()? {
        labels[p].push(l);
    }
    let mut rows = Vec::with_capacity(ar.len());
    for (p, labels) in ar.iter().zip(labels) {
        let p = p?;
        let mut stages = Vec::new();
        for s in p.stages()? {
            let mut outputs = Vec::new();
            for t in Target::ALL {
                if let Some(b) = s.output(t)? {
                    outputs.push((t.name(), b.len()));
                }
            }
            stages.push(LsStage { stage: s.stage.name(), entry_point: s.entry_point, key: s.key.to_hex(), outputs });
        }
        rows.push(LsRow { key: p.key().to_hex(), kind: p.kind().name(), labels, stages });
    }
    if a.json {
        super::print_json(&serde_json::json!({
            "archive": a.archive.display().to_string(),
            "bytes": ar.size(),
            "targets": ar.targets().names(),
            "blobs": ar.blob_count(),
            "pipelines": rows,
        }))?;
        return Ok(0);
    }
    outln!("{:<32}  {:<7}  {:<40}  stages", "key", "kind", "label");
    for r in &rows {
        let stages: Vec<String> = r.stages.iter().map(|s| format!("{}:{}", s.stage, s.entry_point)).collect();
        outln!("{}  {:<7}  {:<40}  {}", r.key, r.kind, r.labels.join(","), stages.join(" "));
    }
    outln!(
        "{} pipelines, {} distinct stage outputs, {} bytes, targets {}",
        ar.len(),
        ar.blob_count(),
        ar.size(),
        ar.targets().names()
    );
    Ok(0)
}

pub fn verify(a: VerifyArgs) -> anyhow::Result<i32> {
    let mut bad = 0;
    let mut results = Vec::new();
    for path in &a.archives {
        let r = Archive::read(path).and_then(|ar| ar.verify());
        match &r {
            Ok(rep) => {
                if !a.json {
                    outln!(
                        "{}: ok ({} pipelines, {} stages, {} blobs, {} labels, {} bytes)",
                        path.display(),
                        rep.pipelines,
                        rep.stages,
                        rep.blobs,
                        rep.labels,
                        rep.bytes
                    );
                }
            }
            Err(e) => {
                bad += 1;
                if !a.json {
                    outln!("{}: FAILED: {e}", path.display());
                }
            }
        }
        results.push(serde_json::json!({
            "archive": path.display().to_string(),
            "ok": r.is_ok(),
            "report": r.as_ref().ok(),
            "error": r.as_ref().err().map(|e| e.to_string()),
        }));
    }
    if a.json {
        super::print_json(&results)?;
    }
    Ok(if bad > 0 { 1 } else { 0 })
}

fn find<'a>(ar: &'a Archive, what: &str) -> anyhow::Result<PipelineRef<'a>> {
    if let Some(key) = PipelineKey::from_hex(what) {
        if let Some(p) = ar.get(key)? {
            return Ok(p);
        }
    }
    ar.lookup_label(what)?.with_context(|| format!("no pipeline with key or label '{what}'"))
}

pub fn extract(a: ExtractArgs) -> anyhow::Result<i32> {
    let target = Target::parse(&a.target)
        .with_context(|| format!("unknown target '{}' (expected spirv, msl, hlsl, glsl)", a.target))?;
    let ar = Archive::open(&a.archive)?;
    let p = find(&ar, &a.pipeline)?;
    std::fs::create_dir_all(&a.output).with_context(|| format!("cannot create {}", a.output.display()))?;
    let base: String = a.pipeline.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    for s in p.stages()? {
        let bytes = s
            .output(target)?
            .with_context(|| format!("the archive holds no {target} output for this pipeline (targets: {})", ar.targets().names()))?;
        let path = a.output.join(format!("{base}.{}.{}", s.stage.name(), target.extension()));
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
        outln!("{}", path.display());
    }
    Ok(0)
}

pub fn merge(a: MergeArgs) -> anyhow::Result<i32> {
    let inputs: Vec<Archive> = a
        .inputs
        .iter()
        .map(|p| Archive::read(p).and_then(|ar| ar.verify().map(|_| ar)))
        .collect::<Result<_, _>>()?;
    let (entries, meta) = archive::merge(&inputs)?;
    let bytes = archive::write_entries(&a.output, &entries, &meta)?;
    let out = Archive::read(&a.output)?;
    outln!("merged {} archives into {}: {} pipelines, {} bytes", inputs.len(), a.output.display(), out.len(), bytes);
    Ok(0)
}

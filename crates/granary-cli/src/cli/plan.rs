//! `granary plan SCRIPT --shards N`: how `harvest --shard I/N` would split a script.

use anyhow::Context as _;
use granary::descriptor::{KeyContext, TargetSet};
use granary::frontend::Profile;
use granary::harvest::{Expand, Selection};
use granary::script::Script;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct PlanArgs {
    /// The pipelines script.
    script: PathBuf,
    /// How many shards.
    #[arg(long, value_name = "N")]
    shards: u32,
    /// Output targets, as the harvest will be given them (they are part of every key, hence
    /// of the split).
    #[arg(long, default_value = "spirv", value_parser = TargetSet::parse)]
    targets: TargetSet,
    /// Device profile, as the harvest will be given it (part of every key).
    #[arg(long, value_name = "NAME", default_value = "default", value_parser = Profile::named)]
    profile: &'static Profile,
    /// Plan the harvest of a device without graphics pipeline libraries (or one given
    /// `--no-pipeline-libraries`): the script's `expand_unspecialized` then replaces each
    /// pipeline with unspecialized colour output by its variants, and the split is of those.
    #[arg(long)]
    expand_unspecialized: bool,
    /// Plan `harvest --whole-variants` on a device with graphics pipeline libraries: the
    /// script's `expand_unspecialized` variants join the pipelines they come from.
    #[arg(long, conflicts_with = "expand_unspecialized")]
    whole_variants: bool,
    /// Print the plan as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(serde::Serialize)]
struct PlanShard {
    index: u32,
    pipelines: usize,
    stage_functions: usize,
    cost: usize,
}

#[derive(serde::Serialize)]
struct Duplicated {
    key: String,
    shards: Vec<u32>,
}

#[derive(serde::Serialize)]
struct PlanReport {
    script: String,
    /// The script hash every shard archive records (32 hex digits).
    script_hash: String,
    shards: u32,
    pipelines: usize,
    /// Pipelines of the script that are not valid descriptors or could not be expanded (in
    /// no shard).
    invalid_pipelines: usize,
    /// With `--expand-unspecialized`: script pipelines replaced by their variants, and the
    /// variants (which the shards then hold); with `--whole-variants`, the pipelines the
    /// variants join.
    expanded_pipelines: usize,
    expanded_variants: usize,
    stage_functions: usize,
    /// What one pipeline counts for in a cost, in stage functions.
    pipeline_weight: usize,
    fair_share: usize,
    per_shard: Vec<PlanShard>,
    duplicated_stage_functions: Vec<Duplicated>,
    /// Stage-function compiles beyond one per unique function.
    extra_stage_function_compiles: usize,
    /// Max shard cost over mean shard cost.
    imbalance: f64,
}

pub fn run(a: PlanArgs) -> anyhow::Result<i32> {
    anyhow::ensure!(a.shards >= 1, "--shards must be at least 1");
    let text = std::fs::read_to_string(&a.script).with_context(|| format!("cannot read {}", a.script.display()))?;
    let script = Script::parse(&text, &a.script, a.script.parent().unwrap_or(std::path::Path::new("")))?;
    let ctx =
        KeyContext { target_options: granary::frontend::targets::target_options_fingerprint(a.profile, a.targets) };
    let how = match (a.expand_unspecialized, a.whole_variants) {
        (true, _) => Expand::Replace,
        (false, true) => Expand::Beside,
        (false, false) => Expand::No,
    };
    let expansion = Selection::expansion(&script, how);
    let selection = Selection::new(&script, &expansion, ctx);
    let invalid = selection.failures.len();
    let plan = selection.split(a.shards).assignment;
    let report = PlanReport {
        script: a.script.display().to_string(),
        script_hash: format!("{:032x}", plan.script),
        shards: plan.count,
        pipelines: plan.shard_of.len(),
        invalid_pipelines: invalid,
        expanded_pipelines: expansion.replaced.len() - expansion.errors.len(),
        expanded_variants: expansion.variants.len(),
        stage_functions: plan.stage_functions,
        pipeline_weight: granary::harvest::shard::PIPELINE_WEIGHT,
        fair_share: plan.fair_share,
        per_shard: plan
            .shards
            .iter()
            .enumerate()
            .map(|(i, s)| PlanShard {
                index: i as u32,
                pipelines: s.pipelines,
                stage_functions: s.stage_functions,
                cost: s.cost,
            })
            .collect(),
        duplicated_stage_functions: plan
            .duplicated
            .iter()
            .map(|(k, s)| Duplicated { key: format!("{k:032x}"), shards: s.clone() })
            .collect(),
        extra_stage_function_compiles: plan.extra_compiles(),
        imbalance: plan.imbalance(),
    };
    if a.json {
        super::output::print_json(&report)?;
        return Ok(0);
    }
    outln!(
        "{} in {} shards: {} pipelines, {} unique stage functions, script {}",
        report.script,
        report.shards,
        report.pipelines,
        report.stage_functions,
        report.script_hash
    );
    if report.expanded_pipelines > 0 {
        outln!(
            "  expand_unspecialized: {} pipelines with unspecialized colour output replaced by {} variants",
            report.expanded_pipelines,
            report.expanded_variants
        );
    }
    if report.invalid_pipelines > 0 {
        outln!("  {} pipelines of the script are not valid and belong to no shard", report.invalid_pipelines);
    }
    outln!("  {:>5}  {:>9}  {:>15}  {:>6}", "shard", "pipelines", "stage functions", "cost");
    for s in &report.per_shard {
        outln!(
            "  {:>5}  {:>9}  {:>15}  {:>6}",
            format!("{}/{}", s.index, report.shards),
            s.pipelines,
            s.stage_functions,
            s.cost
        );
    }
    outln!(
        "  stage functions in more than one shard: {} ({} extra compiles)",
        report.duplicated_stage_functions.len(),
        report.extra_stage_function_compiles
    );
    const LISTED: usize = 20;
    for d in report.duplicated_stage_functions.iter().take(LISTED) {
        let shards: Vec<String> = d.shards.iter().map(u32::to_string).collect();
        outln!("    {} in shards {}", d.key, shards.join(", "));
    }
    if report.duplicated_stage_functions.len() > LISTED {
        outln!("    ... and {} more (--json lists them all)", report.duplicated_stage_functions.len() - LISTED);
    }
    outln!(
        "  cost = {} × pipelines + stage functions (a device harvest's driver compiles each pipeline whole)",
        report.pipeline_weight
    );
    outln!("  expected imbalance (max/mean cost): {:.3}", report.imbalance);
    Ok(0)
}

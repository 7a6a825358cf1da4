//! `granary ls`, `verify`, `extract`, `merge`.

use anyhow::Context as _;
use granary::archive::{self, Archive, PipelineRef};
use granary::descriptor::{PipelineKey, Target};
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(after_help = "\
Key tables for the run-time crate (granary-archive), which looks pipelines up by label or by key
without shader source:
  granary ls game.granary --keys json > pipeline_keys.json
  granary ls game.granary --keys rust > src/pipeline_keys.rs   # consts of granary_archive::PipelineKey
  granary ls game.granary --keys c    > pipeline_keys.h        # label, key as hex and as two uint64_t")]
pub struct LsArgs {
    /// The archive.
    archive: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "keys")]
    json: bool,
    /// Print a label → pipeline key table for application code instead of the listing.
    #[arg(long, value_name = "FORMAT")]
    keys: Option<KeyFormat>,
}

/// Languages `ls --keys` writes.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum KeyFormat {
    /// `{"label": "32 hex digits", ...}`.
    Json,
    /// A Rust module: one `pub const` per label and a sorted `PIPELINES` table.
    Rust,
    /// A C header: one `#define` per label (hex string) and a table of `{label, lo, hi}`.
    C,
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Archives to check.
    #[arg(required = true)]
    archives: Vec<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Also require a signature by this public key (NAME.pub from `granary sign
    /// --generate-key`): an archive that is unsigned, signed by another key or changed after
    /// signing fails (exit 1). Without it, a signature is checked only against the key the
    /// archive itself names, which catches damage but not who signed.
    #[arg(long, value_name = "PUBLIC_KEY_FILE")]
    key: Option<PathBuf>,
}

/// The signature status `ls` and `verify` print in JSON: `{"signed": false}`, or
/// `{"signed": true, "key": 64 hex digits, "key_id": the first 16}`.
fn signature_json(s: Option<granary_archive::SignatureInfo>) -> serde_json::Value {
    match s {
        None => serde_json::json!({"signed": false}),
        Some(s) => serde_json::json!({"signed": true, "key": s.public_key_hex(), "key_id": s.key_id()}),
    }
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

// `ls --json` writes every object with its keys in sorted order: the order it printed them in
// when it built the whole document as one `serde_json::Value` (whose map sorts its keys), and
// the streaming writer keeps those exact bytes. So each struct below declares its fields in
// sorted order (`tests/cli.rs` checks the document against its own sorted re-serialization).

/// One stage of an `ls --json` row.
#[derive(serde::Serialize)]
struct LsStage<'a> {
    entry_point: &'a str,
    key: String,
    /// `[target, bytes]` per target with an output (each checked against its hash).
    outputs: Vec<(&'static str, usize)>,
    stage: &'static str,
}

/// One pipeline of `ls --json`: built, written and dropped before the next one is read.
#[derive(serde::Serialize)]
struct LsRow<'a> {
    /// Per device with a record for this pipeline: its index in the archive's `devices`, how
    /// many driver binaries and their bytes (0 and 0: compiled into the device's caches), the
    /// driver's `vkGetPipelineKeyKHR` of the create info they were captured with
    /// (`pipeline_key`, hex; a loader uses them only for a create info with that key), and per
    /// binary its key, bytes and content hash.
    devices: Vec<serde_json::Value>,
    key: String,
    kind: &'static str,
    labels: Labels<'a>,
    /// The resource layout and binding maps (docs/FORMAT.md §1.6); null if archived without.
    layout: Option<LayoutJson>,
    stages: Vec<LsStage<'a>>,
}

/// One pipeline's labels: its run of the `(label, pipeline)` pairs sorted by pipeline.
#[derive(Clone, Copy)]
struct Labels<'a>(&'a [(&'a str, usize)]);

impl Labels<'_> {
    /// The labels as the table prints them.
    fn joined(&self) -> String {
        let mut s = String::new();
        for (i, (l, _)) in self.0.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(l);
        }
        s
    }
}

impl serde::Serialize for Labels<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|(l, _)| l))
    }
}

/// Every `(label, pipeline)` pair of `ar`, sorted by pipeline index and, within a pipeline, by
/// label (the label index's order), so that a walk in pipeline order takes each pipeline's
/// labels off the front ([`take_labels`]) without a list per pipeline.
fn labels_by_pipeline(ar: &Archive) -> anyhow::Result<Vec<(&str, usize)>> {
    let mut labels = ar.labels()?;
    labels.sort_by_key(|&(_, p)| p); // stable: each pipeline's labels stay in label order
    Ok(labels)
}

/// Takes pipeline `i`'s labels off the front of `rest` (pipelines are walked in index order).
fn take_labels<'a>(rest: &mut &'a [(&'a str, usize)], i: usize) -> Labels<'a> {
    let n = rest.iter().take_while(|(_, p)| *p == i).count();
    let (mine, tail) = rest.split_at(n);
    *rest = tail;
    Labels(mine)
}

/// Per device: the bytes of its driver binaries (each distinct blob counted once, however many
/// pipelines share it) and of its pipeline caches. Reads the device tables, not the pipelines.
fn device_totals(devices: &[archive::DeviceRef<'_>]) -> anyhow::Result<Vec<(usize, usize)>> {
    let mut totals = Vec::with_capacity(devices.len());
    for d in devices {
        let mut seen = std::collections::HashSet::new();
        let mut binary_bytes = 0;
        for j in 0..d.pipeline_count() {
            let (_, set) = d.pipeline_binaries(j)?;
            for b in set.iter() {
                let b = b?;
                if seen.insert(b.data.as_ptr()) {
                    binary_bytes += b.data.len();
                }
            }
        }
        totals.push((binary_bytes, d.caches()?.iter().map(|c| c.len()).sum()));
    }
    Ok(totals)
}

/// Reads everything `ls --json` reads of every pipeline (records, stage records, outputs'
/// places, layouts, device binary sets) without formatting any of it, so that an archive
/// that fails part-way fails before the document starts: `--json` prints one complete
/// document or the error object, never a cut one. (It does not hash the binaries, which is
/// most of a row's cost.)
fn check_rows(ar: &Archive, devices: &[archive::DeviceRef<'_>]) -> anyhow::Result<()> {
    for p in ar.iter() {
        let p = p?;
        for s in p.stages()? {
            for t in Target::ALL {
                s.output(t)?;
            }
        }
        p.layout()?;
        for d in devices {
            if let Some(set) = d.binaries(&p)? {
                for b in set.iter() {
                    b?;
                }
            }
        }
    }
    Ok(())
}

/// Pipeline `p`'s row of `ls --json`.
fn json_row<'a>(
    p: &PipelineRef<'a>,
    labels: Labels<'a>,
    devices: &[archive::DeviceRef<'a>],
) -> anyhow::Result<LsRow<'a>> {
    let mut stages = Vec::new();
    for s in p.stages()? {
        let mut outputs = Vec::new();
        for t in Target::ALL {
            if let Some(b) = s.output(t)? {
                outputs.push((t.name(), b.len()));
            }
        }
        stages.push(LsStage { entry_point: s.entry_point, key: s.key.to_hex(), outputs, stage: s.stage.name() });
    }
    let layout = p.layout()?.map(|l| LayoutJson::of(&l));
    let mut on = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        if let Some(set) = d.binaries(p)? {
            let mut bytes = 0;
            let mut list = Vec::with_capacity(set.len());
            for b in set.iter() {
                let b = b?;
                bytes += b.data.len();
                let key: String = b.key.iter().map(|x| format!("{x:02x}")).collect();
                let hash = granary::descriptor::key::content_hash(b.data).0;
                list.push(serde_json::json!({"key": key, "bytes": b.data.len(), "hash": format!("{hash:032x}")}));
            }
            let pipeline_key: String = set.pipeline_key().iter().map(|x| format!("{x:02x}")).collect();
            on.push(serde_json::json!({
                "device": i,
                "pipeline_key": pipeline_key,
                "library": set.flags() & granary::archive::BINARY_SET_LIBRARY != 0,
                "flags": set.flags(),
                "binaries": set.len(),
                "bytes": bytes,
                "binary_list": list,
            }));
        }
    }
    Ok(LsRow { devices: on, key: p.key().to_hex(), kind: p.kind().name(), labels, layout, stages })
}

/// `ls --json`'s document (docs/schemas/ls.schema.json), fields in sorted order; `entries` is
/// read and written one row at a time.
#[derive(serde::Serialize)]
struct LsDocument<'a> {
    archive: String,
    blobs: usize,
    bytes: usize,
    command: &'static str,
    devices: Vec<serde_json::Value>,
    entries: Rows<'a>,
    schema_version: u64,
    shard: serde_json::Value,
    signature: serde_json::Value,
    targets: String,
}

/// Every pipeline's row, each built only when the serializer reaches it. An archive error ends
/// the sequence; it is kept in `error` so that `ls` reports it as itself.
struct Rows<'a> {
    ar: &'a Archive,
    labels: &'a [(&'a str, usize)],
    devices: &'a [archive::DeviceRef<'a>],
    error: std::cell::RefCell<Option<anyhow::Error>>,
}

impl serde::Serialize for Rows<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeSeq as _};
        let mut seq = s.serialize_seq(Some(self.ar.len()))?;
        let mut labels = self.labels;
        for p in self.ar.iter() {
            let row = p.map_err(anyhow::Error::from).and_then(|p| {
                let mine = take_labels(&mut labels, p.index());
                json_row(&p, mine, self.devices)
            });
            match row {
                Ok(row) => seq.serialize_element(&row)?,
                Err(e) => {
                    let what = format!("{e:#}");
                    *self.error.borrow_mut() = Some(e);
                    return Err(S::Error::custom(what));
                }
            }
        }
        seq.end()
    }
}

/// The `count` of a layout binding: null for one resource, `"unsized"`, or the array length.
enum Count {
    One,
    Unsized,
    Array(u32),
}

impl serde::Serialize for Count {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Count::One => s.serialize_none(),
            Count::Unsized => s.serialize_str("unsized"),
            Count::Array(n) => s.serialize_u32(*n),
        }
    }
}

#[derive(serde::Serialize)]
struct BindingJson {
    binding: u32,
    count: Count,
    group: u32,
    kind: &'static str,
    visibility: Vec<&'static str>,
}

#[derive(serde::Serialize)]
struct ImmediatesJson {
    size: u32,
    visibility: Vec<&'static str>,
}

#[derive(serde::Serialize)]
struct SlotJson {
    binding: u32,
    glsl: Option<String>,
    group: u32,
    hlsl: String,
    msl: String,
}

#[derive(serde::Serialize)]
struct StageMapJson {
    hlsl_immediates: Option<String>,
    msl_immediates: Option<String>,
    msl_sizes: Option<String>,
    resources: Vec<SlotJson>,
    stage: &'static str,
}

/// The layout and per-stage binding maps as `ls --json` and `extract` write them
/// (docs/FORMAT.md §1.6).
#[derive(serde::Serialize)]
struct LayoutJson {
    bindings: Vec<BindingJson>,
    immediates: Option<ImmediatesJson>,
    stages: Vec<StageMapJson>,
}

fn stages_json(m: archive::StageMask) -> Vec<&'static str> {
    m.stages().map(|s| s.name()).collect()
}

impl LayoutJson {
    fn of(l: &archive::PipelineLayout) -> Self {
        let bindings = l
            .bindings
            .iter()
            .map(|b| BindingJson {
                binding: b.binding,
                count: match b.count {
                    0 => Count::One,
                    u32::MAX => Count::Unsized,
                    n => Count::Array(n),
                },
                group: b.group,
                kind: b.kind.name(),
                visibility: stages_json(b.visibility),
            })
            .collect();
        let stages = l
            .stages
            .iter()
            .map(|s| StageMapJson {
                hlsl_immediates: s.hlsl_immediates_space.map(|sp| format!("register(b0, space{sp})")),
                msl_immediates: s.msl_immediates_buffer.map(|i| format!("buffer({i})")),
                msl_sizes: s.msl_sizes_buffer.map(|i| format!("buffer({i})")),
                resources: s
                    .slots
                    .iter()
                    .map(|a| SlotJson {
                        binding: a.binding,
                        glsl: a.glsl_binding.map(|b| format!("binding = {b}")),
                        group: a.group,
                        hlsl: match a.hlsl_class {
                            // Samplers live in naga's sampler heap; the shader reads their heap
                            // index from the group's sampler index buffer (docs/FORMAT.md §1.7).
                            b's' => format!("sampler_index({}) of register(t{}, space255)", a.hlsl_register, a.group),
                            c => format!("register({}{}, space{})", c as char, a.hlsl_register, a.hlsl_space),
                        },
                        msl: format!("{}({})", a.msl_class.name(), a.msl_index),
                    })
                    .collect(),
                stage: s.stage.name(),
            })
            .collect();
        LayoutJson {
            bindings,
            immediates: l.immediates.map(|i| ImmediatesJson { size: i.size, visibility: stages_json(i.visibility) }),
            stages,
        }
    }
}

/// `granary ls`. Streams: the table prints each row as it reads the pipeline (its record,
/// stage records and labels, each checked; not its blobs, which `verify` checks), and `--json`
/// writes its document row by row after a first pass that reads every row without writing
/// (so a damaged archive gives the error object, not half a document); only the labels
/// (sorted by pipeline) and the per-device totals are held for the whole archive.
pub fn ls(a: LsArgs) -> anyhow::Result<i32> {
    let ar = Archive::open(&a.archive)?;
    if let Some(format) = a.keys {
        let mut table: Vec<(&str, PipelineKey)> = Vec::new();
        for (label, p) in ar.labels()? {
            table.push((label, ar.pipeline(p)?.key()));
        }
        outln!("{}", key_table(&a.archive.display().to_string(), &table, format));
        return Ok(0);
    }
    let labels = labels_by_pipeline(&ar)?;
    let devices = ar.devices()?;
    let device_bytes = device_totals(&devices)?;
    if a.json {
        check_rows(&ar, &devices)?;
        let devices_json: Vec<_> = devices
            .iter()
            .zip(&device_bytes)
            .map(|(d, (binary_bytes, cache_bytes))| {
                serde_json::json!({
                    "device": d.identity().describe(),
                    "pipeline_binaries": d.has_pipeline_binaries(),
                    "pipelines": d.pipeline_count(),
                    "binary_bytes": binary_bytes,
                    "cache_bytes": cache_bytes,
                })
            })
            .collect();
        let doc = LsDocument {
            archive: a.archive.display().to_string(),
            blobs: ar.blob_count(),
            bytes: ar.size(),
            command: "ls",
            devices: devices_json,
            entries: Rows { ar: &ar, labels: &labels, devices: &devices, error: Default::default() },
            schema_version: super::output::SCHEMA_VERSION,
            shard: serde_json::to_value(ar.shard())?,
            signature: signature_json(ar.signature()?),
            targets: ar.targets().names(),
        };
        let mut out = super::output::Stdout::new();
        if let Err(e) = serde_json::to_writer_pretty(&mut out, &doc) {
            // Writing never fails (the writer ends the process instead): an archive error.
            return Err(doc.entries.error.borrow_mut().take().unwrap_or_else(|| e.into()));
        }
        out.finish_line();
        return Ok(0);
    }
    outln!("{:<32}  {:<7}  {:<40}  stages", "key", "kind", "label");
    let mut rest = &labels[..];
    for p in ar.iter() {
        let p = p?;
        let labels = take_labels(&mut rest, p.index());
        let stages: Vec<String> = p.stages()?.iter().map(|s| format!("{}:{}", s.stage.name(), s.entry_point)).collect();
        outln!("{}  {:<7}  {:<40}  {}", p.key().to_hex(), p.kind().name(), labels.joined(), stages.join(" "));
    }
    outln!(
        "{} pipelines, {} distinct stage outputs, {} bytes, targets {}",
        ar.len(),
        ar.blob_count(),
        ar.size(),
        ar.targets().names()
    );
    if let Some(s) = ar.shard() {
        outln!(
            "shard {} of {} (0-based) of script {:032x}: merge it with the other shards (`granary merge`)",
            s.index,
            s.count,
            s.script
        );
    }
    for (d, (binary_bytes, cache_bytes)) in devices.iter().zip(&device_bytes) {
        outln!(
            "device {}: {} pipelines, {binary_bytes} bytes of driver binaries, {cache_bytes} bytes of pipeline caches",
            d.identity().describe(),
            d.pipeline_count()
        );
    }
    match ar.signature()? {
        Some(s) => outln!("signed by key {} (`granary verify --key` checks who signed)", s.key_id()),
        None => outln!("unsigned"),
    }
    Ok(0)
}

pub fn verify(a: VerifyArgs) -> anyhow::Result<i32> {
    let mut bad = 0;
    let mut results = Vec::new();
    let key = a.key.as_deref().map(granary_archive::PublicKey::read).transpose()?;
    for path in &a.archives {
        let read = Archive::read(path);
        // The shard record (docs/FORMAT.md §1.4.1) as the header and meta section give it,
        // shown whether or not the rest verifies: a damaged shard says which one to redo.
        let shard = read.as_ref().ok().and_then(Archive::shard);
        // None: unknown (the file or its signature section is unreadable); Some(None): unsigned.
        let signature = read.as_ref().ok().and_then(|ar| ar.signature().ok());
        // With --key, who signed comes first (a changed byte says "changed after signing").
        let r = read.and_then(|ar| key.as_ref().map_or(Ok(()), |k| ar.verify_signature(k)).and_then(|_| ar.verify()));
        let signed = match (signature.flatten(), &key) {
            (None, _) => "; unsigned".to_string(),
            (Some(s), Some(_)) => format!("; signed by key {} (the --key)", s.key_id()),
            (Some(s), None) => format!("; signed by key {} (pass --key to check who signed)", s.key_id()),
        };
        let of_shard = |s: &archive::ShardRecord| {
            format!("shard {} of {} (0-based) of script {:032x}", s.index, s.count, s.script)
        };
        match &r {
            Ok(rep) => {
                if !a.json {
                    outln!(
                        "{}: ok ({} pipelines, {} stages, {} blobs, {} labels, {} bytes){signed}{}",
                        path.display(),
                        rep.pipelines,
                        rep.stages,
                        rep.blobs,
                        rep.labels,
                        rep.bytes,
                        shard.as_ref().map(|s| format!("; {}", of_shard(s))).unwrap_or_default()
                    );
                }
            }
            Err(e) => {
                bad += 1;
                if !a.json {
                    // The line starts with the file: an error that names it too is not
                    // shown naming it twice.
                    let text = e.to_string();
                    let shown = path.display().to_string();
                    let e = text.strip_prefix(&shown).and_then(|t| t.strip_prefix(": ")).unwrap_or(&text);
                    outln!(
                        "{}: FAILED: {e}{}",
                        path.display(),
                        shard.as_ref().map(|s| format!(" (it records {})", of_shard(s))).unwrap_or_default()
                    );
                }
            }
        }
        results.push(serde_json::json!({
            "archive": path.display().to_string(),
            "ok": r.is_ok(),
            "shard": shard,
            "signature": signature.map(signature_json),
            "required_key": key.map(|k| k.to_text().trim().to_string()),
            "report": r.as_ref().ok(),
            "error": r.as_ref().err().map(|e| e.to_string()),
        }));
    }
    if a.json {
        super::output::print_json(&serde_json::json!({"archives": results}))?;
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
    let target = Target::from_name(&a.target)
        .with_context(|| format!("unknown target '{}' (expected spirv, msl, hlsl, glsl)", a.target))?;
    let ar = Archive::open(&a.archive)?;
    let p = find(&ar, &a.pipeline)?;
    std::fs::create_dir_all(&a.output).with_context(|| format!("cannot create {}", a.output.display()))?;
    let base: String =
        a.pipeline.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    for s in p.stages()? {
        let bytes = s.output(target)?.with_context(|| {
            format!("the archive holds no {target} output for this pipeline (targets: {})", ar.targets().names())
        })?;
        let path = a.output.join(format!("{base}.{}.{}", s.stage.name(), target.extension()));
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
        outln!("{}", path.display());
    }
    if let Some(l) = p.layout()? {
        let path = a.output.join(format!("{base}.layout.json"));
        let text = serde_json::to_string_pretty(&LayoutJson::of(&l))? + "\n";
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        outln!("{}", path.display());
    }
    Ok(0)
}

pub fn merge(a: MergeArgs) -> anyhow::Result<i32> {
    let inputs: Vec<Archive> =
        a.inputs.iter().map(|p| Archive::read(p).and_then(|ar| ar.verify().map(|_| ar))).collect::<Result<_, _>>()?;
    let (entries, meta) = archive::merge(&inputs)?;
    let bytes = archive::write_entries(&a.output, &entries, &meta)?;
    let out = Archive::read(&a.output)?;
    outln!("merged {} archives into {}: {} pipelines, {} bytes", inputs.len(), a.output.display(), out.len(), bytes);
    Ok(0)
}

/// An identifier for `label` in Rust or C: upper snake case, letters, digits and `_` only,
/// never starting with a digit.
fn identifier(label: &str) -> String {
    let mut id: String =
        label.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    if id.is_empty() || id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    id
}

/// The label → key table in `format`. Labels are unique in an archive (verify enforces it);
/// identifiers made from them may collide, and then get a `_2`, `_3`… suffix.
fn key_table(source: &str, table: &[(&str, PipelineKey)], format: KeyFormat) -> String {
    let escape = |l: &str| l.replace('\\', "\\\\").replace('"', "\\\"");
    let mut seen = std::collections::HashMap::new();
    let mut ids = Vec::with_capacity(table.len());
    for (label, _) in table {
        let base = identifier(label);
        let n = seen.entry(base.clone()).or_insert(0u32);
        *n += 1;
        ids.push(if *n == 1 { base } else { format!("{base}_{n}") });
    }
    let mut out = String::new();
    match format {
        KeyFormat::Json => {
            let map: serde_json::Map<String, serde_json::Value> =
                table.iter().map(|(l, k)| (l.to_string(), serde_json::Value::String(k.to_hex()))).collect();
            out = serde_json::to_string_pretty(&map).unwrap_or_default();
        }
        KeyFormat::Rust => {
            out += &format!("// Pipeline keys of {source}, written by `granary ls --keys rust`. Do not edit.\n");
            out += "use granary_archive::PipelineKey;\n\n";
            for ((label, key), id) in table.iter().zip(&ids) {
                out += &format!(
                    "/// `{}`\npub const {id}: PipelineKey = PipelineKey(0x{});\n",
                    escape(label),
                    key.to_hex()
                );
            }
            out +=
                "\n/// Every label with its key, sorted by label.\npub const PIPELINES: &[(&str, PipelineKey)] = &[\n";
            for ((label, _), id) in table.iter().zip(&ids) {
                out += &format!("    (\"{}\", {id}),\n", escape(label));
            }
            out += "];";
        }
        KeyFormat::C => {
            out += &format!("/* Pipeline keys of {source}, written by `granary ls --keys c`. Do not edit. */\n");
            out += "#ifndef GRANARY_PIPELINE_KEYS_H\n#define GRANARY_PIPELINE_KEYS_H\n#include <stdint.h>\n\n";
            out += "/* A key is 128 bits: `lo` and `hi` are its low and high 64 bits (the archive stores it\n   little-endian); the hex string is the same key as `granary ls` prints it. */\n";
            out += "typedef struct { const char *label; uint64_t lo; uint64_t hi; } granary_pipeline_key;\n\n";
            for ((label, key), id) in table.iter().zip(&ids) {
                out += &format!(
                    "#define GRANARY_KEY_{id} \"{}\" /* {} */\n",
                    key.to_hex(),
                    escape(label).replace("*/", "*\\/")
                );
            }
            out += &format!("\nstatic const granary_pipeline_key granary_pipeline_keys[{}] = {{\n", table.len().max(1));
            for (label, key) in table {
                out += &format!(
                    "    {{ \"{}\", 0x{:016x}ull, 0x{:016x}ull }},\n",
                    escape(label),
                    key.0 as u64,
                    (key.0 >> 64) as u64
                );
            }
            if table.is_empty() {
                out += "    { 0, 0, 0 },\n";
            }
            out += "};\n\n#endif";
        }
    }
    out
}

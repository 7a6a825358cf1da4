//! Salvage of a file cut short, judged against what the intact file says lies before the cut.
//!
//! For every cut, the pipelines salvage must recover are computed here from the intact
//! archive's own records, without salvage's code: a pipeline is recoverable exactly when every
//! byte it needs — its pipeline record, its stage records, their entry-point strings, and the
//! index record and bytes of every blob it references — lies before the cut; a label survives
//! when its record and string do and its pipeline is recovered. Salvage must recover exactly
//! those, and the archive written from what it recovered must be, byte for byte, the archive
//! of the originals restricted to them. Where nothing is recoverable the report says why, at
//! the byte where the file ends.

mod common;

use granary_archive::{
    encode, salvage, Archive, ArchiveMeta, BindingKind, Blob, LayoutBinding, PipelineEntry, PipelineKey, PipelineKind,
    PipelineLayout, Section, ShaderStage, StageEntry, StageMask, Target, WriteEntry, FIXED_HEADER, SECTION_ROW,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

fn meta() -> ArchiveMeta {
    ArchiveMeta::new("salvage test writer options")
}

fn stage(key: u128, stage: ShaderStage, entry_point: &str) -> StageEntry {
    common::stage_with_outputs(key, stage, entry_point, 200 + (key as usize * 37) % 900)
}

/// 4 runs of 10 render pipelines (each run sharing its vertex stage, every pipeline with a
/// fragment stage of its own, SPIR-V and GLSL), a shared layout and state, and 4 compute
/// pipelines; one label each, every fifth pipeline a second one.
fn entries() -> Vec<WriteEntry> {
    let state = common::unspecialized_render_state();
    let state = Blob::new(state.encode().expect("a valid render state"));
    let layout = PipelineLayout {
        bindings: vec![LayoutBinding {
            group: 0,
            binding: 0,
            kind: BindingKind::UniformBuffer,
            count: 0,
            visibility: StageMask(3),
        }],
        immediates: None,
        stages: Vec::new(),
    };
    let layout = Blob::new(layout.encode());
    let labels = |n: u128, base: String| -> Arc<[String]> {
        if n.is_multiple_of(5) {
            vec![base.clone(), format!("{base}/alias")].into()
        } else {
            vec![base].into()
        }
    };
    let mut out: Vec<WriteEntry> = (0..4u128)
        .flat_map(|run| (0..10u128).map(move |i| (run, i)))
        .map(|(run, i)| WriteEntry {
            entry: Arc::new(PipelineEntry {
                key: PipelineKey(0x5000 + run * 0x777 + i * 0x31),
                kind: PipelineKind::Render,
                stages: vec![
                    stage(0x10 + run, ShaderStage::Vertex, "vs_main"),
                    stage(0x400 + run * 16 + i, ShaderStage::Fragment, &format!("fs_{run}_{i}")),
                ],
                layout: Some(layout.clone()),
                state: Some(state.clone()),
            }),
            labels: labels(run * 10 + i, format!("render/run{run}/p{i}")),
            binaries: Vec::new(),
        })
        .collect();
    out.extend((0..4u128).map(|i| WriteEntry {
        entry: Arc::new(PipelineEntry {
            key: PipelineKey(0x9_0000 + i * 0x1234),
            kind: PipelineKind::Compute,
            stages: vec![stage(0x900 + i, ShaderStage::Compute, "cs")],
            layout: Some(layout.clone()),
            state: None,
        }),
        labels: vec![format!("compute/{i}")].into(),
        binaries: Vec::new(),
    }));
    out
}

fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
}
fn u64_at(b: &[u8], at: usize) -> usize {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize
}

/// What the intact archive `b` says each pipeline and label needs, read straight from its
/// records (docs/FORMAT.md §1.1–1.2).
struct Needs {
    /// Per pipeline (table order): its key and the end of the last byte it needs.
    pipelines: Vec<(PipelineKey, usize)>,
    /// Per label record: the label, its pipeline (table index) and the end of its record and string.
    labels: Vec<(String, usize, usize)>,
}

fn needs(b: &[u8]) -> Needs {
    let section = |s: Section| {
        let row = FIXED_HEADER + (s as usize - 1) * SECTION_ROW;
        (u64_at(b, row + 8), u64_at(b, row + 16))
    };
    let (pipelines, plen) = section(Section::Pipelines);
    let (stages, _) = section(Section::Stages);
    let (strings, _) = section(Section::Strings);
    let (index, _) = section(Section::BlobIndex);
    let (data, _) = section(Section::BlobData);
    let (labels, llen) = section(Section::Labels);
    let blob_end = |k: usize| {
        let rec = index + 40 * k;
        (rec + 40).max(data + u64_at(b, rec + 16) + u64_at(b, rec + 24))
    };
    let mut out = Needs { pipelines: Vec::new(), labels: Vec::new() };
    for i in 0..plen / 48 {
        let rec = pipelines + 48 * i;
        let key = PipelineKey(u128::from_le_bytes(b[rec..rec + 16].try_into().unwrap()));
        let mut end = rec + 48;
        for blob in [u32_at(b, rec + 28), u32_at(b, rec + 32)] {
            if blob != u32::MAX as usize {
                end = end.max(blob_end(blob));
            }
        }
        let (first, count) = (u32_at(b, rec + 20), u32_at(b, rec + 24));
        for j in first..first + count {
            let s = stages + 56 * j;
            end = end.max(s + 56).max(strings + u32_at(b, s + 20) + u32_at(b, s + 24));
            for field in [28, 32, 36, 40, 44] {
                let blob = u32_at(b, s + field);
                if blob != u32::MAX as usize {
                    end = end.max(blob_end(blob));
                }
            }
        }
        out.pipelines.push((key, end));
    }
    for r in 0..llen / 16 {
        let rec = labels + 16 * r;
        let (off, len) = (strings + u32_at(b, rec), u32_at(b, rec + 4));
        let label = String::from_utf8(b[off..off + len].to_vec()).unwrap();
        out.labels.push((label, u32_at(b, rec + 8), (rec + 16).max(off + len)));
    }
    out
}

/// Salvages `full[..cut]` and checks it against what [`needs`] says lies before the cut;
/// returns how many pipelines were recovered.
fn check_cut(full: &[u8], originals: &[WriteEntry], needs: &Needs, cut: usize) -> usize {
    let expected: BTreeSet<usize> =
        needs.pipelines.iter().enumerate().filter(|(_, (_, end))| *end <= cut).map(|(i, _)| i).collect();
    let mut expected_labels: BTreeMap<PipelineKey, BTreeSet<String>> = BTreeMap::new();
    for (label, p, end) in &needs.labels {
        if *end <= cut && expected.contains(p) {
            expected_labels.entry(needs.pipelines[*p].0).or_default().insert(label.clone());
        }
    }
    let (recovered, m, report) = salvage(&full[..cut]).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
    let keys: BTreeSet<PipelineKey> = recovered.iter().map(|w| w.entry.key).collect();
    let want: BTreeSet<PipelineKey> = expected.iter().map(|&i| needs.pipelines[i].0).collect();
    assert_eq!(keys, want, "cut at {cut} of {}: the pipelines whose bytes all lie before it", full.len());
    assert_eq!(report.recovered, expected.len(), "cut at {cut}");
    assert_eq!(report.missing_bytes, (full.len() - cut) as u64, "cut at {cut}");
    assert_eq!(report.cut.last().map(|c| c.section), Some(Section::Labels), "cut at {cut}: the last table is cut");
    let cut64 = cut as u64;
    assert!(report.cut.iter().all(|c| c.present == cut64.saturating_sub(c.offset) && c.present < c.length));
    match &report.nothing_recovered {
        None => assert!(!expected.is_empty(), "cut at {cut}: nothing recovered, and the report does not say why"),
        Some(n) => {
            assert!(expected.is_empty(), "cut at {cut}: {n:?} with {} recoverable", expected.len());
            if report.pipeline_records == 0 {
                assert_eq!(n.offset, cut as u64, "cut at {cut}: the reason names where the file ends");
                assert!(n.why.contains(&format!("the file ends at byte {cut}")), "{}", n.why);
            } else {
                assert!(n.why.contains("lies past the end of the file"), "cut at {cut}: {}", n.why);
            }
        }
    }
    // The recovered pipelines are the originals, byte for byte, with exactly the labels whose
    // records survived.
    let subset: Vec<WriteEntry> = originals
        .iter()
        .filter(|w| want.contains(&w.entry.key))
        .map(|w| WriteEntry {
            entry: w.entry.clone(),
            labels: expected_labels.get(&w.entry.key).into_iter().flatten().cloned().collect::<Vec<_>>().into(),
            binaries: Vec::new(),
        })
        .collect();
    let written = encode(&recovered, &m);
    assert!(
        written == encode(&subset, &meta()),
        "cut at {cut}: the salvaged archive is the originals' restricted to it"
    );
    let ar = Archive::from_bytes(written).unwrap();
    ar.verify().unwrap();
    for w in &subset {
        let p = ar.get(w.entry.key).unwrap().unwrap();
        for (s, original) in p.stages().unwrap().iter().zip(&w.entry.stages) {
            for t in Target::ALL {
                assert_eq!(s.output(t).unwrap(), original.outputs.0[t as usize].as_ref().map(|b| b.bytes()));
            }
        }
    }
    expected.len()
}

/// Cuts of 1 %, 10 %, 50 % and one byte, and every seventh byte from before the pipeline
/// table to the end: salvage recovers exactly the pipelines that lie before each cut.
#[test]
fn salvage_of_a_cut_file_recovers_exactly_the_pipelines_before_the_cut() {
    let originals = entries();
    let full = encode(&originals, &meta());
    let needs = needs(&full);
    assert_eq!(needs.pipelines.len(), originals.len());
    let n = full.len();
    let mut seen = BTreeSet::new();
    for (name, cut) in [("1 %", n - n / 100), ("10 %", n - n / 10), ("50 %", n - n / 2), ("one byte", n - 1)] {
        let got = check_cut(&full, &originals, &needs, cut);
        eprintln!("cut {name} short (at {cut} of {n}): {got} of {} pipelines", originals.len());
        seen.insert(got);
    }
    let (_, first_end) = *needs.pipelines.iter().min_by_key(|(_, end)| *end).unwrap();
    let row = FIXED_HEADER + (Section::Pipelines as usize - 1) * SECTION_ROW;
    let table = u64_at(&full, row + 8);
    for cut in (table - 64..n).step_by(7) {
        seen.insert(check_cut(&full, &originals, &needs, cut));
    }
    // The sweep saw the whole range: nothing, some, all.
    assert!(seen.contains(&0) && seen.contains(&originals.len()), "{seen:?}");
    assert!(seen.iter().any(|&k| k > 0 && k < originals.len()), "{seen:?}");
    assert!(first_end > table, "every pipeline needs bytes of the tables after the blob data");
}

/// A file cut into its blob data has lost every pipeline record: the report says so, naming
/// the byte where the file ends and where the pipeline table was.
#[test]
fn salvage_of_a_file_cut_before_its_tables_says_why_nothing_is_left() {
    let full = encode(&entries(), &meta());
    let row = FIXED_HEADER + (Section::Pipelines as usize - 1) * SECTION_ROW;
    let (table, len) = (u64_at(&full, row + 8), u64_at(&full, row + 16));
    let cut = table - 100;
    let (recovered, _, report) = salvage(&full[..cut]).unwrap();
    assert!(recovered.is_empty());
    let n = report.nothing_recovered.expect("a reason");
    assert_eq!(n.offset, cut as u64);
    assert!(
        n.why.starts_with(&format!(
            "the file ends at byte {cut}, before its pipeline table (declared at bytes {table}..{})",
            table + len
        )),
        "{}",
        n.why
    );
    let sections: Vec<Section> = report.cut.iter().map(|c| c.section).collect();
    assert_eq!(sections, [Section::BlobData, Section::Pipelines, Section::Stages, Section::Labels]);
    assert_eq!(report.cut[0].offset + report.cut[0].present, cut as u64);
    let e = n.to_error(std::path::Path::new("game.granary")).to_string();
    assert!(e.starts_with(&format!("game.granary: corrupt archive at offset {cut:#x}: the file ends")), "{e}");

    // Cut inside the stage table's first record: the pipeline records are all there, their
    // stages are not, and the reason says which record lies past the end.
    let srow = FIXED_HEADER + (Section::Stages as usize - 1) * SECTION_ROW;
    let stages = u64_at(&full, srow + 8);
    let (recovered, _, report) = salvage(&full[..stages + 10]).unwrap();
    assert!(recovered.is_empty());
    let n = report.nothing_recovered.expect("a reason");
    assert_eq!(n.offset, table as u64);
    assert!(n.why.contains(&format!("lies past the end of the file at byte {}", stages + 10)), "{}", n.why);

    // An archive that declares no pipeline has nothing to lose: no reason is given.
    let empty = encode(&[], &meta());
    let (_, _, report) = salvage(&empty).unwrap();
    assert_eq!(report.nothing_recovered, None);
}

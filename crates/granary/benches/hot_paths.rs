//! Micro-benchmarks of granary's own overhead on the hot paths: key computation, capture
//! insert, snapshot, archive encode, archive open, lookups (with and without fetching the
//! hash-checked output). Run with `cargo bench`.
//!
//! These measure granary's bookkeeping, not shader compilation; the macro benchmark
//! (`granary bench seed-scale`) puts them in proportion to the compile work.

use granary::archive::{encode, portable_meta, Archive, WriteEntry};
use granary::capture::{Capture, CaptureMode};
use granary::descriptor::*;
use std::sync::{Arc, OnceLock};

fn main() {
    divan::main();
}

const VS: &str =
    "@vertex fn vs(@location(0) p: vec3<f32>) -> @builtin(position) vec4<f32> { return vec4<f32>(p, 1.0); }";

fn pipeline(i: u32) -> PipelineDescriptor {
    let lib = Library::wgsl("vs", VS);
    PipelineDescriptor::Render(RenderPipelineDescriptor {
        label: Some(format!("p{i}")),
        vertex: FunctionDescriptor::library(lib, "vs")
            .specialized(vec![Constant { id: ConstantId::Name("V".into()), value: ConstantValue::U32(i % 97) }]),
        fragment: None,
        state: RenderState {
            vertex_buffers: vec![VertexBufferLayout {
                stride: 12,
                step: StepMode::Vertex,
                attributes: vec![VertexAttribute { location: 0, format: VertexFormat::Float32x3, offset: 0 }],
            }],
            primitive: PrimitiveState::default(),
            color_attachments: vec![ColorAttachment::unspecialized(); 2],
            depth_stencil: None,
            sample_count: 1,
            alpha_to_coverage: false,
        },
        layout: None,
    })
}

/// `n` synthetic entries with 8 KiB blobs shared by groups of 4 (like stage reuse).
fn entries(n: u32) -> Vec<(Arc<PipelineEntry>, PipelineDescriptor)> {
    let blobs: Vec<Arc<Blob>> = (0..n / 4 + 1).map(|i| Blob::new(vec![i as u8; 8192])).collect();
    (0..n)
        .map(|i| {
            let mut outputs = TargetOutputs::default();
            outputs.0[0] = Some(blobs[(i / 4) as usize].clone());
            let e = PipelineEntry {
                layout: None,
                state: None,
                key: PipelineKey(u128::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) | 1),
                kind: PipelineKind::Render,
                stages: vec![StageEntry {
                    key: StageKey(u128::from(i / 4)),
                    stage: ShaderStage::Vertex,
                    entry_point: "vs".into(),
                    outputs,
                    specialization: None,
                }],
            };
            (Arc::new(e), pipeline(i))
        })
        .collect()
}

fn archive_bytes() -> &'static Vec<u8> {
    static A: OnceLock<Vec<u8>> = OnceLock::new();
    A.get_or_init(|| {
        let e: Vec<WriteEntry> = entries(10_000)
            .into_iter()
            .map(|(entry, d)| WriteEntry {
                entry,
                labels: vec![d.label().unwrap_or("").to_string()].into(),
                binaries: Vec::new(),
            })
            .collect();
        encode(&e, &portable_meta())
    })
}

#[divan::bench]
fn pipeline_key(b: divan::Bencher) {
    let p = pipeline(7);
    let ctx = KeyContext { target_options: 1 };
    b.bench(|| divan::black_box(&p).key(&ctx));
}

#[divan::bench]
fn capture_record(b: divan::Bencher) {
    let items = entries(4096);
    let capture = Capture::new(CaptureMode::Outputs);
    let i = std::sync::atomic::AtomicUsize::new(0);
    b.counter(divan::counter::ItemsCount::new(1usize)).bench(|| {
        let k = i.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % items.len();
        capture.record(&items[k].0, &items[k].1);
    });
}

#[divan::bench(args = [1_000, 10_000])]
fn capture_snapshot(b: divan::Bencher, n: u32) {
    let capture = Capture::new(CaptureMode::Outputs);
    for (e, d) in entries(n) {
        capture.record(&e, &d);
    }
    b.bench(|| capture.snapshot().entries.len());
}

#[divan::bench(args = [1_000, 10_000])]
fn archive_encode(b: divan::Bencher, n: u32) {
    let e: Vec<WriteEntry> = entries(n)
        .into_iter()
        .map(|(entry, _)| WriteEntry { entry, labels: Arc::from(Vec::new()), binaries: Vec::new() })
        .collect();
    b.bench(|| encode(&e, &portable_meta()).len());
}

#[divan::bench]
fn archive_open(b: divan::Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.granary");
    std::fs::write(&path, archive_bytes()).unwrap();
    b.bench(|| Archive::open(&path).unwrap().len());
}

/// The benchmark archive, opened from memory, and the key of each of its pipelines in order.
fn archive_and_keys() -> (Archive, Vec<PipelineKey>) {
    let a = Archive::from_bytes(archive_bytes().clone()).unwrap();
    let keys: Vec<PipelineKey> = a.iter().map(|p| p.unwrap().key()).collect();
    (a, keys)
}

#[divan::bench]
fn lookup_by_key(b: divan::Bencher) {
    let (a, keys) = archive_and_keys();
    let mut i = 0usize;
    b.bench_local(|| {
        i = (i + 7919) % keys.len();
        a.get(keys[i]).unwrap().map(|p| p.index())
    });
}

/// What an application pays to get the bytes: the lookup, its stage records, and the output
/// of each stage checked against its content hash (8 KiB blobs here).
#[divan::bench]
fn lookup_by_key_with_output(b: divan::Bencher) {
    let (a, keys) = archive_and_keys();
    let mut i = 0usize;
    b.bench_local(|| {
        i = (i + 7919) % keys.len();
        let p = a.get(keys[i]).unwrap().unwrap();
        p.stages().unwrap().iter().map(|s| s.output(Target::Spirv).unwrap().map_or(0, |b| b.len())).sum::<usize>()
    });
}

#[divan::bench]
fn lookup_by_label(b: divan::Bencher) {
    let a = Archive::from_bytes(archive_bytes().clone()).unwrap();
    let mut i = 0u32;
    b.bench_local(|| {
        i = (i + 7919) % 10_000;
        a.lookup_label(&format!("p{i}")).unwrap().map(|p| p.index())
    });
}

/// The use recorder on the calling thread (issue 25): a pipeline never recorded before
/// (hash-set insert, encoding, copy into the queue) and one already recorded (the set check).
/// The writer thread appends and syncs every 100 ms meanwhile.
mod recorder {
    use granary_archive::record::{Recorder, RecorderOptions};
    use granary_archive::PipelineKey;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    fn recorder() -> &'static Recorder {
        static R: OnceLock<(tempfile::TempDir, Recorder)> = OnceLock::new();
        let (_, r) = R.get_or_init(|| {
            let dir = tempfile::tempdir().expect("temporary folder");
            let r = Recorder::open(&dir.path().join("bench.record"), RecorderOptions::default()).expect("recorder");
            (dir, r)
        });
        r
    }

    #[divan::bench]
    fn recorder_used_new(bencher: divan::Bencher) {
        static NEXT: AtomicU64 = AtomicU64::new(1 << 40);
        let r = recorder();
        bencher
            .with_inputs(|| PipelineKey(u128::from(NEXT.fetch_add(1, Ordering::Relaxed))))
            .bench_values(|k| r.used(k, Some("opaque/static/pbr")));
    }

    #[divan::bench]
    fn recorder_used_repeat(bencher: divan::Bencher) {
        let r = recorder();
        r.used(PipelineKey(7), Some("opaque/static/pbr"));
        bencher.bench(|| r.used(divan::black_box(PipelineKey(7)), Some("opaque/static/pbr")));
    }
}

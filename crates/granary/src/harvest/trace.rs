//! `harvest --trace FILE`: a timeline of the harvest in the Chrome JSON trace-event format,
//! which Perfetto's UI (ui.perfetto.dev) and `chrome://tracing` both open.
//!
//! Why this format rather than Perfetto's protobuf: it is a documented, stable JSON shape that
//! needs no schema compiler or extra dependency (granary already writes JSON), a test can parse
//! and check it with `serde_json`, and two traces diff as text. What it lacks (flows,
//! interned strings, counters at scale) a harvest does not need.
//!
//! The file is `{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}`: one
//! `"M"` event naming each track (`thread_name`), then complete events (`"ph": "X"`, `ts` and
//! `dur` in microseconds since the harvest started) sorted by track and start time. Tracks:
//! `main` (loading, planning, the final write), `flush` (journal appends), and one per worker
//! thread — or, under `--isolate`, one per worker slot, whose worker process answers its
//! pipelines. Slices: `library` (a parse), `stage function` (a compile), `pipeline` (one
//! pipeline's task, its label in `args`), and inside it `device compile` (the driver's part,
//! with a device backend). On one track slices never overlap except that a `device compile`
//! lies inside its `pipeline`.
//!
//! Invariant: recording costs one short lock per slice; nothing is written until the harvest
//! ends, and a trace that cannot be written is reported, never fatal.

use serde_json::{json, Value};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

/// Track of the harvesting thread.
pub(crate) const MAIN: usize = 0;
/// Track of the journal writer.
pub(crate) const FLUSH: usize = 1;
/// Track of worker thread (or slot) `i`: `WORKER0 + i`.
pub(crate) const WORKER0: usize = 2;

struct Slice {
    track: usize,
    name: &'static str,
    start: Instant,
    end: Instant,
    args: Value,
}

/// Collects slices from any thread.
///
/// Thread safety: `Send + Sync`; `slice` may be called from any number of threads at once.
pub(crate) struct Tracer {
    origin: Instant,
    slices: Mutex<Vec<Slice>>,
}

impl Tracer {
    pub(crate) fn new(origin: Instant) -> Self {
        Tracer { origin, slices: Mutex::new(Vec::new()) }
    }

    /// Records a slice `[start, end)` on `track`.
    pub(crate) fn slice(&self, track: usize, name: &'static str, start: Instant, end: Instant, args: Value) {
        crate::sync::lock_std(&self.slices).push(Slice { track, name, start, end, args });
    }

    /// Writes the trace to `path` (atomically). `workers` names the worker tracks.
    pub(crate) fn write(&self, path: &Path, workers: usize, isolate: bool, meta: Value) -> std::io::Result<()> {
        let mut slices = std::mem::take(&mut *crate::sync::lock_std(&self.slices));
        slices.sort_by_key(|s| (s.track, s.start, std::cmp::Reverse(s.end)));
        let us = |t: Instant| t.saturating_duration_since(self.origin).as_secs_f64() * 1e6;
        let mut events = Vec::with_capacity(slices.len() + workers + 2);
        let pid = std::process::id();
        let mut name_track = |tid: usize, name: String| {
            events.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}));
            events.push(
                json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}}),
            );
        };
        name_track(MAIN, "main".into());
        name_track(FLUSH, "flush".into());
        for i in 0..workers {
            name_track(WORKER0 + i, if isolate { format!("worker process slot {i}") } else { format!("worker {i}") });
        }
        events.push(json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "granary harvest"}}));
        for s in slices {
            let (ts, end) = (us(s.start), us(s.end));
            events.push(json!({
                "ph": "X", "name": s.name, "cat": "harvest", "pid": pid, "tid": s.track,
                "ts": ts, "dur": (end - ts).max(0.0), "args": s.args,
            }));
        }
        let doc = json!({"traceEvents": events, "displayTimeUnit": "ms", "otherData": meta});
        let text = serde_json::to_string(&doc).map_err(std::io::Error::other)?;
        crate::archive::write_atomic(path, text.as_bytes()).map_err(std::io::Error::other)
    }
}

//! The loader's counters: cheap to update on every load and to read every frame.
//!
//! Every counter is a relaxed atomic; a snapshot ([`LoaderStats`]) is a few dozen loads, no
//! lock. Latencies go into log-linear histograms (four buckets per doubling from 1 µs, so a
//! percentile is exact to within 19 %), one per source (binaries, cache hit, compiled).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Buckets per doubling.
const SUB: usize = 4;
/// Doublings from 1 µs: up to about 2^30 µs (18 minutes).
const OCTAVES: usize = 30;
const BUCKETS: usize = SUB * OCTAVES + 1;

/// A latency histogram.
pub(super) struct Histogram {
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(), count: AtomicU64::new(0) }
    }
}

/// The bucket of `d`: 0 below 1 µs, then `SUB` per doubling.
fn bucket(d: Duration) -> usize {
    let us = d.as_nanos() as f64 / 1000.0;
    if us < 1.0 {
        return 0;
    }
    let i = 1 + (us.log2() * SUB as f64) as usize;
    i.min(BUCKETS - 1)
}

/// The upper bound of bucket `i`.
fn upper(i: usize) -> Duration {
    if i == 0 {
        return Duration::from_micros(1);
    }
    Duration::from_nanos((1000.0 * 2f64.powf(i as f64 / SUB as f64)) as u64)
}

impl Histogram {
    fn record(&self, d: Duration) {
        self.buckets[bucket(d)].fetch_add(1, Relaxed);
        self.count.fetch_add(1, Relaxed);
    }

    fn latency(&self) -> Latency {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        let count: u64 = counts.iter().sum();
        let at = |q: f64| {
            if count == 0 {
                return Duration::ZERO;
            }
            let rank = ((count as f64 * q).ceil() as u64).max(1);
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return upper(i);
                }
            }
            upper(BUCKETS - 1)
        };
        Latency { count, p50: at(0.50), p99: at(0.99) }
    }
}

/// How long one kind of load took: how many, and the median and 99th percentile (each the
/// upper bound of its histogram bucket: exact to within 19 %).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Latency {
    /// Loads counted.
    pub count: u64,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
}

/// The loader's counters.
#[derive(Default)]
pub(super) struct LoaderCounters {
    binaries: Histogram,
    cache_hits: Histogram,
    compiled: Histogram,
    failed: AtomicU64,
    not_found: AtomicU64,
    in_flight: AtomicU64,
    shared_binary_bytes: AtomicU64,
}

/// Decrements the in-flight count when a load ends, however it ends.
pub(super) struct InFlight<'a>(&'a AtomicU64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// How one load ended, as the counters see it (the loader classifies its result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Created from archived binaries.
    Binaries,
    /// Compiled, and the driver reported a pipeline-cache hit.
    CacheHit,
    /// Compiled.
    Compiled,
    /// Not in the archive.
    NotFound,
    /// Declined without creating anything (`load_if_cheap` where it would compile).
    Declined,
    /// Failed.
    Failed,
}

impl LoaderCounters {
    /// A load begins.
    pub(super) fn start(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Relaxed);
        InFlight(&self.in_flight)
    }

    /// A load ended with `outcome` after `took`.
    pub(super) fn finish(&self, outcome: Outcome, took: Duration) {
        match outcome {
            Outcome::Binaries => self.binaries.record(took),
            Outcome::CacheHit => self.cache_hits.record(took),
            Outcome::Compiled => self.compiled.record(took),
            Outcome::NotFound => self.not_found(),
            Outcome::Declined => {}
            Outcome::Failed => {
                self.failed.fetch_add(1, Relaxed);
            }
        }
    }

    /// A lookup found no pipeline.
    pub(super) fn not_found(&self) {
        self.not_found.fetch_add(1, Relaxed);
    }

    /// A shared binary of `bytes` was created (kept until the loader is dropped).
    pub(super) fn shared_binary(&self, bytes: usize) {
        self.shared_binary_bytes.fetch_add(bytes as u64, Relaxed);
    }

    pub(super) fn snapshot(&self, key_mismatches: u64) -> LoaderStats {
        let binaries = self.binaries.latency();
        let cache_hits = self.cache_hits.latency();
        let compiled = self.compiled.latency();
        LoaderStats {
            from_binaries: binaries.count,
            cache_hits: cache_hits.count,
            compiled: compiled.count,
            failed: self.failed.load(Relaxed),
            not_found: self.not_found.load(Relaxed),
            in_flight: self.in_flight.load(Relaxed),
            key_mismatches,
            shared_binary_bytes: self.shared_binary_bytes.load(Relaxed),
            binaries_latency: binaries,
            cache_hit_latency: cache_hits,
            compile_latency: compiled,
        }
    }
}

/// What a [`PipelineLoader`](super::PipelineLoader) has done so far
/// ([`PipelineLoader::stats`](super::PipelineLoader::stats)).
///
/// Thread safety: a plain value, a snapshot of relaxed counters (two counters read together
/// may be one load apart).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoaderStats {
    /// Pipelines created from the archive's driver binaries.
    pub from_binaries: u64,
    /// Pipelines compiled with a pipeline-cache hit.
    pub cache_hits: u64,
    /// Pipelines compiled (no binaries, no cache hit).
    pub compiled: u64,
    /// Loads that failed (not counting "not found" and "would compile").
    pub failed: u64,
    /// Lookups that found no pipeline with the label, key or create info asked for.
    pub not_found: u64,
    /// Loads running now.
    pub in_flight: u64,
    /// Loads whose archived pipeline key differed from the create info's (compiled instead).
    pub key_mismatches: u64,
    /// Bytes of driver binaries created once and held for sharing (NVIDIA's dictionary).
    pub shared_binary_bytes: u64,
    /// Latency of loads from binaries.
    pub binaries_latency: Latency,
    /// Latency of loads that hit the pipeline cache.
    pub cache_hit_latency: Latency,
    /// Latency of loads that compiled.
    pub compile_latency: Latency,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_within_a_bucket_of_the_truth() {
        let h = Histogram::default();
        for us in 1..=1000u64 {
            h.record(Duration::from_micros(us));
        }
        let l = h.latency();
        assert_eq!(l.count, 1000);
        let within = |got: Duration, truth: u64| {
            let t = Duration::from_micros(truth);
            got >= t && got.as_secs_f64() <= t.as_secs_f64() * 1.19 + 1e-6
        };
        assert!(within(l.p50, 500), "{:?}", l.p50);
        assert!(within(l.p99, 990), "{:?}", l.p99);
        assert_eq!(Histogram::default().latency(), Latency::default());
        // Below 1 µs and far above the range land in the end buckets.
        assert_eq!(bucket(Duration::from_nanos(10)), 0);
        assert_eq!(bucket(Duration::from_secs(100_000)), BUCKETS - 1);
    }
}

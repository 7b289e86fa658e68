//! The figures of `root bench retrieval`: percentiles and latency
//! summaries, recall and source hits, the machine's load, memory and disk
//! usage, and the report types the command prints and writes as JSON.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::corpus::AnchorQuery;

// ───────────────────────────── statistics ─────────────────────────────

/// numpy's default (linear) percentile of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = (sorted.len() - 1) as f64 * p / 100.0;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// A latency summary in milliseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Latency {
    /// Samples.
    pub n: usize,
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Median of each timed round (interference shows here).
    pub round_p50_ms: Vec<f64>,
}

impl Latency {
    /// Summarise samples (pooled over rounds).
    pub fn of(rounds: &[Vec<Duration>]) -> Latency {
        let ms = |d: &Duration| d.as_secs_f64() * 1e3;
        let mut all: Vec<f64> = rounds.iter().flatten().map(ms).collect();
        all.sort_by(f64::total_cmp);
        let round_p50_ms = rounds
            .iter()
            .map(|r| {
                let mut v: Vec<f64> = r.iter().map(ms).collect();
                v.sort_by(f64::total_cmp);
                round3(percentile(&v, 50.0))
            })
            .collect();
        Latency {
            n: all.len(),
            mean_ms: round3(all.iter().sum::<f64>() / all.len().max(1) as f64),
            p50_ms: round3(percentile(&all, 50.0)),
            p95_ms: round3(percentile(&all, 95.0)),
            p99_ms: round3(percentile(&all, 99.0)),
            round_p50_ms,
        }
    }
}

impl std::fmt::Display for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {:.3} ms · p95 {:.3} ms · p99 {:.3} ms · mean {:.3} ms (n = {}, round medians {:?})",
            self.p50_ms, self.p95_ms, self.p99_ms, self.mean_ms, self.n, self.round_p50_ms
        )
    }
}

pub(super) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub(super) fn round4(x: f64) -> f64 {
    (x * 10000.0).round() / 10000.0
}

/// Mean of `|found[..k] ∩ truth[..k]| / k` (the anchor's `recall_at`).
pub fn recall_at(found: &[Vec<u64>], truth: &[&Vec<u64>], k: usize) -> f64 {
    let per: Vec<f64> = found
        .iter()
        .zip(truth)
        .map(|(f, t)| {
            let t: std::collections::HashSet<u64> = t.iter().take(k).copied().collect();
            f.iter().take(k).filter(|id| t.contains(id)).count() as f64 / k as f64
        })
        .collect();
    per.iter().sum::<f64>() / per.len().max(1) as f64
}

/// Share of queries whose source chunk is among the returned ids.
pub fn source_hit(found: &[Vec<u64>], queries: &[&AnchorQuery]) -> f64 {
    let hits = found
        .iter()
        .zip(queries)
        .filter(|(f, q)| f.contains(&q.source_id))
        .count();
    hits as f64 / found.len().max(1) as f64
}

/// The 1-minute load average and CPU pressure (the machine may be shared).
pub fn load_snapshot() -> String {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let psi = std::fs::read_to_string("/proc/pressure/cpu")
        .ok()
        .and_then(|s| {
            let some = s.lines().next()?.to_string();
            let avg10 = some.split_whitespace().nth(1)?.trim_start_matches("avg10=");
            let avg60 = some.split_whitespace().nth(2)?.trim_start_matches("avg60=");
            Some(format!("{avg10}/{avg60}"))
        })
        .unwrap_or_else(|| "?".into());
    format!("load1 {load}, cpu psi some avg10/avg60 {psi} %")
}

/// `VmHWM` and `VmRSS` of this process in bytes.
pub fn memory_status() -> (u64, u64) {
    (status_bytes("VmHWM:"), status_bytes("VmRSS:"))
}

/// (RssAnon, RssFile) of this process: heap and caches vs mapped files
/// (the HNSW graph view, tantivy's segments) that the kernel can drop.
pub fn memory_split() -> (u64, u64) {
    (status_bytes("RssAnon:"), status_bytes("RssFile:"))
}

/// A `/proc/self/status` field given in kB, in bytes (0 when absent).
fn status_bytes(name: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Bytes of every file under `dir`: (apparent size, allocated blocks).
pub fn disk_usage(dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let mut size = 0;
    let mut alloc = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                size += m.len();
                alloc += m.blocks() * 512;
            }
        }
    }
    (size, alloc)
}

/// Disk usage of a Root data directory, split by component.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DiskReport {
    /// Everything (apparent bytes).
    pub total_bytes: u64,
    /// Everything (allocated blocks × 512).
    pub total_allocated_bytes: u64,
    /// `root.redb`.
    pub redb_bytes: u64,
    /// usearch snapshot files.
    pub vectors_bytes: u64,
    /// Key-map snapshot files.
    pub docmap_bytes: u64,
    /// tantivy directory.
    pub keyword_bytes: u64,
    /// Where `root.redb`'s bytes go (measured just before the close).
    pub redb: Option<RedbDisk>,
}

/// `root.redb` by redb's own accounting.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RedbDisk {
    /// Row bytes (keys and values).
    pub stored_bytes: u64,
    /// B-tree overhead.
    pub metadata_bytes: u64,
    /// Allocated inside pages but unused (page rounding).
    pub fragmented_bytes: u64,
    /// File bytes no page uses (freed pages kept for reuse).
    pub free_bytes: u64,
    /// The largest tables: name and allocated bytes.
    pub tables: Vec<(String, u64)>,
}

impl RedbDisk {
    /// The summary of `s`, with its five largest tables.
    pub fn of(s: &storage::DiskStats) -> RedbDisk {
        RedbDisk {
            stored_bytes: s.stored_bytes,
            metadata_bytes: s.metadata_bytes,
            fragmented_bytes: s.fragmented_bytes,
            free_bytes: s.free_bytes(),
            tables: s
                .tables
                .iter()
                .take(5)
                .map(|t| (t.name.clone(), t.total_bytes()))
                .collect(),
        }
    }
}

impl std::fmt::Display for RedbDisk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rows {:.1} + B-tree {:.1} + page slack {:.1} + free pages {:.1} MiB; largest tables:",
            mib(self.stored_bytes),
            mib(self.metadata_bytes),
            mib(self.fragmented_bytes),
            mib(self.free_bytes)
        )?;
        for (name, bytes) in &self.tables {
            write!(f, " {name} {:.1}", mib(*bytes))?;
        }
        Ok(())
    }
}

impl DiskReport {
    /// Measure `data_dir`.
    pub fn of(data_dir: &Path) -> DiskReport {
        let (total_bytes, total_allocated_bytes) = disk_usage(data_dir);
        let mut r = DiskReport {
            total_bytes,
            total_allocated_bytes,
            redb_bytes: std::fs::metadata(data_dir.join("root.redb")).map_or(0, |m| m.len()),
            ..Default::default()
        };
        let mut stack = vec![data_dir.join("index")];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    if name == "keyword" {
                        r.keyword_bytes += disk_usage(&path).0;
                    } else {
                        stack.push(path);
                    }
                } else if name.starts_with("vectors-") {
                    r.vectors_bytes += e.metadata().map_or(0, |m| m.len());
                } else if name.starts_with("docs-") {
                    r.docmap_bytes += e.metadata().map_or(0, |m| m.len());
                }
            }
        }
        r
    }
}

pub(super) fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// What an ingest did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IngestReport {
    /// Pages written.
    pub pages: usize,
    /// Chunks written.
    pub chunks: usize,
    /// Concurrent page writers.
    pub concurrency: usize,
    /// Until every page write returned (rows + outbox durable in redb).
    pub written_s: f64,
    /// Until both lanes had applied everything (searchable).
    pub searchable_s: f64,
    /// `chunks / searchable_s`.
    pub chunks_per_s: f64,
    /// `chunks / written_s`.
    pub written_chunks_per_s: f64,
}

/// A throughput run.
#[derive(Clone, Debug, Serialize)]
pub struct Throughput {
    /// Concurrent clients.
    pub clients: usize,
    /// Queries answered.
    pub queries: usize,
    /// First start to last finish.
    pub wall_s: f64,
    /// Queries per second.
    pub qps: f64,
    /// Per-query latency under this load.
    pub latency: Latency,
}

/// One vector-lane measurement at one `ef_search`.
#[derive(Clone, Debug, Serialize)]
pub struct VectorLaneReport {
    /// `ef_search`.
    pub ef_search: usize,
    /// Latency of the measured queries.
    pub latency: Latency,
    /// recall@10 vs the exact ground truth, all queries.
    pub recall_at_10: Option<f64>,
    /// recall@10 of the graph alone (quantised distances, before the exact
    /// rescoring), all queries.
    pub graph_recall_at_10: Option<f64>,
    /// Latency of the graph alone (Root's ef only): the lane minus it is
    /// what the exact rescoring costs.
    pub graph_latency: Option<Latency>,
    /// Source chunk in the top 30 (measured queries).
    pub source_hit_at_30: f64,
}

/// The vector lane at Root's `ef_search` rescoring another number of graph
/// candidates.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RescoreReport {
    /// Graph candidates rescored exactly.
    pub candidates: usize,
    /// Latency of the measured queries.
    pub latency: Latency,
    /// recall@10 vs the exact ground truth, all queries.
    pub recall_at_10: Option<f64>,
}

/// Everything `root bench retrieval` measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RetrievalBenchReport {
    /// Rows.
    pub n: usize,
    /// Pages (anchor documents).
    pub pages: usize,
    /// Machine load when the queries started.
    pub load_before_queries: String,
    /// Ingest.
    pub ingest: IngestReport,
    /// Snapshot + close after ingest, seconds.
    pub close_s: f64,
    /// Fused search, single client.
    pub fused: Latency,
    /// Fused: recall@10 of the top 10 vs the exact vector top 10 (informative).
    pub fused_recall_at_10: Option<f64>,
    /// Fused: the query's source chunk among the 20 results.
    pub fused_source_hit_at_20: f64,
    /// Neighbours attached per query (mean).
    pub fused_neighbours_mean: f64,
    /// Vector lane alone, per `ef_search`.
    pub vector_lane: Vec<VectorLaneReport>,
    /// Share of the vector lane's hits (Root's ef) below the spec's 0.32 floor.
    pub vector_hits_below_spec_floor: f64,
    /// Vector lane with other rescoring widths (`--rescore-sweep`).
    pub rescore_sweep: Vec<RescoreReport>,
    /// Keyword lane alone.
    pub keyword_lane: Latency,
    /// Keyword lane: source chunk in the top 20.
    pub keyword_source_hit_at_20: f64,
    /// Fused throughput, 1 client.
    pub throughput_1: Option<Throughput>,
    /// Fused throughput, 2 clients.
    pub throughput_2: Option<Throughput>,
    /// Disk usage after close.
    pub disk: DiskReport,
    /// Cold start (page cache warm).
    pub cold_start: Option<ColdStart>,
    /// Cold start after evicting the data files from the page cache.
    pub cold_start_disk_cold: Option<ColdStart>,
    /// Peak resident memory of this (loader) process, which also holds the corpus.
    pub loader_vm_hwm_bytes: u64,
}

/// What the cold-start child reported.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ColdStart {
    /// Process spawn → first answer printed (parent's clock).
    pub spawn_to_first_answer_ms: f64,
    /// Store open + migrate (child's clock).
    pub store_open_ms: f64,
    /// Index open (usearch snapshot load, key map, tantivy) (child).
    pub index_open_ms: f64,
    /// The first fused query after the index opened (child).
    pub first_query_ms: f64,
    /// Store open → first answer (child).
    pub open_to_first_answer_ms: f64,
    /// RSS right after the first answer.
    pub rss_after_first_bytes: u64,
    /// Fused queries answered after the first.
    pub queries_after: usize,
    /// Their latency (warming up from cold).
    pub latency_after: Latency,
    /// Peak RSS of the serving process.
    pub vm_hwm_bytes: u64,
    /// RSS at the end.
    pub vm_rss_bytes: u64,
    /// Of it, anonymous memory (heap, redb's cache) at the end.
    #[serde(default)]
    pub rss_anon_bytes: u64,
    /// Of it, resident pages of mapped files at the end.
    #[serde(default)]
    pub rss_file_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_match_numpy_linear() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 5.5);
        assert!((percentile(&v, 95.0) - 9.55).abs() < 1e-9);
        assert_eq!(percentile(&v, 100.0), 10.0);
    }
}

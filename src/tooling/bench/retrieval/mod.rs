//! `root bench retrieval`: Root's knowledge-search hot path on the pgvector
//! anchor corpus (`../shared/bench/pgvector-anchor/`, `gen_corpus.py`), fed
//! exactly the anchor's files: `chunks.jsonl`, `vectors.f16.npy`,
//! `queries.jsonl`, `queries.f16.npy` and the exact ground truth
//! `gt_<n>.npy` that the anchor's `common.ground_truth` caches next to them.
//!
//! What is measured, on a fresh data directory (real redb file, real index
//! files, one tenant):
//! - ingest: the first `n` chunks, grouped into one knowledge page per anchor
//!   document (`doc_id`; a document's chunks are contiguous rows), written
//!   with [`Retrieval::upsert_page_chunks`](crate::retrieval::Retrieval::upsert_page_chunks) (redb rows + outbox) by
//!   `ingest_concurrency` concurrent writers, until the index writer has
//!   applied everything to both lanes (embedding excluded: the vectors are
//!   the anchor's);
//! - single-client latency (p50/p95/p99) of the fused knowledge search
//!   ([`Retrieval::search_knowledge`](crate::retrieval::Retrieval::search_knowledge): vector lane top 30 + keyword lane top
//!   20 + RRF + 3-per-page cap + row reads + neighbour expansion, no rerank),
//!   of the vector lane alone ([`CorpusIndex::vector_search`](index::corpus::CorpusIndex::vector_search), top 30) with
//!   recall@10 against the exact ground truth, and of the keyword lane alone
//!   ([`CorpusIndex::keyword_search_any`](index::corpus::CorpusIndex::keyword_search_any), OR of the query's tokens, top 20);
//! - throughput of the fused search with 1 and 2 concurrent clients;
//! - disk bytes of the data directory after a clean close (snapshot written);
//! - cold start in a new process (`root bench retrieval-open`): open the
//!   store and the 100k-chunk tenant, answer the first query; then the
//!   resident memory (VmHWM / VmRSS) of that serving process.
//!
//! The query protocol follows the anchor's `bench_inproc.py`: warm-up =
//! queries `0..W`, measured = `W..W+M`, timed `rounds` times and pooled;
//! recall@10 over all 1,000 queries. Percentiles are numpy's (linear).
//!
//! Layout: this file holds the command (its options, the phases in order
//! and the figures they print); `corpus.rs` reads the anchor's files;
//! `runner.rs` loads them into Root and times the fused search, the lanes
//! and the throughput; `cold.rs` is the cold-start child process;
//! `report.rs` holds the statistics, the machine figures and the report
//! types written as JSON.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;

mod cold;
mod corpus;
mod report;
mod runner;

pub use cold::{evict_page_cache, run_cold_open};
pub use corpus::{
    Anchor, AnchorPage, AnchorQuery, NpyHeader, first_id_of_slug, read_f16_matrix, read_i64_matrix,
    read_npy_header, slug_for,
};
pub use report::{
    ColdStart, DiskReport, IngestReport, Latency, RedbDisk, RescoreReport, RetrievalBenchReport,
    Throughput, VectorLaneReport, disk_usage, load_snapshot, memory_status, percentile, recall_at,
    source_hit,
};
pub use runner::{RootInstance, Tuning, keyword_lane, measure_async, measure_sync, throughput};

use cold::cold_start;
use report::{mib, round3, round4};

/// Vector lane depth of the anchor (and of §10.2 at limit ≤ 30).
pub const VECTOR_K: usize = crate::retrieval::params::KNOWLEDGE_VECTOR_LANE_MIN;
/// Keyword lane depth of the anchor (and of §10.2).
pub const KEYWORD_K: usize = crate::retrieval::params::KNOWLEDGE_KEYWORD_LANE_LIMIT;
/// Caller limit of the fused search: the anchor's hybrid returns 20.
pub const FUSED_LIMIT: usize = 20;
/// Knowledge vector floor used for the anchor's vectors (see the report,
/// `docs/benchmarks/retrieval.md`): 0 keeps every one of the 30 vector hits
/// (the anchor has no floor), so the fused path does the reference's work.
pub const BENCH_VECTOR_FLOOR: f32 = 0.0;
/// The spec's floor, counted (not applied) for the report.
pub const SPEC_FLOOR: f32 = crate::retrieval::KNOWLEDGE_VECTOR_FLOOR;
/// Tenant slug of the benchmark tenant.
pub const TENANT_SLUG: &str = "anchor";
/// File written into a data directory once a load completed.
pub const LOADED_MARKER: &str = "anchor-loaded.json";

// ───────────────────────────── the CLI command ─────────────────────────────

/// Options of `root bench retrieval`.
#[derive(Clone, Debug)]
pub struct RetrievalBenchOptions {
    /// The anchor corpus directory (`gen_corpus.py --out`).
    pub corpus: PathBuf,
    /// Rows to load (the first `n`).
    pub n: usize,
    /// Data directory (created fresh; removed at the end unless `keep`).
    pub data_dir: Option<PathBuf>,
    /// Keep the data directory (the criterion bench can reuse it).
    pub keep: bool,
    /// Reuse a data directory a previous run loaded with the same corpus
    /// and `n` (skips the ingest; its figures are then absent).
    pub reuse: bool,
    /// Concurrent page writers during ingest.
    pub ingest_concurrency: usize,
    /// Warm-up queries.
    pub warmup: usize,
    /// Measured queries.
    pub measured: usize,
    /// Timed passes over the measured queries.
    pub rounds: usize,
    /// Queries per client in the throughput runs.
    pub per_client: usize,
    /// `ef_search` override (Root's default is 40).
    pub ef_search: Option<usize>,
    /// `ef_construction` override for the load.
    pub ef_add: Option<usize>,
    /// redb page cache override, MiB.
    pub redb_cache_mb: Option<usize>,
    /// Graph quantisation override (Root's is `b1`).
    pub quantization: Option<index::vector::Quantization>,
    /// `ef_search` values for the vector-lane sweep.
    pub ef_sweep: Vec<usize>,
    /// Graph candidate counts the vector lane is also measured rescoring.
    pub rescore_sweep: Vec<usize>,
    /// Evict the data directory's files from the page cache before the
    /// cold start (`dd iflag=nocache`), for a disk-cold start too.
    pub evict_page_cache: bool,
    /// Write the results as JSON here.
    pub out: Option<PathBuf>,
}

impl Default for RetrievalBenchOptions {
    fn default() -> Self {
        RetrievalBenchOptions {
            corpus: PathBuf::from("data/corpus"),
            n: 10_000,
            data_dir: None,
            keep: false,
            reuse: false,
            ingest_concurrency: 4,
            warmup: 100,
            measured: 500,
            rounds: 3,
            per_client: 2_000,
            ef_search: None,
            ef_add: None,
            redb_cache_mb: None,
            quantization: None,
            ef_sweep: vec![24, 32, 40, 64, 100],
            rescore_sweep: vec![32, 48, 96],
            evict_page_cache: false,
            out: None,
        }
    }
}

impl RetrievalBenchOptions {
    /// The overrides of Root's defaults this run was given.
    pub fn tuning(&self) -> Tuning {
        Tuning {
            ef_search: self.ef_search,
            ef_add: self.ef_add,
            redb_cache_mb: self.redb_cache_mb,
            quantization: self.quantization,
        }
    }
}

/// Run the benchmark and print a report.
pub async fn run_retrieval_bench(
    opts: RetrievalBenchOptions,
) -> anyhow::Result<RetrievalBenchReport> {
    let data_dir = opts
        .data_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("root-retrieval-bench-{}", opts.n)));
    let reuse = opts.reuse && {
        let anchor = Anchor::open(&opts.corpus, opts.n)?;
        is_loaded(&data_dir, &anchor)
    };
    if data_dir.exists() && !reuse {
        std::fs::remove_dir_all(&data_dir)
            .with_context(|| format!("removing the old {}", data_dir.display()))?;
    }
    let out = bench_in(&data_dir, &opts, reuse).await;
    if !opts.keep {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    let report = out?;
    if let Some(path) = &opts.out {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
        println!("results written to {}", path.display());
    }
    Ok(report)
}

/// Read the corpus, load it into a fresh Root data directory, mark it loaded.
async fn ingest_phase(
    data_dir: &Path,
    opts: &RetrievalBenchOptions,
    anchor: &Anchor,
    report: &mut RetrievalBenchReport,
) -> anyhow::Result<RootInstance> {
    let t = Instant::now();
    let pages = anchor.read_pages()?;
    println!(
        "corpus read in {:.1} s: {} chunks in {} pages (one page per anchor document) — not timed",
        t.elapsed().as_secs_f64(),
        opts.n,
        pages.len()
    );
    let mut inst = RootInstance::open(data_dir, opts.tuning()).await?;
    println!(
        "ingest ({} concurrent page writers): {}",
        opts.ingest_concurrency,
        load_snapshot()
    );
    report.ingest = inst.ingest(pages, opts.ingest_concurrency).await?;
    println!(
        "ingest: {} chunks / {} pages searchable in both lanes after {:.1} s = {:.0} chunks/s (rows durable in redb after {:.1} s = {:.0} chunks/s)",
        report.ingest.chunks,
        report.ingest.pages,
        report.ingest.searchable_s,
        report.ingest.chunks_per_s,
        report.ingest.written_s,
        report.ingest.written_chunks_per_s
    );
    std::fs::write(
        data_dir.join(LOADED_MARKER),
        serde_json::json!({"n": opts.n, "chunks_sha256": anchor.chunks_sha256}).to_string(),
    )?;
    Ok(inst)
}

/// Whether `dir` holds a completed load of `anchor` (its marker matches).
pub fn is_loaded(dir: &Path, anchor: &Anchor) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join(LOADED_MARKER)) else {
        return false;
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    v["n"].as_u64() == Some(anchor.n as u64)
        && v["chunks_sha256"].as_str() == Some(anchor.chunks_sha256.as_str())
}

async fn bench_in(
    data_dir: &Path,
    opts: &RetrievalBenchOptions,
    reuse: bool,
) -> anyhow::Result<RetrievalBenchReport> {
    let anchor = Arc::new(Anchor::open(&opts.corpus, opts.n)?);
    let (warm, meas) = anchor.split(opts.warmup, opts.measured)?;
    println!(
        "root bench retrieval — anchor corpus {} (first {} rows), data dir {}",
        anchor.dir.display(),
        opts.n,
        data_dir.display()
    );
    if anchor.ground_truth.is_none() {
        println!(
            "  note: no gt_{}.npy in the corpus dir: recall is not reported (run the anchor's bench_inproc.py or common.ground_truth first)",
            opts.n
        );
    }
    let mut report = RetrievalBenchReport {
        n: opts.n,
        ..Default::default()
    };

    // Ingest.
    let mut inst = if reuse {
        println!("reusing the loaded data directory: no ingest figures in this run");
        RootInstance::open(data_dir, opts.tuning()).await?
    } else {
        ingest_phase(data_dir, opts, &anchor, &mut report).await?
    };
    inst.load_page_map().await?;
    report.pages = inst.pages.len();
    let inst = Arc::new(inst);
    let handle = inst.handle().await?;
    let idx = handle.index.clone();

    // Single-client latency.
    report.load_before_queries = load_snapshot();
    println!(
        "queries: warm-up {} / measured {} × {} rounds; {}",
        warm.len(),
        meas.len(),
        opts.rounds,
        report.load_before_queries
    );
    let (fused, fused_out) = measure_async(&warm, &meas, opts.rounds, |i| {
        let inst = inst.clone();
        let anchor = anchor.clone();
        async move { inst.fused(&anchor.queries[i]).await }
    })
    .await?;
    report.fused = fused;
    let meas_q: Vec<&AnchorQuery> = meas.iter().map(|&i| &anchor.queries[i]).collect();
    let fused_ids: Vec<Vec<u64>> = fused_out.iter().map(|(ids, _)| ids.clone()).collect();
    report.fused_source_hit_at_20 = round4(source_hit(&fused_ids, &meas_q));
    report.fused_neighbours_mean =
        fused_out.iter().map(|(_, n)| *n as f64).sum::<f64>() / fused_out.len().max(1) as f64;
    if let Some(gt) = &anchor.ground_truth {
        let truth: Vec<&Vec<u64>> = meas.iter().map(|&i| &gt[i]).collect();
        report.fused_recall_at_10 = Some(round4(recall_at(&fused_ids, &truth, 10)));
    }
    println!(
        "fused knowledge search (vector top 30 + keyword top 20 → RRF → cap 3/page → rows → neighbours), limit 20:"
    );
    println!("  {}", report.fused);
    println!(
        "  source chunk in results {:.3}; neighbours attached per query {:.1}{}",
        report.fused_source_hit_at_20,
        report.fused_neighbours_mean,
        report
            .fused_recall_at_10
            .map(|r| format!("; top-10 overlap with the exact vector top 10 {r:.4}"))
            .unwrap_or_default()
    );

    // Vector lane alone, ef sweep (Root's configured ef last, so it stays set).
    let root_ef = opts
        .ef_search
        .unwrap_or(crate::retrieval::params::HNSW_EF_SEARCH);
    let mut efs: Vec<usize> = opts
        .ef_sweep
        .iter()
        .copied()
        .filter(|e| *e != root_ef)
        .collect();
    efs.push(root_ef);
    for ef in efs {
        idx.set_expansion_search(ef);
        let (lat, out) = measure_sync(&warm, &meas, opts.rounds, |i| {
            inst.vector_lane(&idx, &anchor.queries[i])
        });
        let ids: Vec<Vec<u64>> = out.iter().map(|h| inst.anchor_ids(h)).collect();
        if ef == root_ef {
            let all: Vec<f32> = out.iter().flatten().map(|h| h.score).collect();
            report.vector_hits_below_spec_floor = round4(
                all.iter().filter(|s| **s < SPEC_FLOOR).count() as f64 / all.len().max(1) as f64,
            );
        }
        let recall = anchor.ground_truth.as_ref().map(|gt| {
            let found: Vec<Vec<u64>> = anchor
                .queries
                .iter()
                .map(|q| inst.anchor_ids(&inst.vector_lane(&idx, q)))
                .collect();
            let truth: Vec<&Vec<u64>> = gt.iter().collect();
            round4(recall_at(&found, &truth, 10))
        });
        let graph_recall = anchor.ground_truth.as_ref().map(|gt| {
            let found: Vec<Vec<u64>> = anchor
                .queries
                .iter()
                .map(|q| inst.anchor_ids(&inst.vector_graph_only(&idx, q)))
                .collect();
            let truth: Vec<&Vec<u64>> = gt.iter().collect();
            round4(recall_at(&found, &truth, 10))
        });
        let graph_latency = (ef == root_ef).then(|| {
            measure_sync(&warm, &meas, opts.rounds, |i| {
                inst.vector_graph_only(&idx, &anchor.queries[i])
            })
            .0
        });
        let r = VectorLaneReport {
            ef_search: ef,
            latency: lat,
            recall_at_10: recall,
            graph_recall_at_10: graph_recall,
            graph_latency,
            source_hit_at_30: round4(source_hit(&ids, &meas_q)),
        };
        println!(
            "vector lane alone, top 30, ef_search {ef}{}: {}",
            if ef == root_ef {
                " (Root's setting)"
            } else {
                ""
            },
            r.latency
        );
        println!(
            "  recall@10 vs exact (all {} queries) {} (graph alone {}); source chunk in top 30 {:.3}",
            anchor.queries.len(),
            r.recall_at_10
                .map_or_else(|| "n/a".to_string(), |x| format!("{x:.4}")),
            r.graph_recall_at_10
                .map_or_else(|| "n/a".to_string(), |x| format!("{x:.4}")),
            r.source_hit_at_30
        );
        if let Some(g) = &r.graph_latency {
            println!("  graph alone (no rescoring), same queries: {g}");
        }
        report.vector_lane.push(r);
    }
    println!(
        "  vector hits below the spec's 0.32 floor (not applied here): {:.1} %",
        report.vector_hits_below_spec_floor * 100.0
    );
    for &candidates in &opts.rescore_sweep {
        let (latency, _) = measure_sync(&warm, &meas, opts.rounds, |i| {
            inst.vector_lane_rescoring(&idx, &anchor.queries[i], candidates)
        });
        let recall_at_10 = anchor.ground_truth.as_ref().map(|gt| {
            let found: Vec<Vec<u64>> = anchor
                .queries
                .iter()
                .map(|q| inst.anchor_ids(&inst.vector_lane_rescoring(&idx, q, candidates)))
                .collect();
            let truth: Vec<&Vec<u64>> = gt.iter().collect();
            round4(recall_at(&found, &truth, 10))
        });
        println!(
            "vector lane, top 30, ef_search {root_ef}, rescoring {candidates} graph candidates: {latency}; recall@10 {}",
            recall_at_10.map_or_else(|| "n/a".to_string(), |x| format!("{x:.4}"))
        );
        report.rescore_sweep.push(RescoreReport {
            candidates,
            latency,
            recall_at_10,
        });
    }

    // Keyword lane alone.
    let (kw, out) = measure_sync(&warm, &meas, opts.rounds, |i| {
        keyword_lane(&idx, &anchor.queries[i])
    });
    let ids: Vec<Vec<u64>> = out.iter().map(|h| inst.anchor_ids(h)).collect();
    report.keyword_lane = kw;
    report.keyword_source_hit_at_20 = round4(source_hit(&ids, &meas_q));
    println!(
        "keyword lane alone (BM25, OR of tokens), top 20: {}",
        report.keyword_lane
    );
    println!(
        "  source chunk in top 20 {:.3}",
        report.keyword_source_hit_at_20
    );

    // Throughput.
    for clients in [1usize, 2] {
        let t = throughput(&inst, &anchor, clients, opts.per_client, opts.warmup).await?;
        println!(
            "fused throughput, {clients} client(s): {:.1} queries/s ({} queries in {:.2} s; latency {})",
            t.qps, t.queries, t.wall_s, t.latency
        );
        if clients == 1 {
            report.throughput_1 = Some(t);
        } else {
            report.throughput_2 = Some(t);
        }
    }
    drop(handle);
    drop(idx);

    // Close (snapshot), disk.
    let store = inst.store.clone();
    let redb = tokio::task::spawn_blocking(move || store.disk_stats()).await??;
    let t = Instant::now();
    let inst = Arc::try_unwrap(inst).map_err(|_| anyhow::anyhow!("instance still shared"))?;
    inst.close().await;
    report.close_s = round3(t.elapsed().as_secs_f64());
    report.disk = DiskReport::of(data_dir);
    report.disk.redb = Some(RedbDisk::of(&redb));
    let d = &report.disk;
    println!(
        "disk after close ({:.1} s): {:.1} MiB total ({:.1} MiB allocated) = redb {:.1} + vectors {:.1} + key map {:.1} + keyword {:.1} MiB",
        report.close_s,
        mib(d.total_bytes),
        mib(d.total_allocated_bytes),
        mib(d.redb_bytes),
        mib(d.vectors_bytes),
        mib(d.docmap_bytes),
        mib(d.keyword_bytes)
    );
    println!("  redb: {}", RedbDisk::of(&redb));

    // Cold start in a new process.
    report.cold_start = Some(cold_start(data_dir, opts, false).await?);
    if opts.evict_page_cache {
        report.cold_start_disk_cold = Some(cold_start(data_dir, opts, true).await?);
    }
    report.loader_vm_hwm_bytes = memory_status().0;
    println!(
        "loader process peak RSS (holds the whole corpus too): {:.0} MiB",
        mib(report.loader_vm_hwm_bytes)
    );
    Ok(report)
}

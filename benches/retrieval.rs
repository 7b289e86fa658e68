//! Criterion benchmark of Root's knowledge-search hot path on the pgvector
//! anchor corpus (`../shared/bench/pgvector-anchor/`, see
//! `docs/benchmarks/retrieval.md`): the same chunks, vectors, queries and
//! exact ground truth the PostgreSQL + pgvector reference was measured on.
//!
//! For each N (default 10,000 and 100,000; the first N rows of the corpus):
//! - `retrieval_<N>/fused`: `Retrieval::search_knowledge` with the query's
//!   anchor vector, limit 20, no rerank — vector lane top 30 + keyword lane
//!   top 20 + RRF + 3-per-page cap + row reads + neighbour expansion;
//! - `retrieval_<N>/vector_lane`: `RootInstance::vector_lane` (sign-bit graph + exact rescoring of
//!   its top 64), top 30, at Root's `ef_search` (40);
//! - `retrieval_<N>/keyword_lane`: `CorpusIndex::keyword_search_any`, OR of
//!   the query's tokens, BM25 top 20.
//!
//! Each iteration runs the next of the measured queries (100..600, cycling).
//! Before criterion's runs, one pass over the same queries (after a warm-up
//! over queries 0..100) prints p50/p95/p99 per query and recall@10 of the
//! vector lane against the exact ground truth (`gt_<N>.npy`) — criterion
//! itself reports means/medians of batches, not per-query tails.
//!
//! The loaded data directory (redb + index files of one tenant) is built
//! once with the same loader as `root bench retrieval` and reused while its
//! marker matches (N and the corpus hash): `$ROOT_BENCH_DIR/n<N>` (default
//! `$TMPDIR/root-retrieval-bench`). The 100k load takes minutes.
//!
//! ```text
//! ANCHOR_CORPUS=/tmp/anchor/data/corpus CARGO_TARGET_DIR=/tmp/bench-target \
//!   cargo bench --bench retrieval                      # both N
//! ROOT_BENCH_NS=10000 ANCHOR_CORPUS=... cargo bench --bench retrieval -- fused
//! ```
//!
//! Without `ANCHOR_CORPUS`, or when not run by `cargo bench` (e.g. `cargo
//! test --all-targets`), it prints why and does nothing.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::Criterion;
use root::tooling::bench::retrieval::{
    Anchor, LOADED_MARKER, RootInstance, is_loaded, keyword_lane, measure_async, measure_sync,
    recall_at, source_hit,
};
use tokio::runtime::Runtime;

const WARMUP: usize = 100;
const MEASURED: usize = 500;
const INGEST_CONCURRENCY: usize = 4;

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("retrieval bench: not run outside `cargo bench`");
        return;
    }
    let Some(corpus) = std::env::var_os("ANCHOR_CORPUS").map(PathBuf::from) else {
        eprintln!(
            "retrieval bench: skipped — set ANCHOR_CORPUS to the anchor corpus directory (gen_corpus.py --out)"
        );
        return;
    };
    let ns: Vec<usize> = std::env::var("ROOT_BENCH_NS")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("ROOT_BENCH_NS: comma-separated numbers")
        })
        .collect();
    let base = std::env::var_os("ROOT_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("root-retrieval-bench"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut c = Criterion::default().configure_from_args();
    for n in ns {
        bench_n(&mut c, &rt, &corpus, n, &base.join(format!("n{n}")));
    }
    c.final_summary();
}

fn bench_n(c: &mut Criterion, rt: &Runtime, corpus: &Path, n: usize, dir: &Path) {
    let anchor = Arc::new(Anchor::open(corpus, n).expect("anchor corpus"));
    if !is_loaded(dir, &anchor) {
        let _ = std::fs::remove_dir_all(dir);
        eprintln!(
            "retrieval bench: loading the first {n} anchor chunks into {}",
            dir.display()
        );
        rt.block_on(async {
            let pages = anchor.read_pages().expect("read corpus");
            let mut inst = RootInstance::open(dir, Default::default())
                .await
                .expect("open Root");
            let r = inst
                .ingest(pages, INGEST_CONCURRENCY)
                .await
                .expect("ingest");
            eprintln!(
                "  {} chunks / {} pages searchable after {:.1} s ({:.0} chunks/s)",
                r.chunks, r.pages, r.searchable_s, r.chunks_per_s
            );
            inst.close().await;
        });
        std::fs::write(
            dir.join(LOADED_MARKER),
            serde_json::json!({"n": n, "chunks_sha256": anchor.chunks_sha256}).to_string(),
        )
        .expect("marker");
    }
    let inst = rt.block_on(async {
        let mut inst = RootInstance::open(dir, Default::default())
            .await
            .expect("open Root");
        inst.load_page_map().await.expect("page map");
        Arc::new(inst)
    });
    let idx = rt.block_on(inst.handle()).expect("index").index.clone();
    let (warm, meas) = anchor.split(WARMUP, MEASURED).expect("queries");
    let meas_q: Vec<_> = meas.iter().map(|&i| &anchor.queries[i]).collect();

    // Per-query percentiles and quality, one pass.
    let (fused, out) = rt
        .block_on(measure_async(&warm, &meas, 1, |i| {
            let inst = inst.clone();
            let anchor = anchor.clone();
            async move { inst.fused(&anchor.queries[i]).await }
        }))
        .expect("fused");
    let ids: Vec<Vec<u64>> = out.into_iter().map(|(ids, _)| ids).collect();
    eprintln!("N = {n}: fused knowledge search, limit 20: {fused}");
    eprintln!("  source chunk in results {:.3}", source_hit(&ids, &meas_q));
    let (vector, out) = measure_sync(&warm, &meas, 1, |i| {
        inst.vector_lane(&idx, &anchor.queries[i])
    });
    let ids: Vec<Vec<u64>> = out.iter().map(|h| inst.anchor_ids(h)).collect();
    eprintln!("N = {n}: vector lane top 30 (ef_search 64): {vector}");
    if let Some(gt) = &anchor.ground_truth {
        let found: Vec<Vec<u64>> = anchor
            .queries
            .iter()
            .map(|q| inst.anchor_ids(&inst.vector_lane(&idx, q)))
            .collect();
        let truth: Vec<&Vec<u64>> = gt.iter().collect();
        eprintln!(
            "  recall@10 vs exact (all {} queries) {:.4}; source chunk in top 30 {:.3}",
            found.len(),
            recall_at(&found, &truth, 10),
            source_hit(&ids, &meas_q)
        );
    }
    let (keyword, out) = measure_sync(&warm, &meas, 1, |i| keyword_lane(&idx, &anchor.queries[i]));
    let ids: Vec<Vec<u64>> = out.iter().map(|h| inst.anchor_ids(h)).collect();
    eprintln!("N = {n}: keyword lane top 20: {keyword}");
    eprintln!("  source chunk in top 20 {:.3}", source_hit(&ids, &meas_q));

    // Criterion.
    let mut group = c.benchmark_group(format!("retrieval_{n}"));
    let next = Cell::new(0usize);
    let pick = || {
        let i = meas[next.get() % meas.len()];
        next.set(next.get() + 1);
        i
    };
    group.bench_function("fused", |b| {
        b.to_async(rt).iter(|| {
            let i = pick();
            let inst = inst.clone();
            let anchor = anchor.clone();
            async move { inst.fused(&anchor.queries[i]).await.expect("fused") }
        })
    });
    group.bench_function("vector_lane", |b| {
        b.iter(|| inst.vector_lane(&idx, &anchor.queries[pick()]))
    });
    group.bench_function("keyword_lane", |b| {
        b.iter(|| keyword_lane(&idx, &anchor.queries[pick()]))
    });
    group.finish();
    drop(idx);
    rt.block_on(async {
        inst.retrieval.registry().close().await;
        inst.store.close().await;
    });
}

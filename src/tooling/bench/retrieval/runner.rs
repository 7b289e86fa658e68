//! Root under the benchmark: [`RootInstance`] opens a data directory with
//! the benchmark tenant, ingests the anchor's pages and answers fused
//! knowledge searches; the lanes alone, the latency timers and the
//! throughput run sit here with it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use index::corpus::CorpusIndex;
use index::vector::Quantization;
use storage::{
    IndexCorpus, KnowledgePage, MigrationStore, RedbStore, Scan, Store, Tenant, TenantStore,
};
use uuid::Uuid;

use super::corpus::{Anchor, AnchorPage, AnchorQuery, first_id_of_slug};
use super::report::{IngestReport, Latency, Throughput, round3};
use super::{BENCH_VECTOR_FLOOR, FUSED_LIMIT, KEYWORD_K, TENANT_SLUG, VECTOR_K};
use crate::ai::embeddings::{Embedder, HashingEmbedder};
use crate::platform::tenancy::{self, TenantContext};
use crate::retrieval::exact::StoredVectors;
use crate::retrieval::params::rescore_candidates;
use crate::retrieval::{
    CorpusHandle, IndexRegistry, KnowledgeQuery, PageUpsert, Retrieval, VectorFloors,
};

/// Overrides of Root's defaults for a benchmark run (`None` = Root's).
#[derive(Clone, Copy, Debug, Default)]
pub struct Tuning {
    /// HNSW `ef_search`.
    pub ef_search: Option<usize>,
    /// HNSW `ef_construction` for the load.
    pub ef_add: Option<usize>,
    /// redb's page cache, MiB (`ROOT_REDB_CACHE_MB`).
    pub redb_cache_mb: Option<usize>,
    /// What the HNSW graph stores per vector.
    pub quantization: Option<Quantization>,
}

/// Root's retrieval over one data directory with the benchmark tenant.
pub struct RootInstance {
    /// The data directory.
    pub data_dir: PathBuf,
    /// The store.
    pub store: RedbStore,
    /// The service under test.
    pub retrieval: Retrieval,
    /// The benchmark tenant.
    pub tenant: Arc<Tenant>,
    /// Page id → anchor id of its first chunk (filled by
    /// [`load_page_map`](Self::load_page_map)).
    pub pages: HashMap<Uuid, u64>,
}

impl RootInstance {
    /// Open (or create) `data_dir/root.redb`, migrate, and find or create the
    /// benchmark tenant. The embedder is the offline hashing embedder (its
    /// model id stamps the anchor's vectors, so they enter the vector lane);
    /// queries bring their own vectors, so it never runs. `tuning`
    /// overrides Root's HNSW and redb cache defaults.
    pub async fn open(data_dir: &Path, tuning: Tuning) -> anyhow::Result<RootInstance> {
        let Tuning {
            ef_search,
            ef_add,
            redb_cache_mb,
            quantization,
        } = tuning;
        std::fs::create_dir_all(data_dir)?;
        let cache = redb_cache_mb.map_or(storage::DEFAULT_CACHE_BYTES, |mb| mb << 20);
        let store = RedbStore::open_with_cache(&data_dir.join("root.redb"), cache)?;
        store.migrate().await?;
        let tenant = match store.tenant_by_slug(TENANT_SLUG).await? {
            Some(t) => t,
            None => {
                store
                    .create_tenant(Tenant::new(TENANT_SLUG, "pgvector anchor"))
                    .await?
            }
        };
        let embedder: Arc<dyn Embedder> = Arc::new(HashingEmbedder);
        let mut cfg = crate::retrieval::params::vector_config();
        if let Some(ef) = ef_search {
            cfg.expansion_search = ef;
        }
        if let Some(ef) = ef_add {
            cfg.expansion_add = ef;
        }
        if let Some(q) = quantization {
            cfg.quantization = q;
        }
        let registry = IndexRegistry::with_config(data_dir, store.clone(), embedder.model(), cfg);
        let floors = VectorFloors::default().with(embedder.model(), BENCH_VECTOR_FLOOR);
        let retrieval = Retrieval::new(store.clone(), registry, embedder)
            .with_reranker(None, false)
            .with_floors(floors);
        Ok(RootInstance {
            data_dir: data_dir.to_path_buf(),
            store,
            retrieval,
            tenant: Arc::new(tenant),
            pages: HashMap::new(),
        })
    }

    fn ctx(&self) -> TenantContext {
        TenantContext {
            tenant: self.tenant.clone(),
        }
    }

    /// Run `fut` in the benchmark tenant's scope.
    pub async fn scoped<F: std::future::Future>(&self, fut: F) -> F::Output {
        tenancy::scope(self.ctx(), fut).await
    }

    /// Write `pages` with `concurrency` concurrent writers and wait until
    /// both lanes applied them.
    pub async fn ingest(
        &mut self,
        pages: Vec<AnchorPage>,
        concurrency: usize,
    ) -> anyhow::Result<IngestReport> {
        let n_pages = pages.len();
        let n_chunks: usize = pages.iter().map(|p| p.chunks.len()).sum();
        let queue = Arc::new(Mutex::new(pages.into_iter()));
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..concurrency.max(1) {
            let queue = queue.clone();
            let done = done.clone();
            let retrieval = self.retrieval.clone();
            let ctx = self.ctx();
            tasks.spawn(tenancy::scope(ctx, async move {
                let mut max_seq = 0u64;
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some(page) = next else { break };
                    let chunks = page.chunks.len();
                    let slug = page.slug();
                    let upsert = PageUpsert {
                        slug,
                        title: page.title,
                        content_html: String::new(),
                        source_type: "api".into(),
                        external_id: Some(page.doc_id.to_string()),
                        ..Default::default()
                    };
                    let w = retrieval
                        .upsert_page_chunks(
                            upsert,
                            page.chunks.into_iter().map(|(t, v)| (t, Some(v))).collect(),
                        )
                        .await?;
                    max_seq = max_seq.max(w.index_seq.unwrap_or(0));
                    let before = done.fetch_add(chunks, std::sync::atomic::Ordering::Relaxed);
                    if (before + chunks) / 10_000 > before / 10_000 {
                        eprintln!(
                            "  ingest: {} chunks written after {:.1} s",
                            before + chunks,
                            started.elapsed().as_secs_f64()
                        );
                    }
                }
                anyhow::Ok(max_seq)
            }));
        }
        let mut max_seq = 0;
        while let Some(r) = tasks.join_next().await {
            max_seq = max_seq.max(r??);
        }
        let written = started.elapsed();
        self.retrieval
            .registry()
            .wait_applied(
                self.tenant.id,
                IndexCorpus::Knowledge,
                max_seq,
                Duration::from_secs(24 * 3600),
            )
            .await?;
        let searchable = started.elapsed();
        Ok(IngestReport {
            pages: n_pages,
            chunks: n_chunks,
            concurrency,
            written_s: round3(written.as_secs_f64()),
            searchable_s: round3(searchable.as_secs_f64()),
            chunks_per_s: (n_chunks as f64 / searchable.as_secs_f64()).round(),
            written_chunks_per_s: (n_chunks as f64 / written.as_secs_f64()).round(),
        })
    }

    /// Read every page of the tenant to map results back to anchor ids.
    pub async fn load_page_map(&mut self) -> anyhow::Result<()> {
        let pages: Vec<KnowledgePage> = self.store.scan(Some(self.tenant.id), Scan::all()).await?;
        self.pages = pages
            .iter()
            .filter_map(|p| Some((p.id, first_id_of_slug(&p.slug)?)))
            .collect();
        Ok(())
    }

    /// The open knowledge index (opens it on first use).
    pub async fn handle(&self) -> anyhow::Result<Arc<CorpusHandle>> {
        Ok(self
            .retrieval
            .registry()
            .get(self.tenant.id, IndexCorpus::Knowledge)
            .await?)
    }

    /// One fused knowledge search (the §10.2 path, no rerank); returns the
    /// anchor ids of the results, best first, and the neighbour count.
    pub async fn fused(&self, q: &AnchorQuery) -> anyhow::Result<(Vec<u64>, usize)> {
        let out = self
            .scoped(self.retrieval.search_knowledge(KnowledgeQuery {
                query: q.text(),
                limit: Some(FUSED_LIMIT),
                source_types: None,
                rerank: false,
                vector: Some(q.vector.clone()),
            }))
            .await?;
        let neighbours = out.results.iter().map(|r| r.neighbors.len()).sum();
        let ids = out
            .results
            .iter()
            .filter_map(|r| Some(first_id_of_slug(&r.slug)? + r.chunk_index as u64))
            .collect();
        Ok((ids, neighbours))
    }

    /// Anchor ids of lane hits (needs [`load_page_map`](Self::load_page_map)).
    pub fn anchor_ids(&self, hits: &[index::corpus::Hit]) -> Vec<u64> {
        hits.iter()
            .filter_map(|h| {
                let page = Uuid::parse_str(&h.meta.group).ok()?;
                Some(self.pages.get(&page)? + h.meta.ordinal as u64)
            })
            .collect()
    }

    /// Vector lane alone, as knowledge search runs it: the graph's
    /// candidates rescored against the f16 embeddings in redb, top 30 by
    /// exact cosine.
    pub fn vector_lane(&self, idx: &CorpusIndex, q: &AnchorQuery) -> Vec<index::corpus::Hit> {
        StoredVectors::new(
            &self.store,
            self.tenant.id,
            IndexCorpus::Knowledge,
            self.retrieval.registry().model(),
        )
        .search(idx, &q.vector, VECTOR_K, None)
        .expect("vector search")
    }

    /// The vector lane rescoring `candidates` graph candidates instead of
    /// Root's [`rescore_candidates`] (the recall / latency trade-off).
    pub fn vector_lane_rescoring(
        &self,
        idx: &CorpusIndex,
        q: &AnchorQuery,
        candidates: usize,
    ) -> Vec<index::corpus::Hit> {
        let exact = StoredVectors::new(
            &self.store,
            self.tenant.id,
            IndexCorpus::Knowledge,
            self.retrieval.registry().model(),
        );
        idx.vector_search_exact(&q.vector, VECTOR_K, candidates, None, &exact)
            .expect("vector search")
    }

    /// The vector lane's graph alone (quantised distances, no rescoring):
    /// the candidate list the rescoring starts from.
    pub fn vector_graph_only(&self, idx: &CorpusIndex, q: &AnchorQuery) -> Vec<index::corpus::Hit> {
        idx.vector_search(&q.vector, rescore_candidates(idx.quantization(), VECTOR_K))
            .expect("vector search")
    }

    /// Flush (snapshot) the indexes and close the store.
    pub async fn close(self) {
        self.retrieval.registry().close().await;
        self.store.close().await;
    }
}

/// Keyword lane alone: OR of the query's tokens, BM25 top 20.
pub fn keyword_lane(idx: &CorpusIndex, q: &AnchorQuery) -> Vec<index::corpus::Hit> {
    idx.keyword_search_any(&q.text(), KEYWORD_K)
        .expect("keyword search")
}

/// Time `f` over `warm` once (untimed), then over `measured` `rounds` times.
/// Returns the latency summary and the first round's outputs.
pub async fn measure_async<T, F, Fut>(
    warm: &[usize],
    measured: &[usize],
    rounds: usize,
    mut f: F,
) -> anyhow::Result<(Latency, Vec<T>)>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    for &i in warm {
        f(i).await?;
    }
    let mut all = Vec::with_capacity(rounds);
    let mut first = Vec::new();
    for round in 0..rounds {
        let mut lat = Vec::with_capacity(measured.len());
        for &i in measured {
            let t = Instant::now();
            let out = f(i).await?;
            lat.push(t.elapsed());
            if round == 0 {
                first.push(out);
            }
        }
        all.push(lat);
    }
    Ok((Latency::of(&all), first))
}

/// [`measure_async`] for a synchronous call.
pub fn measure_sync<T>(
    warm: &[usize],
    measured: &[usize],
    rounds: usize,
    mut f: impl FnMut(usize) -> T,
) -> (Latency, Vec<T>) {
    for &i in warm {
        std::hint::black_box(f(i));
    }
    let mut all = Vec::with_capacity(rounds);
    let mut first = Vec::new();
    for round in 0..rounds {
        let mut lat = Vec::with_capacity(measured.len());
        for &i in measured {
            let t = Instant::now();
            let out = std::hint::black_box(f(i));
            lat.push(t.elapsed());
            if round == 0 {
                first.push(out);
            }
        }
        all.push(lat);
    }
    (Latency::of(&all), first)
}

/// Fused-search throughput with `clients` concurrent callers, each running
/// `per_client` queries (client `c` starts at query `warmup + c·per_client`,
/// wrapping), after `warmup / 2` untimed queries each.
pub async fn throughput(
    inst: &Arc<RootInstance>,
    anchor: &Arc<Anchor>,
    clients: usize,
    per_client: usize,
    warmup: usize,
) -> anyhow::Result<Throughput> {
    let nq = anchor.queries.len();
    let barrier = Arc::new(tokio::sync::Barrier::new(clients));
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients {
        let inst = inst.clone();
        let anchor = anchor.clone();
        let barrier = barrier.clone();
        tasks.spawn(async move {
            let idx: Vec<usize> = (0..per_client)
                .map(|j| (warmup + c * per_client + j) % nq)
                .collect();
            for &i in idx.iter().take(warmup / 2) {
                inst.fused(&anchor.queries[i]).await?;
            }
            barrier.wait().await;
            let t0 = Instant::now();
            let mut lat = Vec::with_capacity(per_client);
            for &i in &idx {
                let t = Instant::now();
                inst.fused(&anchor.queries[i]).await?;
                lat.push(t.elapsed());
            }
            anyhow::Ok((t0, Instant::now(), lat))
        });
    }
    let mut outs = Vec::new();
    while let Some(r) = tasks.join_next().await {
        outs.push(r??);
    }
    let start = outs.iter().map(|o| o.0).min().expect("a client");
    let end = outs.iter().map(|o| o.1).max().expect("a client");
    let lat: Vec<Duration> = outs.into_iter().flat_map(|o| o.2).collect();
    let wall = end - start;
    Ok(Throughput {
        clients,
        queries: lat.len(),
        wall_s: round3(wall.as_secs_f64()),
        qps: (lat.len() as f64 / wall.as_secs_f64() * 10.0).round() / 10.0,
        latency: Latency::of(&[lat]),
    })
}

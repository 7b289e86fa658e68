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
//!   with [`Retrieval::upsert_page_chunks`] (redb rows + outbox) by
//!   `ingest_concurrency` concurrent writers, until the index writer has
//!   applied everything to both lanes (embedding excluded: the vectors are
//!   the anchor's);
//! - single-client latency (p50/p95/p99) of the fused knowledge search
//!   ([`Retrieval::search_knowledge`]: vector lane top 30 + keyword lane top
//!   20 + RRF + 3-per-page cap + row reads + neighbour expansion, no rerank),
//!   of the vector lane alone ([`CorpusIndex::vector_search`], top 30) with
//!   recall@10 against the exact ground truth, and of the keyword lane alone
//!   ([`CorpusIndex::keyword_search_any`], OR of the query's tokens, top 20);
//! - throughput of the fused search with 1 and 2 concurrent clients;
//! - disk bytes of the data directory after a clean close (snapshot written);
//! - cold start in a new process (`root bench retrieval-open`): open the
//!   store and the 100k-chunk tenant, answer the first query; then the
//!   resident memory (VmHWM / VmRSS) of that serving process.
//!
//! The query protocol follows the anchor's `bench_inproc.py`: warm-up =
//! queries `0..W`, measured = `W..W+M`, timed `rounds` times and pooled;
//! recall@10 over all 1,000 queries. Percentiles are numpy's (linear).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use index::corpus::CorpusIndex;
use serde::{Deserialize, Serialize};
use storage::{
    IndexCorpus, KnowledgePage, MigrationStore, RedbStore, Scan, Store, Tenant, TenantStore,
};
use uuid::Uuid;

use crate::ai::embeddings::{Embedder, HashingEmbedder};
use crate::platform::tenancy::{self, TenantContext};
use crate::retrieval::{
    CorpusHandle, IndexRegistry, KnowledgeQuery, PageUpsert, Retrieval, VectorFloors,
};

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

// ───────────────────────────── npy files ─────────────────────────────

/// A parsed `.npy` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyHeader {
    /// numpy dtype string, e.g. `<f2`, `<i8`.
    pub descr: String,
    /// Array shape.
    pub shape: Vec<usize>,
}

/// Read a `.npy` (v1–v3) header; the reader is left at the first data byte.
pub fn read_npy_header(r: &mut impl Read) -> anyhow::Result<NpyHeader> {
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic[..6] != b"\x93NUMPY" {
        bail!("not a .npy file");
    }
    let len = if magic[6] == 1 {
        let mut b = [0u8; 2];
        r.read_exact(&mut b)?;
        u16::from_le_bytes(b) as usize
    } else {
        let mut b = [0u8; 4];
        r.read_exact(&mut b)?;
        u32::from_le_bytes(b) as usize
    };
    let mut header = vec![0u8; len];
    r.read_exact(&mut header)?;
    let header = String::from_utf8_lossy(&header);
    let field = |name: &str| npy_field(&header, name);
    let descr = field("descr")?
        .trim_start_matches('\'')
        .split('\'')
        .next()
        .unwrap_or_default()
        .to_string();
    if field("fortran_order")?.starts_with("True") {
        bail!("fortran-order arrays are not supported");
    }
    let shape_text = field("shape")?;
    let shape_text = &shape_text[1..shape_text.find(')').context("npy shape")?];
    let shape = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<Result<Vec<_>, _>>()
        .context("npy shape")?;
    Ok(NpyHeader { descr, shape })
}

fn npy_field<'a>(header: &'a str, name: &str) -> anyhow::Result<&'a str> {
    let at = header
        .find(&format!("'{name}'"))
        .with_context(|| format!("npy header has no {name}: {header}"))?;
    Ok(header[at + name.len() + 2..].trim_start_matches([':', ' ']))
}

/// The first `rows` rows of a 2-d little-endian f16 `.npy` file as f32.
pub fn read_f16_matrix(path: &Path, rows: usize) -> anyhow::Result<(usize, Vec<f32>)> {
    let mut r = BufReader::with_capacity(
        1 << 20,
        File::open(path).with_context(|| path.display().to_string())?,
    );
    let h = read_npy_header(&mut r)?;
    if h.descr != "<f2" || h.shape.len() != 2 {
        bail!("{}: expected a 2-d <f2 array, got {h:?}", path.display());
    }
    if rows > h.shape[0] {
        bail!(
            "{} has {} rows, {rows} requested",
            path.display(),
            h.shape[0]
        );
    }
    let dims = h.shape[1];
    let mut bytes = vec![0u8; rows * dims * 2];
    r.read_exact(&mut bytes)?;
    let out = bytes
        .chunks_exact(2)
        .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
        .collect();
    Ok((dims, out))
}

/// A 2-d little-endian i64 (`<i8`) `.npy` file (the anchor's ground truth ids).
pub fn read_i64_matrix(path: &Path) -> anyhow::Result<Vec<Vec<u64>>> {
    let mut r = BufReader::new(File::open(path).with_context(|| path.display().to_string())?);
    let h = read_npy_header(&mut r)?;
    if h.descr != "<i8" || h.shape.len() != 2 {
        bail!("{}: expected a 2-d <i8 array, got {h:?}", path.display());
    }
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes)?;
    let cols = h.shape[1];
    Ok(bytes
        .chunks_exact(8 * cols)
        .map(|row| {
            row.chunks_exact(8)
                .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")) as u64)
                .collect()
        })
        .collect())
}

// ───────────────────────────── the anchor corpus ─────────────────────────────

/// One query of the anchor.
#[derive(Clone, Debug)]
pub struct AnchorQuery {
    /// Position in `queries.jsonl`.
    pub qid: usize,
    /// The chunk the query was made from.
    pub source_id: u64,
    /// The keyword lane's words (OR-ed).
    pub tokens: Vec<String>,
    /// The query vector (f16 values as f32).
    pub vector: Vec<f32>,
}

impl AnchorQuery {
    /// The member's words as Root receives them: the tokens, space-separated
    /// (Root's keyword lane ORs the tokens of the query, like the anchor's
    /// `to_tsquery('tok1 | tok2 | …')`).
    pub fn text(&self) -> String {
        self.tokens.join(" ")
    }
}

/// One anchor document = one knowledge page.
#[derive(Clone, Debug)]
pub struct AnchorPage {
    /// Anchor `doc_id`.
    pub doc_id: u64,
    /// Anchor id of its first chunk (chunk `i` of the page is `first_id + i`).
    pub first_id: u64,
    /// Document title.
    pub title: String,
    /// `(text, vector)` per chunk, in row order.
    pub chunks: Vec<(String, Vec<f32>)>,
}

impl AnchorPage {
    /// The page slug: encodes the first chunk's anchor id.
    pub fn slug(&self) -> String {
        slug_for(self.first_id)
    }
}

/// Slug of the page whose first chunk has anchor id `first_id`.
pub fn slug_for(first_id: u64) -> String {
    format!("c{first_id}")
}

/// Inverse of [`slug_for`].
pub fn first_id_of_slug(slug: &str) -> Option<u64> {
    slug.strip_prefix('c')?.parse().ok()
}

#[derive(Deserialize)]
struct ChunkLine {
    id: u64,
    doc_id: u64,
    title: String,
    text: String,
}

#[derive(Deserialize)]
struct QueryLine {
    qid: usize,
    source_id: u64,
    tokens: Vec<String>,
}

/// The anchor corpus directory, its queries and (if cached) ground truth.
pub struct Anchor {
    /// The corpus directory.
    pub dir: PathBuf,
    /// Rows used (the first `n`).
    pub n: usize,
    /// All queries.
    pub queries: Vec<AnchorQuery>,
    /// Exact cosine top-100 anchor ids per query over the first `n` rows
    /// (`gt_<n>.npy`), when present.
    pub ground_truth: Option<Vec<Vec<u64>>>,
    /// sha256 of `chunks.jsonl` from `manifest.json`.
    pub chunks_sha256: String,
}

impl Anchor {
    /// Open `dir` for its first `n` rows (queries and ground truth; chunks
    /// are read by [`read_pages`](Self::read_pages)).
    pub fn open(dir: &Path, n: usize) -> anyhow::Result<Anchor> {
        let manifest: serde_json::Value =
            serde_json::from_reader(File::open(dir.join("manifest.json")).with_context(|| {
                format!("{}/manifest.json (run gen_corpus.py)", dir.display())
            })?)?;
        let have = manifest["n"].as_u64().unwrap_or(0) as usize;
        if n > have {
            bail!(
                "the corpus in {} has {have} rows, {n} requested",
                dir.display()
            );
        }
        let chunks_sha256 = manifest["files"]["chunks.jsonl"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let lines: Vec<QueryLine> = BufReader::new(File::open(dir.join("queries.jsonl"))?)
            .lines()
            .map(|l| -> anyhow::Result<QueryLine> { Ok(serde_json::from_str(&l?)?) })
            .collect::<anyhow::Result<_>>()?;
        let (dims, qv) = read_f16_matrix(&dir.join("queries.f16.npy"), lines.len())?;
        if dims != index::vector::DIMENSIONS {
            bail!("query vectors have {dims} dimensions");
        }
        let queries = lines
            .into_iter()
            .enumerate()
            .map(|(i, q)| AnchorQuery {
                qid: q.qid,
                source_id: q.source_id,
                tokens: q.tokens,
                vector: qv[i * dims..(i + 1) * dims].to_vec(),
            })
            .collect();
        let gt_path = dir.join(format!("gt_{n}.npy"));
        let ground_truth = gt_path
            .exists()
            .then(|| read_i64_matrix(&gt_path))
            .transpose()?;
        Ok(Anchor {
            dir: dir.to_path_buf(),
            n,
            queries,
            ground_truth,
            chunks_sha256,
        })
    }

    /// The first `n` chunks with their vectors, grouped into pages by
    /// `doc_id` (a document's chunks are contiguous rows in the anchor).
    pub fn read_pages(&self) -> anyhow::Result<Vec<AnchorPage>> {
        let (dims, vectors) = read_f16_matrix(&self.dir.join("vectors.f16.npy"), self.n)?;
        if dims != index::vector::DIMENSIONS {
            bail!("chunk vectors have {dims} dimensions");
        }
        let reader = BufReader::with_capacity(1 << 20, File::open(self.dir.join("chunks.jsonl"))?);
        let mut pages: Vec<AnchorPage> = Vec::new();
        for (i, line) in reader.lines().take(self.n).enumerate() {
            let c: ChunkLine = serde_json::from_str(&line?)?;
            if c.id != i as u64 {
                bail!("chunks.jsonl row {i} has id {}", c.id);
            }
            let v = vectors[i * dims..(i + 1) * dims].to_vec();
            match pages.last_mut() {
                Some(p) if p.doc_id == c.doc_id => p.chunks.push((c.text, v)),
                _ => pages.push(AnchorPage {
                    doc_id: c.doc_id,
                    first_id: c.id,
                    title: c.title,
                    chunks: vec![(c.text, v)],
                }),
            }
        }
        Ok(pages)
    }

    /// Warm-up and measured query indexes (`0..warmup`, `warmup..warmup+measured`).
    pub fn split(
        &self,
        warmup: usize,
        measured: usize,
    ) -> anyhow::Result<(Vec<usize>, Vec<usize>)> {
        if warmup + measured > self.queries.len() {
            bail!(
                "{} queries available, {warmup} + {measured} requested",
                self.queries.len()
            );
        }
        Ok(((0..warmup).collect(), (warmup..warmup + measured).collect()))
    }
}

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

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn round4(x: f64) -> f64 {
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
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmHWM:"), field("VmRSS:"))
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

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

// ───────────────────────────── Root over a data directory ─────────────────────────────

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
    /// queries bring their own vectors, so it never runs. `ef_search` and
    /// `ef_add` override Root's HNSW defaults.
    pub async fn open(
        data_dir: &Path,
        ef_search: Option<usize>,
        ef_add: Option<usize>,
    ) -> anyhow::Result<RootInstance> {
        std::fs::create_dir_all(data_dir)?;
        let store = RedbStore::open(&data_dir.join("root.redb"))?;
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

    /// Flush (snapshot) the indexes and close the store.
    pub async fn close(self) {
        self.retrieval.registry().close().await;
        self.store.close().await;
    }
}

/// Vector lane alone: top 30 by cosine.
pub fn vector_lane(idx: &CorpusIndex, q: &AnchorQuery) -> Vec<index::corpus::Hit> {
    idx.vector_search(&q.vector, VECTOR_K)
        .expect("vector search")
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
    /// `ef_search` values for the vector-lane sweep.
    pub ef_sweep: Vec<usize>,
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
            ef_sweep: vec![24, 32, 40, 64, 100],
            evict_page_cache: false,
            out: None,
        }
    }
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
    /// Source chunk in the top 30 (measured queries).
    pub source_hit_at_30: f64,
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
    let mut inst = RootInstance::open(data_dir, opts.ef_search, opts.ef_add).await?;
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
        RootInstance::open(data_dir, opts.ef_search, opts.ef_add).await?
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
            vector_lane(&idx, &anchor.queries[i])
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
                .map(|q| inst.anchor_ids(&vector_lane(&idx, q)))
                .collect();
            let truth: Vec<&Vec<u64>> = gt.iter().collect();
            round4(recall_at(&found, &truth, 10))
        });
        let r = VectorLaneReport {
            ef_search: ef,
            latency: lat,
            recall_at_10: recall,
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
            "  recall@10 vs exact (all {} queries) {}; source chunk in top 30 {:.3}",
            anchor.queries.len(),
            r.recall_at_10
                .map_or_else(|| "n/a".to_string(), |x| format!("{x:.4}")),
            r.source_hit_at_30
        );
        report.vector_lane.push(r);
    }
    println!(
        "  vector hits below the spec's 0.32 floor (not applied here): {:.1} %",
        report.vector_hits_below_spec_floor * 100.0
    );

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
    let t = Instant::now();
    let inst = Arc::try_unwrap(inst).map_err(|_| anyhow::anyhow!("instance still shared"))?;
    inst.close().await;
    report.close_s = round3(t.elapsed().as_secs_f64());
    report.disk = DiskReport::of(data_dir);
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

async fn cold_start(
    data_dir: &Path,
    opts: &RetrievalBenchOptions,
    evict: bool,
) -> anyhow::Result<ColdStart> {
    use tokio::io::AsyncBufReadExt;
    if evict {
        evict_page_cache(data_dir)?;
    }
    let mut cmd = tokio::process::Command::new(std::env::current_exe()?);
    cmd.arg("bench")
        .arg("retrieval-open")
        .arg("--data")
        .arg(data_dir)
        .arg("--corpus")
        .arg(&opts.corpus)
        .arg("--n")
        .arg(opts.n.to_string())
        .arg("--queries")
        .arg(opts.measured.to_string());
    if let Some(ef) = opts.ef_search {
        cmd.arg("--ef-search").arg(ef.to_string());
    }
    cmd.stdout(std::process::Stdio::piped());
    let t0 = Instant::now();
    let mut child = cmd.spawn()?;
    let stdout = child.stdout.take().context("child stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut first = None;
    let mut result: Option<ColdStart> = None;
    while let Some(line) = lines.next_line().await? {
        if line.starts_with("FIRST_ANSWER") && first.is_none() {
            first = Some(t0.elapsed());
        } else if let Some(json) = line.strip_prefix("RESULT ") {
            result = Some(serde_json::from_str(json)?);
        }
    }
    let status = child.wait().await?;
    if !status.success() {
        bail!("cold-start process failed: {status}");
    }
    let mut r = result.context("the cold-start process printed no result")?;
    r.spawn_to_first_answer_ms = round3(first.unwrap_or_default().as_secs_f64() * 1e3);
    println!(
        "cold start{} (new process; store open {:.1} ms + index open {:.1} ms + first query {:.1} ms): first answer {:.1} ms after spawn",
        if evict {
            ", data files evicted from the page cache"
        } else {
            ", page cache warm"
        },
        r.store_open_ms,
        r.index_open_ms,
        r.first_query_ms,
        r.spawn_to_first_answer_ms
    );
    println!(
        "  serving process after {} more fused queries: peak RSS {:.0} MiB, RSS {:.0} MiB (RSS after the first answer {:.0} MiB); their latency {}",
        r.queries_after,
        mib(r.vm_hwm_bytes),
        mib(r.vm_rss_bytes),
        mib(r.rss_after_first_bytes),
        r.latency_after
    );
    Ok(r)
}

/// Drop the page-cache pages of every file under `dir` (GNU `dd
/// iflag=nocache count=0` per file; affects only these files).
pub fn evict_page_cache(dir: &Path) -> anyhow::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)?.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let status = std::process::Command::new("dd")
                    .arg(format!("if={}", path.display()))
                    .args(["iflag=nocache", "count=0", "status=none"])
                    .status()?;
                if !status.success() {
                    bail!("dd could not evict {}", path.display());
                }
            }
        }
    }
    Ok(())
}

/// `root bench retrieval-open`: the cold-start child. Opens the data
/// directory, answers the first query (prints `FIRST_ANSWER`), answers
/// `queries` more, and prints `RESULT <json>` with its timings and memory.
pub async fn run_cold_open(
    data_dir: &Path,
    corpus: &Path,
    n: usize,
    queries: usize,
    ef_search: Option<usize>,
) -> anyhow::Result<()> {
    // The queries are read before the clock starts (a client brings them).
    let anchor = Anchor::open(corpus, n)?;
    let t0 = Instant::now();
    let inst = RootInstance::open(data_dir, ef_search, None).await?;
    let store_open = t0.elapsed();
    let t1 = Instant::now();
    inst.handle().await?;
    let index_open = t1.elapsed();
    let t2 = Instant::now();
    let (first_ids, _) = inst.fused(&anchor.queries[0]).await?;
    let first_query = t2.elapsed();
    let open_to_first = t0.elapsed();
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "FIRST_ANSWER {} results", first_ids.len())?;
        out.flush()?;
    }
    let rss_after_first = memory_status().1;
    let idx: Vec<usize> = (1..=queries).map(|i| i % anchor.queries.len()).collect();
    let (latency_after, _) = measure_async(&[], &idx, 1, |i| {
        let q = &anchor.queries[i];
        let inst = &inst;
        async move { inst.fused(q).await }
    })
    .await?;
    let (hwm, rss) = memory_status();
    let r = ColdStart {
        spawn_to_first_answer_ms: 0.0,
        store_open_ms: round3(store_open.as_secs_f64() * 1e3),
        index_open_ms: round3(index_open.as_secs_f64() * 1e3),
        first_query_ms: round3(first_query.as_secs_f64() * 1e3),
        open_to_first_answer_ms: round3(open_to_first.as_secs_f64() * 1e3),
        rss_after_first_bytes: rss_after_first,
        queries_after: idx.len(),
        latency_after,
        vm_hwm_bytes: hwm,
        vm_rss_bytes: rss,
    };
    println!("RESULT {}", serde_json::to_string(&r)?);
    // Leave the files as they are: no snapshot is due (nothing changed).
    inst.close().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_headers_parse() {
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let header = "{'descr': '<f2', 'fortran_order': False, 'shape': (3, 2), }";
        let pad = 64 - (10 + header.len() + 1) % 64;
        let header = format!("{header}{}\n", " ".repeat(pad));
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        let h = read_npy_header(&mut bytes.as_slice()).unwrap();
        assert_eq!(
            h,
            NpyHeader {
                descr: "<f2".into(),
                shape: vec![3, 2]
            }
        );
    }

    #[test]
    fn percentiles_match_numpy_linear() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 5.5);
        assert!((percentile(&v, 95.0) - 9.55).abs() < 1e-9);
        assert_eq!(percentile(&v, 100.0), 10.0);
    }

    #[test]
    fn slugs_round_trip() {
        assert_eq!(first_id_of_slug(&slug_for(12_345)), Some(12_345));
        assert_eq!(first_id_of_slug("x1"), None);
    }
}

//! `root bench mcp`: what the MCP layer (§12.3) costs over REST for the
//! same knowledge search. A real server over a temp data dir holds a
//! synthetic corpus (default 100k chunks, offline hashing embedder, so
//! the vector lane runs without a provider); the same queries go to
//! `POST /api/v1/kb/search` and to MCP `search_knowledge` over
//! `POST /api/mcp` (stateless JSON-RPC, one POST per call), sequentially
//! for p50/p99 and from concurrent clients for queries/s. Rate limits are
//! raised out of the way. Build with `--release`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};
use storage::IndexCorpus;

use crate::app::App;
use crate::config::Config;
use crate::platform::api_keys::{self, KeyKind};
use crate::platform::tenancy::{self, TenantContext};
use crate::retrieval::PageUpsert;

/// Options of `root bench mcp`.
#[derive(Clone, Debug)]
pub struct McpBenchOptions {
    /// Chunks in the corpus.
    pub chunks: usize,
    /// Chunks per page.
    pub chunks_per_page: usize,
    /// Timed sequential queries per path (after as many warm-up queries / 10).
    pub queries: usize,
    /// Concurrent clients of the throughput runs.
    pub clients: usize,
}

impl Default for McpBenchOptions {
    fn default() -> Self {
        McpBenchOptions {
            chunks: 100_000,
            chunks_per_page: 10,
            queries: 500,
            clients: 4,
        }
    }
}

/// A deterministic word source (xorshift over a fixed vocabulary), so
/// every run searches the same corpus with the same queries.
struct Words {
    state: u64,
    vocabulary: Vec<String>,
}

impl Words {
    fn new(seed: u64, size: usize) -> Words {
        let syllables = [
            "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "be", "da", "fo", "gu", "hi", "ja",
            "pe", "zo",
        ];
        let vocabulary = (0..size)
            .map(|i| {
                let (a, b, c) = (i % 16, (i / 16) % 16, (i / 256) % 16);
                format!("{}{}{}", syllables[a], syllables[b], syllables[c])
            })
            .collect();
        Words {
            state: seed.max(1),
            vocabulary,
        }
    }

    fn next(&mut self) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state as usize
    }

    fn sentence(&mut self, n: usize) -> String {
        let mut out = String::new();
        for k in 0..n {
            let i = self.next() % self.vocabulary.len();
            if k > 0 {
                out.push(' ');
            }
            out.push_str(&self.vocabulary[i]);
        }
        out
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)].as_secs_f64() * 1e3
}

#[derive(Clone)]
struct Target {
    client: reqwest::Client,
    base: String,
    key: String,
}

impl Target {
    /// One search through `path` (`rest` or `mcp`); checks the answer.
    async fn search(&self, mcp: bool, query: &str, id: u64) -> anyhow::Result<()> {
        if mcp {
            let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "search_knowledge",
                           "arguments": {"query": query, "limit": 10}}});
            let r = self
                .client
                .post(format!("{}/api/mcp", self.base))
                .bearer_auth(&self.key)
                .header("accept", "application/json, text/event-stream")
                .json(&body)
                .send()
                .await?;
            let status = r.status();
            let v: Value = r.json().await.context("MCP answer")?;
            ensure!(
                status.is_success() && v["result"]["isError"] != json!(true),
                "MCP search failed ({status}): {v}"
            );
        } else {
            let r = self
                .client
                .post(format!("{}/api/v1/kb/search", self.base))
                .bearer_auth(&self.key)
                .json(&json!({"query": query, "limit": 10}))
                .send()
                .await?;
            let status = r.status();
            ensure!(status.is_success(), "REST search failed: {status}");
            let _: Value = r.json().await?;
        }
        Ok(())
    }
}

/// Figures of one path.
struct PathFigures {
    p50_ms: f64,
    p99_ms: f64,
    qps: f64,
}

async fn measure(
    t: &Target,
    mcp: bool,
    queries: &[String],
    clients: usize,
) -> anyhow::Result<PathFigures> {
    for (i, q) in queries.iter().take(queries.len() / 10 + 1).enumerate() {
        t.search(mcp, q, i as u64).await?;
    }
    let mut lat = Vec::with_capacity(queries.len());
    for (i, q) in queries.iter().enumerate() {
        let start = Instant::now();
        t.search(mcp, q, i as u64).await?;
        lat.push(start.elapsed());
    }
    lat.sort();
    let queries = Arc::new(queries.to_vec());
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients.max(1) {
        let t = t.clone();
        let queries = queries.clone();
        tasks.spawn(async move {
            for (i, q) in queries.iter().enumerate().skip(c).step_by(clients.max(1)) {
                t.search(mcp, q, i as u64).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    Ok(PathFigures {
        p50_ms: percentile(&lat, 0.5),
        p99_ms: percentile(&lat, 0.99),
        qps: queries.len() as f64 / started.elapsed().as_secs_f64(),
    })
}

/// Run the benchmark and print a report.
pub async fn run_mcp_bench(opts: McpBenchOptions) -> anyhow::Result<()> {
    if opts.chunks == 0 || opts.chunks_per_page == 0 || opts.queries == 0 {
        bail!("chunks, chunks per page and queries must be positive");
    }
    let dir = tempfile::tempdir()?;
    let vars: Vec<(String, String)> = [
        ("PORT", "0"),
        ("ROOT_BIND", "127.0.0.1"),
        (
            "ROOT_DATA_DIR",
            &dir.path().join("data").display().to_string(),
        ),
        ("ROOT_KB_SEARCH_PER_TENANT_PER_MINUTE", "1000000000"),
        ("ROOT_KB_SEARCH_PER_KEY_PER_MINUTE", "1000000000"),
        ("ROOT_API_REQUESTS_PER_KEY_PER_MINUTE", "1000000000"),
        ("ROOT_API_REQUESTS_PER_TENANT_PER_MINUTE", "1000000000"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let app = App::build(Config::from_vars(vars)?).await?;
    let state = app.state().clone();
    let (tenant, minted) =
        api_keys::mint_for_slug(&state.store, "root", "bench-mcp", KeyKind::Live).await?;
    let target = Target {
        client: reqwest::Client::builder().build()?,
        base: format!("http://{}", app.local_addr()),
        key: minted.raw,
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async {
        let _ = stop_rx.await;
    }));

    println!(
        "root bench mcp — {} chunks ({} per page), embedder {}, {} timed queries per path, {} clients for q/s",
        opts.chunks,
        opts.chunks_per_page,
        state.retrieval.embedder().model(),
        opts.queries,
        opts.clients
    );
    let mut words = Words::new(0x5eed, 4096);
    let started = Instant::now();
    let pages = opts.chunks.div_ceil(opts.chunks_per_page);
    let ctx = TenantContext {
        tenant: Arc::new(tenant.clone()),
    };
    let mut max_seq = 0u64;
    let mut written = 0usize;
    for p in 0..pages {
        let n = opts.chunks_per_page.min(opts.chunks - written);
        let chunks: Vec<(String, Option<Vec<f32>>)> =
            (0..n).map(|_| (words.sentence(60), None)).collect();
        written += n;
        let upsert = PageUpsert {
            slug: format!("bench-{p}"),
            title: words.sentence(4),
            content_html: String::new(),
            source_type: "api".into(),
            ..Default::default()
        };
        let w = tenancy::scope(
            ctx.clone(),
            state.retrieval.upsert_page_chunks(upsert, chunks),
        )
        .await?;
        max_seq = max_seq.max(w.index_seq.unwrap_or(0));
        if written % 10_000 < opts.chunks_per_page {
            eprintln!(
                "  ingest: {written} chunks after {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    state
        .retrieval
        .registry()
        .wait_applied(
            tenant.id,
            IndexCorpus::Knowledge,
            max_seq,
            Duration::from_secs(24 * 3600),
        )
        .await?;
    println!(
        "ingest: {written} chunks searchable after {:.1} s (not part of the comparison)",
        started.elapsed().as_secs_f64()
    );
    let queries: Vec<String> = (0..opts.queries).map(|_| words.sentence(5)).collect();
    // Alternate the order so neither path always runs on a warmer cache.
    let rest = measure(&target, false, &queries, opts.clients).await?;
    let mcp = measure(&target, true, &queries, opts.clients).await?;
    let rest2 = measure(&target, false, &queries, opts.clients).await?;
    let rest_p50 = rest.p50_ms.min(rest2.p50_ms);
    for (name, f) in [("REST /api/v1/kb/search", &rest), ("REST (again)", &rest2)] {
        println!(
            "{name}: p50 {:.3} ms, p99 {:.3} ms, {:.0} q/s",
            f.p50_ms, f.p99_ms, f.qps
        );
    }
    println!(
        "MCP search_knowledge: p50 {:.3} ms, p99 {:.3} ms, {:.0} q/s",
        mcp.p50_ms, mcp.p99_ms, mcp.qps
    );
    let overhead = mcp.p50_ms - rest_p50;
    println!(
        "MCP overhead at p50: {overhead:.3} ms (ratio {:.2}×; target < 0.5 ms) — {}",
        mcp.p50_ms / rest_p50,
        if overhead < 0.5 { "met" } else { "missed" }
    );
    let _ = stop_tx.send(());
    server.await??;
    Ok(())
}

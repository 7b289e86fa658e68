//! `root bench mcp`: what the MCP layer (§12.3) costs over REST for the
//! same knowledge search. A real server over a temp data dir holds a
//! synthetic corpus (default 100k chunks, offline hashing embedder, so
//! the vector lane runs without a provider); the same queries go to
//! `POST /api/v1/kb/search` and to MCP `search_knowledge` over
//! `POST /api/mcp` (stateless JSON-RPC, one POST per call), sequentially
//! for p50/p99 and from concurrent clients for queries/s. Rate limits are
//! raised out of the way. Build with `--release`.

use std::sync::Arc;
use std::time::Instant;

use anyhow::bail;

use super::synthetic::{BenchServer, Target, Words, percentile_ms as percentile};

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
    let server = BenchServer::start(&dir.path().join("data"), "root", "bench-mcp").await?;
    println!(
        "root bench mcp — {} chunks ({} per page), embedder {}, {} timed queries per path, {} clients for q/s",
        opts.chunks,
        opts.chunks_per_page,
        server.state.retrieval.embedder().model(),
        opts.queries,
        opts.clients
    );
    let mut words = Words::new(0x5eed, 4096);
    let took = server
        .load(&mut words, opts.chunks, opts.chunks_per_page)
        .await?;
    println!(
        "ingest: {} chunks searchable after {:.1} s (not part of the comparison)",
        opts.chunks,
        took.as_secs_f64()
    );
    let target = server.target.clone();
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
    server.stop().await
}

//! The synthetic knowledge corpus and the real server that `root bench mcp`
//! and `root bench backup` search: deterministic pseudo-word chunks
//! ingested through the normal path (`upsert_page_chunks`, offline
//! `root/hashing-v1` embedder: 3072-dim vectors without a provider), a
//! live key for tenant `root`, and rate limits raised out of the way.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use serde_json::{Value, json};
use storage::IndexCorpus;

use crate::app::App;
use crate::app::AppState;
use crate::config::Config;
use crate::platform::api_keys::{self, KeyKind};
use crate::platform::tenancy::{self, TenantContext};
use crate::retrieval::PageUpsert;

/// A deterministic word source (xorshift over a fixed vocabulary), so
/// every run searches the same corpus with the same queries.
pub struct Words {
    state: u64,
    vocabulary: Vec<String>,
}

impl Words {
    /// The words of `seed` over a `size`-word vocabulary.
    pub fn new(seed: u64, size: usize) -> Words {
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

    /// `n` words separated by spaces.
    pub fn sentence(&mut self, n: usize) -> String {
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

/// The `p` quantile (0..=1, nearest rank) of sorted durations, in ms.
pub fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)].as_secs_f64() * 1e3
}

/// An HTTP client of the bench server, with tenant `root`'s live key.
#[derive(Clone)]
pub struct Target {
    client: reqwest::Client,
    base: String,
    key: String,
}

impl Target {
    /// One search through MCP `search_knowledge` (`mcp`) or `POST
    /// /api/v1/kb/search`; checks the answer.
    pub async fn search(&self, mcp: bool, query: &str, id: u64) -> anyhow::Result<()> {
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

/// A running server over `data_dir` and a client of it.
pub struct BenchServer {
    /// The server's state (store, retrieval, clock).
    pub state: AppState,
    /// The searched tenant (`root`, or `anchor` over a `bench retrieval` dir).
    pub tenant: storage::Tenant,
    /// A client with a live key of that tenant.
    pub target: Target,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl BenchServer {
    /// Start a server over `data_dir` (created or reopened) on a free
    /// loopback port, and mint a live key named `key_name` for the tenant
    /// `tenant_slug`.
    pub async fn start(
        data_dir: &Path,
        tenant_slug: &str,
        key_name: &str,
    ) -> anyhow::Result<BenchServer> {
        let vars: Vec<(String, String)> = [
            ("PORT", "0"),
            ("ROOT_BIND", "127.0.0.1"),
            ("ROOT_DATA_DIR", &data_dir.display().to_string()),
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
            api_keys::mint_for_slug(&state.store, tenant_slug, key_name, KeyKind::Live).await?;
        let target = Target {
            client: reqwest::Client::builder().build()?,
            base: format!("http://{}", app.local_addr()),
            key: minted.raw,
        };
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(app.run_until(async {
            let _ = stop_rx.await;
        }));
        Ok(BenchServer {
            state,
            tenant,
            target,
            stop,
            server,
        })
    }

    /// Ingest `chunks` chunks (`per_page` per page, 60 words each) into
    /// tenant `root` and wait until they are searchable; the elapsed time.
    pub async fn load(
        &self,
        words: &mut Words,
        chunks: usize,
        per_page: usize,
    ) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let pages = chunks.div_ceil(per_page.max(1));
        let ctx = TenantContext {
            tenant: Arc::new(self.tenant.clone()),
        };
        let mut max_seq = 0u64;
        let mut written = 0usize;
        for p in 0..pages {
            let n = per_page.min(chunks - written);
            let batch: Vec<(String, Option<Vec<f32>>)> =
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
                self.state.retrieval.upsert_page_chunks(upsert, batch),
            )
            .await?;
            max_seq = max_seq.max(w.index_seq.unwrap_or(0));
            if written % 10_000 < per_page {
                eprintln!(
                    "  ingest: {written} chunks after {:.1} s",
                    started.elapsed().as_secs_f64()
                );
            }
        }
        self.state
            .retrieval
            .registry()
            .wait_applied(
                self.tenant.id,
                IndexCorpus::Knowledge,
                max_seq,
                Duration::from_secs(24 * 3600),
            )
            .await?;
        Ok(started.elapsed())
    }

    /// Stop the server and wait for it.
    pub async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.server.await?
    }
}

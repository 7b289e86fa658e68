//! The tooling commands of the `root` CLI: `root bench …` and `root
//! eval-retrieval` (their arguments and dispatch), mounted by `crate::cli`
//! when the `tooling` feature is on.

use clap::{Args, Subcommand};

use super::{bench, eval};
use crate::config::Config;

/// `root bench …`
#[derive(Debug, Subcommand)]
pub enum BenchCmd {
    /// Durable enqueue latency and end-to-end queue throughput.
    Queue {
        /// Jobs per throughput run.
        #[arg(long, default_value_t = 5_000)]
        jobs: usize,
        /// Enqueues timed for the latency percentiles.
        #[arg(long, default_value_t = 2_000)]
        latency_samples: usize,
        /// The deep queue's depth.
        #[arg(long, default_value_t = 100_000)]
        deep: usize,
    },
    /// Platform overhead of one full runAgent turn (instant fake LLM,
    /// 3-tool parallel batch): median and p99 in µs.
    Agent {
        /// Timed turns per LLM transport.
        #[arg(long, default_value_t = 2_000)]
        turns: usize,
    },
    /// Slack ingress under load: ack latency of concurrent signed events
    /// with a slow model (none lost, none doubled), then ingest throughput.
    Slack {
        /// Concurrent signed DM events.
        #[arg(long, default_value_t = 200)]
        events: usize,
        /// The fake model's delay per call, in ms.
        #[arg(long, default_value_t = 500)]
        llm_delay_ms: u64,
        /// Public messages ingested in the second phase.
        #[arg(long, default_value_t = 500)]
        ingest: usize,
    },
    /// Inbound email acknowledgement: durable-202 latency and accepted
    /// mails/s with concurrent senders (workers off).
    Email {
        /// Mails posted in all.
        #[arg(long, default_value_t = 2_000)]
        mails: usize,
        /// Concurrent senders.
        #[arg(long, default_value_t = 32)]
        senders: usize,
    },
    /// Knowledge sync of an api_push source (offline embedder): documents/s
    /// to searchable, a no-change re-run (zero embedding calls) and a run
    /// with 10 % of the documents changed; medians over fresh data dirs.
    Sync {
        /// Documents pushed per run (at most 250).
        #[arg(long, default_value_t = 250)]
        documents: usize,
        /// Approximate HTML bytes per document.
        #[arg(long, default_value_t = 3_000)]
        bytes: usize,
        /// Repetitions, each on a fresh temp data dir.
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// MCP `search_knowledge` vs `POST /api/v1/kb/search` on a synthetic
    /// corpus (offline embedder): p50/p99 and q/s of each, the MCP overhead.
    Mcp {
        /// Chunks in the corpus.
        #[arg(long, default_value_t = 100_000)]
        chunks: usize,
        /// Timed sequential queries per path.
        #[arg(long, default_value_t = 500)]
        queries: usize,
        /// Concurrent clients of the throughput runs.
        #[arg(long, default_value_t = 4)]
        clients: usize,
    },
    /// Community-build tool calls: cold `root sandbox-run` children through
    /// the real runner (spawn, engine, trivial tool, duty-roster example):
    /// p50/p90/p99/max of wall time per call.
    Sandbox {
        /// Timed runs per series.
        #[arg(long, default_value_t = 200)]
        iterations: usize,
        /// Untimed runs per series first.
        #[arg(long, default_value_t = 10)]
        warmup: usize,
        /// Write the results as JSON to this file.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// A backup of a large knowledge database while searches are served:
    /// search p50/p99 unloaded and during back-to-back backups (ratio
    /// against 2×), backup seconds, bytes and MB/s.
    Backup {
        /// Data directory: loaded with the synthetic corpus on the first
        /// run, reused by later runs with the same --chunks (default: a
        /// temp dir, removed afterwards).
        #[arg(long)]
        data_dir: Option<std::path::PathBuf>,
        /// Chunks in the synthetic corpus (offline 3072-dim embedder).
        #[arg(long, default_value_t = 100_000)]
        chunks: usize,
        /// The anchor corpus directory, when --data-dir was loaded by
        /// `root bench retrieval --keep` (its query words are searched).
        #[arg(long)]
        corpus: Option<std::path::PathBuf>,
        /// Concurrent search clients.
        #[arg(long, default_value_t = 2)]
        clients: usize,
        /// Searches of the unloaded phase (all clients together).
        #[arg(long, default_value_t = 2_000)]
        queries: usize,
        /// Backups taken back to back while the clients search.
        #[arg(long, default_value_t = 3)]
        backups: usize,
        /// Write the results as JSON to this file.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// Knowledge search on the pgvector anchor corpus: ingest, fused / vector /
    /// keyword latency, recall, 2-client throughput, disk, cold start, memory.
    Retrieval(RetrievalBenchArgs),
    /// Cold-start child of `bench retrieval` (opens a loaded data dir).
    #[command(hide = true)]
    RetrievalOpen {
        /// Loaded data directory.
        #[arg(long)]
        data: std::path::PathBuf,
        /// Anchor corpus directory (for the queries).
        #[arg(long)]
        corpus: std::path::PathBuf,
        /// Rows the data directory holds.
        #[arg(long)]
        n: usize,
        /// Fused queries answered after the first.
        #[arg(long, default_value_t = 500)]
        queries: usize,
        /// `ef_search` override.
        #[arg(long)]
        ef_search: Option<usize>,
        /// redb page cache override, MiB.
        #[arg(long)]
        redb_cache_mb: Option<usize>,
        /// Graph quantisation override.
        #[arg(long)]
        quantization: Option<index::vector::Quantization>,
    },
}

/// `root bench retrieval`
#[derive(Debug, Args)]
pub struct RetrievalBenchArgs {
    /// Anchor corpus directory (`gen_corpus.py --out`, with `gt_<n>.npy` for recall).
    #[arg(long)]
    pub corpus: std::path::PathBuf,
    /// Load the first N chunks.
    #[arg(long, default_value_t = 10_000)]
    pub n: usize,
    /// Data directory (emptied first; default: `$TMPDIR/root-retrieval-bench-<n>`).
    #[arg(long)]
    pub data: Option<std::path::PathBuf>,
    /// Keep the data directory afterwards.
    #[arg(long)]
    pub keep: bool,
    /// Reuse the data directory when a previous run loaded the same corpus
    /// and N into it (no ingest figures then).
    #[arg(long)]
    pub reuse: bool,
    /// Concurrent page writers during ingest.
    #[arg(long, default_value_t = 4)]
    pub ingest_concurrency: usize,
    /// Warm-up queries (queries 0..W).
    #[arg(long, default_value_t = 100)]
    pub warmup: usize,
    /// Measured queries (queries W..W+M).
    #[arg(long, default_value_t = 500)]
    pub measured: usize,
    /// Timed passes over the measured queries (pooled).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Queries per client in the throughput runs.
    #[arg(long, default_value_t = 2_000)]
    pub per_client: usize,
    /// HNSW ef_search for the whole run (default: Root's, 40).
    #[arg(long)]
    pub ef_search: Option<usize>,
    /// HNSW ef_construction for the load (default: Root's).
    #[arg(long)]
    pub ef_add: Option<usize>,
    /// redb's page cache in MiB (default: Root's, `ROOT_REDB_CACHE_MB`).
    #[arg(long)]
    pub redb_cache_mb: Option<usize>,
    /// What the HNSW graph stores per vector: b1 (Root's), i8 or f16.
    #[arg(long)]
    pub quantization: Option<index::vector::Quantization>,
    /// ef_search values for the vector-lane sweep.
    #[arg(long, value_delimiter = ',', default_value = "24,32,40,64,100")]
    pub ef_sweep: Vec<usize>,
    /// Graph candidate counts the vector lane is also measured rescoring
    /// (Root's: max(2 × 30, 64) for the b1 graph); empty: none.
    #[arg(long, value_delimiter = ',', default_value = "32,48,96")]
    pub rescore_sweep: Vec<usize>,
    /// Also measure a cold start with the data files evicted from the page cache.
    #[arg(long)]
    pub evict_page_cache: bool,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
}

/// `root eval-retrieval`
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Golden set JSON (e.g. data/eval/kb-golden.json).
    #[arg(long)]
    pub golden: std::path::PathBuf,
    /// Measure the fused order alone (no LLM rerank).
    #[arg(long)]
    pub no_rerank: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Base URL of a running Root (REST mode; knowledge surface only).
    #[arg(long)]
    pub api: Option<String>,
    /// API key (rpk_…) of the tenant to load into, for --api.
    #[arg(long)]
    pub key: Option<String>,
    /// Write per-query first-relevant ranks per lane to this JSON file.
    #[arg(long)]
    pub per_query: Option<std::path::PathBuf>,
}

/// Run `root bench …`.
pub async fn run_bench(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
        BenchCmd::Queue {
            jobs,
            latency_samples,
            deep,
        } => bench::run_queue_bench(bench::QueueBenchOptions {
            jobs,
            latency_samples,
            deep,
        })
        .await
        .map(|_| ()),
        BenchCmd::Slack {
            events,
            llm_delay_ms,
            ingest,
        } => {
            bench::slack::run_slack_bench(bench::slack::SlackBenchOptions {
                events,
                llm_delay_ms,
                ingest,
            })
            .await
        }
        BenchCmd::Mcp {
            chunks,
            queries,
            clients,
        } => {
            bench::mcp::run_mcp_bench(bench::mcp::McpBenchOptions {
                chunks,
                queries,
                clients,
                ..Default::default()
            })
            .await
        }
        BenchCmd::Email { mails, senders } => {
            bench::email::run_email_bench(bench::email::EmailBenchOptions { mails, senders }).await
        }
        BenchCmd::Sync {
            documents,
            bytes,
            runs,
        } => {
            bench::sync::run_sync_bench(bench::sync::SyncBenchOptions {
                documents,
                bytes,
                runs,
            })
            .await
        }
        BenchCmd::Sandbox {
            iterations,
            warmup,
            out,
        } => bench::sandbox::run_sandbox_bench(bench::sandbox::SandboxBenchOptions {
            iterations,
            warmup,
            binary: None,
            out,
        })
        .await
        .map(|_| ()),
        BenchCmd::Backup {
            data_dir,
            chunks,
            corpus,
            clients,
            queries,
            backups,
            out,
        } => bench::backup::run_backup_bench(bench::backup::BackupBenchOptions {
            data_dir,
            chunks,
            corpus,
            clients,
            queries,
            backups,
            out,
        })
        .await
        .map(|_| ()),
        BenchCmd::Agent { turns } => {
            bench::agent::run_agent_bench(bench::agent::AgentBenchOptions { turns }).await
        }
        BenchCmd::Retrieval(a) => {
            bench::retrieval::run_retrieval_bench(bench::retrieval::RetrievalBenchOptions {
                corpus: a.corpus,
                n: a.n,
                data_dir: a.data,
                keep: a.keep,
                reuse: a.reuse,
                ingest_concurrency: a.ingest_concurrency,
                warmup: a.warmup,
                measured: a.measured,
                rounds: a.rounds,
                per_client: a.per_client,
                ef_search: a.ef_search,
                ef_add: a.ef_add,
                redb_cache_mb: a.redb_cache_mb,
                quantization: a.quantization,
                ef_sweep: a.ef_sweep,
                rescore_sweep: a.rescore_sweep,
                evict_page_cache: a.evict_page_cache,
                out: a.out,
            })
            .await
            .map(|_| ())
        }
        BenchCmd::RetrievalOpen {
            data,
            corpus,
            n,
            queries,
            ef_search,
            redb_cache_mb,
            quantization,
        } => {
            let tuning = bench::retrieval::Tuning {
                ef_search,
                ef_add: None,
                redb_cache_mb,
                quantization,
            };
            bench::retrieval::run_cold_open(&data, &corpus, n, queries, tuning).await
        }
    }
}

/// Run `root eval-retrieval`.
pub async fn run_eval(args: EvalArgs, config: Config) -> anyhow::Result<()> {
    eval::run(
        config,
        eval::EvalOptions {
            golden: args.golden,
            no_rerank: args.no_rerank,
            json: args.json,
            api: args.api,
            key: args.key,
            per_query: args.per_query,
        },
    )
    .await
    .map(|_| ())
}

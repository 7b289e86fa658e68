//! `root bench queue`: durable enqueue latency (p50/p99, sequential and
//! concurrent) and end-to-end throughput (enqueue → claim → complete) through
//! the real worker runtime with 1 and 4 concurrent workers, at queue depths
//! of 0 and 100k waiting jobs. Runs against a fresh database file in a temp
//! directory (real fsyncs); build with `--release`.
//!
//! `root bench retrieval` lives in [`retrieval`], `root bench agent` in
//! [`agent`], `root bench mcp` in [`mcp`], `root bench sandbox` in
//! [`sandbox`], `root bench backup` in [`backup`].

pub mod agent;
pub mod backup;
pub mod email;
pub mod mcp;
pub mod retrieval;
pub mod sandbox;
pub mod slack;
pub mod sync;
pub mod synthetic;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use storage::{JobQueue, MigrationStore, RedbStore};

use crate::app::AppState;
use crate::config::Config;
use crate::platform::clock::SystemClock;
use crate::queue::registry::QueueSpec;
use crate::queue::{Enqueue, HandlerResult, JobContext, JobHandler, WorkerConfig, Workers};

/// Options of `root bench queue`.
#[derive(Clone, Debug)]
pub struct QueueBenchOptions {
    /// Jobs timed per throughput run.
    pub jobs: usize,
    /// Enqueues timed for the latency percentiles.
    pub latency_samples: usize,
    /// The large depth (default 100 000).
    pub deep: usize,
}

impl Default for QueueBenchOptions {
    fn default() -> Self {
        QueueBenchOptions {
            jobs: 5_000,
            latency_samples: 2_000,
            deep: 100_000,
        }
    }
}

struct Count(Arc<AtomicU64>);

#[async_trait]
impl JobHandler for Count {
    async fn run(&self, _ctx: &mut JobContext) -> HandlerResult {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(None)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

async fn fill(
    state: &AppState,
    spec: &QueueSpec,
    n: usize,
    prefix: &str,
) -> anyhow::Result<Duration> {
    let t = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let per = n.div_ceil(64).max(1);
    for c in 0..n.div_ceil(per) {
        let q = state.queues.clone();
        let spec = *spec;
        let prefix = prefix.to_string();
        tasks.spawn(async move {
            for i in c * per..((c + 1) * per).min(n) {
                q.enqueue_with_spec(
                    &spec,
                    Enqueue {
                        id: Some(format!("{prefix}{i}")),
                        payload: serde_json::json!({"i": i}),
                        ..Default::default()
                    },
                )
                .await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    Ok(t.elapsed())
}

/// Run the benchmark and print a report.
pub async fn run_queue_bench(opts: QueueBenchOptions) -> anyhow::Result<String> {
    let dir = std::env::temp_dir().join(format!("root-bench-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let out = bench_in(&dir, &opts).await;
    let _ = std::fs::remove_dir_all(&dir);
    out
}

async fn bench_in(dir: &std::path::Path, opts: &QueueBenchOptions) -> anyhow::Result<String> {
    let mut report = String::new();
    let mut line = |s: String| {
        println!("{s}");
        report.push_str(&s);
        report.push('\n');
    };
    line(format!(
        "root bench queue — {} jobs per throughput run, {} latency samples, deep = {}",
        opts.jobs, opts.latency_samples, opts.deep
    ));
    for depth in [0usize, opts.deep] {
        let store = RedbStore::open(&dir.join(format!("depth-{depth}.redb")))?;
        store.migrate().await?;
        let state = AppState::new(
            Config::from_vars(Vec::new())?,
            store.clone(),
            Arc::new(SystemClock),
        )?;
        let backlog = QueueSpec {
            name: "bench-backlog",
            concurrency: 1,
            attempts: 1,
            backoff_ms: 0,
            repeat: None,
            rate_limit: None,
        };
        if depth > 0 {
            let took = fill(&state, &backlog, depth, "backlog-").await?;
            line(format!(
                "depth {depth}: prefilled {depth} waiting jobs in {:.1} s ({:.0} enqueues/s, 64 concurrent producers)",
                took.as_secs_f64(),
                depth as f64 / took.as_secs_f64()
            ));
        }
        // Sequential enqueue latency (one durable commit each).
        let lat_spec = QueueSpec {
            name: "bench-latency",
            concurrency: 1,
            attempts: 1,
            backoff_ms: 0,
            repeat: None,
            rate_limit: None,
        };
        let mut lat = Vec::with_capacity(opts.latency_samples);
        for i in 0..opts.latency_samples {
            let t = Instant::now();
            state
                .queues
                .enqueue_with_spec(
                    &lat_spec,
                    Enqueue {
                        id: Some(format!("l{i}")),
                        ..Default::default()
                    },
                )
                .await?;
            lat.push(t.elapsed());
        }
        lat.sort();
        line(format!(
            "depth {depth}: durable enqueue latency (sequential) p50 {:.3} ms, p99 {:.3} ms",
            percentile(&lat, 0.5).as_secs_f64() * 1e3,
            percentile(&lat, 0.99).as_secs_f64() * 1e3
        ));
        // Concurrent enqueue throughput (group commit).
        let conc_spec = QueueSpec {
            name: "bench-concurrent",
            ..lat_spec
        };
        let took = fill(&state, &conc_spec, opts.jobs, "c").await?;
        line(format!(
            "depth {depth}: concurrent enqueue, 64 producers: {:.0} jobs/s",
            opts.jobs as f64 / took.as_secs_f64()
        ));
        // End-to-end through the worker runtime.
        for workers_n in [1usize, 4] {
            let name: &'static str = if workers_n == 1 {
                "bench-e2e-1"
            } else {
                "bench-e2e-4"
            };
            let spec = QueueSpec {
                name,
                concurrency: workers_n,
                attempts: 1,
                backoff_ms: 0,
                repeat: None,
                rate_limit: None,
            };
            let done = Arc::new(AtomicU64::new(0));
            let mut w = Workers::new(
                state.queues.clone(),
                state.tenants.clone(),
                state.config.limits,
                WorkerConfig {
                    idle_poll: Duration::from_millis(5),
                    ..Default::default()
                },
            );
            w.register(spec, Arc::new(Count(done.clone())));
            let cancel = tokio_util::sync::CancellationToken::new();
            let handle = Arc::new(w).start(cancel.clone());
            let t = Instant::now();
            fill(&state, &spec, opts.jobs, "e").await?;
            while done.load(Ordering::Relaxed) < opts.jobs as u64 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            let took = t.elapsed();
            cancel.cancel();
            handle.await?;
            let stats = store.stats(name, state.clock.now()).await?;
            line(format!(
                "depth {depth}: end-to-end enqueue→claim→complete, {workers_n} worker(s): {:.0} jobs/s ({} completed, {:.2} s)",
                opts.jobs as f64 / took.as_secs_f64(),
                stats.completed,
                took.as_secs_f64()
            ));
        }
        store.close().await;
    }
    Ok(report)
}

//! Start-up and shutdown: open the data dir and storage, migrate, bind, serve
//! until a signal, then let in-flight requests finish and close storage.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use storage::{MigrationStore, RedbStore};
use tokio::net::TcpListener;

use crate::agent::{AgentKernel, AgentSettings, ReplySourceUsageHook};
use crate::ai::chat::ChatClient;
use crate::ai::embeddings::embedder_from_config;
use crate::ai::rerank::LlmReranker;
use crate::ai::usage::UsageRecorder;
use crate::config::Config;
use crate::identity::Identity;
use crate::integrations::{EscalationWebhook, IntegrationClient, Integrations};
use crate::limits::{LlmBudget, RequestLimiter};
use crate::outbound::OutboundPolicy;
use crate::platform::clock::{Clock, SystemClock};
use crate::platform::notify::{InterventionFanOut, LogSink, NotificationSink};
use crate::platform::tenancy::TenantCache;
use crate::prompts::Prompts;
use crate::queue::metrics::QueueMetrics;
use crate::queue::registry;
use crate::queue::{Heartbeat, Queues, WorkerConfig, Workers};
use crate::retrieval::audit::EmbeddingAudit;
use crate::retrieval::{IndexRegistry, Retrieval, VectorFloors};
use crate::trace::Tracer;

/// `/ready` reports `down` when the workers' heartbeat is older than this.
pub const WORKER_HEARTBEAT_MAX_AGE_MS: i64 = 30_000;

/// How long shutdown waits for intervention sinks still delivering.
pub const SINK_DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Shared state handed to every handler (cheap to clone).
#[derive(Clone)]
pub struct AppState {
    /// Parsed configuration.
    pub config: Arc<Config>,
    /// The one storage handle.
    pub store: RedbStore,
    /// 30-second tenant cache.
    pub tenants: TenantCache,
    /// The enqueue side of the durable queues.
    pub queues: Queues,
    /// Heartbeat of in-process workers; `None` when this process runs none.
    pub worker_heartbeat: Option<Heartbeat>,
    /// Where admin notices go.
    pub admin_sink: Arc<dyn NotificationSink>,
    /// Where new human interventions fan out (§15.2), after they are stored.
    pub interventions: InterventionFanOut,
    /// Search indexes, ingest and search (§10).
    pub retrieval: Retrieval,
    /// The LLM chat client (§3.1); without `OPENROUTER_API_KEY` every call
    /// is `AiError::NotConfigured` (check `llm.is_configured()`).
    pub llm: ChatClient,
    /// Prompt templates, tenant additions (60 s cache) and the system prompt (§4.5).
    pub prompts: Prompts,
    /// The agent kernel (`runAgent`, §4) with the post-batch hooks.
    pub agent: AgentKernel,
    /// Agent-run tracing (§3.3): local traces in redb, Opik export when configured.
    pub tracer: Tracer,
    /// Tenant backends speaking root-int/1 (§7): registry, manifest cache, client.
    pub integrations: Integrations,
    /// Who a Slack user is (§6): integration first, then channel trust.
    pub identity: Identity,
    /// Rate, concurrency and daily-budget limits of every expensive entry
    /// point (security finding M1); `run_channel_turn` admits turns here.
    pub limits: RequestLimiter,
}

impl AppState {
    /// State over an opened store (no listener, no workers started). Fails
    /// when the AI configuration cannot build a client (bad header values).
    pub fn new(config: Config, store: RedbStore, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        let budget = LlmBudget::new(store.clone(), clock.clone());
        let limits = RequestLimiter::new(config.request_limits, clock.clone(), budget.clone());
        let usage = UsageRecorder::new(Arc::new(store.clone()), clock.clone())
            .with_observer(Arc::new(budget));
        let llm = ChatClient::from_config(&config.llm, usage.clone()).context("LLM client")?;
        let embedder = embedder_from_config(&config, usage).context("embeddings client")?;
        // Rerank only with a provider: without one it could only fail, and
        // `NoReranker` says so more plainly than an error per search.
        let reranker: Option<Arc<dyn index::rerank::Reranker>> = llm
            .is_configured()
            .then(|| Arc::new(LlmReranker::new(llm.clone())) as _);
        tracing::info!(
            llm = llm.is_configured(),
            rerank = reranker.is_some() && config.search_llm_rerank,
            "LLM client ready"
        );
        let registry = IndexRegistry::new(&config.data_dir, store.clone(), embedder.model());
        let floors = config
            .search_vector_floors
            .iter()
            .fold(VectorFloors::default(), |f, (model, floor)| {
                f.with(model, *floor)
            });
        let retrieval = Retrieval::new(store.clone(), registry, embedder)
            .with_reranker(reranker, config.search_llm_rerank)
            .with_floors(floors);
        let tracer = Tracer::from_config(&config, store.clone(), clock.clone());
        let integrations = Integrations::new(
            store.clone(),
            IntegrationClient::new(store.clone(), OutboundPolicy::from_config(&config))
                .context("integration client")?,
            clock.clone(),
        );
        let identity = Identity::new(store.clone(), integrations.clone(), clock.clone());
        let admin_sink: Arc<dyn NotificationSink> = Arc::new(LogSink);
        let interventions =
            InterventionFanOut::new(vec![Arc::new(EscalationWebhook::new(integrations.clone()))])
                .with_limits(config.request_limits, clock.clone());
        let agent = AgentKernel::new(
            Arc::new(llm.clone()),
            AgentSettings::from_client(&llm),
            admin_sink.clone(),
            tracer.clone(),
        )
        .with_hook(Arc::new(ReplySourceUsageHook::new(
            store.clone(),
            clock.clone(),
        )));
        Ok(AppState {
            tracer,
            tenants: TenantCache::new(store.clone()),
            prompts: Prompts::new(store.clone(), clock.clone()),
            queues: Queues::new(store.clone(), clock),
            config: Arc::new(config),
            store,
            worker_heartbeat: None,
            admin_sink,
            interventions,
            retrieval,
            llm,
            agent,
            integrations,
            identity,
            limits,
        })
    }

    /// Let post-batch hooks and intervention sinks finish (sinks bounded by
    /// [`SINK_DRAIN_TIMEOUT`]), flush the search indexes and queued traces,
    /// then close storage.
    pub async fn close(&self) {
        self.agent.hooks_idle().await;
        if tokio::time::timeout(SINK_DRAIN_TIMEOUT, self.interventions.idle())
            .await
            .is_err()
        {
            tracing::warn!("intervention sinks still delivering at shutdown; abandoned");
        }
        self.retrieval.registry().close().await;
        self.tracer.flush().await;
        self.store.close().await;
    }
}

/// The worker runtime with every handler that exists today registered.
/// A §13 queue whose feature has not landed has no handler and no schedule.
pub fn build_workers(state: &AppState, cfg: WorkerConfig) -> Workers {
    let mut workers = Workers::new(
        state.queues.clone(),
        state.tenants.clone(),
        state.config.limits,
        cfg,
    );
    let metrics = QueueMetrics::new(
        state.store.clone(),
        state.queues.clock().clone(),
        state.admin_sink.clone(),
        state.config.queue_alerts,
    )
    .with_trace_retention(state.tracer.clone());
    let spec = registry::spec(registry::QUEUE_METRICS).expect("queue-metrics is in the §13 table");
    workers.register(*spec, Arc::new(metrics));
    let spec =
        registry::spec(registry::EMBEDDING_AUDIT).expect("embedding-audit is in the §13 table");
    workers.register(
        *spec,
        Arc::new(EmbeddingAudit::new(state.retrieval.clone())),
    );
    workers
}

/// Running workers and their scheduler; [`RunningWorkers::stop`] shuts both down.
pub struct RunningWorkers {
    cancel: tokio_util::sync::CancellationToken,
    handle: tokio::task::JoinHandle<()>,
    scheduler: tokio_cron_scheduler::JobScheduler,
}

impl RunningWorkers {
    /// Start `workers` and the repeatables of their queues.
    pub async fn start(workers: Arc<Workers>) -> anyhow::Result<RunningWorkers> {
        let cancel = tokio_util::sync::CancellationToken::new();
        let scheduler =
            crate::queue::scheduler::start(workers.queues().clone(), workers.registered()).await?;
        let handle = workers.start(cancel.clone());
        Ok(RunningWorkers {
            cancel,
            handle,
            scheduler,
        })
    }

    /// Stop ticking and claiming, wait for running jobs (bounded), release the rest.
    pub async fn stop(mut self) {
        if let Err(e) = self.scheduler.shutdown().await {
            tracing::warn!(error = %e, "scheduler shutdown");
        }
        self.cancel.cancel();
        if let Err(e) = self.handle.await {
            tracing::error!(error = %e, "worker supervisor ended abnormally");
        }
    }
}

/// Open (creating if needed) the data dir and the redb file, then migrate.
pub async fn open_store(config: &Config) -> anyhow::Result<RedbStore> {
    let dir = &config.data_dir;
    create_private_dir(dir).with_context(|| {
        format!(
            "data directory {} cannot be created (ROOT_DATA_DIR)",
            dir.display()
        )
    })?;
    let path = config.database_path();
    let store = RedbStore::open(&path)?;
    let applied = store
        .migrate()
        .await
        .with_context(|| format!("migrating {}", path.display()))?;
    if !applied.is_empty() {
        tracing::info!(count = applied.len(), path = %path.display(), "migrations applied");
    }
    Ok(store)
}

/// Create `dir` (and missing parents) readable by this user only (0700 on
/// Unix): it holds every tenant's rows, secrets and indexes. An existing
/// directory is left as the operator made it, with a warning when others
/// can read it.
pub fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        if dir.is_dir() {
            let mode = std::fs::metadata(dir)?.permissions().mode();
            if mode & 0o077 != 0 {
                tracing::warn!(
                    dir = %dir.display(),
                    mode = format!("{:o}", mode & 0o777),
                    "the data directory is accessible to other users; `chmod 700` it"
                );
            }
            return Ok(());
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

/// A bound, ready-to-serve application.
pub struct App {
    state: AppState,
    listener: TcpListener,
    workers: Option<Arc<Workers>>,
}

impl App {
    /// Open storage, migrate, and bind `bind:PORT` (port 0 picks a free port).
    pub async fn build(config: Config) -> anyhow::Result<App> {
        let store = open_store(&config).await?;
        let addr = format!("{}:{}", config.bind, config.port);
        let listener = TcpListener::bind(&addr)
            .await
            .with_context(|| format!("cannot listen on {addr} (PORT / ROOT_BIND)"))?;
        let run_workers = config.run_workers;
        let mut state = AppState::new(config, store, Arc::new(SystemClock))?;
        let workers = run_workers.then(|| Arc::new(build_workers(&state, WorkerConfig::default())));
        state.worker_heartbeat = workers.as_ref().map(|w| w.heartbeat());
        Ok(App {
            state,
            listener,
            workers,
        })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The shared state (tests use it to seed data).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serve until `shutdown` resolves; in-flight requests finish, then
    /// storage is flushed and closed.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let App {
            state,
            listener,
            workers,
        } = self;
        let running = match workers {
            Some(w) => Some(RunningWorkers::start(w).await?),
            None => None,
        };
        tracing::info!(addr = %listener.local_addr()?, workers = running.is_some(), "root listening");
        if state.config.dev_harness {
            tracing::warn!(
                "!!! ROOT_DEV_HARNESS=true: POST /dev/simulate-message is mounted and runs turns as \
                 any Slack user of an API key's tenant. Loopback only; never on a shared or public host. !!!"
            );
        }
        // Replay the index outbox and rebuild stale indexes before traffic
        // needs them; searches that arrive first wait for the same open.
        let registry = state.retrieval.registry().clone();
        tokio::spawn(async move {
            match registry.recover().await {
                Ok(n) => tracing::info!(indexes = n, "search indexes recovered"),
                Err(e) => tracing::error!(error = %e, "search index recovery failed"),
            }
        });
        let served = crate::web::serve(listener, state.clone(), shutdown)
            .await
            .context("HTTP server failed");
        if let Some(r) = running {
            tracing::info!("shutting down: stopping workers");
            r.stop().await;
        }
        tracing::info!("shutting down: flushing indexes, closing storage");
        state.close().await;
        served
    }
}

/// `root worker`: run the workers (and their repeatables) without HTTP until
/// `shutdown` resolves. Not at the same time as `serve` on the same data dir.
pub async fn run_worker_until(
    config: Config,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let store = open_store(&config).await?;
    let state = AppState::new(config, store, Arc::new(SystemClock))?;
    let workers = Arc::new(build_workers(&state, WorkerConfig::default()));
    let names: Vec<&str> = workers.registered().iter().map(|s| s.name).collect();
    tracing::info!(queues = ?names, "root worker running");
    let running = RunningWorkers::start(workers).await?;
    shutdown.await;
    running.stop().await;
    state.close().await;
    Ok(())
}

impl App {
    /// The in-process worker runtime, if this app runs one.
    pub fn workers(&self) -> Option<&Arc<Workers>> {
        self.workers.as_ref()
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => tracing::info!("SIGINT received"),
        _ = term => tracing::info!("SIGTERM received"),
    }
}

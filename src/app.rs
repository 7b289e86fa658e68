//! Start-up and shutdown: open the data dir and storage, migrate, bind, serve
//! until a signal, then let in-flight requests finish and close storage.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use storage::{MigrationStore, RedbStore};
use tokio::net::TcpListener;

use crate::channels::email::reply::EmailReply;
use crate::channels::follow_up_sweep::FollowUpSweep;
use crate::channels::mentions::ReplyMentionSweep;
use crate::channels::slack::distill::ThreadDistill;
use crate::channels::slack::ingest::SlackIngest;
use crate::channels::slack_join::ChannelJoinSweep;
use crate::config::Config;
use crate::identity::PrincipalRosterSweep;
use crate::knowledge::runs::SyncJobHandler;
use crate::knowledge::scheduler::SchedulerTick;
use crate::knowledge::slack_extraction::SlackExtraction;
use crate::memory::{MemoryCompaction, WorkSavedEstimator};
use crate::ops::admin::AdminSocket;
use crate::ops::schedule::{self, BACKUP_CRON, BackupSchedule};
use crate::platform::clock::SystemClock;
use crate::queue::metrics::QueueMetrics;
use crate::queue::{WorkerConfig, Workers};
use crate::retrieval::audit::EmbeddingAudit;
pub use crate::state::AppState;
use crate::tools::core::slack::AdminBroadcast;

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
        state.clock.clone(),
        state.admin_sink.clone(),
        state.config.queue_alerts,
    )
    .with_trace_retention(state.tracer.clone());
    workers
        .register_job(metrics)
        .expect("queue-metrics is in the §13 table");
    workers
        .register_job(EmbeddingAudit::new(state.retrieval.clone()))
        .expect("embedding-audit is in the §13 table");
    let join_sweep: ChannelJoinSweep = state.slack_join.clone();
    workers
        .register_job(join_sweep)
        .expect("channel-join-sweep is in the §13 table");
    workers
        .register_job(SlackIngest::new(
            state.slack.clone(),
            state.retrieval.clone(),
        ))
        .expect("slack-knowledge-ingest is in the §13 table");
    workers
        .register_job(ThreadDistill::new(state.slack.clone()))
        .expect("slack-thread-distill is in the §13 table");
    workers
        .register_job(EmailReply::new(
            state.turns.clone(),
            state.config.clone(),
            state.email.reply_budget().clone(),
        ))
        .expect("email-inbound is in the §13 table");
    workers
        .register_job(AdminBroadcast::new(state.slack.workspaces().clone()))
        .expect("slack-admin-broadcast is in the §13 table");
    workers
        .register_job(SyncJobHandler(state.knowledge.clone()))
        .expect("knowledge-source-sync is in the §13 table");
    workers
        .register_job(SchedulerTick(state.knowledge.clone()))
        .expect("knowledge-source-scheduler is in the §13 table");
    let follow_ups: FollowUpSweep = state.follow_ups.clone();
    workers
        .register_job(follow_ups)
        .expect("follow-up-sweep is in the §13 table");
    workers
        .register_job(MemoryCompaction::new(
            state.store.clone(),
            state.llm.clone(),
            state.prompts.clone(),
            state.clock.clone(),
        ))
        .expect("conversation-memory is in the §13 table");
    workers
        .register_job(WorkSavedEstimator::new(
            state.store.clone(),
            state.llm.clone(),
            state.prompts.clone(),
            state.clock.clone(),
        ))
        .expect("conversation-work-saved is in the §13 table");
    workers
        .register_job(PrincipalRosterSweep::new(
            state.identity.clone(),
            state.queues.clone(),
        ))
        .expect("principal-roster-sweep is in the §13 table");
    workers
        .register_job(ReplyMentionSweep::new(
            state.turns.mentions.clone(),
            state.queues.clone(),
        ))
        .expect("reply-mention-sweep is in the §13 table");
    let extraction: SlackExtraction = SlackExtraction::new(
        state.llm.clone(),
        state.prompts.clone(),
        state.retrieval.clone(),
        state.identity.clone(),
        state.queues.clone(),
        state.clock.clone(),
    );
    workers
        .register_job(extraction)
        .expect("slack-knowledge-extraction is in the §13 table");
    workers
}

/// Running workers and their scheduler; [`RunningWorkers::stop`] shuts both down.
pub struct RunningWorkers {
    cancel: tokio_util::sync::CancellationToken,
    handle: tokio::task::JoinHandle<()>,
    scheduler: tokio_cron_scheduler::JobScheduler,
}

impl RunningWorkers {
    /// Start `workers`, the repeatables of their queues and, with
    /// `ROOT_BACKUP_DIR`, the daily backup on the same scheduler.
    pub async fn start(
        workers: Arc<Workers>,
        backups: Option<BackupSchedule>,
    ) -> anyhow::Result<RunningWorkers> {
        let cancel = tokio_util::sync::CancellationToken::new();
        let scheduler =
            crate::queue::scheduler::start(workers.queues().clone(), workers.registered()).await?;
        if let Some(b) = backups {
            let daily = b.clone();
            let job = tokio_cron_scheduler::Job::new_async(BACKUP_CRON, move |_id, _lock| {
                let b = daily.clone();
                Box::pin(async move { b.run_logged().await })
            })?;
            scheduler.add(job).await?;
            tracing::info!(dir = %b.dir.display(), keep = b.keep, cron = BACKUP_CRON, "daily backup scheduled");
            tokio::spawn(async move {
                match b.catch_up().await {
                    Ok(Some(p)) => tracing::info!(backup = %p.display(), "catch-up backup written"),
                    Ok(None) => {}
                    Err(e) => tracing::error!(error = %format!("{e:#}"), "catch-up backup failed"),
                }
            });
        }
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
    let store = RedbStore::open_with_cache(&path, config.redb_cache_mb << 20)?;
    let applied = store
        .migrate()
        .await
        .with_context(|| format!("migrating {}", path.display()))?;
    if !applied.is_empty() {
        tracing::info!(count = applied.len(), path = %path.display(), "migrations applied");
    }
    Ok(store)
}

pub use crate::ops::create_private_dir;

/// A bound, ready-to-serve application.
pub struct App {
    state: AppState,
    listener: TcpListener,
    workers: Option<Arc<Workers>>,
}

impl App {
    /// Open storage, migrate, and bind `bind:PORT` (port 0 picks a free port).
    pub async fn build(config: Config) -> anyhow::Result<App> {
        Self::build_with_clock(config, Arc::new(SystemClock)).await
    }

    /// [`App::build`] on `clock` (tests step a manual one through debounces
    /// and schedules).
    pub async fn build_with_clock(
        config: Config,
        clock: Arc<dyn crate::platform::clock::Clock>,
    ) -> anyhow::Result<App> {
        let store = open_store(&config).await?;
        let addr = format!("{}:{}", config.bind, config.port);
        let listener = TcpListener::bind(&addr)
            .await
            .with_context(|| format!("cannot listen on {addr} (PORT / ROOT_BIND)"))?;
        let run_workers = config.run_workers;
        let mut state = AppState::new(config, store, clock)?;
        let workers = run_workers.then(|| Arc::new(build_workers(&state, WorkerConfig::default())));
        state.worker_heartbeat = workers.as_ref().map(|w| w.heartbeat());
        state.worker_handlers = workers
            .as_ref()
            .map(|w| w.registered().iter().map(|s| s.name).collect())
            .unwrap_or_default();
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
            Some(w) => Some(
                RunningWorkers::start(
                    w,
                    schedule::from_config(&state.config, &state.store, state.clock.clone()),
                )
                .await?,
            ),
            None => None,
        };
        tracing::info!(addr = %listener.local_addr()?, workers = running.is_some(), "root listening");
        if state.config.dev_harness {
            tracing::warn!(
                "!!! ROOT_DEV_HARNESS=true: POST /dev/simulate-message is mounted and runs turns as \
                 any Slack user of an API key's tenant. Loopback only; never on a shared or public host. !!!"
            );
        }
        if state.config.auth_dev_bypass {
            tracing::warn!(
                "!!! AUTH_DEV_BYPASS=true: GET /auth/dev-login?email= signs anyone who can reach this \
                 server in as any allowlisted address, platform admins included, without mail. \
                 Loopback only; never on a shared or public host. !!!"
            );
        }
        if !state.config.trusted_proxies.is_empty() {
            tracing::info!(
                proxies = %state.config.trusted_proxies,
                "X-Forwarded-For is read from these proxies (ROOT_TRUSTED_PROXIES)"
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
        let admin = AdminSocket::start(
            &state.config.data_dir,
            state.store.clone(),
            state.clock.clone(),
        );
        let served = crate::web::serve(listener, state.clone(), shutdown)
            .await
            .context("HTTP server failed");
        if let Some(a) = admin {
            a.stop().await;
        }
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
    let backups = schedule::from_config(&state.config, &state.store, state.clock.clone());
    let running = RunningWorkers::start(workers, backups).await?;
    let admin = AdminSocket::start(
        &state.config.data_dir,
        state.store.clone(),
        state.clock.clone(),
    );
    shutdown.await;
    if let Some(a) = admin {
        a.stop().await;
    }
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

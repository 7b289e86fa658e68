//! `AppState`: the services of a running app, wired once from `Config`
//! (storage, queues, retrieval, LLM, agent, integrations, identity, limits,
//! the turn runner). Its own module below `web` and `app`: the web layer's
//! handlers take it as axum state, and `app` (the composition root that
//! also starts the web layer) builds it — neither imports the other's
//! wiring.

use std::sync::Arc;

use anyhow::Context;
use storage::RedbStore;

use crate::agent::{AgentKernel, AgentSettings, ReplySourceUsageHook};
use crate::ai::chat::ChatClient;
use crate::ai::embeddings::embedder_from_config;
use crate::ai::usage::UsageRecorder;
use crate::builds::sandbox::SandboxRunner;
use crate::channels::action_alerts::ActionAlertHook;
use crate::channels::admin_config::{AdminConfig, AdminServices};
use crate::channels::capability_gap::CapabilityGaps;
use crate::channels::email::EmailChannel;
use crate::channels::email::directory::EmailDirectory;
use crate::channels::email::sink::EmailSink;
use crate::channels::follow_up_sweep::FollowUpSweep;
use crate::channels::mentions::ReplyMentions;
use crate::channels::outbound_message::OutboundMessages;
use crate::channels::private_dm::PrivateDm;
use crate::channels::slack::SlackChannel;
use crate::channels::slack_join::ChannelJoinSweep;
use crate::channels::slack_setup::SlackSetup;
use crate::channels::turn::TurnServices;
use crate::config::Config;
use crate::identity::Identity;
use crate::integrations::{EscalationWebhook, IntegrationClient, Integrations};
use crate::knowledge::KnowledgeSync;
use crate::knowledge::fetch::Fetcher;
use crate::limits::{LlmBudget, RequestLimiter};
use crate::outbound::OutboundPolicy;
use crate::platform::clock::Clock;
use crate::platform::notify::{InterventionFanOut, LogSink, NotificationSink};
use crate::platform::tenancy::TenantCache;
use crate::prompts::Prompts;
use crate::queue::{Heartbeat, Queues};
use crate::retrieval::rerank::LlmReranker;
use crate::retrieval::{IndexRegistry, Retrieval, VectorFloors};
use crate::slack::TeamDirectory;
use crate::slack::Workspaces;
use crate::slack::sink::SlackSink;
use crate::tools::{CommunityBuilds, ToolServices};
use crate::trace::Tracer;

/// `/ready` reports `down` when the workers' heartbeat is older than this.
pub const WORKER_HEARTBEAT_MAX_AGE_MS: i64 = 30_000;

/// How long shutdown waits for intervention sinks still delivering.
pub const SINK_DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Shared state handed to every handler (cheap to clone).
///
/// Cheap to clone — one `Arc` (axum clones the state for every request; the
/// services inside are dozens of `Arc`s and caches). Fields read through
/// `Deref`; a write (`state.admin_sink = …`, before sharing) goes through
/// `Arc::make_mut`.
#[derive(Clone)]
pub struct AppState(Arc<AppStateInner>);

impl std::ops::Deref for AppState {
    type Target = AppStateInner;
    fn deref(&self) -> &AppStateInner {
        &self.0
    }
}

impl std::ops::DerefMut for AppState {
    fn deref_mut(&mut self) -> &mut AppStateInner {
        Arc::make_mut(&mut self.0)
    }
}

/// The services of [`AppState`].
#[derive(Clone)]
pub struct AppStateInner {
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
    /// The queues the in-process workers have a handler for (empty when
    /// this process runs none) — the queue overview shows it per queue.
    pub worker_handlers: Vec<&'static str>,
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
    /// The one clock (tests inject a manual one).
    pub clock: Arc<dyn Clock>,
    /// What core tool handlers use (§5).
    pub tools: ToolServices,
    /// What a channel turn uses (§8.1): `run_channel_turn(&state.turns, …)`.
    pub turns: TurnServices,
    /// The Slack channel (§8.2): dedupe, per-tenant clients, event handling.
    pub slack: SlackChannel,
    /// Setting a tenant's Slack credentials (CLI and API, §8.2).
    pub slack_setup: SlackSetup,
    /// `team_id` → tenants, for the legacy `/slack/events` route (§8.2).
    pub slack_teams: TeamDirectory,
    /// The `channel-join-sweep` handler (§13), registered by `build_workers`.
    pub slack_join: ChannelJoinSweep,
    /// The email channel (§8.3): tenant routing, dedupe, durable ingress.
    pub email: EmailChannel,
    /// Knowledge sources and sync (§11): sources, runs, the two job handlers.
    pub knowledge: KnowledgeSync,
    /// The `follow-up-sweep` handler (§13), registered by `build_workers`.
    pub follow_ups: FollowUpSweep,
    /// `POST /api/v1/messages` (§12.2): Slack and email sends for the API.
    pub messages: OutboundMessages,
    /// Dashboard sign-in: magic links, sessions, CSRF (§14.1).
    pub auth: crate::auth::DashboardAuth,
}

impl AppState {
    /// State over an opened store (no listener, no workers started). Fails
    /// when the AI configuration cannot build a client (bad header values).
    pub fn new(config: Config, store: RedbStore, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        Self::with_admin_sink(config, store, clock, Arc::new(LogSink))
    }

    /// [`AppState::new`] with admin notices going to `admin_sink` (every
    /// service that raises notices gets this one sink at construction).
    pub fn with_admin_sink(
        config: Config,
        store: RedbStore,
        clock: Arc<dyn Clock>,
        admin_sink: Arc<dyn NotificationSink>,
    ) -> anyhow::Result<Self> {
        let budget = LlmBudget::new(store.clone(), clock.clone());
        let config = Arc::new(config);
        let workspaces = Workspaces::new(store.clone(), config.clone()).context("slack client")?;
        let queues = Queues::new(store.clone(), clock.clone());
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
            .with_floors(floors)
            .with_clock(clock.clone());
        let tracer = Tracer::from_config(&config, store.clone(), clock.clone());
        let integrations = Integrations::new(
            store.clone(),
            IntegrationClient::new(store.clone(), OutboundPolicy::from_config(&config))
                .context("integration client")?
                .with_clock(clock.clone()),
            clock.clone(),
        );
        let identity = Identity::new(store.clone(), integrations.clone(), clock.clone());
        let interventions = InterventionFanOut::new(vec![
            Arc::new(EscalationWebhook::new(integrations.clone())),
            Arc::new(SlackSink::new(workspaces.clone())),
            Arc::new(EmailSink::new(store.clone(), config.clone(), clock.clone())),
        ])
        .with_limits(config.request_limits, clock.clone());
        let prompts = Prompts::new(store.clone(), clock.clone());
        let private_dm = PrivateDm::new(
            store.clone(),
            config.clone(),
            clock.clone(),
            workspaces.clone(),
        );
        let agent = AgentKernel::new(
            Arc::new(llm.clone()),
            AgentSettings::from_client(&llm),
            admin_sink.clone(),
            tracer.clone(),
        )
        .with_hook(Arc::new(ReplySourceUsageHook::new(
            store.clone(),
            clock.clone(),
        )))
        .with_hook(Arc::new(ActionAlertHook::new(
            store.clone(),
            llm.clone(),
            prompts.clone(),
            private_dm.clone(),
            clock.clone(),
        )));
        let fetcher = Fetcher::new(
            OutboundPolicy::from_config(&config),
            &config.platform_base_url,
            clock.clone(),
        )
        .map_err(|e| anyhow::anyhow!("knowledge fetcher: {e}"))?;
        let knowledge = KnowledgeSync::new(
            store.clone(),
            retrieval.clone(),
            llm.clone(),
            fetcher,
            queues.clone(),
            clock.clone(),
            config.limits,
        );
        let auth = crate::auth::DashboardAuth::new(
            store.clone(),
            clock.clone(),
            config.clone(),
            crate::email::send::PlatformSender::from_config(&config)
                .context("dashboard sign-in mail")?,
        );
        let tenants = TenantCache::new(store.clone());
        let tools = ToolServices {
            store: store.clone(),
            retrieval: retrieval.clone(),
            llm: llm.clone(),
            clock: clock.clone(),
            sinks: admin_sink.clone(),
            interventions: interventions.clone(),
            platform_base_url: config.platform_base_url.clone(),
            slack: workspaces.clone(),
            queues: queues.clone(),
        };
        let turns = TurnServices {
            store: store.clone(),
            limits: limits.clone(),
            admin_sink: admin_sink.clone(),
            integrations: integrations.clone(),
            identity: identity.clone(),
            prompts: prompts.clone(),
            agent: agent.clone(),
            tools: tools.clone(),
            mentions: ReplyMentions::new(store.clone(), clock.clone()),
            gaps: CapabilityGaps::new(tools.clone(), prompts.clone(), tracer.clone()),
            admin_config: AdminConfig::new(AdminServices {
                knowledge: knowledge.clone(),
                prompts: prompts.clone(),
                integrations: integrations.clone(),
                policy: OutboundPolicy::from_config(&config),
                auth: auth.clone(),
                tenants: tenants.clone(),
                identity: identity.clone(),
            }),
            builds: CommunityBuilds::new(SandboxRunner::new(
                sandbox_binary(&config)?,
                OutboundPolicy::from_config(&config),
            )),
        };
        let follow_ups = FollowUpSweep::new(turns.clone(), private_dm);
        let slack = SlackChannel::new(
            turns.clone(),
            queues.clone(),
            retrieval.clone(),
            config.clone(),
            workspaces.clone(),
        );
        let slack_teams = TeamDirectory::new(store.clone(), config.clone(), clock.clone());
        let slack_setup = SlackSetup::new(store.clone(), queues.clone(), clock.clone(), &config)
            .context("slack setup")?
            .with_team_directory(slack_teams.clone())
            .with_workspaces(workspaces.clone());
        let slack_join = ChannelJoinSweep::new(store.clone(), workspaces.clone());
        let email = EmailChannel::new(
            queues.clone(),
            store.clone(),
            config.clone(),
            EmailDirectory::new(store.clone(), clock.clone()),
            clock.clone(),
        );
        let messages = OutboundMessages::new(
            store.clone(),
            config.clone(),
            clock.clone(),
            workspaces.clone(),
            identity.clone(),
        );
        Ok(AppState(Arc::new(AppStateInner {
            auth,
            messages,
            follow_ups,
            knowledge,
            email,
            slack_join,
            slack,
            slack_setup,
            slack_teams,
            tracer,
            tenants,
            prompts,
            queues,
            clock,
            tools,
            turns,
            config,
            store,
            worker_heartbeat: None,
            worker_handlers: Vec::new(),
            admin_sink,
            interventions,
            retrieval,
            llm,
            agent,
            integrations,
            identity,
            limits,
        })))
    }

    /// Delete the tenant `slug` and its dev shadow while serving (the
    /// platform API): rows, queued jobs, the open index handles (dropped
    /// from the registry before their directories go) and every per-tenant
    /// cache of this process, so nothing answers for the pair afterwards.
    pub async fn delete_tenant(&self, slug: &str) -> anyhow::Result<crate::ops::tenant::Deleted> {
        use storage::TenantStore;
        let mut pair: Vec<storage::Tenant> = Vec::new();
        if let Some(live) = self.store.tenant_by_slug(slug).await? {
            pair.extend(self.store.dev_shadow_of(live.id).await?);
            pair.push(live);
        }
        let done = crate::ops::tenant::delete_tenant_with(
            &self.store,
            &self.config.data_dir,
            slug,
            Some(self.retrieval.registry()),
        )
        .await?;
        for t in &pair {
            self.forget_tenant(t);
        }
        Ok(done)
    }

    /// Drop every cached piece of `tenant` this process holds: the tenant
    /// rows, prompt additions, identity resolutions, Slack clients and team
    /// map, the email routing snapshot and the mention directory.
    pub fn forget_tenant(&self, tenant: &storage::Tenant) {
        self.tenants.invalidate(tenant);
        self.prompts.forget(tenant.id);
        self.identity.invalidate_all();
        self.slack.workspaces().forget(tenant.id);
        self.slack_teams.invalidate();
        self.email.directory().invalidate();
        self.turns.mentions.forget(tenant.id);
    }

    /// Let post-batch hooks and intervention sinks finish (sinks bounded by
    /// [`SINK_DRAIN_TIMEOUT`]), flush the search indexes and queued traces,
    /// then close storage.
    pub async fn close(&self) {
        if tokio::time::timeout(SINK_DRAIN_TIMEOUT, self.slack.idle())
            .await
            .is_err()
        {
            tracing::warn!("slack replies still running at shutdown; abandoned");
        }
        self.agent.hooks_idle().await;
        if tokio::time::timeout(SINK_DRAIN_TIMEOUT, self.turns.gaps.idle())
            .await
            .is_err()
        {
            tracing::warn!("capability-gap assessments still running at shutdown; abandoned");
        }
        if tokio::time::timeout(SINK_DRAIN_TIMEOUT, self.turns.mentions.idle())
            .await
            .is_err()
        {
            tracing::warn!("reply mention scans still running at shutdown; abandoned");
        }
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

/// The binary community-build tool calls re-execute (§15.1):
/// `ROOT_SANDBOX_BINARY`, else this very executable.
fn sandbox_binary(config: &Config) -> anyhow::Result<std::path::PathBuf> {
    match &config.sandbox_binary {
        Some(path) => Ok(path.clone()),
        None => std::env::current_exe().context("locating the root binary for the sandbox"),
    }
}

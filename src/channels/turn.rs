//! `runChannelTurn` (§8.1): the one turn runner the web chat, the REST
//! agent-turn route and the dev harness share. Identity → tool surface →
//! history → inbound log → system prompt → `runAgent` → outbound log.
//!
//! Identity order (§8.1): (1) an API caller's stable user id → the
//! principal with that ref; (2) an email address → integration, then email
//! trust; (3) a Slack user id → `resolve_slack_member`; (4) otherwise the
//! synthetic `email:<addr>` or `anonymous`, on the reserved `unresolved`
//! tier.
//!
//! The inbound row is written (durably) before the model runs, so a crash
//! mid-turn still shows what the member asked; the outbound row after.
//!
//! Before anything else the turn passes the shared limits
//! (`TurnServices::limits`: message size, turn rate, turns in flight, daily LLM
//! budget); a refusal is [`TurnError::Refused`], which API routes answer with
//! 400/429 and channels with [`TurnRefusal::member_text`].

use std::sync::Arc;

use serde::Serialize;
use serde_json::json;
use storage::{Channel, Direction, RedbStore};
use tokio::sync::mpsc;
use uuid::Uuid;

use super::caller::{is_dashboard_admin, member_memory, resolve_caller, turn_principal};
use super::conversation::{Exchange, load_history, thread_key_in};
use super::links::{LinkIssuer, link_state};
use super::mentions::ReplyMentions;
use crate::agent::AgentKernel;
use crate::agent::{AgentInput, AgentOptions, ExecutedToolCall, ToolCaller, ToolImage};
use crate::ai::chat::{ChatDelta, ChatMessage};
use crate::ai::usage::{UsageTotals, collect_usage};
use crate::email::Mailbox;
use crate::identity::{Identity, Member, TierSource};
use crate::integrations::EmailDelegation;
use crate::integrations::Integrations;
use crate::integrations::registry::PrimedIntegration;
use crate::limits::caps::{MAX_DISPLAY_NAME_CHARS, bound_history, cut_chars};
use crate::limits::{RequestLimiter, TurnRefusal};
use crate::platform::notify::NotificationSink;
use crate::platform::settings::AccessPolicy;
use crate::platform::tenancy;
use crate::platform::tiers::Tier;
use crate::prompts::Prompts;
use crate::prompts::system::{Channel as PromptChannel, LinkDestination, SystemPromptInput};
use crate::tools::gating::{BuildToolOffer, GateInput, Surface, ToolSurface, allowed_tools};
use crate::tools::integration::{PrimedInvoker, integration_offers, tier_declarations};
use crate::tools::{
    CommunityBuilds, CoreTools, ToolGate, ToolServices, TurnContext, TurnPrincipal, TurnTools,
};

/// The ref of a caller nobody identified (§8.1 step 4).
pub const ANONYMOUS_REF: &str = "anonymous";

/// Who sent a turn, beyond its channel: what the caller may claim to be.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TurnOrigin {
    /// A channel that identified the caller itself (Slack, email, the REST
    /// API with its key, the dashboard's `/chat` after sign-in).
    #[default]
    Channel,
    /// The token-only web test chat (§8.4): anyone holding the tenant's
    /// chat token names any address in `email`. That picks a member or mentor
    /// tier to try (tier resolution), never an admin's rights, their
    /// conversation memory or their history: the turn runs with `is_admin`
    /// off, no memory section, log rows without the principal id (so memory
    /// compaction never reads them) and only in `web:` threads (security
    /// review M-1).
    WebTestChat,
}

/// The thread-key namespace of the dashboard's `/chat` (`dashboard:<email>…`):
/// never `web:`, so the token-only test chat cannot read or write an owner's
/// admin conversation (security review M-1).
pub const DASHBOARD_THREAD_NAMESPACE: &str = "dashboard";

/// One message to answer.
#[derive(Debug, Default)]
pub struct TurnRequest {
    /// Who sent it (the web test chat is trusted less than any channel).
    pub origin: TurnOrigin,
    /// The log channel (`slack` for the dev harness, `api`, `web`, `email`).
    pub channel: Option<Channel>,
    /// The member's message.
    pub message: String,
    /// API callers: the principal ref (`stableUserId`).
    pub stable_user_id: Option<String>,
    /// An email identity (web impersonation, email-like callers).
    pub email: Option<String>,
    /// A Slack user id.
    pub slack_user_id: Option<String>,
    /// A display name to use when the principal has none.
    pub user_name: Option<String>,
    /// Slack conversation id (`D…` = a DM).
    pub slack_channel_id: Option<String>,
    /// The caller's thread key (continues a conversation).
    pub thread_key: Option<String>,
    /// History the client sent (used instead of the logs when present).
    pub history: Option<Vec<ChatMessage>>,
    /// Planning rounds (`None` = the kernel default of 2).
    pub max_iterations: Option<u32>,
    /// Receives the answer round's text deltas.
    pub stream: Option<mpsc::Sender<ChatDelta>>,
    /// The API key the request came with (REST): limited per key as well.
    pub api_key_id: Option<Uuid>,
    /// Slack: the thread the reply goes to (sent to integrations, §7.3).
    pub slack_thread_ts: Option<String>,
    /// Receives tools' progress messages (the member's "working…" line).
    pub progress: Option<mpsc::Sender<String>>,
    /// Receives tool starts and ends (the web chat's live stream).
    pub tool_events: Option<mpsc::Sender<crate::tools::ToolEvent>>,
    /// The inbound message's own id (email `Message-ID`), stored on the
    /// inbound log row (`external_message_id`, §8.3 dedupe).
    pub external_message_id: Option<String>,
    /// Leave the reply's log row to the caller ([`TurnOutcome::outbound_log`]):
    /// email logs a reply only once the provider accepted it (§8.3).
    pub defer_outbound_log: bool,
    /// Email: who wrote and who else is on the thread (`email.context_block`).
    pub email_thread: Option<EmailThread>,
    /// The dashboard's `/chat` asks (§5.1, §14.2): the surface adds the
    /// admin config tools. Honoured on the web channel only. Set only by
    /// the dashboard handler, after it checked the signed-in user's role
    /// (owner or admin) and CSRF token — the turn trusts it like
    /// `api_key_id`, it never comes from a request body.
    pub dashboard_chat: bool,
    /// The dashboard's `/chat`: the signed-in user who asks (address, role,
    /// platform admin) — the admin config tools judge team changes with
    /// it. Set only by the dashboard handler, with [`dashboard_chat`](Self::dashboard_chat).
    pub dashboard_user: Option<crate::auth::team::TeamActor>,
}

/// The people of an email turn (§8.3, A.5 `email.context_block`).
#[derive(Clone, Default)]
pub struct EmailThread {
    /// The actual sender's name (their address when the mail gave none).
    pub sender_name: String,
    /// The actual sender's address.
    pub sender_email: String,
    /// Everyone else on To / Cc, Root's own address left out.
    pub participants: Vec<Mailbox>,
    /// The sender acts for another account: the turn runs as that account
    /// (identity is not asked again) and the sender is its delegate.
    pub delegation: Option<Delegation>,
    /// Asked before every mutation tool runs (the authorization gate).
    pub gate: Option<Arc<dyn ToolGate>>,
    /// Whether the mail's `From` was authenticated (security H-1). An
    /// unauthenticated sender is nobody in particular: the turn runs on the
    /// public email surface whoever `From` names, and the verdict is kept
    /// on the inbound log row.
    pub sender_auth: crate::email::SenderAuth,
}

impl std::fmt::Debug for EmailThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmailThread")
            .field("sender_email", &self.sender_email)
            .field("participants", &self.participants.len())
            .field("delegation", &self.delegation)
            .field("gated", &self.gate.is_some())
            .field("authenticated", &self.sender_auth.authenticated)
            .finish()
    }
}

/// Why and for whom an email sender acts (§8.3 mentor delegation).
#[derive(Clone, Debug)]
pub struct Delegation {
    /// The resolved account: who the tools act for.
    pub account: Member,
    /// The machine reason sent to integrations (`cc`, `historical_cc`,
    /// `hosted_office_hours_invite`, …).
    pub reason: String,
    /// The same in plain words, for the system prompt.
    pub reason_text: String,
}

/// What a turn produced.
#[derive(Debug, Serialize)]
pub struct TurnOutcome {
    /// The reply as delivered (secure links attached).
    pub reply: String,
    /// `false` when the agent could not complete the request (§4.4).
    pub success: bool,
    /// The run's trace.
    pub trace_id: Option<Uuid>,
    /// The derived thread key (send it back to continue).
    pub thread_key: String,
    /// The exchange's UUID key.
    pub exchange_key: String,
    /// Who the turn was for.
    pub principal_ref: String,
    /// Their manifest tier.
    pub tier: Tier,
    /// Where the tier came from.
    pub tier_source: &'static str,
    /// Why the turn ran on a reserved tier, if it did (`identity.degraded`).
    pub degraded: Option<String>,
    /// Tools offered to the model.
    pub offered_tools: Vec<String>,
    /// Every executed tool call.
    #[serde(skip)]
    pub tool_calls: Vec<ExecutedToolCall>,
    /// Tool images for the channel.
    pub images: Vec<ToolImage>,
    /// LLM usage of the whole turn.
    #[serde(skip)]
    pub usage: UsageTotals,
    /// The reply's log row, not yet written (only with
    /// [`TurnRequest::defer_outbound_log`]; its dedupe key makes a second
    /// write a no-op).
    #[serde(skip)]
    pub outbound_log: Option<storage::ConversationLog>,
}

/// A failed turn (never a model or tool failure: those become replies).
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// The request itself is unusable.
    #[error("{0}")]
    Invalid(String),
    /// Refused by a limit before the model ran (size, rate, in-flight
    /// turns, daily LLM budget).
    #[error(transparent)]
    Refused(#[from] TurnRefusal),
    /// Storage, identity or integration plumbing failed.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// What a channel turn uses — and nothing else of the app — wired once by
/// `AppState::new`. Cheap to clone.
#[derive(Clone)]
pub struct TurnServices {
    /// Rows (identity, history, the conversation log).
    pub store: RedbStore,
    /// Size, rate, in-flight and daily-budget limits (admission).
    pub limits: RequestLimiter,
    /// Where a limit's admin notice goes.
    pub admin_sink: Arc<dyn NotificationSink>,
    /// Tenant backends: manifests, identity, secure links, tool calls.
    pub integrations: Integrations,
    /// Who the caller is (§6).
    pub identity: Identity,
    /// The system prompt (§4.5).
    pub prompts: Prompts,
    /// `runAgent` (§4).
    pub agent: AgentKernel,
    /// What tool handlers use (carries the clock).
    pub tools: ToolServices,
    /// Scans logged replies for member mentions, off the turn's path.
    pub mentions: ReplyMentions,
    /// Capability-gap detection after the run (§4.6), off the turn's path.
    pub gaps: super::capability_gap::CapabilityGaps,
    /// The dashboard chat's admin config tools (§5.1), added to a turn's
    /// handlers only when [`TurnRequest::dashboard_chat`] holds.
    pub admin_config: super::admin_config::AdminConfig,
    /// Installed community-build tools (§15.1), offered last and run sandboxed.
    pub builds: CommunityBuilds,
}

/// Run one channel turn for the current tenant.
pub async fn run_channel_turn(
    state: &TurnServices,
    req: TurnRequest,
) -> Result<TurnOutcome, TurnError> {
    let (out, usage) = collect_usage(run(state, req)).await;
    out.map(|mut o| {
        o.usage = usage;
        o
    })
}

async fn run(state: &TurnServices, req: TurnRequest) -> Result<TurnOutcome, TurnError> {
    let message = req.message.trim().to_string();
    let asked = message.clone();
    if message.is_empty() {
        return Err(TurnError::Invalid("message must not be empty".into()));
    }
    let ctx = tenancy::current().ok_or_else(|| anyhow::anyhow!("no tenant context"))?;
    let tenant = ctx.tenant.clone();
    // Held until the turn ends: its place among the turns in flight.
    let _permit = state
        .limits
        .admit_turn(&tenant, req.api_key_id, &message, state.admin_sink.as_ref())
        .await?;
    let channel = req.channel.unwrap_or(Channel::Api);
    // Turn start: refresh stale manifests first — a pending integration
    // becomes active here, before identity asks it who this is.
    let primed = Arc::new(
        state
            .integrations
            .prime()
            .await
            .map_err(|e| anyhow::anyhow!(e))?,
    );
    let caller = resolve_caller(state, tenant.id, &req).await?;
    let member = &caller.member;
    let is_dm = match channel {
        Channel::Slack => req
            .slack_channel_id
            .as_deref()
            .is_none_or(|c| c.starts_with('D')),
        _ => true,
    };
    let surface_kind = match channel {
        Channel::Slack => Surface::Slack,
        Channel::Email if member.tier == Tier::PublicEmail => Surface::PublicEmail,
        Channel::Email => Surface::Email,
        Channel::Api => Surface::Api,
        Channel::Web => Surface::Web,
    };
    let test_chat = req.origin == TurnOrigin::WebTestChat;
    let principal = turn_principal(member, surface_kind, req.origin, req.user_name.as_deref());
    let dashboard_admin =
        surface_kind == Surface::Slack && is_dashboard_admin(state, tenant.id, member).await?;
    let dashboard_chat = req.dashboard_chat && channel == Channel::Web && !test_chat;
    let builds = state
        .builds
        .load(&state.store, tenant.id)
        .await
        .map_err(anyhow::Error::from)?;

    // The surface: core, integration and community-build tools this
    // principal may use here.
    let surface = compute_surface(
        &primed,
        &builds.offers(),
        surface_kind,
        &principal,
        dashboard_admin,
        dashboard_chat,
    );
    if let Some(reason) = &surface.degraded {
        tracing::info!(
            event = "identity.degraded",
            reason = %reason,
            tier = %surface.tier,
            channel = %channel,
            "turn runs on a reserved tier"
        );
    }
    let services = state.tools.clone();
    let now = services.clock.now();
    let email_thread = req
        .email_thread
        .as_ref()
        .filter(|_| channel == Channel::Email);
    // The admin config handlers exist only in a dashboard chat's turn (the
    // gate admits their names nowhere else either).
    let core = if dashboard_chat {
        state
            .admin_config
            .for_caller(req.dashboard_user.clone())
            .add_to(CoreTools::platform())
    } else {
        CoreTools::platform()
    };
    let tools = TurnTools::new(
        surface.clone(),
        core,
        Some(Arc::new(PrimedInvoker::new(
            state.integrations.clone(),
            primed.clone(),
        ))),
        builds,
        TurnContext {
            tenant_id: tenant.id,
            principal: principal.clone(),
            surface: surface_kind,
            channel_id: req.slack_channel_id.clone(),
            user_message: message.clone(),
            knowledge_source_types: surface.knowledge_source_types.clone(),
            surface_tools: Vec::new(),
            services,
            delivery: crate::tools::Delivery {
                thread_ts: req.slack_thread_ts.clone(),
                progress: req.progress.clone(),
                events: req.tool_events.clone(),
            },
            email_delegation: email_thread.map(|t| email_delegation(t, &principal)),
        },
    );
    let tools = match email_thread.and_then(|t| t.gate.clone()) {
        Some(gate) => tools.with_gate(gate),
        None => tools,
    };

    // History (§8.1: only when the caller names a thread and sent none),
    // then the inbound row of this exchange.
    let continues = req
        .thread_key
        .as_deref()
        .is_some_and(|k| !k.trim().is_empty());
    let namespace = if dashboard_chat {
        DASHBOARD_THREAD_NAMESPACE
    } else {
        channel.as_str()
    };
    let thread = thread_key_in(namespace, &caller.handle, req.thread_key.as_deref());
    let history = bound_history(match req.history {
        Some(h) => h,
        None if continues => load_history(&state.store, tenant.id, &thread)
            .await
            .map_err(anyhow::Error::from)?,
        None => Vec::new(),
    });
    let mut exchange = Exchange::new(
        tenant.id,
        channel,
        thread.clone(),
        principal.principal_ref.clone(),
    );
    // The test chat's rows are not the member's words (M-1): no principal
    // id, so memory compaction and member history never read them.
    exchange.principal_id = principal.id.filter(|_| !test_chat);
    exchange.slack_user_id = req.slack_user_id.clone();
    exchange.slack_channel_id = req.slack_channel_id.clone();
    exchange.from_email = req.email.as_deref().map(crate::identity::normalize_email);
    exchange.external_message_id = req.external_message_id.clone();
    let mut in_meta = json!({"tier": principal.tier, "surface": surface_kind});
    if let Some(t) = email_thread {
        in_meta["sender_auth"] = json!(t.sender_auth);
    }
    exchange
        .log(&state.store, Direction::Inbound, &message, now, in_meta)
        .await
        .map_err(anyhow::Error::from)?;

    // The system prompt for this audience.
    let audience_channel = surface_kind.channel().as_str();
    let links = LinkIssuer::new(
        state.integrations.clone(),
        primed.clone(),
        audience_channel,
        surface.tier.as_str(),
        principal.is_admin,
    );
    let mut input = SystemPromptInput::new(
        prompt_channel(channel),
        principal
            .display_name
            .clone()
            .unwrap_or_else(|| principal.principal_ref.clone()),
        now,
    )
    .with_tenant(&tenant);
    input.community_context = tenant
        .settings
        .0
        .get("community_context")
        .and_then(|v| v.as_str())
        .map(str::to_string);
    input.prompt_sections = primed
        .iter()
        .flat_map(|p| {
            p.prompt_sections_for(audience_channel, surface.tier.as_str(), principal.is_admin)
        })
        .collect();
    input.tools = tools
        .offered()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect();
    input.tier = principal.tier.to_string();
    input.default_tier = AccessPolicy::from_settings(&tenant.settings.0).default_tier;
    input.is_admin = principal.is_admin;
    input.is_dm = is_dm;
    if let Some(t) = email_thread {
        // Names come from mail headers: cut like a display name (review L-6).
        let name = |n: &str| cut_chars(n, MAX_DISPLAY_NAME_CHARS).to_string();
        input.email = Some(crate::prompts::system::EmailContext {
            sender_name: name(&t.sender_name),
            sender_email: t.sender_email.clone(),
            delegation_reason: t.delegation.as_ref().map(|d| d.reason_text.clone()),
            thread_participants: t
                .participants
                .iter()
                .map(|m| match &m.name {
                    Some(n) => format!("{} <{}>", name(n), m.email),
                    None => m.email.clone(),
                })
                .collect(),
            resolved_account_name: principal
                .display_name
                .clone()
                .unwrap_or_else(|| name(&t.sender_name)),
            resolved_account_email: principal
                .email
                .clone()
                .unwrap_or_else(|| t.sender_email.clone()),
            resolved_account_role: principal.tier.to_string(),
            resolved_account_profile: member
                .principal
                .as_ref()
                .and_then(|p| p.profile_context.clone()),
            resolved_account_is_member: !principal.tier.is_reserved(),
        });
    }
    input.member_memory = if test_chat {
        None
    } else {
        member_memory(state, tenant.id, principal.id).await
    };
    input.public_guide_url = links.public_guide_url();
    input.link_destinations = links
        .details()
        .iter()
        .map(|d| LinkDestination {
            title: d.title.clone().unwrap_or_else(|| d.destination.clone()),
            path: d.path.clone().unwrap_or_default(),
            prompt_summary: d.prompt_summary.clone().unwrap_or_default(),
        })
        .collect();
    input.link_state = link_state(
        channel,
        is_dm,
        member.principal.is_some(),
        !input.link_destinations.is_empty(),
    );
    let system_prompt = state
        .prompts
        .system_prompt(&input)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;

    let run = state
        .agent
        .run(
            AgentInput {
                system_prompt,
                history,
                user_message: ChatMessage::user(message.clone()),
                caller: ToolCaller {
                    principal_ref: Some(principal.principal_ref.clone()),
                    tier: Some(principal.tier.to_string()),
                    channel: channel.as_str().to_string(),
                    channel_id: req.slack_channel_id.clone(),
                    user_message: message,
                    degraded: surface.degraded.clone(),
                },
            },
            &tools,
            AgentOptions {
                max_iterations: req.max_iterations,
                replay: false,
                stream: req.stream,
            },
        )
        .await;

    // Delivery: secure links get a fresh token for this principal.
    let reply = if input.link_state == crate::prompts::system::LinkState::Available {
        links
            .attach_tokens(&run.text, &principal.principal_ref)
            .await
    } else {
        run.text.clone()
    };
    let done = state.tools.clock.now();
    let tool_names: Vec<&str> = run.tool_calls.iter().map(|c| c.name.as_str()).collect();
    let out_meta = json!({
        "trace_id": run.trace_id,
        "run_id": run.run_id,
        "success": run.success,
        "tool_calls": tool_names,
    });
    let outbound_log = if req.defer_outbound_log {
        let mut row = exchange.row(Direction::Outbound, &reply, done, out_meta);
        row.external_message_id = None;
        Some(row)
    } else {
        let logged = exchange
            .log(&state.store, Direction::Outbound, &reply, done, out_meta)
            .await
            .map_err(anyhow::Error::from)?;
        // Reply mentions (§6): on their own task, with the run's sources.
        state.mentions.spawn_scan(
            logged,
            Some(crate::agent::hooks::extract_source_refs(&run.tool_calls)),
        );
        None
    };
    // Capability-gap detection (§4.6): only turns with a gap signal.
    if super::capability_gap::gap_signal(run.success, &run.tool_calls) {
        state.gaps.spawn(super::capability_gap::GapInput {
            tenant: ctx.clone(),
            channel,
            principal_id: principal.id,
            principal_ref: principal.principal_ref.clone(),
            message: asked,
            reply: reply.clone(),
            success: run.success,
            calls: super::capability_gap::calls_of(&run.tool_calls),
            offered_tools: tools.offered().map(|(n, _)| n.to_string()).collect(),
            trace_id: run.trace_id,
        });
    }
    // Memory compaction and the work-saved estimate run later, as jobs.
    crate::memory::after_exchange(
        &state.tools.queues,
        &tenant,
        exchange.principal_id,
        &exchange.exchange_key,
    )
    .await;

    Ok(TurnOutcome {
        reply,
        success: run.success,
        trace_id: run.trace_id,
        thread_key: thread,
        exchange_key: exchange.exchange_key,
        principal_ref: principal.principal_ref,
        tier: surface.tier.clone(),
        tier_source: match member.source {
            TierSource::Integration => "integration",
            TierSource::Synced => "api_sync",
            TierSource::ChannelTrust => "channel_trust",
            TierSource::Unresolved => "unresolved",
        },
        degraded: surface.degraded.clone(),
        offered_tools: tools.offered().map(|(n, _)| n.to_string()).collect(),
        tool_calls: run.tool_calls,
        images: run.images,
        usage: UsageTotals::default(),
        outbound_log,
    })
}

/// The gating function over the primed integrations and the installed
/// community-build tools (`dashboard_chat`: the turn comes from the
/// dashboard's `/chat`, see [`TurnRequest::dashboard_chat`]).
pub fn compute_surface(
    primed: &[PrimedIntegration],
    build_tools: &[BuildToolOffer],
    surface: Surface,
    principal: &TurnPrincipal,
    dashboard_admin: bool,
    dashboard_chat: bool,
) -> ToolSurface {
    let decls = tier_declarations(primed);
    let offers = integration_offers(primed);
    allowed_tools(&GateInput {
        surface,
        access_level: Some(principal.tier.as_str()),
        is_admin: principal.is_admin,
        dashboard_admin,
        dashboard_chat,
        tier_declarations: &decls,
        integration_tools: &offers,
        build_tools,
    })
}

fn prompt_channel(channel: Channel) -> PromptChannel {
    match channel {
        Channel::Slack => PromptChannel::Slack,
        Channel::Email => PromptChannel::Email,
        Channel::Api => PromptChannel::Api,
        Channel::Web => PromptChannel::Web,
    }
}

/// The §7.3 `email_delegation` block of an email turn's integration calls:
/// who actually wrote, the account the tools act for, and the thread.
fn email_delegation(t: &EmailThread, account: &TurnPrincipal) -> EmailDelegation {
    EmailDelegation {
        reason: t.delegation.as_ref().map(|d| d.reason.clone()),
        is_delegate: t.delegation.is_some(),
        sender_email: Some(t.sender_email.clone()),
        sender_name: Some(t.sender_name.clone()),
        mentor_email: account.email.clone(),
        mentor_name: account.display_name.clone(),
        thread_participants: t
            .participants
            .iter()
            .map(|m| json!({"email": m.email, "name": m.name}))
            .collect(),
    }
}

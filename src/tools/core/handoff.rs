//! Human handoff & feedback (§5.1, §15.2): `escalate_to_admin`,
//! `request_human_intervention`, `list_my_human_interventions`,
//! `cancel_human_intervention`, `report_root_mistake`. Every one persists a
//! `human_interventions` row FIRST; the notification sinks are best-effort
//! afterwards, so an escalation is never lost to a sink outage.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use storage::{
    Channel, HumanIntervention, InterventionCategory, InterventionStatus, Json, Scan, Store, key,
};
use uuid::Uuid;

use crate::agent::ToolResult;
use crate::platform::notify::AdminNotice;
use crate::platform::tool_names as names;
use crate::tools::gating::Surface;
use crate::tools::spec::{TurnContext, TypedTool, internal_failure};
use crate::trace;

/// Interventions `list_my_human_interventions` returns at most.
pub const LIST_INTERVENTIONS_LIMIT: usize = 50;

fn channel_of(surface: Surface) -> Channel {
    match surface {
        Surface::Slack => Channel::Slack,
        Surface::Email | Surface::PublicEmail => Channel::Email,
        Surface::Api => Channel::Api,
        Surface::Web => Channel::Web,
    }
}

fn storage_failed(tool: &str, e: impl std::fmt::Display) -> ToolResult {
    internal_failure(tool, "That could not be recorded right now.", e)
}

/// Why an intervention was not opened.
enum OpenError {
    /// The principal's hourly cap (`interventions_per_principal_per_hour`):
    /// whole minutes until the next one is accepted.
    Capped(u64),
    Storage(storage::StorageError),
}

impl From<storage::StorageError> for OpenError {
    fn from(e: storage::StorageError) -> Self {
        OpenError::Storage(e)
    }
}

fn open_failed(tool: &str, e: OpenError) -> ToolResult {
    match e {
        OpenError::Capped(minutes) => ToolResult::failed(format!(
            "Not recorded: this member has already opened the most requests for the team allowed \
             in one hour. The earlier ones are with the admins; another can be opened in about \
             {minutes} minutes."
        )),
        OpenError::Storage(e) => storage_failed(tool, e),
    }
}

/// Persist an intervention, then fan out to the sinks (best-effort; the
/// intervention sinks run in the background and never fail the tool). A
/// principal over its hourly cap gets nothing stored and nothing sent.
async fn open_intervention(
    ctx: &TurnContext,
    category: InterventionCategory,
    title: String,
    details: Option<String>,
    mut metadata: Value,
) -> Result<HumanIntervention, OpenError> {
    if let Some(t) = crate::platform::tenancy::current() {
        ctx.services
            .interventions
            .admit(&t.tenant, &ctx.principal.principal_ref)
            .map_err(OpenError::Capped)?;
    }
    let now = ctx.services.clock.now();
    metadata["principal_ref"] = json!(ctx.principal.principal_ref);
    metadata["display_name"] = json!(ctx.principal.display_name);
    metadata["tier"] = json!(ctx.principal.tier);
    if let Some(c) = &ctx.channel_id {
        metadata["channel_id"] = json!(c);
    }
    let row = HumanIntervention {
        id: Uuid::new_v4(),
        tenant_id: ctx.tenant_id,
        principal_id: ctx.principal.id,
        channel: channel_of(ctx.surface),
        category,
        status: InterventionStatus::Open,
        title,
        details,
        metadata: Json(metadata),
        created_at: now,
        updated_at: now,
    };
    let row = ctx.services.store.insert(row).await?;
    ctx.services.interventions.dispatch(&row);
    ctx.services
        .sinks
        .notify(AdminNotice {
            kind: format!("intervention.{}", row.category.as_str()),
            // The title is the platform's (logged at WARN); what the member
            // and the model wrote stays in the body.
            title: format!(
                "New {} intervention {} in tenant {}",
                row.category.as_str(),
                row.id,
                row.tenant_id
            ),
            body: format!(
                "{}\n{} ({}) via {}: {}",
                row.title,
                ctx.principal.display_name.as_deref().unwrap_or("someone"),
                ctx.principal.principal_ref,
                row.channel.as_str(),
                row.details.as_deref().unwrap_or(""),
            ),
        })
        .await;
    Ok(row)
}

/// `escalate_to_admin(escalation_reason, user_request_summary, what_was_checked?)`.
pub struct EscalateToAdmin;

/// Arguments of `escalate_to_admin`.
#[derive(Deserialize, JsonSchema)]
pub struct EscalateArgs {
    /// Why a human is needed.
    pub escalation_reason: String,
    /// What the member asked for, in one or two sentences.
    pub user_request_summary: String,
    /// What you already checked (tools, sources).
    pub what_was_checked: Option<String>,
}

#[async_trait]
impl TypedTool for EscalateToAdmin {
    type Args = EscalateArgs;
    fn name(&self) -> &'static str {
        names::ESCALATE_TO_ADMIN
    }
    fn description(&self) -> &'static str {
        "Hand the conversation to the community's admins when you cannot help or the member asks \
         for a human. Always available."
    }
    async fn run(&self, a: EscalateArgs, ctx: &TurnContext) -> ToolResult {
        let details = match &a.what_was_checked {
            Some(w) => format!(
                "{}\n\nReason: {}\nChecked: {w}",
                a.user_request_summary, a.escalation_reason
            ),
            None => format!(
                "{}\n\nReason: {}",
                a.user_request_summary, a.escalation_reason
            ),
        };
        let metadata = json!({
            "escalation_reason": a.escalation_reason,
            "user_request_summary": a.user_request_summary,
            "what_was_checked": a.what_was_checked,
            "trace_id": trace::current_trace_id(),
        });
        match open_intervention(
            ctx,
            InterventionCategory::Escalation,
            cut_title(&a.user_request_summary),
            Some(details),
            metadata,
        )
        .await
        {
            Ok(row) => ToolResult::ok(json!({
                "intervention_id": row.id,
                "status": row.status.as_str(),
                "message": "Passed to the community's admins as an open escalation.",
            })),
            Err(e) => open_failed(self.name(), e),
        }
    }
}

fn cut_title(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    match line.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

/// `request_human_intervention(title, details?)`.
pub struct RequestHumanIntervention;

/// Arguments of `request_human_intervention`.
#[derive(Deserialize, JsonSchema)]
pub struct RequestArgs {
    /// Short title of the request.
    pub title: String,
    /// Details a human needs to act.
    pub details: Option<String>,
}

#[async_trait]
impl TypedTool for RequestHumanIntervention {
    type Args = RequestArgs;
    fn name(&self) -> &'static str {
        names::REQUEST_HUMAN_INTERVENTION
    }
    fn description(&self) -> &'static str {
        "Log a request for a human on the team to act on (something you cannot do yourself)."
    }
    async fn run(&self, a: RequestArgs, ctx: &TurnContext) -> ToolResult {
        if a.title.trim().is_empty() {
            return ToolResult::failed("A request needs a title.");
        }
        match open_intervention(
            ctx,
            InterventionCategory::Request,
            cut_title(&a.title),
            a.details,
            json!({}),
        )
        .await
        {
            Ok(row) => ToolResult::ok(json!({
                "intervention_id": row.id,
                "title": row.title,
                "status": row.status.as_str(),
            })),
            Err(e) => open_failed(self.name(), e),
        }
    }
}

/// `list_my_human_interventions(include_closed?)`.
pub struct ListMyHumanInterventions;

/// Arguments of `list_my_human_interventions`.
#[derive(Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Include resolved, dismissed and cancelled ones.
    pub include_closed: Option<bool>,
}

fn is_open(s: InterventionStatus) -> bool {
    matches!(s, InterventionStatus::Open | InterventionStatus::InProgress)
}

#[async_trait]
impl TypedTool for ListMyHumanInterventions {
    type Args = ListArgs;
    fn name(&self) -> &'static str {
        names::LIST_MY_HUMAN_INTERVENTIONS
    }
    fn description(&self) -> &'static str {
        "List the requests and escalations this member has open (or all, with include_closed)."
    }
    async fn run(&self, a: ListArgs, ctx: &TurnContext) -> ToolResult {
        // Data scope: only the caller's own rows (by principal).
        let Some(pid) = ctx.principal.id else {
            return ToolResult::ok(json!({"interventions": [], "count": 0}));
        };
        let rows: Result<Vec<HumanIntervention>, _> = ctx
            .services
            .store
            .scan(
                Some(ctx.tenant_id),
                Scan::index(HumanIntervention::PRINCIPAL_IDX, key().uuid(pid)).desc(),
            )
            .await;
        match rows {
            Ok(rows) => {
                let list: Vec<Value> = rows
                    .into_iter()
                    .filter(|r| a.include_closed.unwrap_or(false) || is_open(r.status))
                    .take(LIST_INTERVENTIONS_LIMIT)
                    .map(|r| {
                        json!({
                            "intervention_id": r.id,
                            "category": r.category.as_str(),
                            "status": r.status.as_str(),
                            "title": r.title,
                            "created_at": r.created_at,
                        })
                    })
                    .collect();
                let count = list.len();
                ToolResult::ok(json!({"interventions": list, "count": count}))
            }
            Err(e) => storage_failed(self.name(), e),
        }
    }
}

/// `cancel_human_intervention(intervention_id)`.
pub struct CancelHumanIntervention;

/// Arguments of `cancel_human_intervention`.
#[derive(Deserialize, JsonSchema)]
pub struct CancelArgs {
    /// Id from `list_my_human_interventions` (never guessed).
    pub intervention_id: Uuid,
}

#[async_trait]
impl TypedTool for CancelHumanIntervention {
    type Args = CancelArgs;
    fn name(&self) -> &'static str {
        names::CANCEL_HUMAN_INTERVENTION
    }
    fn description(&self) -> &'static str {
        "Cancel one of this member's own open requests or escalations."
    }
    async fn run(&self, a: CancelArgs, ctx: &TurnContext) -> ToolResult {
        let store = &ctx.services.store;
        let found: Option<HumanIntervention> = match store
            .get(Some(ctx.tenant_id), key().uuid(a.intervention_id))
            .await
        {
            Ok(r) => r,
            Err(e) => return storage_failed(self.name(), e),
        };
        // Someone else's row answers exactly like a missing one.
        let Some(mut row) =
            found.filter(|r| r.principal_id.is_some() && r.principal_id == ctx.principal.id)
        else {
            return ToolResult::failed("No such request of yours was found.");
        };
        if !is_open(row.status) {
            return ToolResult::failed(format!("That request is already {}.", row.status.as_str()));
        }
        row.status = InterventionStatus::Cancelled;
        row.updated_at = ctx.services.clock.now();
        match store.update(row).await {
            Ok(row) => ToolResult::ok(json!({
                "intervention_id": row.id,
                "status": row.status.as_str(),
            })),
            Err(e) => storage_failed(self.name(), e),
        }
    }
}

/// `report_root_mistake(user_complaint, mistake_summary, correct_information?)`.
pub struct ReportRootMistake;

/// Arguments of `report_root_mistake`.
#[derive(Deserialize, JsonSchema)]
pub struct MistakeArgs {
    /// The member's complaint, in their words.
    pub user_complaint: String,
    /// What the assistant got wrong.
    pub mistake_summary: String,
    /// The correct information, if the member gave it.
    pub correct_information: Option<String>,
}

#[async_trait]
impl TypedTool for ReportRootMistake {
    type Args = MistakeArgs;
    fn name(&self) -> &'static str {
        names::REPORT_ROOT_MISTAKE
    }
    fn description(&self) -> &'static str {
        "Report a mistake the assistant made so the team can correct it (attaches this \
         conversation's trace)."
    }
    async fn run(&self, a: MistakeArgs, ctx: &TurnContext) -> ToolResult {
        let trace_id = trace::current_trace_id();
        let details = format!(
            "Complaint: {}\nCorrect information: {}",
            a.user_complaint,
            a.correct_information.as_deref().unwrap_or("(not given)")
        );
        let metadata = json!({
            "user_complaint": a.user_complaint,
            "mistake_summary": a.mistake_summary,
            "correct_information": a.correct_information,
            "trace_id": trace_id,
        });
        match open_intervention(
            ctx,
            InterventionCategory::MistakeReport,
            cut_title(&a.mistake_summary),
            Some(details),
            metadata,
        )
        .await
        {
            Ok(row) => ToolResult::ok(json!({
                "intervention_id": row.id,
                "status": row.status.as_str(),
                "trace_id": trace_id,
            })),
            Err(e) => open_failed(self.name(), e),
        }
    }
}

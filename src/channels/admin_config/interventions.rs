//! Intervention tools of the dashboard chat (§2.4, §5.1): the community's
//! queue of requests, escalations and reports, listed and moved through
//! `insights::interventions::{list, set_status}` — the functions behind
//! `GET /api/v1/interventions` and `POST /interventions/{id}/status`, so
//! the chat follows the same transition table (a refused move changes
//! nothing and says why).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use storage::{InterventionCategory, InterventionStatus};
use uuid::Uuid;

use super::{broke, changed, cut};
use crate::agent::ToolResult;
use crate::insights::InsightError;
use crate::insights::interventions::{self, InterventionFilter};
use crate::platform::tool_names as names;
use crate::tools::{TurnContext, TypedTool};

/// Interventions listed when the model asks for no limit.
pub const LIST_DEFAULT_LIMIT: usize = 20;
/// The most listed at once.
pub const LIST_MAX_LIMIT: usize = 50;
/// Characters of each intervention's details in a list.
const DETAILS_PREVIEW_CHARS: usize = 300;

/// `list_interventions(status?, category?, limit?)`.
pub struct ListInterventions;

/// Arguments of `list_interventions`.
#[derive(Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only these statuses (any of them); all statuses when left out.
    #[serde(default)]
    pub status: Option<Vec<InterventionStatus>>,
    /// Only this category.
    #[serde(default)]
    pub category: Option<InterventionCategory>,
    /// At most this many (1–50, default 20), newest first.
    #[serde(default)]
    pub limit: Option<usize>,
}

#[async_trait]
impl TypedTool for ListInterventions {
    type Args = ListArgs;
    fn name(&self) -> &'static str {
        names::LIST_INTERVENTIONS
    }
    fn description(&self) -> &'static str {
        "List the community's human interventions (member requests, escalations, missing-tool \
         reports, mistake reports), newest first, optionally by status and category."
    }
    async fn run(&self, a: ListArgs, ctx: &TurnContext) -> ToolResult {
        let limit = a.limit.unwrap_or(LIST_DEFAULT_LIMIT);
        if !(1..=LIST_MAX_LIMIT).contains(&limit) {
            return ToolResult::failed(format!("limit must be between 1 and {LIST_MAX_LIMIT}."));
        }
        let filter = InterventionFilter {
            category: a.category,
            statuses: a.status.unwrap_or_default(),
        };
        let (items, next) = match interventions::list(
            &ctx.services.store,
            ctx.tenant_id,
            filter,
            None,
            limit,
        )
        .await
        {
            Ok(page) => page,
            Err(e) => return broke(self.name(), e),
        };
        let list: Vec<Value> = items
            .iter()
            .map(|i| {
                let details = i
                    .details
                    .as_deref()
                    .map(|d| cut(d, DETAILS_PREVIEW_CHARS).0);
                json!({
                    "intervention_id": i.id,
                    "category": i.category,
                    "status": i.status,
                    "title": i.title,
                    "details": details,
                    "member": i.principal_ref,
                    "channel": i.channel,
                    "created_at": i.created_at,
                    "updated_at": i.updated_at,
                })
            })
            .collect();
        ToolResult::ok(json!({"interventions": list, "count": list.len(), "more": next.is_some()}))
    }
}

/// `update_intervention_status(intervention_id, status)`.
pub struct UpdateInterventionStatus;

/// Arguments of `update_intervention_status`.
#[derive(Deserialize, JsonSchema)]
pub struct StatusArgs {
    /// The intervention's id (from `list_interventions`; never guessed).
    pub intervention_id: Uuid,
    /// The new status. open ⇄ in_progress; either → resolved, dismissed or
    /// cancelled; resolved and dismissed may reopen (open); cancelled is final.
    pub status: InterventionStatus,
}

#[async_trait]
impl TypedTool for UpdateInterventionStatus {
    type Args = StatusArgs;
    fn name(&self) -> &'static str {
        names::UPDATE_INTERVENTION_STATUS
    }
    fn description(&self) -> &'static str {
        "Move a human intervention to another status (in_progress, resolved, dismissed, \
         cancelled, or open to reopen)."
    }
    async fn run(&self, a: StatusArgs, ctx: &TurnContext) -> ToolResult {
        let now = ctx.services.clock.now();
        match interventions::set_status(
            &ctx.services.store,
            ctx.tenant_id,
            a.intervention_id,
            a.status,
            now,
        )
        .await
        {
            Ok(v) => {
                changed(
                    ctx,
                    self.name(),
                    &format!("intervention {} set to {}", v.id, v.status),
                );
                ToolResult::ok(json!({
                    "intervention_id": v.id,
                    "title": v.title,
                    "status": v.status,
                }))
            }
            Err(InsightError::NotFound(_)) => ToolResult::failed(format!(
                "There is no intervention {}; list the interventions for the right id.",
                a.intervention_id
            )),
            Err(InsightError::Conflict(m)) => ToolResult::failed(format!("Not changed: {m}.")),
            Err(e) => broke(self.name(), e),
        }
    }
}

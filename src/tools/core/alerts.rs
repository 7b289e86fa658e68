//! Action alerts CRUD (§5.1): `create_action_alert`, `list_action_alerts`,
//! `cancel_action_alert`. Members may only notify themselves and only watch
//! tools on their own surface (never `*`); admins may watch any tool or `*`
//! and notify anyone. The evaluator that fires alerts is a post-batch hook.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use storage::{RootActionAlert, Scan, Store, key};
use uuid::Uuid;

use crate::agent::ToolResult;
use crate::platform::tool_names as names;
use crate::tools::spec::{TurnContext, TypedTool, internal_failure};

/// `root_action_alerts.status` of a live alert.
pub const ALERT_ACTIVE: &str = "active";
/// `root_action_alerts.status` after `cancel_action_alert`.
pub const ALERT_CANCELLED: &str = "cancelled";
/// The wildcard only admins may watch.
pub const WATCH_ANY_TOOL: &str = "*";

fn storage_failed(tool: &str, e: impl std::fmt::Display) -> ToolResult {
    internal_failure(tool, "The alert could not be saved right now.", e)
}

fn alert_view(a: &RootActionAlert) -> Value {
    json!({
        "alert_id": a.id,
        "instruction": a.instruction,
        "watch_tool_names": a.watch_tool_names,
        "notify_slack_id": a.notify_slack_id,
        "status": a.status,
    })
}

/// `create_action_alert(instruction, watch_tool_names[], notify_slack_id?, notify_name?)`.
pub struct CreateActionAlert;

/// Arguments of `create_action_alert`.
#[derive(Deserialize, JsonSchema)]
pub struct CreateAlertArgs {
    /// What to watch for, e.g. "tell me when someone books the studio".
    pub instruction: String,
    /// Tool names whose successful calls are checked against the instruction.
    pub watch_tool_names: Vec<String>,
    /// Slack user to notify (admins only; members are always notified themselves).
    pub notify_slack_id: Option<String>,
    /// Display name of the person notified.
    pub notify_name: Option<String>,
}

#[async_trait]
impl TypedTool for CreateActionAlert {
    type Args = CreateAlertArgs;
    fn name(&self) -> &'static str {
        names::CREATE_ACTION_ALERT
    }
    fn description(&self) -> &'static str {
        "Create an alert that notifies by Slack DM when the assistant successfully runs one of \
         the watched tools in a way that matches the instruction (event-driven, unlike follow-ups)."
    }
    async fn run(&self, a: CreateAlertArgs, ctx: &TurnContext) -> ToolResult {
        let Some(member) = ctx.principal.id else {
            return ToolResult::failed("Alerts can only be created by a recognized member.");
        };
        let watch: Vec<String> = a
            .watch_tool_names
            .iter()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect();
        if a.instruction.trim().is_empty() || watch.is_empty() {
            return ToolResult::failed("An alert needs an instruction and at least one tool name.");
        }
        let admin = ctx.principal.is_admin;
        let notify = if admin {
            a.notify_slack_id
                .or_else(|| ctx.principal.slack_user_id.clone())
        } else {
            // Members: self-notify only.
            if let Some(other) = a
                .notify_slack_id
                .as_deref()
                .filter(|id| Some(*id) != ctx.principal.slack_user_id.as_deref())
            {
                return ToolResult::failed(format!(
                    "Members can only create alerts that notify themselves, not {other}."
                ));
            }
            ctx.principal.slack_user_id.clone()
        };
        if notify.is_none() {
            return ToolResult::failed(
                "Alerts are delivered by Slack DM; no Slack account is known for the recipient.",
            );
        }
        if !admin
            && let Some(bad) = watch
                .iter()
                .find(|t| *t == WATCH_ANY_TOOL || !ctx.surface_tools.contains(t))
        {
            return ToolResult::failed(format!(
                "Members can only watch tools available to them; {bad} is not one of them."
            ));
        }
        let now = ctx.services.clock.now();
        let row = RootActionAlert {
            id: Uuid::new_v4(),
            tenant_id: ctx.tenant_id,
            member_id: member,
            instruction: a.instruction.trim().to_string(),
            watch_tool_names: watch,
            notify_slack_id: notify,
            status: ALERT_ACTIVE.into(),
            created_at: now,
            updated_at: now,
        };
        match ctx.services.store.insert(row).await {
            Ok(row) => {
                let mut v = alert_view(&row);
                if let Some(n) = a.notify_name {
                    v["notify_name"] = json!(n);
                }
                ToolResult::ok(v)
            }
            Err(e) => storage_failed(self.name(), e),
        }
    }
}

/// `list_action_alerts()`.
pub struct ListActionAlerts;

/// Arguments of `list_action_alerts` (none).
#[derive(Deserialize, JsonSchema)]
pub struct NoArgs {}

#[async_trait]
impl TypedTool for ListActionAlerts {
    type Args = NoArgs;
    fn name(&self) -> &'static str {
        names::LIST_ACTION_ALERTS
    }
    fn description(&self) -> &'static str {
        "List active action alerts: a member's own; every alert of the community for admins."
    }
    async fn run(&self, _args: NoArgs, ctx: &TurnContext) -> ToolResult {
        let scan = if ctx.principal.is_admin {
            Scan::index(RootActionAlert::STATUS_IDX, key().str(ALERT_ACTIVE))
        } else {
            let Some(member) = ctx.principal.id else {
                return ToolResult::ok(json!({"alerts": [], "count": 0}));
            };
            Scan::index(RootActionAlert::MEMBER_IDX, key().uuid(member))
        };
        match ctx
            .services
            .store
            .scan::<RootActionAlert>(Some(ctx.tenant_id), scan)
            .await
        {
            Ok(rows) => {
                let list: Vec<Value> = rows
                    .iter()
                    .filter(|a| a.status == ALERT_ACTIVE)
                    .map(alert_view)
                    .collect();
                let count = list.len();
                ToolResult::ok(json!({"alerts": list, "count": count}))
            }
            Err(e) => storage_failed(self.name(), e),
        }
    }
}

/// `cancel_action_alert(alert_id)`.
pub struct CancelActionAlert;

/// Arguments of `cancel_action_alert`.
#[derive(Deserialize, JsonSchema)]
pub struct CancelAlertArgs {
    /// Id from `list_action_alerts` (never guessed).
    pub alert_id: Uuid,
}

#[async_trait]
impl TypedTool for CancelActionAlert {
    type Args = CancelAlertArgs;
    fn name(&self) -> &'static str {
        names::CANCEL_ACTION_ALERT
    }
    fn description(&self) -> &'static str {
        "Cancel an action alert (members: only their own)."
    }
    async fn run(&self, a: CancelAlertArgs, ctx: &TurnContext) -> ToolResult {
        let store = &ctx.services.store;
        let found: Option<RootActionAlert> =
            match store.get(Some(ctx.tenant_id), key().uuid(a.alert_id)).await {
                Ok(r) => r,
                Err(e) => return storage_failed(self.name(), e),
            };
        let Some(mut alert) = found.filter(|al| {
            al.status == ALERT_ACTIVE
                && (ctx.principal.is_admin || Some(al.member_id) == ctx.principal.id)
        }) else {
            return ToolResult::failed("No such active alert of yours was found.");
        };
        alert.status = ALERT_CANCELLED.into();
        alert.updated_at = ctx.services.clock.now();
        match store.update(alert).await {
            Ok(a) => ToolResult::ok(alert_view(&a)),
            Err(e) => storage_failed(self.name(), e),
        }
    }
}

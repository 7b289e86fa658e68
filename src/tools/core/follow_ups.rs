//! Follow-up CRUD (§5.1): `create_follow_up`, `list_follow_ups`,
//! `update_follow_up`, `pause_follow_up`, `resume_follow_up`,
//! `cancel_follow_up`. A follow-up belongs to the member who created it and
//! is delivered only as a private DM to them (the destination is recorded at
//! creation); another member's id answers like a missing one. The `when`
//! grammar is `follow_ups::schedule`; the 60 s sweep that runs them is not
//! here. Every change is a read-modify-write in one transaction, so it never
//! overwrites a sweep's concurrent claim.

use async_trait::async_trait;
use jiff::tz::TimeZone;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use storage::{FollowUp, FollowUpStatus, Json, Scan, ScheduleType, Store, Ts, key};
use uuid::Uuid;

use crate::agent::ToolResult;
use crate::follow_ups::follow_ups_enabled;
use crate::follow_ups::schedule::{
    Recurrence, Schedule, WHEN_EXAMPLES, format_local, next_after, parse_when, zone,
};
use crate::platform::tenancy;
use crate::platform::tool_names as names;
use crate::tools::spec::{TurnContext, TurnPrincipal, TypedTool, internal_failure};

/// `list_follow_ups` returns at most this many.
pub const LIST_FOLLOW_UPS_LIMIT: usize = 50;

const NEEDS_MEMBER: &str = "Follow-ups are only available to a recognized community member.";
const NOT_FOUND: &str = "No such follow-up of yours was found.";
const DISABLED: &str = "Follow-ups are turned off for this community.";
const NO_DESTINATION: &str = "Follow-ups are delivered only as a private DM to you, and no \
     Slack account or email address is known for you.";

fn storage_failed(tool: &str, e: impl std::fmt::Display) -> ToolResult {
    internal_failure(tool, "The follow-up could not be saved right now.", e)
}

/// The tenant's zone and kill switch, from the tenant row in scope.
fn tenant_rules() -> Option<(TimeZone, bool)> {
    let t = tenancy::current()?;
    Some((
        zone(&t.tenant.timezone),
        follow_ups_enabled(&t.tenant.settings.0),
    ))
}

/// The creator's private DM: their Slack user, else their email address.
fn delivery_for(p: &TurnPrincipal) -> Option<Value> {
    match (&p.slack_user_id, &p.email) {
        (Some(id), _) => Some(json!({"kind": "slack_dm", "slack_user_id": id})),
        (None, Some(email)) => Some(json!({"kind": "email", "email": email})),
        (None, None) => None,
    }
}

fn delivery_label(delivery: &Value) -> &'static str {
    match delivery["kind"].as_str() {
        Some("email") => "private email to you",
        _ => "private Slack DM to you",
    }
}

fn recurrence_of(f: &FollowUp) -> Option<Recurrence> {
    f.recurrence_spec
        .as_ref()
        .and_then(|s| Recurrence::from_spec(&s.0))
}

fn view(f: &FollowUp, tz: &TimeZone) -> Value {
    let schedule = match (f.schedule_type, recurrence_of(f)) {
        (ScheduleType::Recurring, Some(r)) => r.describe(),
        _ => "once".to_string(),
    };
    json!({
        "follow_up_id": f.id,
        "instruction": f.instruction,
        "status": f.status.as_str(),
        "schedule_type": f.schedule_type.as_str(),
        "schedule": schedule,
        "next_run_at": f.next_run_at,
        "next_run_local": f.next_run_at.map(|t| format_local(t, tz)),
        "delivery": delivery_label(&f.delivery.0),
    })
}

fn apply_schedule(f: &mut FollowUp, s: &Schedule) {
    f.schedule_type = s.schedule_type();
    f.next_run_at = Some(s.next_run_at);
    f.recurrence_spec = s.recurrence.as_ref().map(|r| Json(r.to_spec()));
}

/// Statuses a member can still change.
fn refuse_unless_changeable(f: &FollowUp) -> Result<(), String> {
    match f.status {
        FollowUpStatus::Active | FollowUpStatus::Paused => Ok(()),
        FollowUpStatus::Processing => {
            Err("That follow-up is running right now; try again in a minute.".into())
        }
        s => Err(format!(
            "That follow-up is {} and can no longer be changed.",
            s.as_str()
        )),
    }
}

/// Apply `change` to the caller's follow-up `id` in one transaction.
/// `Ok(Err(message))` is a refusal (nothing written).
async fn change_own(
    ctx: &TurnContext,
    member: Uuid,
    id: Uuid,
    change: impl FnOnce(&mut FollowUp) -> Result<(), String> + Send + 'static,
) -> Result<Result<FollowUp, String>, storage::StorageError> {
    let tenant = ctx.tenant_id;
    let now = ctx.services.clock.now();
    let (outcome, _) = ctx
        .services
        .store
        .transact(move |tx| {
            let found: Option<FollowUp> = tx.get(Some(tenant), key().uuid(id))?;
            let Some(mut row) = found.filter(|f| f.member_id == member) else {
                return Ok(Err(NOT_FOUND.to_string()));
            };
            if let Err(refusal) = change(&mut row) {
                return Ok(Err(refusal));
            }
            row.updated_at = now;
            tx.update(&row)?;
            Ok(Ok(row))
        })
        .await?;
    Ok(outcome)
}

/// Run [`change_own`] and turn its outcome into the tool's result.
async fn change_result(
    tool: &str,
    ctx: &TurnContext,
    tz: &TimeZone,
    id: Uuid,
    change: impl FnOnce(&mut FollowUp) -> Result<(), String> + Send + 'static,
) -> ToolResult {
    let Some(member) = ctx.principal.id else {
        return ToolResult::failed(NEEDS_MEMBER);
    };
    match change_own(ctx, member, id, change).await {
        Ok(Ok(row)) => ToolResult::ok(view(&row, tz)),
        Ok(Err(refusal)) => ToolResult::failed(refusal),
        Err(e) => storage_failed(tool, e),
    }
}

/// `create_follow_up(instruction, when)`.
pub struct CreateFollowUp;

/// Arguments of `create_follow_up`.
#[derive(Deserialize, JsonSchema)]
pub struct CreateArgs {
    /// What to do at that time, as an instruction to yourself, e.g. "check the
    /// events calendar for new workshops and summarize them".
    pub instruction: String,
    /// When: "in 30 minutes", "tomorrow at 9am", "2026-03-20T09:00" (community
    /// time zone unless an offset is given), "every weekday at 9:00", "every
    /// monday at 10:00", "every 4 hours" (at most hourly).
    pub when: String,
}

#[async_trait]
impl TypedTool for CreateFollowUp {
    type Args = CreateArgs;
    fn name(&self) -> &'static str {
        names::CREATE_FOLLOW_UP
    }
    fn description(&self) -> &'static str {
        "Schedule a follow-up: at a time, or on a recurring schedule, the assistant runs the \
         instruction and sends the result only as a private DM to the member who asked.\n\
         It can never post in a channel, message someone else or take actions. For \
         event-driven requests (\"tell me when X happens\", \"notify me if someone books…\") \
         use create_action_alert instead. Times without an offset are in the community's \
         time zone; a day without a time means 09:00."
    }
    async fn run(&self, a: CreateArgs, ctx: &TurnContext) -> ToolResult {
        let Some(member) = ctx.principal.id else {
            return ToolResult::failed(NEEDS_MEMBER);
        };
        let Some((tz, enabled)) = tenant_rules() else {
            return ToolResult::failed("No community context for follow-ups.");
        };
        if !enabled {
            return ToolResult::failed(DISABLED);
        }
        let instruction = a.instruction.trim();
        if instruction.is_empty() {
            return ToolResult::failed(
                "A follow-up needs an instruction: what to check or remind the member about.",
            );
        }
        let Some(delivery) = delivery_for(&ctx.principal) else {
            return ToolResult::failed(NO_DESTINATION);
        };
        let now = ctx.services.clock.now();
        let schedule = match parse_when(&a.when, now, &tz) {
            Ok(s) => s,
            Err(e) => return ToolResult::failed(e.to_string()),
        };
        let mut row = FollowUp {
            id: Uuid::new_v4(),
            tenant_id: ctx.tenant_id,
            member_id: member,
            instruction: instruction.to_string(),
            status: FollowUpStatus::Active,
            capability_snapshot: Json(json!(ctx.surface_tools)),
            delivery: Json(delivery),
            created_at: now,
            updated_at: now,
            ..FollowUp::default()
        };
        apply_schedule(&mut row, &schedule);
        match ctx.services.store.insert(row).await {
            Ok(row) => {
                let mut v = view(&row, &tz);
                v["message"] = json!(format!(
                    "I'll send you a private DM at {}.",
                    format_local(schedule.next_run_at, &tz)
                ));
                ToolResult::ok(v)
            }
            Err(e) => storage_failed(self.name(), e),
        }
    }
}

/// `list_follow_ups()`.
pub struct ListFollowUps;

/// Arguments of `list_follow_ups` (none).
#[derive(Deserialize, JsonSchema)]
pub struct NoArgs {}

#[async_trait]
impl TypedTool for ListFollowUps {
    type Args = NoArgs;
    fn name(&self) -> &'static str {
        names::LIST_FOLLOW_UPS
    }
    fn description(&self) -> &'static str {
        "List this member's follow-ups that are still scheduled, running, paused or failed \
         (soonest first), with their ids."
    }
    async fn run(&self, _args: NoArgs, ctx: &TurnContext) -> ToolResult {
        let Some(member) = ctx.principal.id else {
            return ToolResult::failed(NEEDS_MEMBER);
        };
        let Some((tz, _)) = tenant_rules() else {
            return ToolResult::failed("No community context for follow-ups.");
        };
        let rows: Result<Vec<FollowUp>, _> = ctx
            .services
            .store
            .scan(
                Some(ctx.tenant_id),
                Scan::index(FollowUp::MEMBER_IDX, key().uuid(member)),
            )
            .await;
        let mut rows: Vec<FollowUp> = match rows {
            Ok(rows) => rows
                .into_iter()
                .filter(|f| {
                    !matches!(
                        f.status,
                        FollowUpStatus::Cancelled | FollowUpStatus::Completed
                    )
                })
                .collect(),
            Err(e) => return storage_failed(self.name(), e),
        };
        rows.sort_by_key(|f| (f.next_run_at.is_none(), f.next_run_at, f.created_at));
        let list: Vec<Value> = rows
            .iter()
            .take(LIST_FOLLOW_UPS_LIMIT)
            .map(|f| view(f, &tz))
            .collect();
        let count = list.len();
        ToolResult::ok(json!({"follow_ups": list, "count": count}))
    }
}

/// `update_follow_up(follow_up_id, instruction?, when?)`.
pub struct UpdateFollowUp;

/// Arguments of `update_follow_up`.
#[derive(Deserialize, JsonSchema)]
pub struct UpdateArgs {
    /// Id from `list_follow_ups` (never guessed).
    pub follow_up_id: Uuid,
    /// The new instruction.
    pub instruction: Option<String>,
    /// The new when (same formats as create_follow_up).
    pub when: Option<String>,
}

#[async_trait]
impl TypedTool for UpdateFollowUp {
    type Args = UpdateArgs;
    fn name(&self) -> &'static str {
        names::UPDATE_FOLLOW_UP
    }
    fn description(&self) -> &'static str {
        "Change the instruction and/or the schedule (when) of one of this member's follow-ups."
    }
    async fn run(&self, a: UpdateArgs, ctx: &TurnContext) -> ToolResult {
        if ctx.principal.id.is_none() {
            return ToolResult::failed(NEEDS_MEMBER);
        }
        let Some((tz, _)) = tenant_rules() else {
            return ToolResult::failed("No community context for follow-ups.");
        };
        let instruction = match a.instruction.as_deref().map(str::trim) {
            Some("") => return ToolResult::failed("The new instruction is empty."),
            i => i.map(str::to_string),
        };
        if instruction.is_none() && a.when.is_none() {
            return ToolResult::failed(format!(
                "Give a new instruction or a new when (e.g. {WHEN_EXAMPLES})."
            ));
        }
        let schedule = match a.when.as_deref() {
            Some(w) => match parse_when(w, ctx.services.clock.now(), &tz) {
                Ok(s) => Some(s),
                Err(e) => return ToolResult::failed(e.to_string()),
            },
            None => None,
        };
        change_result(self.name(), ctx, &tz, a.follow_up_id, move |f| {
            refuse_unless_changeable(f)?;
            if let Some(i) = instruction {
                f.instruction = i;
            }
            if let Some(s) = &schedule {
                apply_schedule(f, s);
            }
            Ok(())
        })
        .await
    }
}

/// `pause_follow_up(follow_up_id)`.
pub struct PauseFollowUp;

/// Arguments of `pause_follow_up`, `resume_follow_up` and `cancel_follow_up`.
#[derive(Deserialize, JsonSchema)]
pub struct IdArgs {
    /// Id from `list_follow_ups` (never guessed).
    pub follow_up_id: Uuid,
}

#[async_trait]
impl TypedTool for PauseFollowUp {
    type Args = IdArgs;
    fn name(&self) -> &'static str {
        names::PAUSE_FOLLOW_UP
    }
    fn description(&self) -> &'static str {
        "Pause one of this member's follow-ups until it is resumed."
    }
    async fn run(&self, a: IdArgs, ctx: &TurnContext) -> ToolResult {
        let Some((tz, _)) = tenant_rules() else {
            return ToolResult::failed("No community context for follow-ups.");
        };
        change_result(self.name(), ctx, &tz, a.follow_up_id, |f| {
            refuse_unless_changeable(f)?;
            if f.status == FollowUpStatus::Paused {
                return Err("That follow-up is already paused.".into());
            }
            f.status = FollowUpStatus::Paused;
            Ok(())
        })
        .await
    }
}

/// `resume_follow_up(follow_up_id)`.
pub struct ResumeFollowUp;

#[async_trait]
impl TypedTool for ResumeFollowUp {
    type Args = IdArgs;
    fn name(&self) -> &'static str {
        names::RESUME_FOLLOW_UP
    }
    fn description(&self) -> &'static str {
        "Resume one of this member's paused follow-ups (a recurring one continues with its \
         next scheduled time)."
    }
    async fn run(&self, a: IdArgs, ctx: &TurnContext) -> ToolResult {
        let Some((tz, enabled)) = tenant_rules() else {
            return ToolResult::failed("No community context for follow-ups.");
        };
        if !enabled {
            return ToolResult::failed(DISABLED);
        }
        let now = ctx.services.clock.now();
        let zone = tz.clone();
        change_result(self.name(), ctx, &tz, a.follow_up_id, move |f| {
            refuse_unless_changeable(f)?;
            if f.status != FollowUpStatus::Paused {
                return Err("That follow-up is not paused.".into());
            }
            f.next_run_at = Some(resumed_run(f, now, &zone)?);
            f.status = FollowUpStatus::Active;
            Ok(())
        })
        .await
    }
}

/// The next run of a follow-up resumed at `now`: its scheduled time while
/// that is ahead; else a recurring one's next slot, and a one-time one is
/// refused (its moment has passed).
fn resumed_run(f: &FollowUp, now: Ts, tz: &TimeZone) -> Result<Ts, String> {
    if let Some(at) = f.next_run_at.filter(|at| *at > now) {
        return Ok(at);
    }
    let passed = f
        .next_run_at
        .map(|t| format_local(t, tz))
        .unwrap_or_else(|| "an unknown time".into());
    if f.schedule_type == ScheduleType::Once {
        return Err(format!(
            "That one-time follow-up was due {passed}, which has passed — give it a new time \
             with update_follow_up(when=…), then resume it."
        ));
    }
    recurrence_of(f)
        .and_then(|r| next_after(&r, now, tz))
        .ok_or_else(|| {
            "That follow-up's schedule cannot be read — give it a new time with \
             update_follow_up(when=…), then resume it."
                .to_string()
        })
}

/// `cancel_follow_up(follow_up_id)`.
pub struct CancelFollowUp;

#[async_trait]
impl TypedTool for CancelFollowUp {
    type Args = IdArgs;
    fn name(&self) -> &'static str {
        names::CANCEL_FOLLOW_UP
    }
    fn description(&self) -> &'static str {
        "Cancel one of this member's follow-ups for good."
    }
    async fn run(&self, a: IdArgs, ctx: &TurnContext) -> ToolResult {
        let Some((tz, _)) = tenant_rules() else {
            return ToolResult::failed("No community context for follow-ups.");
        };
        change_result(self.name(), ctx, &tz, a.follow_up_id, |f| {
            if matches!(
                f.status,
                FollowUpStatus::Cancelled | FollowUpStatus::Completed
            ) {
                return Err(format!("That follow-up is already {}.", f.status.as_str()));
            }
            f.status = FollowUpStatus::Cancelled;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_is_the_creators_own_dm() {
        let mut p = TurnPrincipal {
            slack_user_id: Some("U1".into()),
            email: Some("a@example.org".into()),
            ..TurnPrincipal::default()
        };
        assert_eq!(
            delivery_for(&p),
            Some(json!({"kind": "slack_dm", "slack_user_id": "U1"}))
        );
        p.slack_user_id = None;
        assert_eq!(
            delivery_for(&p),
            Some(json!({"kind": "email", "email": "a@example.org"}))
        );
        p.email = None;
        assert_eq!(delivery_for(&p), None);
    }

    #[test]
    fn a_resumed_once_follow_up_whose_time_passed_is_refused() {
        let tz = TimeZone::UTC;
        let now = Ts::from_secs(1_000_000);
        let mut f = FollowUp {
            schedule_type: ScheduleType::Once,
            next_run_at: Some(Ts::from_secs(999_000)),
            ..FollowUp::default()
        };
        assert!(
            resumed_run(&f, now, &tz)
                .unwrap_err()
                .contains("has passed")
        );
        f.next_run_at = Some(Ts::from_secs(1_000_600));
        assert_eq!(resumed_run(&f, now, &tz), Ok(Ts::from_secs(1_000_600)));
        // Recurring: the next slot after now.
        let rule = Recurrence::Interval {
            every: 1,
            unit: crate::follow_ups::schedule::IntervalUnit::Hours,
            anchor: Ts::from_secs(0),
        };
        f.schedule_type = ScheduleType::Recurring;
        f.recurrence_spec = Some(Json(rule.to_spec()));
        f.next_run_at = Some(Ts::from_secs(993_600));
        assert_eq!(resumed_run(&f, now, &tz), Ok(Ts::from_secs(1_000_800)));
    }
}

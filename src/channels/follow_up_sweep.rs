//! The `follow-up-sweep` tick (§13, every 60 s, single attempt): claim the
//! due follow-ups of every tenant (`active`, `next_run_at ≤ now`) →
//! `processing`, run each stored instruction as an internal turn with
//! `maxIterations: 6` and the creator's tier, DM the result to the creator
//! (private only, `channels::private_dm`), record a `follow_up_runs` row,
//! then reschedule (recurring, `next_after`) or complete.
//!
//! Delivery is at most once. The run row says how far a run got: it holds
//! the reply before the DM is sent, so a claim whose run died (its lease
//! over) is retried only when no reply was produced yet; one that died
//! while delivering is closed without sending again. The row is re-read
//! before delivering: a member who cancelled meanwhile gets nothing.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use storage::{
    Channel, FollowUp, FollowUpRun, FollowUpRunStatus, FollowUpStatus, Json, Principal, Scan,
    ScheduleType, StorageError, Store, TenantStore, Ts, key,
};
use uuid::Uuid;

use super::private_dm::{PrivateDm, Recipient};
use super::turn::{TurnRequest, TurnServices, run_channel_turn};
use crate::follow_ups::follow_ups_enabled;
use crate::follow_ups::schedule::{Recurrence, format_local, next_after, zone};
use crate::platform::tenancy::{self, TenantContext};
use crate::prompts::platform::keys::FOLLOW_UPS_SCHEDULED_RUN;
use crate::prompts::render::PromptVars;
use crate::queue::job::{FollowUpSweepTick, TypedJobHandler};
use crate::queue::{HandlerResult, JobContext, JobError};

/// §13: a follow-up runs as an internal turn of at most 6 planning rounds.
pub const FOLLOW_UP_MAX_ITERATIONS: u32 = 6;
/// How long a claim may stay `processing` before the sweep takes it back
/// (a run of 6 rounds with its tools ends well within it).
pub const CLAIM_LEASE: Duration = Duration::from_secs(15 * 60);
/// Due follow-ups claimed per tick (the rest are next minute's).
pub const CLAIMS_PER_TICK: usize = 50;

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Results delivered.
    pub sent: usize,
    /// Runs that failed (turn or delivery).
    pub failed: usize,
    /// Runs skipped (follow-ups turned off for the tenant).
    pub skipped: usize,
    /// Runs whose follow-up was cancelled while they ran.
    pub cancelled: usize,
    /// Stale claims taken back.
    pub recovered: usize,
}

/// The sweep over every tenant's follow-ups. Cheap to clone.
#[derive(Clone)]
pub struct FollowUpSweep {
    turns: TurnServices,
    dm: PrivateDm,
}

/// How a run ended, for the follow-up's next state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    Delivered,
    Failed,
    Skipped,
}

impl FollowUpSweep {
    /// A sweep running turns through `turns` and delivering through `dm`.
    pub fn new(turns: TurnServices, dm: PrivateDm) -> Self {
        FollowUpSweep { turns, dm }
    }

    fn store(&self) -> &storage::RedbStore {
        &self.turns.store
    }

    fn now(&self) -> Ts {
        self.turns.tools.clock.now()
    }

    /// One pass: take back stale claims, then claim and run what is due.
    pub async fn sweep(&self) -> Result<SweepReport, StorageError> {
        let mut report = SweepReport::default();
        let now = self.now();
        report.recovered = self.recover(now).await?;
        let due: Vec<FollowUp> = self
            .store()
            .scan(
                None,
                Scan::index(FollowUp::DUE_IDX, key())
                    .until_ts(now)
                    .limit(CLAIMS_PER_TICK),
            )
            .await?;
        for row in due {
            let Some(claimed) = self.claim(row.tenant_id, row.id, now).await? else {
                continue;
            };
            let Some(tenant) = self.store().tenant_by_id(claimed.tenant_id).await? else {
                continue;
            };
            let ctx = TenantContext {
                tenant: Arc::new(tenant),
            };
            let status = tenancy::scope(ctx, self.run_one(claimed)).await?;
            match status {
                FollowUpRunStatus::Sent => report.sent += 1,
                FollowUpRunStatus::Skipped => report.skipped += 1,
                FollowUpRunStatus::Cancelled => report.cancelled += 1,
                FollowUpRunStatus::Failed | FollowUpRunStatus::Processing => report.failed += 1,
            }
        }
        Ok(report)
    }

    /// `active` and due → `processing` (claim time in `updated_at`), in one
    /// transaction so a member's concurrent edit is never overwritten.
    async fn claim(
        &self,
        tenant: Uuid,
        id: Uuid,
        now: Ts,
    ) -> Result<Option<FollowUp>, StorageError> {
        let (claimed, _) = self
            .store()
            .transact(move |tx| {
                let found: Option<FollowUp> = tx.get(Some(tenant), key().uuid(id))?;
                let Some(mut row) = found.filter(|f| {
                    f.status == FollowUpStatus::Active && f.next_run_at.is_some_and(|at| at <= now)
                }) else {
                    return Ok(None);
                };
                row.status = FollowUpStatus::Processing;
                row.updated_at = now;
                tx.update(&row)?;
                Ok(Some(row))
            })
            .await?;
        Ok(claimed)
    }

    /// Claims older than the lease: a run that produced no reply is retried
    /// now; one that died while delivering is closed without a resend.
    async fn recover(&self, now: Ts) -> Result<usize, StorageError> {
        let stale_before = now.plus_micros(-(CLAIM_LEASE.as_micros() as i64));
        let stale: Vec<FollowUp> = self
            .store()
            .scan(
                None,
                Scan::index(FollowUp::PROCESSING_IDX, key())
                    .until_ts(stale_before)
                    .limit(CLAIMS_PER_TICK),
            )
            .await?;
        let mut recovered = 0;
        for row in stale {
            let latest: Option<FollowUpRun> = self
                .store()
                .scan(
                    Some(row.tenant_id),
                    Scan::index(FollowUpRun::FOLLOW_UP_IDX, key().uuid(row.id))
                        .desc()
                        .limit(1),
                )
                .await?
                .into_iter()
                .next();
            let open_run = latest.filter(|r| r.status == FollowUpRunStatus::Processing);
            let delivering = open_run.as_ref().is_some_and(|r| r.response_text.is_some());
            if let Some(mut run) = open_run {
                run.status = FollowUpRunStatus::Failed;
                run.error = Some(
                    if delivering {
                        "interrupted while delivering; not sent again"
                    } else {
                        "interrupted before a reply; run again"
                    }
                    .into(),
                );
                run.finished_at = Some(now);
                self.store().update(run).await?;
            }
            let tenant = self.store().tenant_by_id(row.tenant_id).await?;
            let tz = zone(tenant.as_ref().map_or("UTC", |t| t.timezone.as_str()));
            self.finish(&row, now, Some(row.updated_at), move |f| {
                if delivering {
                    advance(f, now, &tz, Ended::Delivered)
                } else {
                    f.status = FollowUpStatus::Active;
                    f.next_run_at = Some(now);
                }
            })
            .await?;
            tracing::warn!(
                tenant = %row.tenant_id,
                follow_up = %row.id,
                delivering,
                "follow-up claim outlived its lease; taken back"
            );
            recovered += 1;
        }
        Ok(recovered)
    }

    /// Run one claimed follow-up inside its tenant; the run's final status.
    async fn run_one(&self, row: FollowUp) -> Result<FollowUpRunStatus, StorageError> {
        let ctx = tenancy::current().ok_or(StorageError::Check {
            column: "tenant",
            message: "no tenant context".into(),
        })?;
        let tenant = ctx.tenant.clone();
        let tz = zone(&tenant.timezone);
        let now = self.now();
        let mut run = FollowUpRun {
            id: Uuid::new_v4(),
            tenant_id: row.tenant_id,
            follow_up_id: row.id,
            status: FollowUpRunStatus::Processing,
            tool_calls: Json(json!([])),
            missing_capabilities: Json(json!([])),
            started_at: now,
            ..FollowUpRun::default()
        };
        if !follow_ups_enabled(&tenant.settings.0) {
            run.status = FollowUpRunStatus::Skipped;
            run.error = Some("follow-ups are turned off for this community".into());
            run.finished_at = Some(now);
            self.store().insert(run).await?;
            self.finish(&row, now, None, move |f| {
                advance(f, now, &tz, Ended::Skipped)
            })
            .await?;
            return Ok(FollowUpRunStatus::Skipped);
        }
        let member: Option<Principal> = self
            .store()
            .get(Some(row.tenant_id), key().uuid(row.member_id))
            .await?;
        let Some(member) = member else {
            // The member is gone (their follow-ups go with them).
            tracing::info!(follow_up = %row.id, "follow-up's member no longer exists; ended");
            return Ok(FollowUpRunStatus::Cancelled);
        };
        let mut run = self.store().insert(run).await?;

        let (recipient, channel) = recipient_of(&row.delivery.0, &member);
        let outcome = match self.turn(&row, &member, channel, &tz).await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(follow_up = %row.id, error = %e, "follow-up turn failed");
                run.status = FollowUpRunStatus::Failed;
                run.error = Some(format!("the run failed: {e}"));
                run.finished_at = Some(self.now());
                self.store().update(run).await?;
                let at = self.now();
                self.finish(&row, at, None, move |f| advance(f, at, &tz, Ended::Failed))
                    .await?;
                return Ok(FollowUpRunStatus::Failed);
            }
        };
        let offered: std::collections::BTreeSet<&str> =
            outcome.offered_tools.iter().map(String::as_str).collect();
        let missing: Vec<&str> = row
            .capability_snapshot
            .0
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|t| !offered.contains(t))
            .collect();
        run.tool_calls = Json(json!(
            outcome
                .tool_calls
                .iter()
                .map(|c| json!({"name": c.name, "success": c.result.success}))
                .collect::<Vec<_>>()
        ));
        run.missing_capabilities = Json(json!(missing));
        // The reply is on record before it is sent: a crash from here on
        // never sends it twice.
        run.response_text = Some(outcome.reply.clone());
        let mut run = self.store().update(run).await?;

        let current: Option<FollowUp> = self
            .store()
            .get(Some(row.tenant_id), key().uuid(row.id))
            .await?;
        if current.is_none_or(|f| f.status != FollowUpStatus::Processing) {
            run.status = FollowUpRunStatus::Cancelled;
            run.finished_at = Some(self.now());
            self.store().update(run).await?;
            tracing::info!(follow_up = %row.id, "follow-up changed while it ran; nothing delivered");
            return Ok(FollowUpRunStatus::Cancelled);
        }
        let subject = format!("Your follow-up from {}", tenant.agent_name);
        let ended = match self
            .dm
            .send(&tenant, &recipient, &subject, &outcome.reply)
            .await
        {
            Ok(how) => {
                run.status = FollowUpRunStatus::Sent;
                tracing::info!(follow_up = %row.id, via = how.kind(), "follow-up delivered");
                Ended::Delivered
            }
            Err(reason) => {
                tracing::warn!(follow_up = %row.id, reason = %reason, "follow-up not delivered");
                run.status = FollowUpRunStatus::Failed;
                run.error = Some(format!("not delivered: {reason}"));
                Ended::Failed
            }
        };
        let done = self.now();
        run.finished_at = Some(done);
        let status = run.status;
        self.store().update(run).await?;
        self.finish(&row, done, None, move |f| advance(f, done, &tz, ended))
            .await?;
        Ok(status)
    }

    /// The internal turn: the framed instruction, as the creator, on the
    /// surface they created it on.
    async fn turn(
        &self,
        row: &FollowUp,
        member: &Principal,
        channel: Channel,
        tz: &jiff::tz::TimeZone,
    ) -> anyhow::Result<super::turn::TurnOutcome> {
        let schedule = match row.schedule_type {
            ScheduleType::Recurring => row
                .recurrence_spec
                .as_ref()
                .and_then(|s| Recurrence::from_spec(&s.0))
                .map_or_else(|| "recurring".to_string(), |r| r.describe()),
            _ => "one time".to_string(),
        };
        let message = self
            .turns
            .prompts
            .render(
                FOLLOW_UPS_SCHEDULED_RUN,
                &PromptVars::new()
                    .with("instruction", row.instruction.clone())
                    .with("createdAt", format_local(row.created_at, tz))
                    .with("schedule", schedule),
            )
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
        let req = TurnRequest {
            channel: Some(channel),
            message,
            stable_user_id: Some(member.ref_.clone()),
            max_iterations: Some(FOLLOW_UP_MAX_ITERATIONS),
            ..TurnRequest::default()
        };
        run_channel_turn(&self.turns, req)
            .await
            .map_err(|e| anyhow::anyhow!(e))
    }

    /// Apply `change` to the follow-up if it is still this sweep's claim
    /// (still `processing`, and — for recovery — claimed at `claimed_at`);
    /// a member's cancel in the meantime stands.
    async fn finish(
        &self,
        row: &FollowUp,
        at: Ts,
        claimed_at: Option<Ts>,
        change: impl FnOnce(&mut FollowUp) + Send + 'static,
    ) -> Result<(), StorageError> {
        let (tenant, id) = (row.tenant_id, row.id);
        self.store()
            .transact(move |tx| {
                let found: Option<FollowUp> = tx.get(Some(tenant), key().uuid(id))?;
                let Some(mut f) = found else { return Ok(()) };
                if f.status != FollowUpStatus::Processing
                    || claimed_at.is_some_and(|c| f.updated_at != c)
                {
                    return Ok(());
                }
                change(&mut f);
                f.last_run_at = Some(at);
                f.updated_at = at;
                tx.update(&f)?;
                Ok(())
            })
            .await?;
        Ok(())
    }
}

/// The follow-up's next state after a run.
fn advance(f: &mut FollowUp, at: Ts, tz: &jiff::tz::TimeZone, ended: Ended) {
    let rule = (f.schedule_type == ScheduleType::Recurring)
        .then_some(f.recurrence_spec.as_ref())
        .flatten()
        .and_then(|s| Recurrence::from_spec(&s.0));
    match (rule, ended) {
        (Some(rule), _) => match next_after(&rule, at, tz) {
            Some(next) => {
                f.status = FollowUpStatus::Active;
                f.next_run_at = Some(next);
            }
            None => {
                f.status = FollowUpStatus::Completed;
                f.next_run_at = None;
            }
        },
        // Turned off: a one-time follow-up waits, paused, for the
        // member (or the community) to turn it back on.
        (None, Ended::Skipped) => f.status = FollowUpStatus::Paused,
        (None, Ended::Delivered) => {
            f.status = FollowUpStatus::Completed;
            f.next_run_at = None;
        }
        (None, Ended::Failed) => {
            f.status = FollowUpStatus::Failed;
            f.next_run_at = None;
        }
    }
}

/// Where a follow-up's result goes (recorded at creation) and the surface
/// its turn runs on.
fn recipient_of(delivery: &Value, member: &Principal) -> (Recipient, Channel) {
    match delivery["kind"].as_str() {
        Some("email") => (
            Recipient {
                slack_user_id: None,
                email: delivery["email"]
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| member.email.clone()),
            },
            Channel::Email,
        ),
        _ => (
            Recipient {
                slack_user_id: delivery["slack_user_id"]
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| member.slack_user_id.clone()),
                email: member.email.clone(),
            },
            Channel::Slack,
        ),
    }
}

#[async_trait]
impl TypedJobHandler for FollowUpSweep {
    type Payload = FollowUpSweepTick;

    async fn run(&self, _tick: FollowUpSweepTick, _ctx: &mut JobContext) -> HandlerResult {
        let report = self
            .sweep()
            .await
            .map_err(|e| JobError::Retry(format!("follow-up sweep: {e}")))?;
        if report != SweepReport::default() {
            tracing::info!(?report, "follow-up sweep");
        }
        Ok(serde_json::to_value(FollowUpSweepReport::from(&report)).ok())
    }
}

/// The tick's result as stored on the job.
#[derive(serde::Serialize)]
struct FollowUpSweepReport {
    sent: usize,
    failed: usize,
    skipped: usize,
    cancelled: usize,
    recovered: usize,
}

impl From<&SweepReport> for FollowUpSweepReport {
    fn from(r: &SweepReport) -> Self {
        FollowUpSweepReport {
            sent: r.sent,
            failed: r.failed,
            skipped: r.skipped,
            cancelled: r.cancelled,
            recovered: r.recovered,
        }
    }
}

//! The `knowledge-source-scheduler` tick (§11.2, §13: every 60 s): claim
//! the due sources of every tenant, move `next_sync_at` 5 minutes ahead as
//! a lease (a crash mid-tick retries those sources then, not at once),
//! start a `schedule` run, then set `next_sync_at = now + interval`
//! (clamped to `[max(5, tenant min), 43200]` minutes). A failed enqueue
//! leaves the lease: the source is tried again in 5 minutes.
//!
//! A source whose last run is still queued or running (younger than the
//! scheduler's 2 h patience) gets no second run; it is simply rescheduled.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use storage::{
    KnowledgeSource, KnowledgeSyncRun, Scan, StorageError, Store, SyncRunStatus, SyncTrigger,
    TenantStore, Ts, key,
};

use super::KnowledgeSync;
use super::runs::{SCHEDULER_ABANDONED_AFTER, StartError};
use crate::platform::tenancy::{self, TenantContext};
use crate::queue::job::{KnowledgeSourceSchedulerTick, TypedJobHandler};
use crate::queue::{HandlerResult, JobContext, JobError};

/// The lease a claimed source gets before its run is queued (§11.2).
pub const LEASE: Duration = Duration::from_secs(5 * 60);
/// Due sources claimed per tick (the rest are next minute's).
pub const SOURCES_PER_TICK: usize = 200;

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Runs started.
    pub started: usize,
    /// Due sources skipped because a run is still active.
    pub busy: usize,
    /// Sources whose run could not be queued (retried after the lease).
    pub failed: usize,
}

fn plus(ts: Ts, d: Duration) -> Ts {
    ts.plus_micros(d.as_micros() as i64)
}

impl KnowledgeSync {
    /// One scheduler pass over every tenant's due sources.
    pub async fn schedule_due(&self) -> Result<TickReport, StorageError> {
        let store = &self.inner.store;
        let now = self.inner.clock.now();
        let due: Vec<KnowledgeSource> = store
            .scan(
                None,
                Scan::index(KnowledgeSource::DUE_IDX, key())
                    .until(key().ts(plus(now, Duration::from_micros(1))))
                    .limit(SOURCES_PER_TICK),
            )
            .await?;
        let mut report = TickReport::default();
        for source in due {
            let Some(tenant) = store.tenant_by_id(source.tenant_id).await? else {
                continue;
            };
            let limits = self.limits_for(&tenant.settings.0);
            let ctx = TenantContext {
                tenant: std::sync::Arc::new(tenant),
            };
            let outcome = tenancy::scope(ctx, self.schedule_one(source, now, limits)).await?;
            match outcome {
                Scheduled::Started => report.started += 1,
                Scheduled::Busy => report.busy += 1,
                Scheduled::Failed => report.failed += 1,
                Scheduled::Gone => {}
            }
        }
        Ok(report)
    }

    async fn schedule_one(
        &self,
        source: KnowledgeSource,
        now: Ts,
        limits: super::SyncLimits,
    ) -> Result<Scheduled, StorageError> {
        let store = &self.inner.store;
        let tenant = source.tenant_id;
        // The lease, re-read so an edit since the scan is not overwritten.
        let Some(mut leased) = store
            .get::<KnowledgeSource>(Some(tenant), key().uuid(source.id))
            .await?
        else {
            return Ok(Scheduled::Gone);
        };
        let Some(interval) = leased.schedule_interval_minutes else {
            return Ok(Scheduled::Gone);
        };
        if leased.next_sync_at.is_none_or(|at| at > now) {
            return Ok(Scheduled::Gone);
        }
        leased.next_sync_at = Some(plus(now, LEASE));
        leased.updated_at = now;
        let leased = store.update(leased).await?;
        if self.has_active_run(&leased, now).await? {
            self.reschedule(&leased, now, limits.clamp_interval(interval))
                .await?;
            return Ok(Scheduled::Busy);
        }
        match self
            .start_run(&leased, SyncTrigger::Schedule, Some(json!({})))
            .await
        {
            Ok(_) => {
                self.reschedule(&leased, now, limits.clamp_interval(interval))
                    .await?;
                Ok(Scheduled::Started)
            }
            Err(StartError::Queue(e)) => {
                tracing::warn!(source = %leased.id, error = %e, "scheduled sync not queued; retried after the lease");
                Ok(Scheduled::Failed)
            }
            Err(StartError::Storage(e)) => Err(e),
        }
    }

    /// Is the source's latest run queued or running, and younger than the
    /// scheduler's patience?
    async fn has_active_run(
        &self,
        source: &KnowledgeSource,
        now: Ts,
    ) -> Result<bool, StorageError> {
        let latest: Vec<KnowledgeSyncRun> = self.runs(source.tenant_id, source.id, 1).await?;
        Ok(latest.first().is_some_and(|r| {
            matches!(r.status, SyncRunStatus::Queued | SyncRunStatus::Running)
                && now.micros() - r.started_at.unwrap_or(r.created_at).micros()
                    < SCHEDULER_ABANDONED_AFTER.as_micros() as i64
        }))
    }

    async fn reschedule(
        &self,
        source: &KnowledgeSource,
        now: Ts,
        minutes: i32,
    ) -> Result<(), StorageError> {
        let store = &self.inner.store;
        if let Some(mut s) = store
            .get::<KnowledgeSource>(Some(source.tenant_id), key().uuid(source.id))
            .await?
        {
            s.next_sync_at = Some(plus(now, Duration::from_secs(minutes as u64 * 60)));
            s.updated_at = now;
            store.update(s).await?;
        }
        Ok(())
    }
}

enum Scheduled {
    Started,
    Busy,
    Failed,
    Gone,
}

/// The `knowledge-source-scheduler` handler.
#[derive(Clone)]
pub struct SchedulerTick(pub KnowledgeSync);

#[async_trait]
impl TypedJobHandler for SchedulerTick {
    type Payload = KnowledgeSourceSchedulerTick;

    async fn run(
        &self,
        _tick: KnowledgeSourceSchedulerTick,
        _ctx: &mut JobContext,
    ) -> HandlerResult {
        let r = self
            .0
            .schedule_due()
            .await
            .map_err(|e| JobError::Retry(format!("knowledge scheduler: {e}")))?;
        Ok(Some(
            json!({"started": r.started, "busy": r.busy, "failed": r.failed}),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_is_five_minutes() {
        assert_eq!(LEASE.as_secs(), 300);
        assert_eq!(plus(Ts::from_secs(100), LEASE), Ts::from_secs(400));
    }
}

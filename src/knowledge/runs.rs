//! The sync run lifecycle (§11.2) and the `knowledge-source-sync` job
//! (§13: concurrency 3, 4 attempts, exponential 30 s; its enqueue failures
//! propagate — the API answers 503 and nothing is left half-queued).
//!
//! queued → running (the unique partial index lets one run per source run;
//! a run still `running` after [`ABANDONED_AFTER`] is failed as abandoned)
//! → succeeded with counters, `triggered` (a webhook source accepted the
//! request and pushes later) or failed. A failure adds one to the source's
//! `consecutive_failures` (at [`ERROR_AFTER_FAILURES`] the source goes to
//! `error`); a success resets it and reactivates the source.
//!
//! The job carries only the run id; a retried job resumes its own running
//! run (page writes are idempotent by their hashes).

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use storage::{
    EnqueueMode, KnowledgeSource, KnowledgeSyncRun, Scan, SourceKind, SourceStatus, StorageError,
    Store, SyncRunStatus, SyncTrigger, Ts, key,
};
use uuid::Uuid;

use super::KnowledgeSync;
use super::apply::{Applied, ApplyOptions, ai_step};
use super::fetch::{FetchOutcome, MAX_DOCUMENTS_PER_RUN, RawDocument, RunRef};
use crate::platform::tenancy::current_tenant_id;
use crate::queue::job::{JobOptions, QueuePayload, TypedJobHandler};
use crate::queue::registry::KNOWLEDGE_SOURCE_SYNC;
use crate::queue::{HandlerResult, JobContext, JobError};

/// A run still `running` this long is abandoned (§11.2: 30 minutes).
pub const ABANDONED_AFTER: Duration = Duration::from_secs(30 * 60);
/// The scheduler's longer patience before it treats a run as abandoned (2 h).
pub const SCHEDULER_ABANDONED_AFTER: Duration = Duration::from_secs(2 * 60 * 60);
/// Consecutive failures that put a source in `error` (§11.2).
pub const ERROR_AFTER_FAILURES: i32 = 3;
/// Job ids of sync runs: this prefix + the run id.
pub const SYNC_JOB_PREFIX: &str = "knowledge-source-sync-";

/// The `knowledge-source-sync` payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncJob {
    /// The `knowledge_sync_runs` row to run.
    pub run_id: Uuid,
}

impl QueuePayload for SyncJob {
    const QUEUE: &'static str = KNOWLEDGE_SOURCE_SYNC;
}

/// Run options a trigger may set (§11.2: `input_payload.options`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunOptions {
    /// Overrides the source's `ai_cleanup`.
    #[serde(default)]
    pub ai_cleanup: Option<bool>,
    /// Overrides `ai_cleanup_instructions`.
    #[serde(default)]
    pub ai_cleanup_instructions: Option<String>,
    /// Overrides `replace_missing`.
    #[serde(default)]
    pub replace_missing: Option<bool>,
}

/// Why a run could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The run row could not be written.
    #[error(transparent)]
    Storage(StorageError),
    /// The job could not be queued (the run is marked failed).
    #[error("the sync could not be queued: {0}")]
    Queue(StorageError),
}

fn age_over(started: Option<Ts>, now: Ts, limit: Duration) -> bool {
    started.is_some_and(|s| now.micros() - s.micros() > limit.as_micros() as i64)
}

impl KnowledgeSync {
    /// Create a queued run for `source` and enqueue its job.
    /// `input` = `{documents?, options?}` (pushed documents ride here).
    pub async fn start_run(
        &self,
        source: &KnowledgeSource,
        trigger: SyncTrigger,
        input: Option<Value>,
    ) -> Result<KnowledgeSyncRun, StartError> {
        let now = self.inner.clock.now();
        let id = Uuid::new_v4();
        let job_id = format!("{SYNC_JOB_PREFIX}{id}");
        let run = KnowledgeSyncRun {
            id,
            tenant_id: source.tenant_id,
            source_id: source.id,
            trigger_type: trigger,
            status: SyncRunStatus::Queued,
            input_payload: input.map(storage::Json),
            metadata: storage::Json(json!({})),
            queue_job_id: Some(job_id.clone()),
            created_at: now,
            updated_at: now,
            ..KnowledgeSyncRun::default()
        };
        let run = self
            .inner
            .store
            .insert(run)
            .await
            .map_err(StartError::Storage)?;
        self.enqueue(&run, &job_id).await?;
        Ok(run)
    }

    /// Queue the job of a queued run; a failure marks the run failed.
    pub(super) async fn enqueue(
        &self,
        run: &KnowledgeSyncRun,
        job_id: &str,
    ) -> Result<(), StartError> {
        let queued = self
            .inner
            .queues
            .enqueue_job(
                &SyncJob { run_id: run.id },
                JobOptions {
                    id: Some(job_id.to_string()),
                    tenant_id: Some(run.tenant_id),
                    delay_ms: 0,
                    mode: EnqueueMode::Dedupe,
                },
            )
            .await;
        if let Err(e) = queued {
            tracing::error!(run = %run.id, error = %e, "knowledge sync not queued");
            let mut failed = run.clone();
            failed.status = SyncRunStatus::Failed;
            failed.error = Some("the sync could not be queued".into());
            failed.finished_at = Some(self.inner.clock.now());
            if let Err(e2) = self.inner.store.update(failed).await {
                tracing::warn!(run = %run.id, error = %e2, "queued-run failure not recorded");
            }
            return Err(StartError::Queue(e));
        }
        Ok(())
    }

    /// The source's run that holds the "one running run" slot, if any.
    pub async fn running_run(
        &self,
        tenant: Uuid,
        source: Uuid,
    ) -> Result<Option<KnowledgeSyncRun>, StorageError> {
        self.inner
            .store
            .find_unique(
                Some(tenant),
                KnowledgeSyncRun::ONE_RUNNING_KEY,
                key().uuid(source),
            )
            .await
    }

    /// Fail `run` (and count it against its source unless `counts` is
    /// false), in one transaction.
    pub(super) async fn fail_run(
        &self,
        run: &KnowledgeSyncRun,
        error: &str,
        http_status: Option<u16>,
        counts: bool,
    ) -> Result<(), StorageError> {
        let now = self.inner.clock.now();
        let (tenant, run_id, source_id) = (run.tenant_id, run.id, run.source_id);
        let error = error.chars().take(2_000).collect::<String>();
        tracing::warn!(run = %run_id, source = %source_id, error = %error, "knowledge sync run failed");
        self.inner
            .store
            .transact(move |tx| {
                if let Some(mut r) = tx.get::<KnowledgeSyncRun>(Some(tenant), key().uuid(run_id))? {
                    r.status = SyncRunStatus::Failed;
                    r.error = Some(error.clone());
                    r.http_status = http_status.map(i32::from);
                    r.finished_at = Some(now);
                    r.updated_at = now;
                    tx.update(&r)?;
                }
                if counts
                    && let Some(mut s) =
                        tx.get::<KnowledgeSource>(Some(tenant), key().uuid(source_id))?
                {
                    s.consecutive_failures += 1;
                    if s.consecutive_failures >= ERROR_AFTER_FAILURES {
                        s.status = SourceStatus::Error;
                    }
                    s.last_error = Some(error);
                    s.updated_at = now;
                    tx.update(&s)?;
                }
                Ok(())
            })
            .await?;
        Ok(())
    }

    /// Finish `run` as succeeded (or triggered) and reset its source.
    async fn succeed_run(
        &self,
        run: &KnowledgeSyncRun,
        status: SyncRunStatus,
        applied: Option<&Applied>,
        http_status: Option<u16>,
        extra: Value,
    ) -> Result<KnowledgeSyncRun, StorageError> {
        let now = self.inner.clock.now();
        let mut r = run.clone();
        r.status = status;
        r.http_status = http_status.map(i32::from);
        r.finished_at = Some(now);
        r.updated_at = now;
        let mut metadata = extra;
        if let Some(a) = applied {
            let n = |v: usize| v.min(i32::MAX as usize) as i32;
            r.documents_received = n(a.documents_received);
            r.pages_created = n(a.pages_created);
            r.pages_updated = n(a.pages_updated);
            r.pages_unchanged = n(a.pages_unchanged);
            r.pages_deleted = n(a.pages_deleted);
            r.ai_cleaned = n(a.ai_cleaned);
            metadata["diff"] = json!(a.diff);
            metadata["document_errors"] = json!(a.errors);
            metadata["ai_failed"] = json!(a.ai_failed);
            if let Some(why) = &a.replace_missing_skipped {
                metadata["replace_missing_skipped"] = json!(why);
            }
        }
        r.metadata = storage::Json(metadata);
        // Pushed documents are pages now: keep the count, not the bodies.
        if let Some(p) = r.input_payload.as_mut()
            && let Some(docs) = p.0.get("documents").and_then(Value::as_array)
        {
            let count = docs.len();
            p.0["documents"] = json!([]);
            p.0["documents_count"] = json!(count);
        }
        let (tenant, source_id) = (r.tenant_id, r.source_id);
        let row = r.clone();
        self.inner
            .store
            .transact(move |tx| {
                tx.update(&row)?;
                if let Some(mut s) =
                    tx.get::<KnowledgeSource>(Some(tenant), key().uuid(source_id))?
                {
                    s.consecutive_failures = 0;
                    if s.status == SourceStatus::Error {
                        s.status = SourceStatus::Active;
                    }
                    s.last_error = None;
                    s.last_synced_at = Some(now);
                    s.updated_at = now;
                    tx.update(&s)?;
                }
                Ok(())
            })
            .await?;
        Ok(r)
    }

    /// Claim the source's running slot for `run`. `Ok(false)`: another run
    /// holds it (and `run` was failed, not counted against the source).
    async fn claim(&self, run: &mut KnowledgeSyncRun) -> Result<bool, StorageError> {
        let now = self.inner.clock.now();
        if let Some(active) = self.running_run(run.tenant_id, run.source_id).await?
            && active.id != run.id
        {
            if age_over(active.started_at, now, ABANDONED_AFTER) {
                self.fail_run(
                    &active,
                    "abandoned: still running after 30 minutes",
                    None,
                    true,
                )
                .await?;
            } else {
                self.fail_run(
                    run,
                    "another sync run of this source is running",
                    None,
                    false,
                )
                .await?;
                return Ok(false);
            }
        }
        if run.status == SyncRunStatus::Running {
            return Ok(true);
        }
        let mut claimed = run.clone();
        claimed.status = SyncRunStatus::Running;
        claimed.started_at = Some(now);
        claimed.updated_at = now;
        match self.inner.store.update(claimed).await {
            Ok(r) => {
                *run = r;
                Ok(true)
            }
            Err(StorageError::Conflict { constraint })
                if constraint == KnowledgeSyncRun::ONE_RUNNING_KEY =>
            {
                self.fail_run(
                    run,
                    "another sync run of this source is running",
                    None,
                    false,
                )
                .await?;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Run one sync run to its end. `Err` only for storage failures (the
    /// job retries and resumes the same run).
    pub async fn execute(&self, run_id: Uuid) -> Result<KnowledgeSyncRun, JobError> {
        let retry = |e: StorageError| JobError::Retry(format!("knowledge sync storage: {e}"));
        let tenant = current_tenant_id().map_err(|e| JobError::Permanent(e.to_string()))?;
        let store = &self.inner.store;
        let mut run: KnowledgeSyncRun = store
            .get(Some(tenant), key().uuid(run_id))
            .await
            .map_err(retry)?
            .ok_or_else(|| JobError::Permanent(format!("sync run {run_id} does not exist")))?;
        if !matches!(run.status, SyncRunStatus::Queued | SyncRunStatus::Running) {
            return Ok(run);
        }
        let Some(source) = store
            .get::<KnowledgeSource>(Some(tenant), key().uuid(run.source_id))
            .await
            .map_err(retry)?
        else {
            return Err(JobError::Permanent("the source no longer exists".into()));
        };
        if !self.claim(&mut run).await.map_err(retry)? {
            return Ok(run);
        }
        let payload = run.input_payload.as_ref().map(|p| p.0.clone());
        let options: RunOptions = payload
            .as_ref()
            .and_then(|p| p.get("options"))
            .filter(|o| !o.is_null())
            .map(|o| serde_json::from_value(o.clone()))
            .transpose()
            .unwrap_or_else(|e| {
                tracing::warn!(run = %run.id, error = %e, "run options ignored");
                None
            })
            .unwrap_or_default();
        let pushed: Option<Vec<RawDocument>> = payload
            .as_ref()
            .and_then(|p| p.get("documents"))
            .filter(|d| d.as_array().is_some_and(|a| !a.is_empty()))
            .map(|d| serde_json::from_value(d.clone()))
            .transpose()
            .map_err(|e| JobError::Permanent(format!("stored documents unreadable: {e}")))?;
        let fetched_at = self.inner.clock.now();
        let (docs, total, http_status) = match (pushed, source.source_kind) {
            (Some(docs), _) => {
                let total = docs.len();
                (docs, total, None)
            }
            (None, SourceKind::ApiPush) => {
                self.fail_run(&run, "an api_push run needs documents", None, true)
                    .await
                    .map_err(retry)?;
                return self.reload(tenant, run_id).await;
            }
            (None, _) => {
                let r = RunRef {
                    tenant_id: tenant,
                    run_id,
                };
                match self.inner.fetcher.fetch(&source, &r).await {
                    Ok(FetchOutcome::Documents(f)) => {
                        (f.documents, f.documents_total, f.http_status)
                    }
                    Ok(FetchOutcome::Triggered { http_status }) => {
                        let extra = json!({"callback_url": self.inner.fetcher.callback_url(&r)});
                        return self
                            .succeed_run(
                                &run,
                                SyncRunStatus::Triggered,
                                None,
                                Some(http_status),
                                extra,
                            )
                            .await
                            .map_err(retry);
                    }
                    Err(e) => {
                        self.fail_run(&run, &e.message, e.http_status, true)
                            .await
                            .map_err(retry)?;
                        return self.reload(tenant, run_id).await;
                    }
                }
            }
        };
        if docs.is_empty() {
            self.fail_run(&run, "the run had no documents", http_status, true)
                .await
                .map_err(retry)?;
            return self.reload(tenant, run_id).await;
        }
        let truncated = total > docs.len() || docs.len() > MAX_DOCUMENTS_PER_RUN;
        let docs: Vec<RawDocument> = docs.into_iter().take(MAX_DOCUMENTS_PER_RUN).collect();
        let opts = ApplyOptions {
            ai: ai_step(
                source.source_kind,
                options.ai_cleanup.unwrap_or(source.ai_cleanup),
                options
                    .ai_cleanup_instructions
                    .clone()
                    .or_else(|| source.ai_cleanup_instructions.clone()),
            ),
            replace_missing: options.replace_missing.unwrap_or(source.replace_missing),
            truncated,
            fetched_at,
        };
        let applied = self.apply(&source, docs, &opts).await.map_err(retry)?;
        let extra = json!({"documents_total": total, "truncated": truncated});
        let done = self
            .succeed_run(
                &run,
                SyncRunStatus::Succeeded,
                Some(&applied),
                http_status,
                extra,
            )
            .await
            .map_err(retry)?;
        tracing::info!(
            run = %run_id, source = %source.id,
            created = applied.pages_created, updated = applied.pages_updated,
            unchanged = applied.pages_unchanged, deleted = applied.pages_deleted,
            "knowledge sync run succeeded"
        );
        Ok(done)
    }

    async fn reload(&self, tenant: Uuid, run_id: Uuid) -> Result<KnowledgeSyncRun, JobError> {
        self.inner
            .store
            .get(Some(tenant), key().uuid(run_id))
            .await
            .map_err(|e| JobError::Retry(e.to_string()))?
            .ok_or_else(|| JobError::Permanent(format!("sync run {run_id} vanished")))
    }

    /// A source's runs, newest first.
    pub async fn runs(
        &self,
        tenant: Uuid,
        source: Uuid,
        limit: usize,
    ) -> Result<Vec<KnowledgeSyncRun>, StorageError> {
        self.inner
            .store
            .scan(
                Some(tenant),
                Scan::index(KnowledgeSyncRun::SOURCE_IDX, key().uuid(source))
                    .desc()
                    .limit(limit),
            )
            .await
    }
}

/// The `knowledge-source-sync` handler.
#[derive(Clone)]
pub struct SyncJobHandler(pub KnowledgeSync);

#[async_trait]
impl TypedJobHandler for SyncJobHandler {
    type Payload = SyncJob;

    async fn run(&self, p: SyncJob, _ctx: &mut JobContext) -> HandlerResult {
        let run = self.0.execute(p.run_id).await?;
        Ok(Some(json!({
            "run_id": run.id,
            "status": run.status.as_str(),
            "pages_created": run.pages_created,
            "pages_updated": run.pages_updated,
            "pages_unchanged": run.pages_unchanged,
            "pages_deleted": run.pages_deleted,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_constants_are_the_specs() {
        assert_eq!(ABANDONED_AFTER.as_secs(), 30 * 60);
        assert_eq!(SCHEDULER_ABANDONED_AFTER.as_secs(), 2 * 60 * 60);
        assert_eq!(ERROR_AFTER_FAILURES, 3);
        let now = Ts::from_secs(10_000);
        assert!(age_over(
            Some(Ts::from_secs(10_000 - 1801)),
            now,
            ABANDONED_AFTER
        ));
        assert!(!age_over(
            Some(Ts::from_secs(10_000 - 1799)),
            now,
            ABANDONED_AFTER
        ));
        assert!(!age_over(None, now, ABANDONED_AFTER));
    }

    #[test]
    fn run_options_are_strict() {
        let o: RunOptions =
            serde_json::from_value(json!({"ai_cleanup": true, "replace_missing": false})).unwrap();
        assert_eq!(o.ai_cleanup, Some(true));
        assert!(serde_json::from_value::<RunOptions>(json!({"bogus": 1})).is_err());
    }
}

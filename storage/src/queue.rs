//! The durable job queue (spec §13 machinery; BullMQ's guarantees in redb).
//!
//! A job lives in the platform-wide `queue_jobs` table, keyed by
//! `(queue, job id)`. Every state change of a job — and its index entries
//! and, on completion/failure, its `queue_job_events` row — commits in one
//! durable write transaction.
//!
//! States: `waiting` (due when enqueued) and `delayed` (due later) are both
//! claimable once `run_at ≤ now`; `active` jobs hold a lease (owner +
//! deadline) that the worker renews; an expired lease sends the job back to
//! `waiting` (at-least-once) with its checkpoint intact; `completed` and
//! `failed` are kept for the retention window.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::codec::{Json, Ts};
use crate::error::StorageResult;
use crate::key::{Key, key};
use crate::table::{IndexDef, Record, Scope, TableDef};

/// How `enqueue` treats an id that already exists in a live state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum EnqueueMode {
    /// Job-id dedupe: an id that is waiting, delayed or active creates nothing new.
    #[default]
    Dedupe,
    /// Coalescing (debounce): re-adding a waiting/delayed id resets its timer;
    /// re-adding an active id schedules exactly one more run after it ends.
    Coalesce,
    /// Once per id while the job is kept at all (finished included): scheduled
    /// ticks use `<queue>:<slot>` ids so two schedulers never run one slot twice.
    Once,
}

/// A job to enqueue.
#[derive(Clone, Debug)]
pub struct NewJob {
    /// Queue name (spec §13, verbatim).
    pub queue: String,
    /// Job id; `None` generates a UUID.
    pub id: Option<String>,
    /// Tenant the job acts for (payload carries it too); drives per-tenant limits.
    pub tenant_id: Option<Uuid>,
    /// Handler input.
    pub payload: serde_json::Value,
    /// Total attempts allowed (≥ 1).
    pub max_attempts: u32,
    /// Exponential backoff base: retry n waits `base × 2^(n−1)`.
    pub backoff_ms: u64,
    /// Delay before the job is due.
    pub delay_ms: u64,
    /// Dedupe or coalesce.
    pub mode: EnqueueMode,
}

/// What `enqueue` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnqueueOutcome {
    /// A new job row.
    Created,
    /// The id was live; nothing changed (dedupe).
    Deduplicated,
    /// Coalesce on a waiting/delayed job: its timer was reset.
    Rescheduled,
    /// Coalesce on an active job: one more run will follow it.
    RerunScheduled,
}

/// A job's lifecycle state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Due when enqueued.
    Waiting,
    /// Due at `run_at` (a delay or a retry backoff).
    Delayed,
    /// Claimed by a worker holding the lease.
    Active,
    /// Finished successfully.
    Completed,
    /// Out of attempts, or failed permanently.
    Failed,
}

impl JobState {
    /// The state's name as shown on dashboards.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Waiting => "waiting",
            JobState::Delayed => "delayed",
            JobState::Active => "active",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
        }
    }
    fn claimable(self) -> bool {
        matches!(self, JobState::Waiting | JobState::Delayed)
    }
}

/// `queue_jobs` — one durable job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Queue name.
    pub queue: String,
    /// Job id (unique within the queue while live).
    pub id: String,
    /// Tenant the job acts for.
    pub tenant_id: Option<Uuid>,
    /// Handler input.
    pub payload: Json,
    /// Lifecycle state.
    pub state: JobState,
    /// Attempts started so far (an attempt that died with its process is not counted).
    pub attempts_made: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// Backoff base in ms.
    pub backoff_ms: u64,
    /// When the job is (next) due.
    pub run_at: Ts,
    /// Worker holding the lease.
    pub lease_owner: Option<String>,
    /// Lease deadline.
    pub lease_until: Option<Ts>,
    /// Durable progress a retry reads instead of redoing side effects.
    pub checkpoint: Option<Json>,
    /// Handler result.
    pub result: Option<Json>,
    /// Last error.
    pub error: Option<String>,
    /// Coalesced re-add while active: run once more, due at this time.
    pub rerun_at: Option<Ts>,
    /// Times the job's worker died holding it.
    pub stalls: u32,
    /// Enqueue time.
    pub created_at: Ts,
    /// Start of the current/last attempt.
    pub started_at: Option<Ts>,
    /// Completion/failure time.
    pub finished_at: Option<Ts>,
    /// Last change.
    pub updated_at: Ts,
}

impl Job {
    /// Partial index `(queue, run_at)` over waiting + delayed jobs.
    pub const READY_IDX: &'static str = "queue_jobs_ready_idx";
    /// Partial index `(lease_until)` over active jobs.
    pub const LEASE_IDX: &'static str = "queue_jobs_active_lease_idx";
    /// Partial index `(queue, state, finished_at)` over finished jobs.
    pub const FINISHED_IDX: &'static str = "queue_jobs_finished_idx";
    /// Partial index `(queue)` over active jobs (counts).
    pub const ACTIVE_IDX: &'static str = "queue_jobs_active_idx";

    /// Primary key of a job.
    pub fn pk(queue: &str, id: &str) -> Key {
        key().str(queue).str(id)
    }

    /// Backoff before retry number `attempt` (1-based): `base × 2^(attempt−1)`.
    pub fn backoff_for(base_ms: u64, attempt: u32) -> u64 {
        let exp = attempt.saturating_sub(1).min(32);
        base_ms.saturating_mul(1u64 << exp)
    }
}

impl Record for Job {
    const DEF: TableDef = TableDef {
        name: "queue_jobs",
        scope: Scope::Global,
        pkey: "queue_jobs_pkey",
        indexes: &[
            IndexDef::secondary(Job::READY_IDX),
            IndexDef::secondary(Job::LEASE_IDX),
            IndexDef::secondary(Job::FINISHED_IDX),
            IndexDef::secondary(Job::ACTIVE_IDX),
        ],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        None
    }
    fn local_pk(&self) -> Key {
        Job::pk(&self.queue, &self.id)
    }
    fn index_keys(&self) -> Vec<Option<Key>> {
        let finished = matches!(self.state, JobState::Completed | JobState::Failed);
        vec![
            self.state
                .claimable()
                .then(|| key().str(&self.queue).ts(self.run_at)),
            match (self.state, self.lease_until) {
                (JobState::Active, Some(until)) => Some(key().ts(until)),
                _ => None,
            },
            finished.then(|| {
                key()
                    .str(&self.queue)
                    .str(self.state.as_str())
                    .ts(self.finished_at.unwrap_or(self.updated_at))
            }),
            (self.state == JobState::Active).then(|| key().str(&self.queue)),
        ]
    }
}

/// Counts and lag of one queue.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QueueStats {
    /// Queue name.
    pub queue: String,
    /// Claimable now (`run_at ≤ now`).
    pub waiting: u64,
    /// Due later.
    pub delayed: u64,
    /// Leased by a worker.
    pub active: u64,
    /// Kept completed jobs.
    pub completed: u64,
    /// Kept failed jobs.
    pub failed: u64,
    /// `run_at` of the oldest due job.
    pub oldest_due_at: Option<Ts>,
    /// `now − oldest_due_at` in ms (0 when nothing is due).
    pub lag_ms: i64,
}

/// Retention of finished jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Completed jobs older than this are removed…
    pub completed_max_age_ms: i64,
    /// …and only the newest this-many are kept.
    pub completed_max_count: usize,
    /// Failed jobs older than this are removed.
    pub failed_max_age_ms: i64,
}

/// §13: "keep completed 1 day / 200 jobs, failed 7 days".
pub const TICK_RETENTION: Retention = Retention {
    completed_max_age_ms: 24 * 3600 * 1000,
    completed_max_count: 200,
    failed_max_age_ms: 7 * 24 * 3600 * 1000,
};

/// The durable queue.
#[async_trait]
pub trait JobQueue: Send + Sync {
    /// Enqueue durably (committed before returning). See [`EnqueueMode`].
    async fn enqueue(&self, job: NewJob, now: Ts) -> StorageResult<(EnqueueOutcome, Job)>;
    /// Claim up to `limit` due jobs of `queue` (oldest `run_at` first): each
    /// becomes active with a lease for `owner` until `now + lease_ms`.
    async fn claim(
        &self,
        queue: &str,
        owner: &str,
        now: Ts,
        lease_ms: i64,
        limit: usize,
    ) -> StorageResult<Vec<Job>>;
    /// Extend a lease; `false` when `owner` no longer holds the job.
    async fn renew_lease(
        &self,
        queue: &str,
        id: &str,
        owner: &str,
        until: Ts,
    ) -> StorageResult<bool>;
    /// Durably store progress; `false` when `owner` no longer holds the job.
    async fn save_checkpoint(
        &self,
        queue: &str,
        id: &str,
        owner: &str,
        checkpoint: serde_json::Value,
    ) -> StorageResult<bool>;
    /// Finish successfully (records a `queue_job_events` row). A coalesced
    /// re-add turns the job back into a delayed run. `None` when the lease was lost.
    async fn complete(
        &self,
        queue: &str,
        id: &str,
        owner: &str,
        result: Option<serde_json::Value>,
        now: Ts,
    ) -> StorageResult<Option<Job>>;
    /// [`complete`](Self::complete) and, in the same transaction, claim the
    /// next due job of the queue for `owner` (one commit per job for a busy worker).
    async fn complete_and_claim(
        &self,
        queue: &str,
        id: &str,
        owner: &str,
        result: Option<serde_json::Value>,
        now: Ts,
        lease_ms: i64,
    ) -> StorageResult<(Option<Job>, Option<Job>)>;
    /// Record a failed attempt: retry with backoff, or `failed` after the
    /// last attempt or when `permanent`. `None` when the lease was lost.
    async fn fail(
        &self,
        queue: &str,
        id: &str,
        owner: &str,
        error: &str,
        permanent: bool,
        now: Ts,
    ) -> StorageResult<Option<Job>>;
    /// Give a claimed job back without counting the attempt (shutdown, rate limit).
    async fn release(&self, queue: &str, id: &str, owner: &str, run_at: Ts) -> StorageResult<bool>;
    /// Return every active job whose lease expired before `now` to `waiting`.
    async fn reclaim_expired(&self, now: Ts) -> StorageResult<Vec<Job>>;
    /// Earliest `run_at` among claimable jobs of `queue`.
    async fn next_due(&self, queue: &str) -> StorageResult<Option<Ts>>;
    /// Earliest lease deadline among active jobs.
    async fn next_lease_expiry(&self) -> StorageResult<Option<Ts>>;
    /// One job.
    async fn job(&self, queue: &str, id: &str) -> StorageResult<Option<Job>>;
    /// Counts and lag.
    async fn stats(&self, queue: &str, now: Ts) -> StorageResult<QueueStats>;
    /// Apply retention to one queue's finished jobs; returns how many were removed.
    async fn prune_finished(
        &self,
        queue: &str,
        retention: Retention,
        now: Ts,
    ) -> StorageResult<usize>;
    /// The newest `limit` `queue_job_events` of a queue, newest first.
    async fn recent_events(
        &self,
        queue: &str,
        limit: usize,
    ) -> StorageResult<Vec<crate::schema::QueueJobEvent>>;
    /// Delete `queue_job_events` older than `before`; returns how many.
    async fn prune_events(&self, before: Ts) -> StorageResult<usize>;
    /// Delete every job (any state) acting for `tenant` — the tenant was
    /// deleted; returns how many. A worker holding one finds its lease gone.
    async fn delete_tenant_jobs(&self, tenant: Uuid) -> StorageResult<usize>;
}

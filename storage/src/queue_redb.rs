//! [`JobQueue`] on redb: each operation is one durable write transaction
//! that moves the job between states and keeps its index entries (and the
//! `queue_job_events` row of a finished job) consistent.

use async_trait::async_trait;
use redb::{ReadableTable, WriteTransaction};

use crate::codec::{Json, Ts};
use crate::enums::JobEventStatus;
use crate::error::{StorageError, StorageResult};
use crate::key::{Key, key};
use crate::queue::*;
use crate::redb_store::RedbStore;
use crate::schema::QueueJobEvent;
use crate::store::Store;
use crate::table::{self, Record, Scan, raw_table};

/// A job whose worker died this many times while running it is failed
/// instead of being retried forever (a poison job must not loop).
pub const MAX_STALLS: u32 = 5;

fn job_pk(queue: &str, id: &str) -> Vec<u8> {
    Job::pk(queue, id).0
}

fn load(w: &WriteTransaction, queue: &str, id: &str) -> StorageResult<Option<Job>> {
    table::get_in_write::<Job>(w, &job_pk(queue, id))
}

/// The job if `owner` holds its lease.
fn leased(w: &WriteTransaction, queue: &str, id: &str, owner: &str) -> StorageResult<Option<Job>> {
    Ok(load(w, queue, id)?
        .filter(|j| j.state == JobState::Active && j.lease_owner.as_deref() == Some(owner)))
}

/// Apply `change` to the job if `owner` holds its lease; `false` otherwise.
fn update_leased(
    w: &WriteTransaction,
    queue: &str,
    id: &str,
    owner: &str,
    change: impl FnOnce(&mut Job),
) -> StorageResult<bool> {
    let Some(mut j) = leased(w, queue, id, owner)? else {
        return Ok(false);
    };
    change(&mut j);
    table::update(w, &j)?;
    Ok(true)
}

fn due_state(run_at: Ts, now: Ts) -> JobState {
    if run_at > now {
        JobState::Delayed
    } else {
        JobState::Waiting
    }
}

fn clear_lease(j: &mut Job) {
    j.lease_owner = None;
    j.lease_until = None;
}

fn append_event(
    w: &WriteTransaction,
    job: &Job,
    status: JobEventStatus,
    now: Ts,
) -> StorageResult<()> {
    let next_id = {
        let t = w.open_table(raw_table(QueueJobEvent::DEF.name))?;
        match t.last()? {
            Some((k, _)) => {
                let bytes: [u8; 8] = k.value().try_into().map_err(|_| StorageError::Corrupted {
                    table: QueueJobEvent::DEF.name,
                    detail: "event key is not a u64".into(),
                })?;
                u64::from_be_bytes(bytes) + 1
            }
            None => 1,
        }
    };
    let started = job.started_at.unwrap_or(now);
    table::insert(
        w,
        &QueueJobEvent {
            id: next_id,
            queue: job.queue.clone(),
            job_id: job.id.clone(),
            status,
            duration_ms: (now.0 - started.0).max(0) / 1000,
            error: job.error.clone(),
            created_at: now,
        },
    )
}

/// Count index entries in `[lo, hi)`.
fn count_range(
    w: &WriteTransaction,
    index: &str,
    lo: &[u8],
    hi: Option<&[u8]>,
) -> StorageResult<u64> {
    let t = w.open_table(raw_table(index))?;
    let range = match hi {
        Some(hi) => t.range::<&[u8]>(lo..hi)?,
        None => t.range::<&[u8]>(lo..)?,
    };
    let mut n = 0;
    for item in range {
        item?;
        n += 1;
    }
    Ok(n)
}

fn claim_in(
    w: &WriteTransaction,
    queue: &str,
    owner: &str,
    now: Ts,
    lease_ms: i64,
    limit: usize,
) -> StorageResult<Vec<Job>> {
    let due: Vec<Job> = {
        let ix = w.open_table(raw_table(Job::READY_IDX))?;
        let rows = w.open_table(raw_table(Job::DEF.name))?;
        let scan = Scan::index(Job::READY_IDX, key().str(queue))
            .until_ts(now)
            .limit(limit);
        table::scan::<Job, _, _>(Some(&ix), &rows, &[], &scan)?
    };
    let mut claimed = Vec::with_capacity(due.len());
    for mut j in due {
        j.state = JobState::Active;
        j.attempts_made += 1;
        j.lease_owner = Some(owner.to_string());
        j.lease_until = Some(now.plus_micros(lease_ms.saturating_mul(1000)));
        j.started_at = Some(now);
        j.updated_at = now;
        table::update(w, &j)?;
        claimed.push(j);
    }
    Ok(claimed)
}

fn complete_in(
    w: &WriteTransaction,
    queue: &str,
    id: &str,
    owner: &str,
    result: Option<serde_json::Value>,
    now: Ts,
) -> StorageResult<Option<Job>> {
    let Some(mut j) = leased(w, queue, id, owner)? else {
        return Ok(None);
    };
    j.result = result.map(Json);
    j.error = None;
    append_event(w, &j, JobEventStatus::Completed, now)?;
    clear_lease(&mut j);
    j.updated_at = now;
    finish_or_rerun(&mut j, JobState::Completed, now);
    table::update(w, &j)?;
    Ok(Some(j))
}

/// End a run: into `finished` — unless a coalesced re-add arrived while it
/// was active, in which case the job runs exactly once more (fresh attempts,
/// no checkpoint), due at the re-add's time.
fn finish_or_rerun(j: &mut Job, finished: JobState, now: Ts) {
    match j.rerun_at.take() {
        Some(rerun_at) => {
            j.run_at = rerun_at.max(now);
            j.state = due_state(j.run_at, now);
            j.attempts_made = 0;
            j.checkpoint = None;
        }
        None => {
            j.state = finished;
            j.finished_at = Some(now);
        }
    }
}

#[async_trait]
impl JobQueue for RedbStore {
    async fn enqueue(&self, new: NewJob, now: Ts) -> StorageResult<(EnqueueOutcome, Job)> {
        if new.queue.is_empty() || new.max_attempts == 0 {
            return Err(StorageError::Check {
                column: "queue_jobs",
                message: "a job needs a queue name and at least one attempt".into(),
            });
        }
        self.write(move |w| {
            let id = new
                .id
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
            let run_at = now.plus_micros((new.delay_ms as i64).saturating_mul(1000));
            if let Some(mut j) = load(w, &new.queue, &id)? {
                match (j.state, new.mode) {
                    (_, EnqueueMode::Once)
                    | (
                        JobState::Waiting | JobState::Delayed | JobState::Active,
                        EnqueueMode::Dedupe,
                    ) => {
                        return Ok((EnqueueOutcome::Deduplicated, j));
                    }
                    (JobState::Waiting | JobState::Delayed, EnqueueMode::Coalesce) => {
                        j.run_at = run_at;
                        j.state = due_state(run_at, now);
                        j.payload = Json(new.payload);
                        j.updated_at = now;
                        table::update(w, &j)?;
                        return Ok((EnqueueOutcome::Rescheduled, j));
                    }
                    (JobState::Active, EnqueueMode::Coalesce) => {
                        j.rerun_at = Some(run_at);
                        j.payload = Json(new.payload);
                        j.updated_at = now;
                        table::update(w, &j)?;
                        return Ok((EnqueueOutcome::RerunScheduled, j));
                    }
                    (JobState::Completed | JobState::Failed, _) => {
                        // A finished job with the same id is history: replace it.
                        table::delete::<Job>(w, &job_pk(&new.queue, &id))?;
                    }
                }
            }
            let job = Job {
                queue: new.queue,
                id,
                tenant_id: new.tenant_id,
                payload: Json(new.payload),
                state: due_state(run_at, now),
                attempts_made: 0,
                max_attempts: new.max_attempts,
                backoff_ms: new.backoff_ms,
                run_at,
                lease_owner: None,
                lease_until: None,
                checkpoint: None,
                result: None,
                error: None,
                rerun_at: None,
                stalls: 0,
                created_at: now,
                started_at: None,
                finished_at: None,
                updated_at: now,
            };
            table::insert(w, &job)?;
            Ok((EnqueueOutcome::Created, job))
        })
        .await
    }

    async fn claim(
        &self,
        queue: &str,
        owner: &str,
        now: Ts,
        lease_ms: i64,
        limit: usize,
    ) -> StorageResult<Vec<Job>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let (queue, owner) = (queue.to_string(), owner.to_string());
        self.write(move |w| claim_in(w, &queue, &owner, now, lease_ms, limit))
            .await
    }

    async fn renew_lease(
        &self,
        queue: &str,
        id: &str,
        owner: &str,
        until: Ts,
    ) -> StorageResult<bool> {
        let (queue, id, owner) = (queue.to_string(), id.to_string(), owner.to_string());
        self.write(move |w| update_leased(w, &queue, &id, &owner, |j| j.lease_until = Some(until)))
            .await
    }

    async fn save_checkpoint(
        &self,
        queue: &str,
        id: &str,
        owner: &str,
        checkpoint: serde_json::Value,
    ) -> StorageResult<bool> {
        let (queue, id, owner) = (queue.to_string(), id.to_string(), owner.to_string());
        self.write(move |w| {
            update_leased(w, &queue, &id, &owner, |j| {
                j.checkpoint = Some(Json(checkpoint));
                j.updated_at = Ts::now();
            })
        })
        .await
    }

    async fn complete(
        &self,
        queue: &str,
        id: &str,
        owner: &str,
        result: Option<serde_json::Value>,
        now: Ts,
    ) -> StorageResult<Option<Job>> {
        let (queue, id, owner) = (queue.to_string(), id.to_string(), owner.to_string());
        self.write(move |w| complete_in(w, &queue, &id, &owner, result, now))
            .await
    }

    async fn complete_and_claim(
        &self,
        queue: &str,
        id: &str,
        owner: &str,
        result: Option<serde_json::Value>,
        now: Ts,
        lease_ms: i64,
    ) -> StorageResult<(Option<Job>, Option<Job>)> {
        let (queue, id, owner) = (queue.to_string(), id.to_string(), owner.to_string());
        self.write(move |w| {
            let done = complete_in(w, &queue, &id, &owner, result, now)?;
            let next = match done {
                Some(_) => claim_in(w, &queue, &owner, now, lease_ms, 1)?.pop(),
                None => None,
            };
            Ok((done, next))
        })
        .await
    }

    async fn fail(
        &self,
        queue: &str,
        id: &str,
        owner: &str,
        error: &str,
        permanent: bool,
        now: Ts,
    ) -> StorageResult<Option<Job>> {
        let (queue, id, owner, error) = (
            queue.to_string(),
            id.to_string(),
            owner.to_string(),
            error.to_string(),
        );
        self.write(move |w| {
            let Some(mut j) = leased(w, &queue, &id, &owner)? else {
                return Ok(None);
            };
            j.error = Some(error);
            clear_lease(&mut j);
            j.updated_at = now;
            if permanent || j.attempts_made >= j.max_attempts {
                append_event(w, &j, JobEventStatus::Failed, now)?;
                finish_or_rerun(&mut j, JobState::Failed, now);
            } else {
                let wait = Job::backoff_for(j.backoff_ms, j.attempts_made);
                j.run_at = now.plus_micros((wait as i64).saturating_mul(1000));
                j.state = due_state(j.run_at, now);
            }
            table::update(w, &j)?;
            Ok(Some(j))
        })
        .await
    }

    async fn release(&self, queue: &str, id: &str, owner: &str, run_at: Ts) -> StorageResult<bool> {
        let (queue, id, owner) = (queue.to_string(), id.to_string(), owner.to_string());
        self.write(move |w| {
            update_leased(w, &queue, &id, &owner, |j| {
                let now = Ts::now();
                clear_lease(j);
                j.attempts_made = j.attempts_made.saturating_sub(1);
                j.run_at = run_at;
                j.state = due_state(run_at, now);
                j.updated_at = now;
            })
        })
        .await
    }

    async fn reclaim_expired(&self, now: Ts) -> StorageResult<Vec<Job>> {
        self.write(move |w| {
            let expired: Vec<Job> = {
                let ix = w.open_table(raw_table(Job::LEASE_IDX))?;
                let rows = w.open_table(raw_table(Job::DEF.name))?;
                let scan = Scan::index(Job::LEASE_IDX, Key::default()).until(key().ts(now));
                table::scan::<Job, _, _>(Some(&ix), &rows, &[], &scan)?
            };
            let mut out = Vec::with_capacity(expired.len());
            for mut j in expired {
                clear_lease(&mut j);
                j.stalls += 1;
                j.attempts_made = j.attempts_made.saturating_sub(1);
                j.updated_at = now;
                if j.stalls >= MAX_STALLS {
                    j.error = Some(format!(
                        "stalled {} times: its worker died while running it",
                        j.stalls
                    ));
                    append_event(w, &j, JobEventStatus::Failed, now)?;
                    j.state = JobState::Failed;
                    j.finished_at = Some(now);
                } else {
                    j.run_at = now;
                    j.state = JobState::Waiting;
                }
                table::update(w, &j)?;
                out.push(j);
            }
            Ok(out)
        })
        .await
    }

    async fn next_due(&self, queue: &str) -> StorageResult<Option<Ts>> {
        let queue = queue.to_string();
        Ok(self
            .scan::<Job>(
                None,
                Scan::index(Job::READY_IDX, key().str(&queue)).limit(1),
            )
            .await?
            .first()
            .map(|j| j.run_at))
    }

    async fn next_lease_expiry(&self) -> StorageResult<Option<Ts>> {
        Ok(self
            .scan::<Job>(None, Scan::index(Job::LEASE_IDX, Key::default()).limit(1))
            .await?
            .first()
            .and_then(|j| j.lease_until))
    }

    async fn job(&self, queue: &str, id: &str) -> StorageResult<Option<Job>> {
        self.get::<Job>(None, Job::pk(queue, id)).await
    }

    async fn stats(&self, queue: &str, now: Ts) -> StorageResult<QueueStats> {
        let queue = queue.to_string();
        // A read-only view would do, but the write-side helpers are shared; the
        // transaction commits nothing.
        self.write(move |w| {
            let q = key().str(&queue);
            let due_end = q.clone().ts(now.plus_micros(1)).0;
            let q_end = q.prefix_end();
            let waiting = count_range(w, Job::READY_IDX, q.as_bytes(), Some(&due_end))?;
            let delayed = count_range(w, Job::READY_IDX, &due_end, q_end.as_deref())?;
            let active = count_range(w, Job::ACTIVE_IDX, q.as_bytes(), q_end.as_deref())?;
            let fin = |state: JobState| -> StorageResult<u64> {
                let p = q.clone().str(state.as_str());
                let end = p.prefix_end();
                count_range(w, Job::FINISHED_IDX, p.as_bytes(), end.as_deref())
            };
            let completed = fin(JobState::Completed)?;
            let failed = fin(JobState::Failed)?;
            let oldest_due_at = if waiting > 0 {
                let ix = w.open_table(raw_table(Job::READY_IDX))?;
                let rows = w.open_table(raw_table(Job::DEF.name))?;
                let scan = Scan::index(Job::READY_IDX, q.clone()).limit(1);
                table::scan::<Job, _, _>(Some(&ix), &rows, &[], &scan)?
                    .first()
                    .map(|j| j.run_at)
            } else {
                None
            };
            let lag_ms = oldest_due_at
                .map(|t| ((now.0 - t.0) / 1000).max(0))
                .unwrap_or(0);
            Ok(QueueStats {
                queue,
                waiting,
                delayed,
                active,
                completed,
                failed,
                oldest_due_at,
                lag_ms,
            })
        })
        .await
    }

    async fn prune_finished(
        &self,
        queue: &str,
        retention: Retention,
        now: Ts,
    ) -> StorageResult<usize> {
        let queue = queue.to_string();
        self.write(move |w| {
            let list = |state: JobState| -> StorageResult<Vec<Job>> {
                let ix = w.open_table(raw_table(Job::FINISHED_IDX))?;
                let rows = w.open_table(raw_table(Job::DEF.name))?;
                let scan = Scan::index(Job::FINISHED_IDX, key().str(&queue).str(state.as_str()));
                table::scan::<Job, _, _>(Some(&ix), &rows, &[], &scan)
            };
            let mut doomed = Vec::new();
            let completed = list(JobState::Completed)?; // oldest first
            let excess = completed
                .len()
                .saturating_sub(retention.completed_max_count);
            let cutoff = now.plus_micros(-retention.completed_max_age_ms.saturating_mul(1000));
            for (i, j) in completed.iter().enumerate() {
                if i < excess || j.finished_at.unwrap_or(j.updated_at) < cutoff {
                    doomed.push(j.local_pk());
                }
            }
            let cutoff = now.plus_micros(-retention.failed_max_age_ms.saturating_mul(1000));
            for j in list(JobState::Failed)? {
                if j.finished_at.unwrap_or(j.updated_at) < cutoff {
                    doomed.push(j.local_pk());
                }
            }
            for pk in &doomed {
                table::delete::<Job>(w, pk.as_bytes())?;
            }
            Ok(doomed.len())
        })
        .await
    }

    async fn recent_events(&self, queue: &str, limit: usize) -> StorageResult<Vec<QueueJobEvent>> {
        self.scan::<QueueJobEvent>(
            None,
            Scan::index(QueueJobEvent::QUEUE_IDX, key().str(queue))
                .desc()
                .limit(limit),
        )
        .await
    }

    async fn prune_events(&self, before: Ts) -> StorageResult<usize> {
        self.write(move |w| {
            let old: Vec<QueueJobEvent> = {
                let ix = w.open_table(raw_table(QueueJobEvent::CREATED_AT_IDX))?;
                let rows = w.open_table(raw_table(QueueJobEvent::DEF.name))?;
                let scan = Scan::index(QueueJobEvent::CREATED_AT_IDX, Key::default())
                    .until(key().ts(before));
                table::scan::<QueueJobEvent, _, _>(Some(&ix), &rows, &[], &scan)?
            };
            for e in &old {
                table::delete::<QueueJobEvent>(w, e.local_pk().as_bytes())?;
            }
            Ok(old.len())
        })
        .await
    }

    async fn delete_tenant_jobs(&self, tenant: uuid::Uuid) -> StorageResult<usize> {
        self.write(move |w| {
            let doomed: Vec<Job> = {
                let rows = w.open_table(raw_table(Job::DEF.name))?;
                let mut found = Vec::new();
                for item in rows.iter()? {
                    let (_, v) = item?;
                    let job: Job =
                        crate::codec::decode_row(Job::DEF.name, Job::VERSION, v.value())?;
                    if job.tenant_id == Some(tenant) {
                        found.push(job);
                    }
                }
                found
            };
            for j in &doomed {
                table::delete::<Job>(w, j.local_pk().as_bytes())?;
            }
            Ok(doomed.len())
        })
        .await
    }
}

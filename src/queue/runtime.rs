//! The worker runtime: a registry `queue → handler` driven by the spec's
//! table, per-queue loops bounded by the queue's concurrency, lease renewal,
//! rate limits, a janitor that reclaims expired leases and beats the
//! heartbeat, and graceful shutdown.
//!
//! Workers wake on enqueue ([`Queues::enqueue`] notifies the queue) and at
//! the next `run_at`; they never busy-poll. Tests skip the loops and call
//! [`Workers::run_one_job`] with a manual clock.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use storage::{
    EnqueueMode, EnqueueOutcome, Job, JobQueue, NewJob, RedbStore, StorageError, StorageResult, Ts,
};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::registry::{self, QueueSpec, RateLimit};
use crate::config::Limits;
use crate::platform::clock::Clock;
use crate::platform::rate::TenantRateLimiter;
use crate::platform::tenancy::{self, TenantCache, TenantContext};

/// How a handler failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Retry with backoff (until attempts run out).
    #[error("{0}")]
    Retry(String),
    /// Do not retry: the job is failed now.
    #[error("{0}")]
    Permanent(String),
}

/// A handler for a queue that is not in the §13 table.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a queue of spec §13")]
pub struct UnknownQueue(pub &'static str);

/// What a handler returns: an optional result stored on the job.
pub type HandlerResult = Result<Option<Value>, JobError>;

/// Code that runs the jobs of one queue.
#[async_trait]
pub trait JobHandler: Send + Sync + 'static {
    /// Run one job. Runs inside the job's tenant context when it has a tenant.
    async fn run(&self, ctx: &mut JobContext) -> HandlerResult;
}

/// What a handler sees: the job, and a durable checkpoint.
pub struct JobContext {
    job: Job,
    store: RedbStore,
    owner: String,
}

impl JobContext {
    /// The job row (payload, attempt number, …).
    pub fn job(&self) -> &Job {
        &self.job
    }
    /// The payload.
    pub fn payload(&self) -> &Value {
        &self.job.payload.0
    }
    /// The checkpoint a previous attempt saved, if any.
    pub fn checkpoint(&self) -> Option<&Value> {
        self.job.checkpoint.as_ref().map(|c| &c.0)
    }
    /// Durably record progress before a side effect that must not repeat
    /// (write the prepared reply, then send). Fails when the lease was lost.
    pub async fn save_checkpoint(&mut self, value: Value) -> Result<(), JobError> {
        let ok = self
            .store
            .save_checkpoint(&self.job.queue, &self.job.id, &self.owner, value.clone())
            .await
            .map_err(|e| JobError::Retry(format!("checkpoint not saved: {e}")))?;
        if !ok {
            return Err(JobError::Retry("lease lost before checkpoint".into()));
        }
        self.job.checkpoint = Some(storage::Json(value));
        Ok(())
    }
}

/// Options of one enqueue.
#[derive(Clone, Debug, Default)]
pub struct Enqueue {
    /// Job id (dedupe key); `None` = a fresh UUID.
    pub id: Option<String>,
    /// Tenant the job acts for.
    pub tenant_id: Option<Uuid>,
    /// Handler input.
    pub payload: Value,
    /// Delay before the job is due.
    pub delay_ms: u64,
    /// Dedupe / coalesce / once.
    pub mode: EnqueueMode,
}

/// The enqueue side of the queues: cheap to clone, used by every service.
#[derive(Clone)]
pub struct Queues {
    store: RedbStore,
    clock: Arc<dyn Clock>,
    wake: Arc<HashMap<&'static str, Arc<Notify>>>,
}

impl Queues {
    /// Queues over `store` for every queue of the §13 table.
    pub fn new(store: RedbStore, clock: Arc<dyn Clock>) -> Self {
        let wake = registry::QUEUES
            .iter()
            .map(|q| (q.name, Arc::new(Notify::new())))
            .collect();
        Queues {
            store,
            clock,
            wake: Arc::new(wake),
        }
    }

    /// Enqueue durably on a §13 queue (attempts and backoff from the table),
    /// then wake its worker. An error means nothing was enqueued — callers
    /// must surface it (the email channel answers 503).
    pub async fn enqueue(
        &self,
        queue: &str,
        opts: Enqueue,
    ) -> StorageResult<(EnqueueOutcome, Job)> {
        let spec = registry::spec(queue).ok_or_else(|| StorageError::Check {
            column: "queue",
            message: format!("{queue:?} is not a queue of spec §13"),
        })?;
        self.enqueue_with_spec(spec, opts).await
    }

    /// Enqueue with an explicit spec (custom queues in tests).
    pub async fn enqueue_with_spec(
        &self,
        spec: &QueueSpec,
        opts: Enqueue,
    ) -> StorageResult<(EnqueueOutcome, Job)> {
        let out = self
            .store
            .enqueue(
                NewJob {
                    queue: spec.name.to_string(),
                    id: opts.id,
                    tenant_id: opts.tenant_id,
                    payload: opts.payload,
                    max_attempts: spec.attempts.max(1),
                    backoff_ms: spec.backoff_ms,
                    delay_ms: opts.delay_ms,
                    mode: opts.mode,
                },
                self.clock.now(),
            )
            .await?;
        self.wake(spec.name);
        Ok(out)
    }

    /// Wake the worker of `queue` (no-op for unknown queues).
    pub fn wake(&self, queue: &str) {
        if let Some(n) = self.wake.get(queue) {
            n.notify_one();
        }
    }

    fn notifier(&self, queue: &'static str) -> Arc<Notify> {
        self.wake
            .get(queue)
            .cloned()
            .unwrap_or_else(|| Arc::new(Notify::new()))
    }

    /// The clock jobs are scheduled with.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The store.
    pub fn store(&self) -> &RedbStore {
        &self.store
    }
}

/// Last time the worker runtime proved it is alive.
#[derive(Clone, Debug, Default)]
pub struct Heartbeat(Arc<AtomicI64>);

impl Heartbeat {
    /// Record a beat.
    pub fn beat(&self, at: Ts) {
        self.0.store(at.micros(), Ordering::SeqCst);
    }
    /// The last beat, if any.
    pub fn last(&self) -> Option<Ts> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            m => Some(Ts(m)),
        }
    }
    /// Whether the last beat is younger than `max_age_ms` at `now`.
    pub fn is_fresh(&self, now: Ts, max_age_ms: i64) -> bool {
        self.last()
            .is_some_and(|t| now.micros() - t.micros() <= max_age_ms * 1000)
    }
}

/// Runtime settings.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Lease length; renewed every third of it while a handler runs.
    pub lease_ms: i64,
    /// How long shutdown waits for running jobs before releasing them.
    pub shutdown_grace: Duration,
    /// Longest idle sleep (a safety net; wake-ups normally come from enqueue).
    pub idle_poll: Duration,
    /// Janitor period (lease reclaim + heartbeat).
    pub janitor_every: Duration,
    /// Lease owner name of this process.
    pub owner: String,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            lease_ms: 30_000,
            shutdown_grace: Duration::from_secs(10),
            idle_poll: Duration::from_secs(30),
            janitor_every: Duration::from_secs(5),
            owner: format!("root-{}-{}", std::process::id(), Uuid::new_v4().simple()),
        }
    }
}

/// How long a job deferred by its tenant's cap waits before it is due again.
pub const TENANT_CAP_RETRY_MS: i64 = 5_000;

/// One of a tenant's capped places, given back on drop (whatever way the
/// handler ends).
struct TenantSlot {
    slots: Arc<std::sync::Mutex<std::collections::HashMap<Uuid, u32>>>,
    tenant: Uuid,
}

impl TenantSlot {
    fn take(
        slots: &Arc<std::sync::Mutex<std::collections::HashMap<Uuid, u32>>>,
        tenant: Uuid,
        cap: u32,
    ) -> Option<TenantSlot> {
        let mut map = slots.lock().unwrap_or_else(|p| p.into_inner());
        let used = map.entry(tenant).or_insert(0);
        if *used >= cap {
            return None;
        }
        *used += 1;
        Some(TenantSlot {
            slots: slots.clone(),
            tenant,
        })
    }
}

impl Drop for TenantSlot {
    fn drop(&mut self) {
        let mut map = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get_mut(&self.tenant) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.tenant);
            }
        }
    }
}

/// What one step did.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Nothing was due.
    Idle,
    /// The job completed.
    Completed {
        /// Queue.
        queue: String,
        /// Job id.
        id: String,
    },
    /// The attempt failed; the job will retry at `run_at`.
    Retrying {
        /// Queue.
        queue: String,
        /// Job id.
        id: String,
        /// Next attempt.
        run_at: Ts,
    },
    /// The job failed for good.
    Failed {
        /// Queue.
        queue: String,
        /// Job id.
        id: String,
        /// Last error.
        error: String,
    },
    /// Rate-limited: given back (attempt not counted), due again at `run_at`.
    Deferred {
        /// Queue.
        queue: String,
        /// Job id.
        id: String,
        /// When it may run.
        run_at: Ts,
    },
    /// Another worker took the job over (our lease expired).
    LeaseLost {
        /// Queue.
        queue: String,
        /// Job id.
        id: String,
    },
}

struct Registered {
    spec: QueueSpec,
    handler: Arc<dyn JobHandler>,
}

/// The worker runtime.
pub struct Workers {
    queues: Queues,
    tenants: TenantCache,
    limits: Limits,
    cfg: WorkerConfig,
    handlers: Vec<Registered>,
    ingest_limiter: TenantRateLimiter,
    /// Jobs running per tenant on queues with a per-tenant cap.
    tenant_slots: Arc<std::sync::Mutex<std::collections::HashMap<Uuid, u32>>>,
    heartbeat: Heartbeat,
    /// Jobs this process holds right now (released on shutdown if unfinished).
    inflight: std::sync::Mutex<std::collections::HashSet<(String, String)>>,
}

impl Workers {
    /// A runtime with no handlers yet.
    pub fn new(queues: Queues, tenants: TenantCache, limits: Limits, cfg: WorkerConfig) -> Self {
        Workers {
            ingest_limiter: TenantRateLimiter::new(limits.slack_ingest_global_per_minute),
            tenant_slots: Default::default(),
            queues,
            tenants,
            limits,
            cfg,
            handlers: Vec::new(),
            heartbeat: Heartbeat::default(),
            inflight: Default::default(),
        }
    }

    /// Register the handler of a queue (one handler per queue; later wins).
    pub fn register(&mut self, spec: QueueSpec, handler: Arc<dyn JobHandler>) {
        self.handlers.retain(|r| r.spec.name != spec.name);
        self.handlers.push(Registered { spec, handler });
    }

    /// Register the handler of its payload's queue (the §13 row gives
    /// concurrency, attempts, backoff and schedule). Fails for a queue that
    /// is not in the §13 table.
    pub fn register_job<H: super::job::TypedJobHandler>(
        &mut self,
        handler: H,
    ) -> Result<(), UnknownQueue> {
        let queue = <H::Payload as super::job::QueuePayload>::QUEUE;
        let spec = registry::spec(queue).ok_or(UnknownQueue(queue))?;
        self.register(*spec, Arc::new(super::job::Typed(handler)));
        Ok(())
    }

    /// Specs of the registered queues.
    pub fn registered(&self) -> Vec<QueueSpec> {
        self.handlers.iter().map(|r| r.spec).collect()
    }

    /// The heartbeat `/ready` reads.
    pub fn heartbeat(&self) -> Heartbeat {
        self.heartbeat.clone()
    }

    /// The enqueue side.
    pub fn queues(&self) -> &Queues {
        &self.queues
    }

    fn now(&self) -> Ts {
        self.queues.clock.now()
    }

    /// One deterministic step: reclaim expired leases, claim one due job (from
    /// `queue`, or from the registered queues in table order) and run it to
    /// its outcome.
    pub async fn run_one_job(&self, queue: Option<&str>) -> StorageResult<Outcome> {
        let now = self.now();
        self.queues.store.reclaim_expired(now).await?;
        for reg in &self.handlers {
            if queue.is_some_and(|q| q != reg.spec.name) {
                continue;
            }
            let mut claimed = self
                .queues
                .store
                .claim(reg.spec.name, &self.cfg.owner, now, self.cfg.lease_ms, 1)
                .await?;
            if let Some(job) = claimed.pop() {
                return Ok(self.execute(reg, job, false).await?.0);
            }
        }
        Ok(Outcome::Idle)
    }

    /// Drain: run steps until nothing is due (tests).
    pub async fn run_until_idle(&self, queue: Option<&str>) -> StorageResult<Vec<Outcome>> {
        let mut out = Vec::new();
        loop {
            match self.run_one_job(queue).await? {
                Outcome::Idle => return Ok(out),
                o => out.push(o),
            }
            if out.len() > 10_000 {
                return Ok(out);
            }
        }
    }

    async fn tenant_ingest_limit(&self, tenant: Option<Uuid>) -> u32 {
        let default = self.limits.slack_ingest_per_tenant_per_minute;
        let Some(id) = tenant else { return default };
        match self.tenants.by_id(id).await {
            Ok(Some(t)) => t.settings.0["limits"]["slack_ingest_per_tenant_per_minute"]
                .as_u64()
                .filter(|n| *n > 0)
                .map(|n| n.min(u32::MAX as u64) as u32)
                .unwrap_or(default),
            _ => default,
        }
    }

    async fn tenant_sync_cap(&self, tenant: Uuid) -> u32 {
        let default = self.limits.knowledge_sync_per_tenant_cap.max(1);
        match self.tenants.by_id(tenant).await {
            Ok(Some(t)) => crate::platform::settings::tenant_count_limit(
                &t.settings.0,
                "knowledge_sync_per_tenant_cap",
                default,
            ),
            _ => default,
        }
    }

    /// Run one claimed job to its outcome. With `claim_next`, a successful
    /// completion also claims the queue's next due job in the same commit.
    async fn execute(
        &self,
        reg: &Registered,
        job: Job,
        claim_next: bool,
    ) -> StorageResult<(Outcome, Option<Job>)> {
        let store = &self.queues.store;
        let owner = &self.cfg.owner;
        let (queue, id) = (job.queue.clone(), job.id.clone());
        if reg.spec.rate_limit == Some(RateLimit::SlackIngest) {
            let limit = self.tenant_ingest_limit(job.tenant_id).await;
            let now = self.now();
            if let Err(wait_ms) = self.ingest_limiter.try_acquire(job.tenant_id, limit, now) {
                let run_at = now.plus_micros(wait_ms as i64 * 1000);
                store.release(&queue, &id, owner, run_at).await?;
                return Ok((Outcome::Deferred { queue, id, run_at }, None));
            }
        }
        let _slot = if reg.spec.rate_limit == Some(RateLimit::KnowledgeSyncPerTenant)
            && let Some(tid) = job.tenant_id
        {
            let cap = self.tenant_sync_cap(tid).await;
            match TenantSlot::take(&self.tenant_slots, tid, cap) {
                Some(slot) => Some(slot),
                None => {
                    let run_at = self.now().plus_micros(TENANT_CAP_RETRY_MS * 1000);
                    store.release(&queue, &id, owner, run_at).await?;
                    return Ok((Outcome::Deferred { queue, id, run_at }, None));
                }
            }
        } else {
            None
        };
        let tenant = match job.tenant_id {
            Some(tid) => match self.tenants.by_id(tid).await? {
                Some(t) => Some(t),
                None => {
                    let now = self.now();
                    let error = format!("tenant {tid} no longer exists");
                    store.fail(&queue, &id, owner, &error, true, now).await?;
                    return Ok((Outcome::Failed { queue, id, error }, None));
                }
            },
            None => None,
        };
        let mut ctx = JobContext {
            job,
            store: store.clone(),
            owner: owner.clone(),
        };
        let started = std::time::Instant::now();
        let result = {
            let handler = reg.handler.clone();
            let run = async { handler.run(&mut ctx).await };
            let run = async {
                match tenant {
                    Some(t) => tenancy::scope(TenantContext { tenant: t }, run).await,
                    None => run.await,
                }
            };
            self.with_lease_renewal(&queue, &id, run).await
        };
        let now = self.now();
        let mut next = None;
        let outcome = match result {
            Ok(value) => {
                let done = if claim_next {
                    let (done, claimed) = store
                        .complete_and_claim(&queue, &id, owner, value, now, self.cfg.lease_ms)
                        .await?;
                    next = claimed;
                    done
                } else {
                    store.complete(&queue, &id, owner, value, now).await?
                };
                match done {
                    Some(_) => Outcome::Completed { queue, id },
                    None => Outcome::LeaseLost { queue, id },
                }
            }
            Err(e) => {
                let permanent = matches!(e, JobError::Permanent(_));
                let error = e.to_string();
                tracing::warn!(%queue, job = %id, %error, permanent, "job attempt failed");
                match store
                    .fail(&queue, &id, owner, &error, permanent, now)
                    .await?
                {
                    Some(j) if j.state == storage::JobState::Failed => {
                        Outcome::Failed { queue, id, error }
                    }
                    Some(j) => Outcome::Retrying {
                        queue,
                        id,
                        run_at: j.run_at,
                    },
                    None => Outcome::LeaseLost { queue, id },
                }
            }
        };
        tracing::debug!(
            ?outcome,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "job finished"
        );
        Ok((outcome, next))
    }

    /// Run `fut`, renewing the job's lease every third of its length.
    async fn with_lease_renewal<F: std::future::Future<Output = HandlerResult>>(
        &self,
        queue: &str,
        id: &str,
        fut: F,
    ) -> HandlerResult {
        let every = Duration::from_millis((self.cfg.lease_ms / 3).max(1) as u64);
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tokio::pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => return out,
                _ = ticker.tick() => {
                    let until = self.now().plus_micros(self.cfg.lease_ms * 1000);
                    match self.queues.store.renew_lease(queue, id, &self.cfg.owner, until).await {
                        Ok(true) => {}
                        Ok(false) => tracing::warn!(%queue, job = %id, "lease lost while running"),
                        Err(e) => tracing::warn!(%queue, job = %id, error = %e, "lease renewal failed"),
                    }
                }
            }
        }
    }

    /// Start `concurrency` worker slots per registered queue and the
    /// janitor. Cancel `cancel` to stop claiming; then await the returned
    /// handle, which waits up to the grace period for running jobs and
    /// releases the leases of the rest.
    pub fn start(self: Arc<Self>, cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
        // The first beat is synchronous so `/ready` never reports a runtime
        // that has just started as stale while its janitor awaits scheduling.
        self.heartbeat.beat(self.now());
        tokio::spawn(async move {
            let mut slots = JoinSet::new();
            for (i, reg) in self.handlers.iter().enumerate() {
                for slot in 0..reg.spec.concurrency.max(1) {
                    let me = self.clone();
                    let cancel = cancel.clone();
                    slots.spawn(async move { me.worker_slot(i, slot, cancel).await });
                }
            }
            let janitor = {
                let me = self.clone();
                let cancel = cancel.clone();
                tokio::spawn(async move { me.janitor(cancel).await })
            };
            cancel.cancelled().await;
            // Slots stop claiming; wait for their running jobs within the grace period.
            let grace = tokio::time::sleep(self.cfg.shutdown_grace);
            tokio::pin!(grace);
            loop {
                tokio::select! {
                    next = slots.join_next() => if next.is_none() { break },
                    _ = &mut grace => {
                        tracing::warn!("shutdown grace period over: releasing unfinished jobs");
                        break;
                    }
                }
            }
            slots.abort_all();
            while slots.join_next().await.is_some() {}
            janitor.abort();
            self.release_inflight().await;
            tracing::info!("workers stopped");
        })
    }

    async fn release_inflight(&self) {
        let pending: Vec<(String, String)> = {
            let mut map = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
            map.drain().collect()
        };
        let now = self.now();
        for (queue, id) in pending {
            match self
                .queues
                .store
                .release(&queue, &id, &self.cfg.owner, now)
                .await
            {
                Ok(_) => tracing::info!(%queue, job = %id, "released unfinished job"),
                Err(e) => {
                    tracing::error!(%queue, job = %id, error = %e, "could not release job; its lease will expire")
                }
            }
        }
    }

    /// One worker slot: claim a job (or take the one handed over by the last
    /// completion), run it, repeat. Sleeps until woken by an enqueue, the
    /// next `run_at`, or the idle poll.
    async fn worker_slot(self: Arc<Self>, index: usize, slot: usize, cancel: CancellationToken) {
        let reg = &self.handlers[index];
        let spec = reg.spec;
        let notify = self.queues.notifier(spec.name);
        let mut handed_over: Option<Job> = None;
        loop {
            let job = match handed_over.take() {
                Some(job) => job,
                None => {
                    if cancel.is_cancelled() {
                        break;
                    }
                    let now = self.now();
                    match self
                        .queues
                        .store
                        .claim(spec.name, &self.cfg.owner, now, self.cfg.lease_ms, 1)
                        .await
                    {
                        Ok(mut jobs) if !jobs.is_empty() => jobs.remove(0),
                        Ok(_) => {
                            let next = self.queues.store.next_due(spec.name).await.ok().flatten();
                            let sleep = match next {
                                Some(at) => {
                                    let ms = (at.micros() - self.now().micros()).max(0) / 1000;
                                    Duration::from_millis(ms as u64).min(self.cfg.idle_poll)
                                }
                                None => self.cfg.idle_poll,
                            };
                            tokio::select! {
                                _ = notify.notified() => {},
                                _ = tokio::time::sleep(sleep) => {},
                                _ = cancel.cancelled() => break,
                            }
                            continue;
                        }
                        Err(e) => {
                            tracing::error!(queue = spec.name, slot, error = %e, "claim failed");
                            tokio::select! {
                                _ = tokio::time::sleep(Duration::from_secs(1)) => {},
                                _ = cancel.cancelled() => break,
                            }
                            continue;
                        }
                    }
                }
            };
            self.track_key(&job.queue, &job.id, true);
            let (queue, id) = (job.queue.clone(), job.id.clone());
            match self.execute(reg, job, !cancel.is_cancelled()).await {
                Ok((_, next)) => {
                    self.track_key(&queue, &id, false);
                    if let Some(n) = &next {
                        self.track_key(&n.queue, &n.id, true);
                    }
                    handed_over = next;
                }
                Err(e) => {
                    // Bookkeeping failed; the lease expires and the job is retried.
                    tracing::error!(%queue, job = %id, error = %e, "job bookkeeping failed");
                    self.track_key(&queue, &id, false);
                }
            }
        }
    }

    fn track_key(&self, queue: &str, id: &str, running: bool) {
        let key = (queue.to_string(), id.to_string());
        let mut map = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
        if running {
            map.insert(key);
        } else {
            map.remove(&key);
        }
    }

    async fn janitor(self: Arc<Self>, cancel: CancellationToken) {
        let mut tick = tokio::time::interval(self.cfg.janitor_every);
        loop {
            tokio::select! {
                _ = tick.tick() => {},
                _ = cancel.cancelled() => return,
            }
            let now = self.now();
            self.heartbeat.beat(now);
            match self.queues.store.reclaim_expired(now).await {
                Ok(back) => {
                    for j in back {
                        tracing::warn!(queue = %j.queue, job = %j.id, "lease expired: job returned to waiting");
                        self.queues.wake(&j.queue);
                    }
                }
                Err(e) => tracing::error!(error = %e, "lease reclaim failed"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_holds_at_most_its_cap_and_places_come_back_on_drop() {
        let slots = Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let first = TenantSlot::take(&slots, a, 2).unwrap();
        let second = TenantSlot::take(&slots, a, 2).unwrap();
        assert!(
            TenantSlot::take(&slots, a, 2).is_none(),
            "the cap of 2 is full"
        );
        assert!(
            TenantSlot::take(&slots, b, 2).is_some(),
            "another tenant is not held up"
        );
        drop(first);
        let third = TenantSlot::take(&slots, a, 2);
        assert!(third.is_some());
        drop((second, third));
        assert!(slots.lock().unwrap().is_empty());
        assert_eq!(TENANT_CAP_RETRY_MS, 5_000);
    }
}

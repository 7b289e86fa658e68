//! The one background writer of finished traces, the read API and retention.
//!
//! Runs hand finished traces over a bounded channel ([`TRACE_QUEUE`]); the
//! writer takes everything queued (up to [`WRITE_BATCH`] traces) and stores
//! it in one relaxed redb transaction through `RedbStore::transact_relaxed`
//! (durable within 500 ms, never an fsync wait; on the store's
//! writer thread: no transaction lives across an `.await`). A batch that
//! fails is retried trace by trace, so one bad trace cannot lose the others.
//! Stored traces then go to the Opik exporter, when there is one.

use std::sync::Arc;

use storage::{
    AgentTrace, AgentTraceSpan, RedbStore, Scan, StorageResult, Store, TenantStore,
    TraceFeedbackScore, Tx, key,
};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::TraceView;
use super::opik::{self, OpikExporter};
use crate::platform::clock::Clock;

/// Finished traces waiting for the writer; beyond this a trace is dropped
/// (with a warning) rather than slowing a turn down.
pub const TRACE_QUEUE: usize = 1024;
/// Most traces stored in one transaction.
pub const WRITE_BATCH: usize = 64;
/// Most traces deleted per retention transaction.
const PRUNE_BATCH: usize = 500;
const MICROS_PER_DAY: i64 = 24 * 3600 * 1_000_000;

enum Msg {
    Trace(Box<TraceView>),
    /// A feedback score for a trace already submitted (stored after it).
    Score(LateScore),
    Flush(oneshot::Sender<()>),
}

/// A feedback score logged once its run had ended.
struct LateScore {
    tenant: Uuid,
    trace_id: Uuid,
    name: String,
    value: f64,
}

/// The recording side of an enabled tracer.
pub(super) struct Recorder {
    store: RedbStore,
    clock: Arc<dyn Clock>,
    retention_days: u32,
    tx: mpsc::Sender<Msg>,
}

impl Recorder {
    /// Spawn the writer (and the exporter); `None` outside a tokio runtime.
    pub(super) fn start(
        store: RedbStore,
        clock: Arc<dyn Clock>,
        retention_days: u32,
        exporter: Option<OpikExporter>,
    ) -> Option<Recorder> {
        let rt = tokio::runtime::Handle::try_current().ok()?;
        let (tx, rx) = mpsc::channel(TRACE_QUEUE);
        let export = exporter.map(|e| opik::spawn(&rt, e));
        rt.spawn(write_loop(store.clone(), rx, export));
        Some(Recorder {
            store,
            clock,
            retention_days,
            tx,
        })
    }

    pub(super) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Queue a finished trace without waiting; a full queue drops it.
    pub(super) fn submit(&self, view: TraceView) {
        let id = view.trace.id;
        match self.tx.try_send(Msg::Trace(Box::new(view))) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(trace_id = %id, "trace writer is behind: trace dropped");
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::warn!(trace_id = %id, "trace writer stopped: trace dropped");
            }
        }
    }

    /// Queue a feedback score for a trace submitted earlier; applied after
    /// that trace is stored (same queue, same order).
    pub(super) fn score(&self, tenant: Uuid, trace_id: Uuid, name: &str, value: f64) {
        let msg = Msg::Score(LateScore {
            tenant,
            trace_id,
            name: name.to_string(),
            value,
        });
        if self.tx.try_send(msg).is_err() {
            tracing::warn!(trace_id = %trace_id, name, "trace writer is behind: feedback score dropped");
        }
    }

    pub(super) async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Msg::Flush(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }

    pub(super) async fn get(&self, tenant: Uuid, id: Uuid) -> StorageResult<Option<TraceView>> {
        let Some(trace) = self
            .store
            .get::<AgentTrace>(Some(tenant), key().uuid(id))
            .await?
        else {
            return Ok(None);
        };
        let spans = self
            .store
            .scan::<AgentTraceSpan>(Some(tenant), Scan::pk_prefix(key().uuid(id)))
            .await?;
        Ok(Some(TraceView { trace, spans }))
    }

    pub(super) async fn recent(
        &self,
        tenant: Uuid,
        limit: usize,
    ) -> StorageResult<Vec<AgentTrace>> {
        self.store
            .scan::<AgentTrace>(
                Some(tenant),
                Scan::index(AgentTrace::STARTED_AT_IDX, key())
                    .desc()
                    .limit(limit),
            )
            .await
    }

    /// Delete, tenant by tenant, traces started before now − retention
    /// (their spans follow through the FK cascade).
    pub(super) async fn prune_expired(&self) -> StorageResult<usize> {
        let cutoff = self
            .clock
            .now()
            .plus_micros(-i64::from(self.retention_days) * MICROS_PER_DAY);
        let mut pruned = 0;
        for tenant in self.store.list_tenants().await? {
            loop {
                let tenant_id = tenant.id;
                let (n, _) = self
                    .store
                    .transact(move |tx| {
                        let old: Vec<AgentTrace> = tx.scan(
                            Some(tenant_id),
                            Scan::index(AgentTrace::STARTED_AT_IDX, key())
                                .until(key().ts(cutoff))
                                .limit(PRUNE_BATCH),
                        )?;
                        for t in &old {
                            tx.delete::<AgentTrace>(Some(tenant_id), key().uuid(t.id))?;
                        }
                        Ok(old.len())
                    })
                    .await?;
                pruned += n;
                if n < PRUNE_BATCH {
                    break;
                }
            }
        }
        if pruned > 0 {
            tracing::info!(
                pruned,
                retention_days = self.retention_days,
                "old traces pruned"
            );
        }
        Ok(pruned)
    }
}

async fn write_loop(
    store: RedbStore,
    mut rx: mpsc::Receiver<Msg>,
    export: Option<mpsc::Sender<opik::ExportMsg>>,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = Vec::new();
        let mut flushes = Vec::new();
        let mut scores = Vec::new();
        let mut take = |m: Msg, batch: &mut Vec<TraceView>| match m {
            Msg::Trace(t) => batch.push(*t),
            Msg::Score(s) => scores.push(s),
            Msg::Flush(f) => flushes.push(f),
        };
        take(first, &mut batch);
        while batch.len() < WRITE_BATCH {
            match rx.try_recv() {
                Ok(m) => take(m, &mut batch),
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            let batch = Arc::new(batch);
            let stored = write_batch(&store, batch.clone()).await;
            if stored
                && let Some(export) = &export
                && let Err(mpsc::error::TrySendError::Full(_)) =
                    export.try_send(opik::ExportMsg::Traces(batch))
            {
                tracing::warn!("Opik exporter is behind: traces not exported");
            }
        }
        for score in scores {
            if apply_score(&store, &score).await
                && let Some(export) = &export
                && export
                    .try_send(opik::ExportMsg::Score {
                        trace_id: score.trace_id,
                        name: score.name,
                        value: score.value,
                    })
                    .is_err()
            {
                tracing::warn!("Opik exporter is behind: feedback score not exported");
            }
        }
        for f in flushes {
            match &export {
                // The exporter answers once everything before it was sent.
                Some(export) => {
                    let _ = export.send(opik::ExportMsg::Flush(f)).await;
                }
                None => {
                    let _ = f.send(());
                }
            }
        }
    }
}

/// Add (or replace) a score on a stored trace; `false` when the trace is
/// not stored (dropped or pruned) or the write failed.
async fn apply_score(store: &RedbStore, score: &LateScore) -> bool {
    let (tenant, id, name, value) = (
        score.tenant,
        score.trace_id,
        score.name.clone(),
        score.value,
    );
    let result = store
        .transact_relaxed(move |tx| {
            let found: Option<AgentTrace> = tx.get(Some(tenant), key().uuid(id))?;
            let Some(mut trace) = found else {
                return Ok(false);
            };
            trace.feedback_scores.retain(|s| s.name != name);
            trace
                .feedback_scores
                .push(TraceFeedbackScore { name, value });
            tx.update(&trace)?;
            Ok(true)
        })
        .await;
    match result {
        Ok((stored, _)) => stored,
        Err(e) => {
            tracing::warn!(error = %e, trace_id = %id, "storing a feedback score failed");
            false
        }
    }
}

fn write_one(tx: &mut Tx<'_>, view: &TraceView) -> StorageResult<()> {
    tx.insert(&view.trace)?;
    for span in &view.spans {
        tx.insert(span)?;
    }
    Ok(())
}

/// Store a batch in one transaction; on failure, trace by trace. Returns
/// whether anything was stored.
async fn write_batch(store: &RedbStore, batch: Arc<Vec<TraceView>>) -> bool {
    let all = batch.clone();
    let result = store
        .transact_relaxed(move |tx| {
            for view in all.iter() {
                write_one(tx, view)?;
            }
            Ok(())
        })
        .await;
    let Err(e) = result else {
        return true;
    };
    if batch.len() == 1 {
        tracing::warn!(error = %e, trace_id = %batch[0].trace.id, "storing a trace failed");
        return false;
    }
    let mut any = false;
    for (i, view) in batch.iter().enumerate() {
        let b = batch.clone();
        match store.transact_relaxed(move |tx| write_one(tx, &b[i])).await {
            Ok(_) => any = true,
            Err(e) => {
                tracing::warn!(error = %e, trace_id = %view.trace.id, "storing a trace failed");
            }
        }
    }
    any
}

//! `queue-metrics` (§13): every 60 s compute depth and lag per queue, apply
//! retention to finished jobs, prune `queue_job_events` older than 30 days
//! and agent traces older than `TRACE_RETENTION_DAYS` (§3.3),
//! and alert admins when depth or lag passes the `ROOT_QUEUE_ALERT_*`
//! thresholds — once per crossing (the crossing state is persisted in
//! `platform_settings`, so a restart does not re-alert).
//! [`queue_overview`] is what the dashboard's `/platform/queues` renders.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Value, json};
use storage::{
    JobQueue, Json, PlatformSetting, QueueJobEvent, QueueStats, RedbStore, StorageResult, Store,
    TICK_RETENTION, Ts, key,
};

use super::job::{QueueMetricsTick, TypedJobHandler};
use super::registry::QUEUES;
use super::runtime::{HandlerResult, JobContext, JobError};
use crate::config::QueueAlerts;
use crate::platform::clock::Clock;
use crate::platform::notify::{AdminNotice, NotificationSink};
use crate::trace::Tracer;

/// `queue_job_events` are kept this long.
pub const EVENT_RETENTION_DAYS: i64 = 30;
/// `platform_settings` key holding which thresholds are currently crossed.
pub const ALERT_STATE_KEY: &str = "queue_alert_state";

/// The queue-metrics handler.
pub struct QueueMetrics {
    store: RedbStore,
    clock: Arc<dyn Clock>,
    sink: Arc<dyn NotificationSink>,
    thresholds: QueueAlerts,
    tracer: Tracer,
}

impl QueueMetrics {
    /// A handler alerting through `sink`.
    pub fn new(
        store: RedbStore,
        clock: Arc<dyn Clock>,
        sink: Arc<dyn NotificationSink>,
        thresholds: QueueAlerts,
    ) -> Self {
        QueueMetrics {
            store,
            clock,
            sink,
            thresholds,
            tracer: Tracer::disabled(),
        }
    }

    /// Also prune traces past their retention on every tick.
    pub fn with_trace_retention(mut self, tracer: Tracer) -> Self {
        self.tracer = tracer;
        self
    }

    /// One metrics pass; returns the per-queue summary stored as the job result.
    pub async fn tick(&self) -> StorageResult<Value> {
        let now = self.clock.now();
        let mut state: Option<PlatformSetting> =
            self.store.get(None, key().str(ALERT_STATE_KEY)).await?;
        let mut crossed = state
            .as_ref()
            .map(|s| s.value.0.clone())
            .unwrap_or_else(|| json!({}));
        let mut summary = Vec::new();
        let mut pruned = 0usize;
        for spec in QUEUES {
            pruned += self
                .store
                .prune_finished(spec.name, TICK_RETENTION, now)
                .await?;
            let st = self.store.stats(spec.name, now).await?;
            let depth_over = st.waiting > self.thresholds.depth;
            let lag_over = st.lag_ms > (self.thresholds.lag_seconds as i64) * 1000;
            for (kind, over, detail) in [
                (
                    "depth",
                    depth_over,
                    format!(
                        "{} jobs waiting (threshold {})",
                        st.waiting, self.thresholds.depth
                    ),
                ),
                (
                    "lag",
                    lag_over,
                    format!(
                        "oldest due job waited {} s (threshold {} s)",
                        st.lag_ms / 1000,
                        self.thresholds.lag_seconds
                    ),
                ),
            ] {
                let was = crossed[spec.name][kind].as_bool().unwrap_or(false);
                if over && !was {
                    self.sink
                        .notify(AdminNotice {
                            kind: format!("queue.{kind}"),
                            title: format!("Queue {} is backing up", spec.name),
                            body: detail,
                        })
                        .await;
                }
                crossed[spec.name][kind] = json!(over);
            }
            summary.push(json!({ "queue": spec.name, "waiting": st.waiting, "delayed": st.delayed, "active": st.active, "lag_ms": st.lag_ms }));
        }
        let events_pruned = self
            .store
            .prune_events(now.plus_micros(-EVENT_RETENTION_DAYS * 24 * 3600 * 1_000_000))
            .await?;
        let traces_pruned = self.tracer.prune_expired().await?;
        match state.as_mut() {
            Some(s) => {
                s.value = Json(crossed);
                s.updated_at = now;
                self.store.update(s.clone()).await?;
            }
            None => {
                self.store
                    .insert(PlatformSetting {
                        key: ALERT_STATE_KEY.into(),
                        value: Json(crossed),
                        updated_at: now,
                    })
                    .await?;
            }
        }
        Ok(json!({
            "queues": summary,
            "jobs_pruned": pruned,
            "events_pruned": events_pruned,
            "traces_pruned": traces_pruned,
        }))
    }
}

#[async_trait]
impl TypedJobHandler for QueueMetrics {
    type Payload = QueueMetricsTick;

    async fn run(&self, _tick: QueueMetricsTick, _ctx: &mut JobContext) -> HandlerResult {
        self.tick()
            .await
            .map(Some)
            .map_err(|e| JobError::Retry(e.to_string()))
    }
}

/// One queue on the dashboard.
#[derive(Clone, Debug, Serialize)]
pub struct QueueOverview {
    /// Depth, lag, oldest waiting.
    pub stats: QueueStats,
    /// The last 50 finished jobs, newest first.
    pub events: Vec<QueueJobEvent>,
}

/// Depth, lag, oldest waiting and the last 50 events of every queue.
pub async fn queue_overview(store: &RedbStore, now: Ts) -> StorageResult<Vec<QueueOverview>> {
    let mut out = Vec::with_capacity(QUEUES.len());
    for spec in QUEUES {
        out.push(QueueOverview {
            stats: store.stats(spec.name, now).await?,
            events: store.recent_events(spec.name, 50).await?,
        });
    }
    Ok(out)
}

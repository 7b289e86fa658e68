//! Admin notifications (§15.2 sinks). Producers (queue alerts now;
//! escalations later) call a [`NotificationSink`]; which sinks exist is
//! configuration. Sinks are best-effort: a failing sink is logged, never
//! propagated to the producer.

use async_trait::async_trait;

/// One admin-facing notification.
#[derive(Clone, Debug, PartialEq)]
pub struct AdminNotice {
    /// Short machine-readable kind, e.g. `queue.depth`.
    pub kind: String,
    /// One-line summary.
    pub title: String,
    /// Details for the reader.
    pub body: String,
}

/// Where admin notices go.
#[async_trait]
pub trait NotificationSink: Send + Sync + 'static {
    /// Deliver one notice (best-effort).
    async fn notify(&self, notice: AdminNotice);
}

/// Writes notices to the log at WARN (always on; email/Slack sinks add to it).
#[derive(Clone, Copy, Debug, Default)]
pub struct LogSink;

#[async_trait]
impl NotificationSink for LogSink {
    async fn notify(&self, notice: AdminNotice) {
        tracing::warn!(kind = %notice.kind, title = %notice.title, body = %notice.body, "admin notice");
    }
}

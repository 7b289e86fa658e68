//! Admin notifications (§15.2 sinks). Producers (queue alerts, escalations)
//! call a [`NotificationSink`]; new human interventions also go to every
//! [`InterventionSink`] through the [`InterventionFanOut`]. Which sinks exist
//! is configuration. Sinks are best-effort: a failing sink is logged, never
//! propagated to the producer.

use std::sync::Arc;

use async_trait::async_trait;
use storage::HumanIntervention;
use tokio_util::task::TaskTracker;

use crate::platform::tenancy;

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

/// Writes notices to the log (always on; email/Slack sinks add to it): kind
/// and title at WARN, the body only at DEBUG — a body may quote what a
/// member wrote (an escalation's details), and member text never goes to
/// the log at WARN. Titles are written by the platform, never by members.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogSink;

#[async_trait]
impl NotificationSink for LogSink {
    async fn notify(&self, notice: AdminNotice) {
        tracing::warn!(kind = %notice.kind, title = %notice.title, body_chars = notice.body.chars().count(), "admin notice");
        tracing::debug!(kind = %notice.kind, body = %notice.body, "admin notice body");
    }
}

/// A destination for new human interventions (§15.2): the integration
/// escalations webhook today; admin email and Slack sinks plug in the same
/// way. The row is already stored when a sink sees it.
#[async_trait]
pub trait InterventionSink: Send + Sync + 'static {
    /// Name for logs.
    fn name(&self) -> &'static str;
    /// Deliver one intervention; runs inside its tenant's scope. Errors are
    /// logged by [`InterventionFanOut`] and never reach the member.
    async fn deliver(&self, intervention: &HumanIntervention) -> anyhow::Result<()>;
}

/// Every intervention sink, each run on its own background task in the
/// tenant scope, so a slow or down sink (the webhook may take 120 s) never
/// delays or fails the tool that opened the intervention.
#[derive(Clone, Default)]
pub struct InterventionFanOut {
    sinks: Arc<Vec<Arc<dyn InterventionSink>>>,
    tasks: TaskTracker,
}

impl InterventionFanOut {
    /// A fan-out over `sinks`.
    pub fn new(sinks: Vec<Arc<dyn InterventionSink>>) -> Self {
        InterventionFanOut {
            sinks: Arc::new(sinks),
            tasks: TaskTracker::new(),
        }
    }

    /// Hand `intervention` to every sink (best-effort, returns at once).
    /// Outside a tenant scope nothing is sent (a bug; logged).
    pub fn dispatch(&self, intervention: &HumanIntervention) {
        if self.sinks.is_empty() {
            return;
        }
        let Some(tenant) = tenancy::current() else {
            tracing::error!(intervention = %intervention.id, "intervention dispatched outside a tenant scope; sinks skipped");
            return;
        };
        for sink in self.sinks.iter() {
            let sink = sink.clone();
            let row = intervention.clone();
            self.tasks
                .spawn(tenancy::scope(tenant.clone(), async move {
                    if let Err(e) = sink.deliver(&row).await {
                        tracing::warn!(sink = sink.name(), intervention = %row.id, error = %e, "intervention sink failed");
                    }
                }));
        }
    }

    /// Wait until every dispatched delivery has finished (shutdown, tests).
    pub async fn idle(&self) {
        self.tasks.close();
        self.tasks.wait().await;
        self.tasks.reopen();
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Mutex;

    use super::*;

    /// A log writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    /// L5: what a member wrote (a notice body) is never logged at WARN.
    #[tokio::test(flavor = "current_thread")]
    async fn the_log_sink_keeps_member_text_out_of_warn_lines() {
        let out = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(out.clone())
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        LogSink
            .notify(AdminNotice {
                kind: "intervention.escalation".into(),
                title: "New escalation intervention 42".into(),
                body: "my account number is 12345".into(),
            })
            .await;
        let logged = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(logged.contains("intervention.escalation"), "{logged}");
        assert!(
            logged.contains("New escalation intervention 42"),
            "{logged}"
        );
        assert!(logged.contains("body_chars=26"), "{logged}");
        assert!(!logged.contains("12345"), "{logged}");
    }
}

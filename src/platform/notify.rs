//! Admin notifications (§15.2 sinks). Producers (queue alerts, escalations)
//! call a [`NotificationSink`]; new human interventions also go to every
//! [`InterventionSink`] through the [`InterventionFanOut`]. Which sinks exist
//! is configuration. Sinks are best-effort: a failing sink is logged, never
//! propagated to the producer.
//!
//! Fan-out is bounded (security finding M1): a principal may open at most
//! `interventions_per_principal_per_hour` interventions ([`InterventionFanOut::admit`]),
//! and at most `intervention_sinks_per_tenant` sink deliveries of a tenant run
//! at once (the rest wait their turn), so a flood of escalations cannot turn
//! into a flood of webhook calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use storage::{HumanIntervention, Tenant};
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use crate::config::RequestLimits;
use crate::platform::clock::{Clock, SystemClock};
use crate::platform::rate::{KeyedRateLimiter, Rate};
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
#[derive(Clone)]
pub struct InterventionFanOut {
    sinks: Arc<Vec<Arc<dyn InterventionSink>>>,
    tasks: TaskTracker,
    limits: RequestLimits,
    clock: Arc<dyn Clock>,
    opened: Arc<KeyedRateLimiter<(Uuid, String)>>,
    in_flight: Arc<Mutex<HashMap<Uuid, DeliveryGate>>>,
}

/// A tenant's delivery places: the cap they were made with, and the places.
type DeliveryGate = (u32, Arc<Semaphore>);

impl Default for InterventionFanOut {
    fn default() -> Self {
        InterventionFanOut::new(Vec::new())
    }
}

impl InterventionFanOut {
    /// A fan-out over `sinks` with the default limits on the system clock.
    pub fn new(sinks: Vec<Arc<dyn InterventionSink>>) -> Self {
        InterventionFanOut {
            sinks: Arc::new(sinks),
            tasks: TaskTracker::new(),
            limits: RequestLimits::default(),
            clock: Arc::new(SystemClock),
            opened: Arc::new(KeyedRateLimiter::default()),
            in_flight: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Use `limits` (env defaults; tenants override) and `clock`.
    pub fn with_limits(mut self, limits: RequestLimits, clock: Arc<dyn Clock>) -> Self {
        self.limits = limits;
        self.clock = clock;
        self
    }

    /// May `principal_ref` of `tenant` open another intervention now? `Err`
    /// carries the whole minutes to wait (≥ 1). Counts the one it admits.
    pub fn admit(&self, tenant: &Tenant, principal_ref: &str) -> Result<(), u64> {
        let per_hour = self
            .limits
            .for_tenant(&tenant.settings.0)
            .interventions_per_principal_per_hour;
        let key = (tenant.id, principal_ref.to_string());
        self.opened
            .try_acquire_all(&[(key, Rate::per_hour(per_hour))], self.clock.now())
            .map_err(|ms| {
                tracing::info!(tenant = %tenant.id, per_hour, "intervention refused: hourly cap per principal");
                ms.div_ceil(60_000).max(1)
            })
    }

    fn tenant_gate(&self, tenant: &Tenant) -> Arc<Semaphore> {
        let cap = self
            .limits
            .for_tenant(&tenant.settings.0)
            .intervention_sinks_per_tenant;
        let mut gates = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        let entry = gates
            .entry(tenant.id)
            .or_insert_with(|| (cap, Arc::new(Semaphore::new(cap as usize))));
        if entry.0 != cap {
            *entry = (cap, Arc::new(Semaphore::new(cap as usize)));
        }
        entry.1.clone()
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
        let gate = self.tenant_gate(&tenant.tenant);
        for sink in self.sinks.iter() {
            let sink = sink.clone();
            let row = intervention.clone();
            let gate = gate.clone();
            self.tasks
                .spawn(tenancy::scope(tenant.clone(), async move {
                    // Wait for one of the tenant's delivery places.
                    let Ok(_place) = gate.acquire_owned().await else {
                        return;
                    };
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
    use std::sync::atomic::{AtomicUsize, Ordering};

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

    struct Blocking {
        started: Arc<AtomicUsize>,
        release: Arc<Semaphore>,
    }

    #[async_trait]
    impl InterventionSink for Blocking {
        fn name(&self) -> &'static str {
            "blocking"
        }
        async fn deliver(&self, _: &HumanIntervention) -> anyhow::Result<()> {
            self.started.fetch_add(1, Ordering::SeqCst);
            let _ = self.release.acquire().await?;
            Ok(())
        }
    }

    async fn settle() {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn at_most_the_tenant_cap_of_deliveries_run_at_once() {
        let started = Arc::new(AtomicUsize::new(0));
        let release = Arc::new(Semaphore::new(0));
        let limits = RequestLimits {
            intervention_sinks_per_tenant: 2,
            ..RequestLimits::default()
        };
        let fan = InterventionFanOut::new(vec![Arc::new(Blocking {
            started: started.clone(),
            release: release.clone(),
        })])
        .with_limits(limits, Arc::new(SystemClock));
        let tenant = Arc::new(Tenant::new("acme", "Acme"));
        tenancy::scope(tenancy::TenantContext { tenant }, async {
            for _ in 0..3 {
                fan.dispatch(&HumanIntervention::default());
            }
        })
        .await;
        settle().await;
        assert_eq!(started.load(Ordering::SeqCst), 2, "the third waits");
        release.add_permits(3);
        fan.idle().await;
        assert_eq!(started.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_principal_opens_at_most_the_hourly_cap() {
        let clock = crate::platform::clock::ManualClock::new(storage::Ts::from_secs(1_000_000));
        let mut tenant = Tenant::new("acme", "Acme");
        tenant.settings = storage::Json(
            serde_json::json!({"limits": {"interventions_per_principal_per_hour": 2}}),
        );
        let fan = InterventionFanOut::new(Vec::new())
            .with_limits(RequestLimits::default(), Arc::new(clock.clone()));
        assert!(fan.admit(&tenant, "U1").is_ok());
        assert!(fan.admit(&tenant, "U1").is_ok());
        assert_eq!(fan.admit(&tenant, "U1"), Err(30), "one slot per 30 min");
        assert!(fan.admit(&tenant, "U2").is_ok(), "per principal");
        clock.advance_ms(30 * 60_000);
        assert!(fan.admit(&tenant, "U1").is_ok());
    }
}

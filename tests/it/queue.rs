//! The worker runtime over the durable queue: deterministic steps with a
//! manual clock, real loops for wake-up / concurrency / shutdown, rate
//! limits, queue metrics and readiness.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use storage::{
    EnqueueMode, EnqueueOutcome, JobQueue, JobState, MigrationStore, RedbStore, Store, Tenant,
    TenantStore, Ts,
};
use tokio::sync::Mutex;

use root::app::{AppState, build_workers};
use root::config::Config;
use root::platform::clock::{Clock, ManualClock};
use root::platform::notify::{AdminNotice, NotificationSink};
use root::platform::tenancy;
use root::queue::registry::{self, QueueSpec};
use root::queue::{
    Enqueue, HandlerResult, JobContext, JobError, JobHandler, Outcome, WorkerConfig, Workers,
};

use crate::support::drain_jobs;

fn custom(name: &'static str, concurrency: usize, attempts: u32, backoff_ms: u64) -> QueueSpec {
    QueueSpec {
        name,
        concurrency,
        attempts,
        backoff_ms,
        repeat: None,
        rate_limit: None,
    }
}

struct Fixture {
    store: RedbStore,
    clock: ManualClock,
    state: AppState,
}

async fn fixture(extra: &[(&str, &str)]) -> Fixture {
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let clock = ManualClock::new(Ts::now());
    let config =
        Config::from_vars(extra.iter().map(|(k, v)| (k.to_string(), v.to_string()))).unwrap();
    let state = AppState::new(config, store.clone(), Arc::new(clock.clone())).unwrap();
    Fixture {
        store,
        clock,
        state,
    }
}

fn workers(f: &Fixture, cfg: WorkerConfig) -> Workers {
    Workers::new(
        f.state.queues.clone(),
        f.state.tenants.clone(),
        f.state.config.limits,
        cfg,
    )
}

/// Fails `fail_first` times, then succeeds; counts runs.
struct Flaky {
    runs: AtomicUsize,
    fail_first: usize,
    permanent: bool,
}

#[async_trait]
impl JobHandler for Flaky {
    async fn run(&self, ctx: &mut JobContext) -> HandlerResult {
        let n = self.runs.fetch_add(1, Ordering::SeqCst);
        if n < self.fail_first {
            return Err(if self.permanent {
                JobError::Permanent("bad input".into())
            } else {
                JobError::Retry(format!("try {n}"))
            });
        }
        Ok(Some(
            json!({ "echo": ctx.payload().clone(), "tenant": tenancy::current_tenant_id().ok() }),
        ))
    }
}

fn flaky(fail_first: usize, permanent: bool) -> Arc<Flaky> {
    Arc::new(Flaky {
        runs: AtomicUsize::new(0),
        fail_first,
        permanent,
    })
}

#[tokio::test]
async fn steps_run_due_jobs_retry_with_backoff_and_record_events() {
    let f = fixture(&[]).await;
    let spec = custom("test-retry", 1, 3, 10_000);
    let mut w = workers(&f, WorkerConfig::default());
    let h = flaky(2, false);
    w.register(spec, h.clone());
    f.state
        .queues
        .enqueue_with_spec(
            &spec,
            Enqueue {
                id: Some("j1".into()),
                payload: json!({"x": 1}),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let t0 = f.clock.now();
    match w.run_one_job(None).await.unwrap() {
        Outcome::Retrying { run_at, .. } => assert_eq!(run_at, t0.plus_micros(10_000_000)),
        o => panic!("{o:?}"),
    }
    assert_eq!(
        w.run_one_job(None).await.unwrap(),
        Outcome::Idle,
        "not before the backoff"
    );
    f.clock.advance_ms(10_000);
    match w.run_one_job(None).await.unwrap() {
        Outcome::Retrying { run_at, .. } => {
            assert_eq!(run_at, t0.plus_micros(30_000_000), "second backoff doubles")
        }
        o => panic!("{o:?}"),
    }
    f.clock.advance_ms(20_000);
    assert_eq!(
        w.run_one_job(None).await.unwrap(),
        Outcome::Completed {
            queue: "test-retry".into(),
            id: "j1".into()
        }
    );
    let job = f.store.job("test-retry", "j1").await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(job.result.unwrap().0["echo"]["x"], 1);
    let events = f.store.recent_events("test-retry", 10).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(h.runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn permanent_errors_fail_at_once_and_jobs_run_in_their_tenant() {
    let f = fixture(&[]).await;
    let spec = custom("test-perm", 1, 5, 1_000);
    let mut w = workers(&f, WorkerConfig::default());
    w.register(spec, flaky(1, true));
    let acme = f
        .store
        .create_tenant(Tenant::new("acme", "Acme"))
        .await
        .unwrap();
    let q = &f.state.queues;
    q.enqueue_with_spec(
        &spec,
        Enqueue {
            id: Some("a".into()),
            tenant_id: Some(acme.id),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    q.enqueue_with_spec(
        &spec,
        Enqueue {
            id: Some("b".into()),
            tenant_id: Some(acme.id),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(matches!(
        w.run_one_job(None).await.unwrap(),
        Outcome::Failed { .. }
    ));
    assert_eq!(
        w.run_one_job(None).await.unwrap(),
        Outcome::Completed {
            queue: "test-perm".into(),
            id: "b".into()
        }
    );
    let b = f.store.job("test-perm", "b").await.unwrap().unwrap();
    assert_eq!(
        b.result.unwrap().0["tenant"],
        json!(acme.id),
        "handler ran inside the job's tenant context"
    );
    // A job for a tenant that no longer exists fails permanently.
    f.store.delete_tenant(acme.id).await.unwrap();
    f.state.tenants.invalidate(&acme);
    q.enqueue_with_spec(
        &spec,
        Enqueue {
            id: Some("c".into()),
            tenant_id: Some(acme.id),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    match w.run_one_job(None).await.unwrap() {
        Outcome::Failed { error, .. } => assert!(error.contains("no longer exists")),
        o => panic!("{o:?}"),
    }
}

#[tokio::test]
async fn slack_ingest_is_rate_limited_per_tenant_and_globally_with_overrides() {
    let f = fixture(&[]).await;
    let spec = *registry::spec(registry::SLACK_KNOWLEDGE_INGEST).unwrap();
    let mut w = workers(&f, WorkerConfig::default());
    let h = flaky(0, false);
    w.register(spec, h.clone());
    let a = f.store.create_tenant(Tenant::new("a", "A")).await.unwrap();
    let mut b = Tenant::new("b", "B");
    b.settings = storage::Json(json!({"limits": {"slack_ingest_per_tenant_per_minute": 5}}));
    let b = f.store.create_tenant(b).await.unwrap();
    for i in 0..31 {
        f.state
            .queues
            .enqueue(
                registry::SLACK_KNOWLEDGE_INGEST,
                Enqueue {
                    tenant_id: Some(a.id),
                    id: Some(format!("a{i}")),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
    }
    for i in 0..6 {
        f.state
            .queues
            .enqueue(
                registry::SLACK_KNOWLEDGE_INGEST,
                Enqueue {
                    tenant_id: Some(b.id),
                    id: Some(format!("b{i}")),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
    }
    let outcomes = w.run_until_idle(None).await.unwrap();
    let ran = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Completed { .. }))
        .count();
    let deferred: Vec<_> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Deferred { id, run_at, .. } => Some((id.clone(), *run_at)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ran, 35,
        "30 for a (default ROOT_SLACK_INGEST_PER_TENANT_PER_MINUTE) + 5 for b (override)"
    );
    assert_eq!(deferred.len(), 2);
    assert!(
        deferred.iter().any(|(id, _)| id.starts_with('a'))
            && deferred.iter().any(|(id, _)| id.starts_with('b'))
    );
    let deferred_job = f
        .store
        .job(registry::SLACK_KNOWLEDGE_INGEST, &deferred[0].0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        deferred_job.attempts_made, 0,
        "a deferral is not an attempt"
    );
    assert!(deferred_job.run_at > f.clock.now());
    f.clock.advance_ms(12_000);
    let later = w.run_until_idle(None).await.unwrap();
    assert_eq!(
        later
            .iter()
            .filter(|o| matches!(o, Outcome::Completed { .. }))
            .count(),
        2
    );
    assert_eq!(h.runs.load(Ordering::SeqCst), 37);
}

#[derive(Default)]
struct CaptureSink(Mutex<Vec<AdminNotice>>);

#[async_trait]
impl NotificationSink for CaptureSink {
    async fn notify(&self, notice: AdminNotice) {
        self.0.lock().await.push(notice);
    }
}

/// §13's table, whole: a running server works every queue it lists (the
/// queue overview shows each with its handler).
#[tokio::test]
async fn every_queue_of_the_table_has_a_handler() {
    let f = fixture(&[]).await;
    let w = build_workers(&f.state, WorkerConfig::default());
    let mut registered: Vec<&str> = w.registered().iter().map(|s| s.name).collect();
    let mut table: Vec<&str> = registry::QUEUES.iter().map(|s| s.name).collect();
    registered.sort_unstable();
    table.sort_unstable();
    assert_eq!(registered, table);
    assert_eq!(table.len(), 15, "the §13 table has 15 queues");
}

#[tokio::test]
async fn queue_metrics_alert_once_per_threshold_crossing_and_prune() {
    let mut f = fixture(&[
        ("ROOT_QUEUE_ALERT_DEPTH", "3"),
        ("ROOT_QUEUE_ALERT_LAG_SECONDS", "600"),
    ])
    .await;
    let sink = Arc::new(CaptureSink::default());
    f.state.admin_sink = sink.clone();
    let w = build_workers(&f.state, WorkerConfig::default());
    assert_eq!(
        w.registered().iter().map(|s| s.name).collect::<Vec<_>>(),
        vec![
            "queue-metrics",
            "embedding-audit",
            "channel-join-sweep",
            "slack-knowledge-ingest",
            "slack-thread-distill",
            "email-inbound",
            "slack-admin-broadcast",
            "knowledge-source-sync",
            "knowledge-source-scheduler",
            "follow-up-sweep",
            "conversation-memory",
            "conversation-work-saved",
            "principal-roster-sweep",
            "reply-mention-sweep",
            "slack-knowledge-extraction"
        ],
        "only queues with a handler"
    );
    let metrics_spec = *registry::spec(registry::QUEUE_METRICS).unwrap();
    let tick = |f: &Fixture| {
        let q = f.state.queues.clone();
        let now = f.clock.now();
        async move {
            root::queue::scheduler::enqueue_tick(&q, &metrics_spec, now)
                .await
                .unwrap()
        }
    };
    // Four email jobs waiting: depth 4 > 3.
    for i in 0..4 {
        f.state
            .queues
            .enqueue(
                registry::EMAIL_INBOUND,
                Enqueue {
                    id: Some(format!("m{i}")),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
    }
    assert_eq!(tick(&f).await, EnqueueOutcome::Created);
    assert_eq!(
        tick(&f).await,
        EnqueueOutcome::Deduplicated,
        "same slot, one run"
    );
    assert!(matches!(
        drain_jobs(&f.state, "queue-metrics").await.as_slice(),
        [Outcome::Completed { .. }]
    ));
    {
        let got = sink.0.lock().await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].kind, "queue.depth");
        assert!(got[0].title.contains("email-inbound"));
    }
    // Next minute: still over the threshold → no second alert.
    f.clock.advance_ms(60_000);
    tick(&f).await;
    drain_jobs(&f.state, "queue-metrics").await;
    assert_eq!(sink.0.lock().await.len(), 1);
    // Lag passes 600 s on the next tick: a lag alert.
    f.clock.advance_ms(600_000);
    tick(&f).await;
    drain_jobs(&f.state, "queue-metrics").await;
    assert_eq!(sink.0.lock().await.last().unwrap().kind, "queue.lag");
    let overview = root::queue::metrics::queue_overview(&f.store, f.clock.now())
        .await
        .unwrap();
    let email = overview
        .iter()
        .find(|o| o.stats.queue == "email-inbound")
        .unwrap();
    assert_eq!(email.stats.waiting, 4);
    assert!(email.stats.lag_ms >= 660_000);
    let metrics = overview
        .iter()
        .find(|o| o.stats.queue == "queue-metrics")
        .unwrap();
    assert_eq!(metrics.events.len(), 3, "each finished tick is an event");
    assert_eq!(overview.len(), 15);
    // Events older than 30 days are pruned by the tick.
    f.clock.advance_ms(31 * 24 * 3600 * 1000);
    tick(&f).await;
    let ran = drain_jobs(&f.state, "queue-metrics").await;
    let [Outcome::Completed { id, .. }] = ran.as_slice() else {
        panic!("{ran:?}")
    };
    let job = f.store.job("queue-metrics", id).await.unwrap().unwrap();
    assert_eq!(job.result.unwrap().0["events_pruned"], 3);
}

/// Signals each run, then optionally blocks until released.
struct Gate {
    started: tokio::sync::mpsc::UnboundedSender<String>,
    running: AtomicUsize,
    max_running: AtomicUsize,
    release: tokio::sync::Semaphore,
}

#[async_trait]
impl JobHandler for Gate {
    async fn run(&self, ctx: &mut JobContext) -> HandlerResult {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        let _ = self.started.send(ctx.job().id.clone());
        let permit = self.release.acquire().await;
        drop(permit);
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(None)
    }
}

/// A store on the system clock and a [`Gate`] handler whose starts arrive on `rx`.
async fn gated_runtime() -> (
    RedbStore,
    AppState,
    Arc<Gate>,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let state = AppState::new(
        Config::from_vars(Vec::new()).unwrap(),
        store.clone(),
        Arc::new(root::platform::clock::SystemClock),
    )
    .unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let gate = Arc::new(Gate {
        started: tx,
        running: AtomicUsize::new(0),
        max_running: AtomicUsize::new(0),
        release: tokio::sync::Semaphore::new(0),
    });
    (store, state, gate, rx)
}

#[tokio::test]
async fn running_workers_wake_on_enqueue_and_respect_concurrency() {
    let (store, state, gate, mut rx) = gated_runtime().await;
    // A §13 queue (so enqueue wakes it) with concurrency 2: conversation-memory.
    let spec = *registry::spec(registry::CONVERSATION_MEMORY).unwrap();
    let mut w = Workers::new(
        state.queues.clone(),
        state.tenants.clone(),
        state.config.limits,
        WorkerConfig {
            idle_poll: Duration::from_secs(3600),
            ..Default::default()
        },
    );
    w.register(spec, gate.clone());
    let w = Arc::new(w);
    let cancel = tokio_util::sync::CancellationToken::new();
    let handle = w.clone().start(cancel.clone());
    tokio::time::sleep(Duration::from_millis(100)).await;
    for i in 0..4 {
        state
            .queues
            .enqueue(
                registry::CONVERSATION_MEMORY,
                Enqueue {
                    id: Some(format!("m{i}")),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
    }
    // Woken by the enqueue (the idle poll is an hour): two start at once.
    for _ in 0..2 {
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("woken by enqueue")
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        gate.running.load(Ordering::SeqCst),
        2,
        "concurrency 2 from the §13 table"
    );
    gate.release.add_permits(10);
    for _ in 0..2 {
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while store
        .stats("conversation-memory", Ts::now())
        .await
        .unwrap()
        .completed
        < 4
    {
        assert!(tokio::time::Instant::now() < deadline, "all four complete");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(gate.max_running.load(Ordering::SeqCst), 2);
    assert!(w.heartbeat().last().is_some(), "the janitor beats");
    cancel.cancel();
    handle.await.unwrap();
}

#[tokio::test]
async fn shutdown_waits_a_bounded_grace_then_releases_unfinished_jobs() {
    let (store, state, gate, mut rx) = gated_runtime().await;
    let spec = *registry::spec(registry::EMAIL_INBOUND).unwrap();
    let mut w = Workers::new(
        state.queues.clone(),
        state.tenants.clone(),
        state.config.limits,
        WorkerConfig {
            shutdown_grace: Duration::from_millis(300),
            ..Default::default()
        },
    );
    w.register(spec, gate.clone());
    let cancel = tokio_util::sync::CancellationToken::new();
    let handle = Arc::new(w).start(cancel.clone());
    state
        .queues
        .enqueue(
            registry::EMAIL_INBOUND,
            Enqueue {
                id: Some("stuck".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .unwrap()
        .unwrap();
    let t = std::time::Instant::now();
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(5), handle)
        .await
        .expect("bounded")
        .unwrap();
    assert!(t.elapsed() >= Duration::from_millis(300));
    let job = store.job("email-inbound", "stuck").await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Waiting, "released for the next start");
    assert_eq!(job.attempts_made, 0);
    assert!(job.lease_owner.is_none());
}

#[tokio::test]
async fn coalesced_distill_jobs_run_once_after_the_debounce() {
    let f = fixture(&[]).await;
    let spec = *registry::spec(registry::SLACK_THREAD_DISTILL).unwrap();
    let mut w = workers(&f, WorkerConfig::default());
    let h = flaky(0, false);
    w.register(spec, h.clone());
    let add = |n: i32| {
        f.state.queues.enqueue(
            registry::SLACK_THREAD_DISTILL,
            Enqueue {
                id: Some("C1:1.0".into()),
                payload: json!({"n": n}),
                delay_ms: 600_000,
                mode: EnqueueMode::Coalesce,
                ..Default::default()
            },
        )
    };
    add(1).await.unwrap();
    f.clock.advance_ms(300_000);
    assert_eq!(add(2).await.unwrap().0, EnqueueOutcome::Rescheduled);
    f.clock.advance_ms(300_000);
    assert_eq!(
        w.run_one_job(None).await.unwrap(),
        Outcome::Idle,
        "the timer was reset by the second reply"
    );
    f.clock.advance_ms(300_000);
    assert!(matches!(
        w.run_one_job(None).await.unwrap(),
        Outcome::Completed { .. }
    ));
    assert_eq!(h.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn ready_is_down_when_the_worker_heartbeat_is_stale() {
    use tower::ServiceExt;
    let mut f = fixture(&[]).await;
    let hb = root::queue::Heartbeat::default();
    f.state.worker_heartbeat = Some(hb.clone());
    let call = |state: AppState| async move {
        let req = axum::http::Request::get("/ready")
            .body(axum::body::Body::empty())
            .unwrap();
        root::web::router(state)
            .oneshot(req)
            .await
            .unwrap()
            .status()
    };
    assert_eq!(call(f.state.clone()).await, 503, "no beat yet");
    hb.beat(f.clock.now());
    assert_eq!(call(f.state.clone()).await, 200);
    f.clock.advance_ms(31_000);
    assert_eq!(call(f.state.clone()).await, 503, "older than 30 s");
    assert_eq!(root::state::WORKER_HEARTBEAT_MAX_AGE_MS, 30_000);
}

#[tokio::test]
async fn a_failed_enqueue_is_an_error_not_a_silent_drop() {
    let f = fixture(&[]).await;
    f.store.close().await;
    let err = f
        .state
        .queues
        .enqueue(registry::EMAIL_INBOUND, Enqueue::default())
        .await;
    assert!(err.is_err());
    let err = f
        .state
        .queues
        .enqueue("no-such-queue", Enqueue::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a queue"), "{err}");
}

#[tokio::test]
async fn serve_runs_queue_metrics_in_process() {
    let app = crate::support::TestApp::spawn().await;
    let hb = app
        .state
        .worker_heartbeat
        .clone()
        .expect("workers run in-process by default");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while hb.last().is_none() {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let spec = *registry::spec(registry::QUEUE_METRICS).unwrap();
    root::queue::scheduler::enqueue_tick(&app.state.queues, &spec, Ts::now())
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while app
        .state
        .store
        .stats("queue-metrics", Ts::now())
        .await
        .unwrap()
        .completed
        == 0
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the in-process worker ran the tick"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let alert_state: Option<storage::PlatformSetting> = app
        .state
        .store
        .get(
            None,
            storage::key().str(root::queue::metrics::ALERT_STATE_KEY),
        )
        .await
        .unwrap();
    let alert_state = alert_state.expect("the tick persisted the alert crossing state");
    assert_eq!(alert_state.value.0["email-inbound"]["depth"], false);
}

/// `/ready` reads the heartbeat; a runtime that has just started must
/// already count as alive, before its janitor task is ever scheduled.
#[tokio::test(flavor = "current_thread")]
async fn the_heartbeat_is_fresh_the_moment_workers_start() {
    let f = fixture(&[]).await;
    let w = Arc::new(workers(&f, WorkerConfig::default()));
    let heartbeat = w.heartbeat();
    assert!(heartbeat.last().is_none(), "no beat before start");
    let cancel = tokio_util::sync::CancellationToken::new();
    // No await between start and the check: no spawned task has run yet.
    let handle = w.clone().start(cancel.clone());
    assert!(
        heartbeat.is_fresh(f.clock.now(), root::state::WORKER_HEARTBEAT_MAX_AGE_MS),
        "start beats before it returns"
    );
    cancel.cancel();
    handle.await.unwrap();
}

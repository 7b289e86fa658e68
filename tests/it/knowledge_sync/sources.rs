//! Sources over the API: validation, secrets, tenancy, failure counting,
//! the scheduler.

use std::sync::Arc;

use root::platform::clock::{Clock, ManualClock};
use serde_json::json;
use storage::{KnowledgeSource, Store, SyncRunStatus, Ts, key};
use uuid::Uuid;

use crate::support::TestApp;
use crate::support::fake_http::{FakeHttp, Reply};

use super::*;

#[tokio::test]
async fn knowledge_sources_are_validated_secret_free_and_per_tenant() {
    let app = TestApp::spawn_with(NO_WORKERS).await;
    let (_acme, api) = tenant_key(&app, "acme").await;
    let (_other, other_key) = tenant_key(&app, "other").await;
    let (s, v) = send(
        &app,
        "POST",
        "/api/v1/kb/sources",
        &api,
        Some(json!({
        "source_key": "portal", "name": "Portal", "source_kind": "api_pull",
        "url": "https://portal.example.org/api/docs", "auth_type": "bearer",
        "secrets": {"token": "tok-very-secret"}, "mapping": {"documents_path": "$.items[*]"},
        "schedule_interval_minutes": 60})),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["secrets_set"], json!(["token"]));
    assert!(!v.to_string().contains("tok-very-secret"));
    assert!(
        v["next_sync_at"].is_number() || v["next_sync_at"].is_string(),
        "{v}"
    );
    // A second source with the key: 409.
    let (s, _) = send(
        &app,
        "POST",
        "/api/v1/kb/sources",
        &api,
        Some(json!({
        "source_key": "portal", "name": "Again", "source_kind": "api_push"})),
    )
    .await;
    assert_eq!(s, 409);
    // Field errors name the field.
    for (body, field) in [
        (
            json!({"source_key": "x", "name": "X", "source_kind": "web_page"}),
            "url",
        ),
        (
            json!({"source_key": "x", "name": "X", "source_kind": "rss"}),
            "source_kind",
        ),
        (
            json!({"source_key": "x", "name": "X", "source_kind": "api_push", "schedule_interval_minutes": 2}),
            "schedule_interval_minutes",
        ),
        (
            json!({"source_key": "x", "name": "X", "source_kind": "web_page", "url": "ftp://files.example.org/docs"}),
            "url",
        ),
    ] {
        let (s, v) = send(&app, "POST", "/api/v1/kb/sources", &api, Some(body)).await;
        assert_eq!(s, 400, "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(field),
            "{v}"
        );
    }
    // Patch: a secret removed, the kind fixed.
    let (s, v) = send(
        &app,
        "PATCH",
        "/api/v1/kb/sources/portal",
        &api,
        Some(json!({"auth_type": "none", "secrets": {"token": null}})),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["secrets_set"], json!([]));
    let (s, _) = send(
        &app,
        "PATCH",
        "/api/v1/kb/sources/portal",
        &api,
        Some(json!({"source_kind": "webhook"})),
    )
    .await;
    assert_eq!(s, 400);
    // Another tenant sees nothing and cannot touch it, even by id.
    let id = v["id"].as_str().unwrap().to_string();
    let (_, list) = send(&app, "GET", "/api/v1/kb/sources", &other_key, None).await;
    assert_eq!(list["sources"], json!([]));
    for path in [
        format!("/api/v1/kb/sources/{id}"),
        "/api/v1/kb/sources/portal".into(),
    ] {
        let (s, _) = send(&app, "GET", &path, &other_key, None).await;
        assert_eq!(s, 404);
        let (s, _) = send(&app, "DELETE", &path, &other_key, None).await;
        assert_eq!(s, 404);
    }
    // An api_push source is not synced by trigger; api_pull is (202).
    api_push_source(&app, &api).await;
    let (s, v) = send(&app, "POST", "/api/v1/kb/sources/handbook/sync", &api, None).await;
    assert_eq!(s, 400, "{v}");
    let (s, v) = send(&app, "POST", "/api/v1/kb/sources/portal/sync", &api, None).await;
    assert_eq!(s, 202, "{v}");
    assert_eq!(v["run"]["trigger_type"], "manual");
    // Pushing to another tenant's source key: 404 there.
    let (s, _) = send(
        &app,
        "POST",
        "/api/v1/kb/sync",
        &other_key,
        Some(json!({
        "source": {"key": "handbook"}, "documents": [doc("x", "X", "x")]})),
    )
    .await;
    assert_eq!(s, 404);
    let (s, _) = send(&app, "DELETE", "/api/v1/kb/sources/portal", &api, None).await;
    assert_eq!(s, 204);
}

#[tokio::test]
async fn knowledge_failures_count_to_error_and_a_success_reactivates() {
    let fake = FakeHttp::start().await;
    let app = TestApp::spawn_with(NO_WORKERS).await;
    let (tenant, api) = tenant_key(&app, "acme").await;
    let (s, v) = send(
        &app,
        "POST",
        "/api/v1/kb/sources",
        &api,
        Some(json!({
        "source_key": "portal", "name": "Portal", "source_kind": "api_pull",
        "url": fake.url("/docs"), "response_mode": "json"})),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    fake.script(
        "GET",
        "/docs",
        [
            Reply::status(503),
            Reply::status(503),
            Reply::status(503),
            Reply::json(
                200,
                &json!([{"id": "1", "title": "Rules", "content_text": "No dogs on the roof."}]),
            ),
        ],
    );
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let (s, v) = send(&app, "POST", "/api/v1/kb/sources/portal/sync", &api, None).await;
        assert_eq!(s, 202, "{v}");
        drain(&app).await;
        let r = run_row(&app, tenant.id, v["run"]["id"].as_str().unwrap()).await;
        let (_, src) = send(&app, "GET", "/api/v1/kb/sources/portal", &api, None).await;
        statuses.push((
            r.status.as_str(),
            r.http_status,
            src["status"].as_str().unwrap().to_string(),
            src["consecutive_failures"].as_i64().unwrap(),
        ));
    }
    assert_eq!(statuses[0], ("failed", Some(503), "active".into(), 1));
    assert_eq!(statuses[1], ("failed", Some(503), "active".into(), 2));
    assert_eq!(statuses[2], ("failed", Some(503), "error".into(), 3));
    assert_eq!(statuses[3], ("succeeded", Some(200), "active".into(), 0));
    let (_, src) = send(&app, "GET", "/api/v1/kb/sources/portal", &api, None).await;
    assert!(src["last_error"].is_null());
}

#[tokio::test]
async fn knowledge_scheduler_leases_runs_and_clamps_the_interval() {
    let clock = ManualClock::new(Ts::from_secs(1_800_000_000));
    let app = TestApp::spawn_with_clock(NO_WORKERS, Arc::new(clock.clone())).await;
    let (tenant, api) = tenant_key(&app, "acme").await;
    crate::support::set_setting(
        &app.state,
        "acme",
        "limits.min_knowledge_sync_interval_minutes",
        json!(30),
    )
    .await;
    let fake = FakeHttp::start().await;
    fake.reply(
        "/docs",
        200,
        json!([{"id": "1", "title": "Rules", "content_text": "No dogs on the roof."}]),
    );
    let (s, v) = send(
        &app,
        "POST",
        "/api/v1/kb/sources",
        &api,
        Some(json!({
        "source_key": "portal", "name": "Portal", "source_kind": "api_pull",
        "url": fake.url("/docs"), "schedule_interval_minutes": 5})),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    let id = Uuid::parse_str(v["id"].as_str().unwrap()).unwrap();
    let source = |app: &TestApp| {
        let store = app.state.store.clone();
        async move {
            store
                .get::<KnowledgeSource>(Some(tenant.id), key().uuid(id))
                .await
                .unwrap()
                .unwrap()
        }
    };
    let t0 = clock.now();
    assert_eq!(source(&app).await.next_sync_at, Some(t0), "due at once");

    let r = app.state.knowledge.schedule_due().await.unwrap();
    assert_eq!(r.started, 1);
    // 5 min asked, the tenant's minimum is 30.
    assert_eq!(
        source(&app).await.next_sync_at,
        Some(t0.plus_micros(30 * 60 * 1_000_000))
    );
    // Not due yet: nothing; the queued run is executed by the worker.
    assert_eq!(app.state.knowledge.schedule_due().await.unwrap().started, 0);
    drain(&app).await;
    let runs = app.state.knowledge.runs(tenant.id, id, 10).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].trigger_type.as_str(), runs[0].status),
        ("schedule", SyncRunStatus::Succeeded)
    );

    // Due again while a run is still queued: no second run, rescheduled.
    clock.advance_ms(31 * 60 * 1000);
    app.state
        .knowledge
        .sync_now(tenant.id, "portal", None)
        .await
        .unwrap();
    let r = app.state.knowledge.schedule_due().await.unwrap();
    assert_eq!((r.started, r.busy), (0, 1));
    let t1 = clock.now();
    assert_eq!(
        source(&app).await.next_sync_at,
        Some(t1.plus_micros(30 * 60 * 1_000_000))
    );
    drain(&app).await;
    clock.advance_ms(31 * 60 * 1000);
    assert_eq!(app.state.knowledge.schedule_due().await.unwrap().started, 1);
    // Paused sources are not due.
    let (s, _) = send(
        &app,
        "PATCH",
        "/api/v1/kb/sources/portal",
        &api,
        Some(json!({"status": "paused"})),
    )
    .await;
    assert_eq!(s, 200);
    clock.advance_ms(31 * 60 * 1000);
    assert_eq!(app.state.knowledge.schedule_due().await.unwrap().started, 0);
}

/// §11.2: a run still `running` after 30 minutes is failed as abandoned
/// (and counted) when the next run of its source claims the slot.
#[tokio::test]
async fn knowledge_an_abandoned_running_run_is_failed_by_the_next_claim() {
    let clock = ManualClock::new(Ts::from_secs(1_800_000_000));
    let app = TestApp::spawn_with_clock(NO_WORKERS, Arc::new(clock.clone())).await;
    let (tenant, api) = tenant_key(&app, "acme").await;
    let source = api_push_source(&app, &api).await;
    let source_id = Uuid::parse_str(source["id"].as_str().unwrap()).unwrap();
    let now = clock.now();
    let stuck = app
        .state
        .store
        .insert(storage::KnowledgeSyncRun {
            id: Uuid::new_v4(),
            tenant_id: tenant.id,
            source_id,
            status: SyncRunStatus::Running,
            started_at: Some(now),
            metadata: storage::Json(json!({})),
            created_at: now,
            updated_at: now,
            ..storage::KnowledgeSyncRun::default()
        })
        .await
        .unwrap();
    // Within 30 minutes the stuck run still holds the slot.
    clock.advance_ms(29 * 60 * 1000);
    let run = push(&app, &api, vec![doc("a", "Alpha", "x")], Value::Null).await;
    drain(&app).await;
    let r = run_row(&app, tenant.id, run["id"].as_str().unwrap()).await;
    assert_eq!(r.status, SyncRunStatus::Failed);
    // Past it, the next run fails the stuck one and goes ahead.
    clock.advance_ms(2 * 60 * 1000);
    let run = push(&app, &api, vec![doc("a", "Alpha", "x")], Value::Null).await;
    drain(&app).await;
    let r = run_row(&app, tenant.id, run["id"].as_str().unwrap()).await;
    assert_eq!(r.status, SyncRunStatus::Succeeded);
    let s = run_row(&app, tenant.id, &stuck.id.to_string()).await;
    assert_eq!(s.status, SyncRunStatus::Failed);
    assert_eq!(
        s.error.as_deref(),
        Some("abandoned: still running after 30 minutes")
    );
    let (_, src) = send(&app, "GET", "/api/v1/kb/sources/handbook", &api, None).await;
    assert_eq!(src["consecutive_failures"], 0, "the later success reset it");
}

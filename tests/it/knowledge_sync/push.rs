//! api_push runs (§17 #5): hashes, replace_missing, the AI cleanup step.

use serde_json::{Value, json};
use storage::{KnowledgePage, KnowledgeSyncRun, Scan, Store, SyncRunStatus};
use uuid::Uuid;

use crate::support::TestApp;
use crate::support::fake_llm::{FakeLlm, completion};

use super::*;

/// §17 #5: an api_push run creates, updates and skips pages by their
/// hashes, audits a run row, and one source runs one run at a time.
#[tokio::test]
async fn knowledge_api_push_creates_updates_and_skips_by_hash_acceptance_5() {
    let app = TestApp::spawn_with(NO_WORKERS).await;
    let (tenant, api) = tenant_key(&app, "acme").await;
    let source = api_push_source(&app, &api).await;
    assert_eq!(source["source_kind"], "api_push");
    let docs = vec![
        doc("p1", "Parking", "Bikes park free in the courtyard."),
        doc("p2", "Opening hours", "The hub opens at 8am on weekdays."),
        doc("p3", "Wifi", "The guest network is hub-guest."),
    ];

    let run = push(&app, &api, docs.clone(), Value::Null).await;
    drain(&app).await;
    let r = run_row(&app, tenant.id, run["id"].as_str().unwrap()).await;
    assert_eq!(r.status, SyncRunStatus::Succeeded, "{:?}", r.error);
    assert_eq!(r.trigger_type.as_str(), "api");
    assert_eq!(
        (
            r.documents_received,
            r.pages_created,
            r.pages_updated,
            r.pages_unchanged
        ),
        (3, 3, 0, 0)
    );
    assert_eq!(
        r.metadata.0["diff"]["created"],
        json!(["parking", "opening-hours", "wifi"])
    );
    // Pushed bodies are not kept once they are pages.
    assert_eq!(r.input_payload.as_ref().unwrap().0["documents_count"], 3);
    // Searchable when the run says succeeded.
    let (s, hits) = send(
        &app,
        "POST",
        "/api/v1/kb/search",
        &api,
        Some(json!({"query": "courtyard bikes"})),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(hits["results"][0]["slug"], "parking", "{hits}");
    let page = page_by_slug(&app, tenant.id, "parking").await;
    assert_eq!(page.source_type, "api_push");
    assert_eq!(page.external_id.as_deref(), Some("p1"));
    assert!(page.content_hash.is_some() && page.raw_content_hash.is_some());
    let chunks_before = chunk_ids(&app, tenant.id).await;

    // The same documents again: all unchanged, nothing re-chunked or re-embedded.
    let run = push(&app, &api, docs.clone(), Value::Null).await;
    drain(&app).await;
    let r = run_row(&app, tenant.id, run["id"].as_str().unwrap()).await;
    assert_eq!(
        (r.pages_created, r.pages_updated, r.pages_unchanged),
        (0, 0, 3)
    );
    assert_eq!(chunk_ids(&app, tenant.id).await, chunks_before);

    // One changed document: one update, two unchanged.
    let mut changed = docs.clone();
    changed[1] = doc(
        "p2",
        "Opening hours",
        "The hub now opens at 7am on weekdays.",
    );
    let run = push(&app, &api, changed.clone(), Value::Null).await;
    drain(&app).await;
    let r = run_row(&app, tenant.id, run["id"].as_str().unwrap()).await;
    assert_eq!(
        (r.pages_created, r.pages_updated, r.pages_unchanged),
        (0, 1, 2)
    );
    assert_eq!(r.metadata.0["diff"]["updated"], json!(["opening-hours"]));

    // A second running run of the same source is refused by the constraint.
    let id = Uuid::parse_str(source["id"].as_str().unwrap()).unwrap();
    let now = app.state.clock.now();
    app.state
        .store
        .insert(KnowledgeSyncRun {
            id: Uuid::new_v4(),
            tenant_id: tenant.id,
            source_id: id,
            status: SyncRunStatus::Running,
            started_at: Some(now),
            metadata: storage::Json(json!({})),
            created_at: now,
            updated_at: now,
            ..KnowledgeSyncRun::default()
        })
        .await
        .unwrap();
    let dup = app
        .state
        .store
        .insert(KnowledgeSyncRun {
            id: Uuid::new_v4(),
            tenant_id: tenant.id,
            source_id: id,
            status: SyncRunStatus::Running,
            metadata: storage::Json(json!({})),
            created_at: now,
            updated_at: now,
            ..KnowledgeSyncRun::default()
        })
        .await;
    assert!(
        matches!(dup, Err(storage::StorageError::Conflict { constraint }) if constraint == KnowledgeSyncRun::ONE_RUNNING_KEY)
    );
    let run = push(&app, &api, changed, Value::Null).await;
    drain(&app).await;
    let r = run_row(&app, tenant.id, run["id"].as_str().unwrap()).await;
    assert_eq!(r.status, SyncRunStatus::Failed);
    assert_eq!(
        r.error.as_deref(),
        Some("another sync run of this source is running")
    );
    let (_, src) = send(&app, "GET", "/api/v1/kb/sources/handbook", &api, None).await;
    assert_eq!(
        src["consecutive_failures"], 0,
        "a conflict is not the source's failure"
    );

    // The run history, newest first.
    let (s, runs) = send(
        &app,
        "GET",
        "/api/v1/kb/sources/handbook/runs?limit=10",
        &api,
        None,
    )
    .await;
    assert_eq!(s, 200);
    let statuses: Vec<&str> = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.len(), 5);
    assert!(runs["runs"][0]["input"]["documents_count"].is_number());
}

#[tokio::test]
async fn knowledge_replace_missing_deletes_only_with_external_ids() {
    let app = TestApp::spawn_with(NO_WORKERS).await;
    let (tenant, api) = tenant_key(&app, "acme").await;
    api_push_source(&app, &api).await;
    let docs = vec![
        doc("a", "Alpha", "First page."),
        doc("b", "Beta", "Second page."),
        doc("c", "Gamma", "Third page."),
    ];
    push(&app, &api, docs.clone(), Value::Null).await;
    drain(&app).await;

    // Without external ids on every document: nothing is deleted.
    let partial = vec![
        docs[0].clone(),
        json!({"title": "Delta", "content_text": "No id."}),
    ];
    let run = push(&app, &api, partial, json!({"replace_missing": true})).await;
    drain(&app).await;
    let r = run_row(&app, tenant.id, run["id"].as_str().unwrap()).await;
    assert_eq!(r.pages_deleted, 0);
    assert_eq!(
        r.metadata.0["replace_missing_skipped"],
        "not every document carried an external_id"
    );

    // With them: the pages whose ids are gone are deleted (and unsearchable).
    let run = push(
        &app,
        &api,
        vec![docs[0].clone()],
        json!({"replace_missing": true}),
    )
    .await;
    drain(&app).await;
    let r = run_row(&app, tenant.id, run["id"].as_str().unwrap()).await;
    assert_eq!(r.pages_deleted, 3, "beta, gamma and the id-less delta");
    let mut deleted: Vec<String> =
        serde_json::from_value(r.metadata.0["diff"]["deleted"].clone()).unwrap();
    deleted.sort();
    assert_eq!(deleted, ["beta", "delta", "gamma"]);
    let pages: Vec<KnowledgePage> = app
        .state
        .store
        .scan(Some(tenant.id), Scan::all())
        .await
        .unwrap();
    assert_eq!(
        pages.iter().map(|p| p.slug.as_str()).collect::<Vec<_>>(),
        ["alpha"]
    );
    let (_, hits) = send(
        &app,
        "POST",
        "/api/v1/kb/search",
        &api,
        Some(json!({"query": "Second page"})),
    )
    .await;
    assert!(
        hits["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["slug"] != "beta"),
        "{hits}"
    );
}

#[tokio::test]
async fn knowledge_ai_cleanup_runs_once_per_raw_document() {
    let llm = FakeLlm::start().await;
    let app = TestApp::spawn_with(&[
        ("ROOT_RUN_WORKERS", "false"),
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
    ])
    .await;
    let (tenant, api) = tenant_key(&app, "acme").await;
    api_push_source(&app, &api).await;
    llm.json(completion(
        "## Parking\n\nBikes park **free** in the courtyard.",
    ));
    let docs = vec![doc(
        "p1",
        "Parking",
        "bikes   park free in the courtyard!!! <<nav>>",
    )];
    let run = push(
        &app,
        &api,
        docs.clone(),
        json!({"ai_cleanup": true, "ai_cleanup_instructions": "Keep prices."}),
    )
    .await;
    drain(&app).await;
    let r = run_row(&app, tenant.id, run["id"].as_str().unwrap()).await;
    assert_eq!((r.pages_created, r.ai_cleaned), (1, 1));
    let calls = llm.bodies();
    assert_eq!(calls.len(), 1);
    let system = calls[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You clean up one document"));
    assert!(system.ends_with("Keep prices."));
    let page = page_by_slug(&app, tenant.id, "parking").await;
    assert!(
        page.content_html.contains("<strong>free</strong>"),
        "{}",
        page.content_html
    );

    // The same raw document and instructions: a hash hit, no model call.
    let run = push(
        &app,
        &api,
        docs.clone(),
        json!({"ai_cleanup": true, "ai_cleanup_instructions": "Keep prices."}),
    )
    .await;
    drain(&app).await;
    let r = run_row(&app, tenant.id, run["id"].as_str().unwrap()).await;
    assert_eq!((r.pages_unchanged, r.ai_cleaned), (1, 0));
    assert_eq!(llm.bodies().len(), 1, "no second call");

    // New instructions: cleaned again; the same answer → content unchanged.
    llm.json(completion(
        "## Parking\n\nBikes park **free** in the courtyard.",
    ));
    let run = push(
        &app,
        &api,
        docs,
        json!({"ai_cleanup": true, "ai_cleanup_instructions": "Keep dates."}),
    )
    .await;
    drain(&app).await;
    let r = run_row(&app, tenant.id, run["id"].as_str().unwrap()).await;
    assert_eq!(
        (r.pages_unchanged, r.pages_updated, r.ai_cleaned),
        (1, 0, 1)
    );
    assert_eq!(llm.bodies().len(), 2);
}

/// Two communities with the same source key and the same external ids:
/// each run touches only its own tenant's pages.
#[tokio::test]
async fn knowledge_runs_never_touch_another_tenants_pages() {
    let app = TestApp::spawn_with(NO_WORKERS).await;
    let (acme, acme_key) = tenant_key(&app, "acme").await;
    let (other, other_key) = tenant_key(&app, "other").await;
    for k in [&acme_key, &other_key] {
        api_push_source(&app, k).await;
    }
    let docs = vec![
        doc("a", "Alpha", "First page."),
        doc("b", "Beta", "Second page."),
    ];
    push(&app, &acme_key, docs.clone(), Value::Null).await;
    push(&app, &other_key, docs.clone(), Value::Null).await;
    drain(&app).await;
    // acme replaces its set with one page; other keeps both.
    let run = push(
        &app,
        &acme_key,
        vec![doc("a", "Alpha", "First page, edited.")],
        json!({"replace_missing": true}),
    )
    .await;
    drain(&app).await;
    let r = run_row(&app, acme.id, run["id"].as_str().unwrap()).await;
    assert_eq!((r.pages_updated, r.pages_deleted), (1, 1));
    let slugs = |t: uuid::Uuid| {
        let store = app.state.store.clone();
        async move {
            let pages: Vec<KnowledgePage> = store.scan(Some(t), Scan::all()).await.unwrap();
            let mut s: Vec<(String, String)> = pages
                .into_iter()
                .map(|p| (p.slug, p.content_text.unwrap_or_default()))
                .collect();
            s.sort();
            s
        }
    };
    let a = slugs(acme.id).await;
    assert_eq!(a.len(), 1);
    assert!(a[0].1.contains("edited"));
    let o = slugs(other.id).await;
    assert_eq!(
        o.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
        ["alpha", "beta"]
    );
    assert!(!o[0].1.contains("edited"));
    let (_, hits) = send(
        &app,
        "POST",
        "/api/v1/kb/search",
        &other_key,
        Some(json!({"query": "edited"})),
    )
    .await;
    assert!(
        hits["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| !h["text"].as_str().unwrap_or("").contains("edited")),
        "{hits}"
    );
}

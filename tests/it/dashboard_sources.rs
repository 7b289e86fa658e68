//! `/knowledge-sources` (§14.2, §11): register, edit (secrets write-only),
//! sync now, run history with each run's diff, delete; roles and CSRF.

use serde_json::json;
use storage::{
    Json, KnowledgeSource, KnowledgeSyncRun, Scan, Store, SyncRunStatus, SyncTrigger, TenantRole,
    Ts,
};
use uuid::Uuid;

use crate::support::dashboard::{attrs, injected_scripts, location, texts, world};

#[tokio::test]
async fn dashboard_sources_register_edit_sync_show_diffs_and_delete() {
    let w = world(&[], false).await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let (viewer, viewer_csrf) = w.signed_in(TenantRole::Viewer).await;
    let t = w.tenant("root").await;
    let base = |c: &str, key: &str| {
        vec![
            ("csrf", c.to_string()),
            ("source_key", key.to_string()),
            ("source_kind", "web_page".to_string()),
            ("name", "FAQ <script>alert(1)</script>".to_string()),
            ("url", "https://docs.example.org/faq".to_string()),
            ("http_method", "GET".to_string()),
            ("response_mode", "auto".to_string()),
            ("auth_type", "bearer".to_string()),
            ("secrets", "token=s3cret-value".to_string()),
            ("schedule_interval_minutes", "".to_string()),
        ]
    };
    let post = |path: &str, session: &str, f: Vec<(&'static str, String)>| {
        let req = w
            .http
            .post(w.app.url(path))
            .header("cookie", format!("root_session={session}"))
            .form(&f);
        async move { req.send().await.unwrap() }
    };
    assert_eq!(
        post("/knowledge-sources", &viewer, base(&viewer_csrf, "faq"))
            .await
            .status(),
        403
    );
    let mut bad = base(&csrf, "faq");
    bad.push(("mapping", "{not json".into()));
    let r = post("/knowledge-sources", &owner, bad).await;
    assert_eq!(r.status(), 422);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert!(texts(&page, "#source-error")[0].starts_with("mapping"));
    assert_eq!(
        attrs(&page, "#source_key", "value"),
        vec!["faq"],
        "typed values kept"
    );

    let r = post("/knowledge-sources", &owner, base(&csrf, "faq")).await;
    assert_eq!(r.status(), 303);
    let detail = location(&r).split('?').next().unwrap().to_string();
    let r = post("/knowledge-sources", &owner, base(&csrf, "faq")).await;
    assert_eq!(r.status(), 422, "a taken key");

    let (status, page) = w.page(&detail, &owner).await;
    assert_eq!(status, 200);
    assert!(
        page.html().contains("<code>token</code>"),
        "the secret's name"
    );
    assert!(!page.html().contains("s3cret-value"), "never its value");
    assert_eq!(injected_scripts(&page), 0);

    // Sync now queues a run; a finished run shows its diff.
    let r = post(
        &format!("{detail}/sync"),
        &owner,
        vec![("csrf", csrf.clone())],
    )
    .await;
    assert_eq!(location(&r), format!("{detail}?done=sync-started"));
    let sources: Vec<KnowledgeSource> = w
        .app
        .state
        .store
        .scan(Some(t.id), Scan::all())
        .await
        .unwrap();
    let source = &sources[0];
    let run = KnowledgeSyncRun {
        id: Uuid::new_v4(),
        tenant_id: t.id,
        source_id: source.id,
        trigger_type: SyncTrigger::Schedule,
        status: SyncRunStatus::Succeeded,
        documents_received: 3,
        pages_created: 1,
        pages_deleted: 1,
        metadata: Json(json!({
            "diff": {"created": ["new-page"], "updated": [], "deleted": ["old-page"], "unchanged": []},
            "document_errors": [{"index": 2, "external_id": "doc-3", "error": "no title"}],
        })),
        created_at: Ts::now().plus_micros(-60_000_000),
        updated_at: Ts::now(),
        ..KnowledgeSyncRun::default()
    };
    w.app.state.store.insert(run).await.unwrap();
    let (_, page) = w.page(&detail, &viewer).await;
    assert_eq!(
        texts(&page, "#runs tbody tr").len(),
        2,
        "the queued run and the finished one"
    );
    assert_eq!(texts(&page, "#runs .created a"), vec!["new-page"]);
    assert_eq!(texts(&page, "#runs .deleted"), vec!["− old-page"]);
    assert_eq!(
        texts(&page, "#runs .document-error"),
        vec!["✗ #2 doc-3: no title"]
    );
    assert!(
        texts(&page, "form#edit-source").is_empty(),
        "a viewer gets no forms"
    );

    // Editing keeps the secret unless the form names it; pausing works.
    let mut edit = base(&csrf, "faq");
    edit.retain(|(k, _)| *k != "secrets" && *k != "source_key" && *k != "source_kind");
    edit.push(("status", "paused".into()));
    let r = post(&detail, &owner, edit).await;
    assert_eq!(r.status(), 303);
    let sources: Vec<KnowledgeSource> = w
        .app
        .state
        .store
        .scan(Some(t.id), Scan::all())
        .await
        .unwrap();
    assert_eq!(sources[0].status.as_str(), "paused");
    assert_eq!(sources[0].secrets.expose().0["token"], "s3cret-value");

    let r = post(
        &format!("{detail}/delete"),
        &viewer,
        vec![("csrf", viewer_csrf)],
    )
    .await;
    assert_eq!(r.status(), 403);
    let r = post(
        &format!("{detail}/delete"),
        &owner,
        vec![("csrf", csrf.clone())],
    )
    .await;
    assert_eq!(location(&r), "/knowledge-sources?done=source-deleted");
    let (_, page) = w.page("/knowledge-sources", &owner).await;
    assert!(texts(&page, "#sources .source-name").is_empty());
}

//! The fetched kinds end to end: a web page and an api_pull source into
//! search, and a webhook source fed by its signed callback.

use serde_json::{Value, json};
use storage::SyncRunStatus;

use crate::support::TestApp;
use crate::support::fake_http::{FakeHttp, Reply};
use crate::support::fake_llm::{FakeLlm, completion};

use super::*;

const ARTICLE: &str = r#"<!doctype html><html><head><title>Parking at the Hub</title></head>
<body><nav><a href="/">Home</a> | <a href="/events">Events</a></nav>
<article><h1>Parking at the Hub</h1>
<p>Members park for free in the courtyard on weekdays. Visitors pay 4 euros a day at the gate.</p>
<p>Bikes go in the covered racks next to the main door; cargo bikes use the side entrance.</p>
<p>On Saturdays the courtyard is closed for the market, so please use the public garage on Mill Street.</p>
</article><footer>© Hub Cooperative</footer></body></html>"#;

/// "Done means" of the issue: a web page and an api_pull source registered
/// through the API, synced by `POST …/sync`, answer `POST /kb/search`; a
/// second run reports them unchanged (and asks the model nothing).
#[tokio::test]
async fn knowledge_web_page_and_api_pull_sources_sync_into_search_and_rerun_unchanged() {
    let llm = FakeLlm::start().await;
    let site = FakeHttp::start().await;
    site.route("GET", "/parking", |_| {
        Reply::bytes(200, "text/html; charset=utf-8", ARTICLE.as_bytes().to_vec())
    });
    site.reply(
        "/api/articles",
        200,
        json!({"data": [
            {"id": 41, "title": "Guest wifi", "body": "<p>The guest network is <b>hub-guest</b>; the password is on the fridge.</p>"},
            {"id": 42, "title": "Printing", "body": "<p>The printer on floor two prints 20 free pages a month per member.</p>"}
        ]}),
    );
    let app = TestApp::spawn_with(&[
        ("ROOT_RUN_WORKERS", "false"),
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
    ])
    .await;
    let (tenant, api) = tenant_key(&app, "acme").await;
    let (s, v) = send(
        &app,
        "POST",
        "/api/v1/kb/sources",
        &api,
        Some(json!({
        "source_key": "site-parking", "name": "Parking page", "source_kind": "web_page",
        "url": site.url("/parking")})),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = send(&app, "POST", "/api/v1/kb/sources", &api, Some(json!({
        "source_key": "portal", "name": "Member portal", "source_kind": "api_pull",
        "url": site.url("/api/articles"), "auth_type": "bearer", "secrets": {"token": "portal-token"},
        "mapping": {"documents_path": "$.data[*]", "external_id_path": "$.id",
                    "title_path": "$.title", "content_html_path": "$.body"}}))).await;
    assert_eq!(s, 201, "{v}");
    llm.json(completion(
        "# Parking at the Hub\n\nMembers park for free in the courtyard on weekdays. Visitors pay 4 euros a day.\n\n\
         Bikes go in the covered racks; cargo bikes use the side entrance. On Saturdays use the public garage on Mill Street.",
    ));

    let mut first = Vec::new();
    for key in ["site-parking", "portal"] {
        let (s, v) = send(
            &app,
            "POST",
            &format!("/api/v1/kb/sources/{key}/sync"),
            &api,
            None,
        )
        .await;
        assert_eq!(s, 202, "{v}");
        drain(&app).await;
        first.push(run_row(&app, tenant.id, v["run"]["id"].as_str().unwrap()).await);
    }
    assert_eq!(
        (first[0].status, first[0].pages_created, first[0].ai_cleaned),
        (SyncRunStatus::Succeeded, 1, 1)
    );
    assert_eq!(
        (first[1].status, first[1].pages_created),
        (SyncRunStatus::Succeeded, 2)
    );
    assert_eq!(first[1].http_status, Some(200));
    // The portal got its bearer token.
    let asked = site
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/articles")
        .unwrap();
    assert_eq!(asked.header("authorization"), Some("Bearer portal-token"));
    // The model distilled the page (nav and footer are not in its input).
    let distill = llm.bodies()[0]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(distill.contains("Visitors pay 4 euros"), "{distill}");
    assert!(!distill.contains("Hub Cooperative"), "{distill}");

    for (query, slug) in [
        (
            "where do visitors park saturday garage",
            "parking-at-the-hub",
        ),
        ("guest wifi password", "guest-wifi"),
        ("free printing pages", "printing"),
    ] {
        let (s, hits) = send(
            &app,
            "POST",
            "/api/v1/kb/search",
            &api,
            Some(json!({"query": query})),
        )
        .await;
        assert_eq!(s, 200);
        assert_eq!(hits["results"][0]["slug"], slug, "{query}: {hits}");
    }
    let page = page_by_slug(&app, tenant.id, "guest-wifi").await;
    assert_eq!(
        (page.source_type.as_str(), page.external_id.as_deref()),
        ("api", Some("41"))
    );
    let web = page_by_slug(&app, tenant.id, "parking-at-the-hub").await;
    assert_eq!(web.source_type, "url");

    // Second runs: unchanged, no model call (searches above may rerank).
    let calls = llm.bodies().len();
    for key in ["site-parking", "portal"] {
        let (_, v) = send(
            &app,
            "POST",
            &format!("/api/v1/kb/sources/{key}/sync"),
            &api,
            None,
        )
        .await;
        drain(&app).await;
        let r = run_row(&app, tenant.id, v["run"]["id"].as_str().unwrap()).await;
        assert_eq!(
            (r.status, r.pages_created, r.pages_updated),
            (SyncRunStatus::Succeeded, 0, 0),
            "{key}"
        );
        assert!(r.pages_unchanged >= 1, "{key}");
    }
    assert_eq!(llm.bodies().len(), calls);
}

/// The webhook kind: a signed `knowledge.sync.requested`, a `triggered`
/// run, then the CMS's signed callback with the documents.
#[tokio::test]
async fn knowledge_webhook_source_is_triggered_then_fed_by_its_signed_callback() {
    const SECRET: &str = "whk-secret-0123456789";
    let cms = FakeHttp::start().await;
    cms.reply("/hooks/root", 202, json!({"ok": true}));
    let app = TestApp::spawn_with(NO_WORKERS).await;
    let (tenant, api) = tenant_key(&app, "acme").await;
    let (s, v) = send(
        &app,
        "POST",
        "/api/v1/kb/sources",
        &api,
        Some(json!({
        "source_key": "cms", "name": "CMS", "source_kind": "webhook", "url": cms.url("/hooks/root"),
        "secrets": {"webhook_signing_secret": SECRET}})),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    let (_, v) = send(&app, "POST", "/api/v1/kb/sources/cms/sync", &api, None).await;
    drain(&app).await;
    let run_id = v["run"]["id"].as_str().unwrap().to_string();
    let r = run_row(&app, tenant.id, &run_id).await;
    assert_eq!(
        (r.status, r.http_status),
        (SyncRunStatus::Triggered, Some(202))
    );
    let callback = r.metadata.0["callback_url"].as_str().unwrap().to_string();
    let asked = cms.requests().pop().unwrap();
    let body: Value = serde_json::from_slice(&asked.raw).unwrap();
    assert_eq!(body["type"], "knowledge.sync.requested");
    assert_eq!(body["run_id"], run_id.as_str());
    assert_eq!(body["callback"]["url"], callback.as_str());
    root::integrations::signing::verify(
        SECRET,
        asked.header("x-root-timestamp").unwrap(),
        &asked.raw,
        asked.header("x-root-signature").unwrap(),
        app.state.clock.now().micros() / 1_000_000,
        300,
    )
    .expect("the trigger is signed with the source's secret");

    // The CMS answers at the callback (the path under our own base URL).
    let path = callback
        .split_once("/webhooks/")
        .map(|(_, p)| format!("/webhooks/{p}"))
        .unwrap();
    let docs = serde_json::to_vec(
        &json!({"documents": [doc("n1", "Newsletter", "The December issue is out.")]}),
    )
    .unwrap();
    let ts = (app.state.clock.now().micros() / 1_000_000).to_string();
    let post = |sig: String, ts: String, body: Vec<u8>| {
        app.client
            .post(app.url(&path))
            .header("content-type", "application/json")
            .header("x-root-timestamp", ts)
            .header("x-root-signature", sig)
            .body(body)
            .send()
    };
    let bad = post("00".repeat(32), ts.clone(), docs.clone())
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 401);
    let sig = root::integrations::signing::sign(SECRET, ts.parse().unwrap(), &docs);
    let ok = post(sig.clone(), ts.clone(), docs.clone()).await.unwrap();
    assert_eq!(ok.status().as_u16(), 202);
    drain(&app).await;
    let r = run_row(&app, tenant.id, &run_id).await;
    assert_eq!((r.status, r.pages_created), (SyncRunStatus::Succeeded, 1));
    let page = page_by_slug(&app, tenant.id, "newsletter").await;
    assert_eq!(page.source_type, "webhook");
    // The run is no longer waiting: a replay is refused.
    let again = post(sig, ts, docs).await.unwrap();
    assert_eq!(again.status().as_u16(), 409);
}

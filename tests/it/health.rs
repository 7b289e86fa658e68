use serde_json::{Value, json};
use storage::RedbStore;

use crate::support::TestApp;

#[tokio::test]
async fn health_and_ready_answer_ok_for_anonymous_callers() {
    let app = TestApp::spawn().await;
    for path in ["/health", "/ready"] {
        let resp = app.get(path, None).await;
        assert_eq!(resp.status(), 200, "{path}");
        assert!(
            resp.headers().contains_key("x-request-id"),
            "request id echoed"
        );
        let body: Value = resp.json().await.unwrap();
        assert_eq!(
            body,
            json!({"status": "ok"}),
            "only the status, nothing else"
        );
    }
}

#[tokio::test]
async fn health_and_ready_report_down_with_503_when_storage_is_unusable() {
    let app = TestApp::spawn().await;
    app.state.store.close().await;
    for path in ["/health", "/ready"] {
        let resp = app.get(path, None).await;
        assert_eq!(resp.status(), 503, "{path}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body, json!({"status": "down"}));
    }
}

#[tokio::test]
async fn unknown_routes_and_wrong_methods_get_json_errors() {
    let app = TestApp::spawn().await;
    let resp = app.get("/api/v1/no-such-route", None).await;
    assert_eq!(resp.status(), 404);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");
    let resp = app.client.post(app.url("/health")).send().await.unwrap();
    assert_eq!(resp.status(), 405);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed");
}

#[tokio::test]
async fn oversized_bodies_are_refused_with_413() {
    let app = TestApp::spawn_with(&[("ROOT_MAX_BODY_BYTES", "1024")]).await;
    let resp = app
        .client
        .post(app.url("/api/v1/me"))
        .body(vec![b'x'; 4096])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
}

/// L8: `ROOT_MAX_BODY_BYTES` is the one limit — axum's 2 MiB extractor
/// default does not cut a 3 MiB body under the 10 MiB default first.
#[tokio::test]
async fn the_body_limit_is_root_max_body_bytes_not_axums_default() {
    let app = TestApp::spawn().await;
    let key = root::platform::api_keys::mint_for_slug(
        &app.state.store,
        "root",
        "t",
        root::platform::api_keys::KeyKind::Live,
    )
    .await
    .unwrap()
    .1
    .raw;
    let three_mib = "a".repeat(3 * 1024 * 1024);
    let resp = app
        .post_json(
            "/api/v1/identity/resolve",
            Some(&key),
            &json!({"email": "x@example.org", "padding": three_mib}),
        )
        .await;
    // The body was read whole and judged on its content (an unknown field),
    // not refused for its size.
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert!(
        v["error"]["message"].as_str().unwrap().contains("padding"),
        "{v}"
    );
    let small = TestApp::spawn_with(&[("ROOT_MAX_BODY_BYTES", "1048576")]).await;
    let resp = small
        .post_json(
            "/api/v1/identity/resolve",
            Some(&key),
            &json!({"padding": three_mib}),
        )
        .await;
    assert_eq!(resp.status(), 413);
}

#[tokio::test]
async fn graceful_shutdown_closes_storage_and_releases_the_file() {
    let mut app = TestApp::spawn().await;
    let path = app.data_dir.join("root.redb");
    assert!(
        RedbStore::open(&path).is_err(),
        "the running server holds the file"
    );
    app.stop().await;
    let reopened = RedbStore::open(&path).expect("lock released after shutdown");
    use storage::TenantStore;
    assert!(
        reopened.tenant_by_slug("root").await.unwrap().is_some(),
        "data flushed"
    );
}

//! Whole-body snapshots of the KB routes (insta): a page as the API returns
//! it and a 400 body. Kept beside `kb.rs`, which is at its size limit.

use serde_json::{Value, json};

use crate::kb::{key_for, put_page};
use crate::support::TestApp;

/// A KB page as `GET /api/v1/kb/pages/{slug}` returns it, and the 400 of a
/// page without a slug, pinned (ids and timestamps redacted).
#[tokio::test]
async fn kb_page_and_error_bodies_match_their_snapshots() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    put_page(
        &app,
        &key,
        json!({"slug": "vpn-setup", "title": "VPN setup",
               "content_html": "<h2>Install</h2><p>Install openvpn and import the profile.</p>"}),
    )
    .await;
    let page: Value = app
        .get("/api/v1/kb/pages/vpn-setup", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    insta::assert_json_snapshot!("kb_page", page, {
        ".id" => "[id]",
        ".public_id" => "[public id]",
        ".tenant_id" => "[tenant id]",
        ".created_at" => "[timestamp]",
        ".updated_at" => "[timestamp]",
        ".published_at" => "[timestamp]",
        ".last_synced_at" => "[timestamp]",
    });
    let resp = app
        .post_json(
            "/api/v1/kb/pages",
            Some(&key),
            &json!({"title": "x", "content_html": "y"}),
        )
        .await;
    assert_eq!(resp.status(), 400);
    let error: Value = resp.json().await.unwrap();
    insta::assert_json_snapshot!("kb_400_missing_slug", error);
}
